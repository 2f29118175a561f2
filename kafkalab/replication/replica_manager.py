"""The replica manager: every partition this broker hosts, as leader or follower.

Theory of operation
-------------------
Mirrors Kafka's ``ReplicaManager``. The controller publishes a :class:`MetadataImage`; the
replica manager makes this broker match it (:meth:`ReplicaManager.apply_image`):

* a partition whose registration names this broker leader becomes a leader
  (:meth:`Partition.make_leader`), and stops being fetched from anyone;
* one that names another broker leader becomes a follower and is handed to the
  :class:`FollowerFetcher` for that leader -- restarting from the local LEO whenever the leader
  epoch changes, so the first fetch carries the last fetched epoch and any divergence is found;
* one that no longer lists this broker as a replica is stopped and its log deleted.

Then it serves the partitions: leader appends (``acks`` and ``min.insync.replicas`` checked
before anything is written), the leader's side of follower fetches, the periodic ISR check, and
the controller's answers to ISR proposals. Everything that must leave this node -- a Fetch to a
leader, an AlterPartition to the controller -- is *returned*, never sent: the broker puts it in
its outbox, and the simulation or the server carries it.

Worked example: image offset 40 gives ``orders-0`` replicas [1, 2, 3], leader 2, epoch 5. On
broker 1, ``apply_image`` opens ``orders-0`` if needed, makes it a follower in epoch 5 and adds it
to fetcher 2; ``fetchers[2].next_fetch()`` then returns ``[PartitionFetch("orders", 0, 120, 5, 4, 0,
1048576)]`` if broker 1's log ends at 120 with batches from epoch 4.

Not thread-safe; owned by one broker.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.metadata.image import MetadataImage, PartitionRegistration
from kafkalab.replication import events as ev
from kafkalab.replication.fetcher import FollowerFetcher, PartitionFetch, PartitionFetchResult
from kafkalab.replication.leader_fetch import serve_follower_fetch
from kafkalab.replication.partition import AlterPartitionProposal, Partition, ReplicationSettings
from kafkalab.storage import Log

TopicPartition = tuple[str, int]


class LogProvider(Protocol):
    """Opens, creates and deletes this broker's partition logs (the broker's log store)."""

    def open_or_create_log(self, topic: str, partition: int, image: MetadataImage) -> Log: ...
    def delete_log(self, topic: str, partition: int) -> None: ...


@dataclass(frozen=True, slots=True)
class ImageApplied:
    """What :meth:`ReplicaManager.apply_image` changed on this broker."""

    became_leader: tuple[TopicPartition, ...] = ()
    became_follower: tuple[TopicPartition, ...] = ()
    stopped: tuple[TopicPartition, ...] = ()


@dataclass(slots=True)
class HostedPartition:
    partition: Partition
    log: Log


@dataclass(slots=True)
class _Outgoing:
    proposals: list[AlterPartitionProposal] = field(default_factory=list)


class ReplicaManager:
    """The partitions of one broker. Not thread-safe; owned by one broker."""

    def __init__(
        self, broker_id: int, logs: LogProvider, settings: ReplicationSettings,
        broker_epoch: int = -1, on_high_watermark_moved: Callable[[str, int], None] | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch
        self.logs = logs
        self.settings = settings
        self.image = MetadataImage()
        self.hosted: dict[TopicPartition, HostedPartition] = {}
        self.fetchers: dict[int, FollowerFetcher] = {}
        self._outgoing = _Outgoing()
        self.on_high_watermark_moved = on_high_watermark_moved
        self._listeners: list[Callable[[ev.ReplicationEvent], None]] = []

    # --- observation ---------------------------------------------------------------------------

    def subscribe(self, listener: Callable[[ev.ReplicationEvent], None]) -> Callable[[], None]:
        """Receive every partition's replication events, present and future."""
        self._listeners.append(listener)
        unsubscribes = [h.partition.subscribe(listener) for h in self.hosted.values()]

        def unsubscribe() -> None:
            self._listeners.remove(listener)
            for undo in unsubscribes:
                undo()
        return unsubscribe

    def partition(self, topic: str, partition: int) -> HostedPartition | None:
        return self.hosted.get((topic, partition))

    def __iter__(self) -> Iterator[HostedPartition]:
        return iter(self.hosted.values())

    # --- following the metadata image ----------------------------------------------------------

    def apply_image(self, image: MetadataImage, now_ms: int) -> ImageApplied:
        """Become leader, follower or neither of every partition as ``image`` says."""
        self.image = image
        leaders, followers, stopped = [], [], []
        assigned: set[TopicPartition] = set()
        for topic in image.topics.values():
            for index, registration in sorted(topic.partitions.items()):
                if self.broker_id not in registration.replicas:
                    continue
                key = (topic.name, index)
                assigned.add(key)
                hosted = self._host(topic.name, index, image)
                hosted.partition.eligibility = image
                if registration.leader == self.broker_id:
                    if self._become_leader(key, hosted, registration, now_ms):
                        leaders.append(key)
                elif self._become_follower(key, hosted, registration):
                    followers.append(key)
        for key in sorted(set(self.hosted) - assigned):
            self._stop(key)
            stopped.append(key)
        return ImageApplied(tuple(leaders), tuple(followers), tuple(stopped))

    def _host(self, topic: str, index: int, image: MetadataImage) -> HostedPartition:
        hosted = self.hosted.get((topic, index))
        if hosted is None:
            log = self.logs.open_or_create_log(topic, index, image)
            log.auto_advance_high_watermark = False  # the Partition moves the HW from now on
            partition = Partition(topic, index, self.broker_id, log, self.settings, image, self.broker_epoch)
            partition.on_high_watermark_moved = self.on_high_watermark_moved
            for listener in self._listeners:
                partition.subscribe(listener)
            hosted = self.hosted[(topic, index)] = HostedPartition(partition, log)
        return hosted

    def _become_leader(self, key: TopicPartition, hosted: HostedPartition,
                       registration: PartitionRegistration, now_ms: int) -> bool:
        before = (hosted.partition.leader_epoch, hosted.partition.is_leader)
        hosted.partition.make_leader(registration, now_ms)
        self._unfollow(key)
        return (hosted.partition.leader_epoch, hosted.partition.is_leader) != before

    def _become_follower(self, key: TopicPartition, hosted: HostedPartition,
                         registration: PartitionRegistration) -> bool:
        if not hosted.partition.make_follower(registration):
            return False
        self._unfollow(key)
        if registration.leader >= 0:
            fetcher = self.fetchers.setdefault(registration.leader, FollowerFetcher(registration.leader))
            fetcher.add_partition(key[0], key[1], hosted.log, registration.leader_epoch)
        return True

    def _unfollow(self, key: TopicPartition) -> None:
        for leader_id in list(self.fetchers):
            fetcher = self.fetchers[leader_id]
            fetcher.remove_partition(*key)
            if not fetcher.states:
                del self.fetchers[leader_id]

    def _stop(self, key: TopicPartition) -> None:
        self._unfollow(key)
        del self.hosted[key]
        self.logs.delete_log(*key)

    # --- the leader's work ---------------------------------------------------------------------

    def append_as_leader(
        self, topic: str, partition: int, records: bytes | bytearray | memoryview, required_acks: int,
        *, in_place: bool = False,
    ) -> HostedPartition:
        """Check and append a producer's batch; returns the partition for the caller to answer
        (acks 0/1 now, acks=all once :meth:`Partition.check_enough_replicas_reach_offset` says
        so). Raises a typed error when the append must not happen."""
        hosted = self.hosted.get((topic, partition))
        if hosted is None:
            raise KafkaError(f"This server does not host this topic-partition: {topic}-{partition}",
                             error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        hosted.partition.check_leader_for_append(required_acks)
        return hosted

    def serve_follower_fetches(
        self, replica_id: int, broker_epoch: int, fetches: list[PartitionFetch], now_ms: int,
    ) -> list[PartitionFetchResult]:
        """Answer a follower's Fetch, partition by partition."""
        results = []
        for fetch in fetches:
            hosted = self.hosted.get((fetch.topic, fetch.partition))
            if hosted is None:
                results.append(PartitionFetchResult(fetch.topic, fetch.partition,
                                                    ErrorCode.NOT_LEADER_OR_FOLLOWER))
                continue
            result, proposal = serve_follower_fetch(
                hosted.partition, hosted.log, fetch, replica_id, broker_epoch, now_ms)
            if proposal is not None:
                self.propose(proposal)
            results.append(result)
        return results

    def maybe_shrink_isrs(self, now_ms: int) -> None:
        """The periodic ISR check (every ``replica.lag.time.max.ms / 2``, as Kafka schedules it)."""
        for hosted in self.hosted.values():
            proposal = hosted.partition.maybe_shrink_isr(now_ms)
            if proposal is not None:
                self._outgoing.proposals.append(proposal)

    def propose(self, proposal: AlterPartitionProposal) -> None:
        """Queue an ISR change a partition proposed, for the controller."""
        self._outgoing.proposals.append(proposal)

    def has_alter_partition_proposals(self) -> bool:
        return bool(self._outgoing.proposals)

    def take_alter_partition_proposals(self) -> list[AlterPartitionProposal]:
        """ISR changes to send to the controller since the last call, in order."""
        proposals, self._outgoing.proposals = self._outgoing.proposals, []
        return proposals

    # --- the follower's work -------------------------------------------------------------------

    def on_fetch_response(self, leader_id: int, results: list[PartitionFetchResult]) -> list[TopicPartition]:
        fetcher = self.fetchers.get(leader_id)
        return [] if fetcher is None else fetcher.on_fetch_response(results)


__all__ = ["HostedPartition", "ImageApplied", "LogProvider", "ReplicaManager"]
