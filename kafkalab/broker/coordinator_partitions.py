"""Coordinators that follow the leaders of an internal topic's partitions.

Theory of operation
-------------------
Kafka's group and transaction coordinators share one shape. A key (a group id, a transactional
id) hashes to one partition of an internal topic (``__consumer_offsets``,
``__transaction_state``); the broker leading that partition coordinates the key, and the
partition's log is where the coordinator's state lives. So:

* **FindCoordinator** answers the partition's leader from the metadata image
  (:func:`coordinator_of`), or COORDINATOR_NOT_AVAILABLE while the partition has no live
  leader (or the topic does not exist yet).
* **Election** (Kafka's ``onElection``): when this broker becomes the partition's leader, the
  coordinator replays the partition's log into memory. While it replays, requests for its keys
  get COORDINATOR_LOAD_IN_PROGRESS.
* **Resignation** (``onResignation``): when the broker stops leading it -- another leader, a
  follower role, the replica gone -- the coordinator drops that partition's state; requests for
  its keys get NOT_COORDINATOR, and the clients look the coordinator up again.

:class:`CoordinatorPartitions` follows one internal topic: the broker passes it every
:class:`~kafkalab.replication.replica_manager.ImageApplied` and it calls the coordinator's
``load`` and ``unload`` for the partitions that changed. It knows nothing of groups or
transactions, so both coordinators use it.

Worked example: ``__consumer_offsets`` partition 12 is led by broker 2 (epoch 0). Broker 2 is
elected for 12: ``load(12)`` replays group ``my-group``; broker 1 answers FindCoordinator for
``my-group`` with node 2 and a JoinGroup sent to it with NOT_COORDINATOR. Broker 2 dies; the
controller makes broker 3 leader at epoch 1; broker 3 is elected for 12 and replays the same
records, which replication had copied to it, and FindCoordinator now names broker 3.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kafkalab.errors import ErrorCode
from kafkalab.metadata.image import MetadataImage

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class CoordinatorAnswer:
    """FindCoordinator's answer for one key."""

    error_code: int
    node_id: int = -1
    host: str = ""
    port: int = -1


def coordinator_of(image: MetadataImage, topic: str, partition: int) -> CoordinatorAnswer:
    """The live leader of ``topic``-``partition``, or COORDINATOR_NOT_AVAILABLE."""
    registration = image.partition(topic, partition)
    leader = None if registration is None else image.brokers.get(registration.leader)
    if leader is None or leader.fenced:
        return CoordinatorAnswer(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    return CoordinatorAnswer(ErrorCode.NONE, leader.broker_id, leader.host, leader.port)


def internal_topic_replication_factor(configured: int, *, lone_broker: bool) -> int:
    """The replication factor an internal topic is created with. A cluster uses the configured
    value and refuses to create the topic with fewer live brokers (the controller answers
    INVALID_REPLICATION_FACTOR and FindCoordinator stays COORDINATOR_NOT_AVAILABLE until enough
    brokers register), as Kafka does. A lone broker is configured as Kafka's single-node
    ``server.properties`` configures one: replication factor 1."""
    return min(configured, 1) if lone_broker else configured


class CoordinatorPartitions:
    """The partitions of one internal topic this broker leads, and whether each is loaded.

    ``load(partition)`` and ``unload(partition)`` are the coordinator's election and
    resignation. Not thread-safe; owned by one broker.
    """

    def __init__(self, topic: str, load: Callable[[int], None], unload: Callable[[int], None]) -> None:
        self.topic = topic
        self._load = load
        self._unload = unload
        self.loading: set[int] = set()
        self.loaded: set[int] = set()

    def follow(self, became_leader: Iterable[TopicPartition], lost: Iterable[TopicPartition]) -> None:
        """Apply one image's changes: ``lost`` are partitions this broker no longer leads
        (now a follower, or no replica here); ``became_leader`` are new leaderships, a new
        leader epoch included (the state is then reloaded: another leader may have written)."""
        for topic, partition in lost:
            if topic == self.topic:
                self.resign(partition)
        for topic, partition in became_leader:
            if topic == self.topic:
                self.resign(partition)
                self.elect(partition)

    def elect(self, partition: int) -> None:
        self.loading.add(partition)
        try:
            self._load(partition)
        finally:
            self.loading.discard(partition)
        self.loaded.add(partition)

    def resign(self, partition: int) -> None:
        self.loading.discard(partition)
        if partition in self.loaded:
            self.loaded.discard(partition)
            self._unload(partition)

    def error_for(self, partition: int) -> int:
        """NONE if this broker coordinates the partition's keys now; else the error to answer."""
        if partition in self.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if partition in self.loaded:
            return ErrorCode.NONE
        return ErrorCode.NOT_COORDINATOR


__all__ = [
    "CoordinatorAnswer", "CoordinatorPartitions", "coordinator_of", "internal_topic_replication_factor",
]
