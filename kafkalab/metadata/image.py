"""The metadata image: the cluster as the controller last published it.

Theory of operation
-------------------
In KRaft the controller does not tell brokers what to do. It appends records to the metadata log
(``__cluster_metadata``) and every broker replays them into an immutable *image* of the cluster,
mirroring Kafka's ``MetadataImage``: which brokers are registered, fenced or shutting down, and
for every partition its replicas, leader, leader epoch, ISR and partition epoch. A broker then
acts on the difference between two images: become leader, become follower, stop a replica. Local
directories are storage; the image is the truth about the cluster.

Two epochs travel with every partition and mean different things:

* ``leader_epoch`` grows when the leader changes. The leader stamps it into every batch and
  followers use it to find where their logs diverge (KIP-101);
* ``partition_epoch`` grows on *any* change to the partition (an ISR shrink too). A leader's
  AlterPartition names the partition epoch it saw, so the controller can refuse a proposal built
  on stale state (INVALID_UPDATE_VERSION, KIP-497).

Worked example: ``orders-0`` on replicas [1, 2, 3] with leader 1 in epoch 4. Broker 3 falls
behind; leader 1 proposes ISR [1, 2] at partition epoch 7 and the controller publishes::

    PartitionRegistration(replicas=(1, 2, 3), isr=(1, 2), leader=1, leader_epoch=4, partition_epoch=8)

The leader epoch stays 4 (same leader), the partition epoch moves to 8.

Images are built only by replaying records (:mod:`kafkalab.metadata.delta`). They are frozen
values: a new image is a new object, so a reader holding the old one never
sees half an update.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

NO_LEADER = -1  # Kafka's LeaderConstants.NO_LEADER
LEADER_RECOVERED, LEADER_RECOVERING = 0, 1  # Kafka's LeaderRecoveryState values
NO_BROKER_EPOCH = -1  # a Fetch or AlterPartition that does not name a broker epoch


@dataclass(frozen=True, slots=True)
class PartitionRegistration:
    """One partition's placement and leadership, as in Kafka's ``PartitionRegistration``."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    # Kafka's LeaderRecoveryState: RECOVERING after an unclean election, until the new leader's
    # first AlterPartition says RECOVERED (KIP-704).
    leader_recovery_state: int = LEADER_RECOVERED

    def __post_init__(self) -> None:
        if len(set(self.replicas)) != len(self.replicas):
            raise ValueError(f"replicas {self.replicas} name a broker twice")
        if not set(self.isr) <= set(self.replicas):
            raise ValueError(f"ISR {self.isr} is not a subset of replicas {self.replicas}")
        if self.leader != NO_LEADER and self.leader not in self.isr:
            raise ValueError(f"leader {self.leader} is not in the ISR {self.isr}")


@dataclass(frozen=True, slots=True)
class TopicImage:
    name: str
    topic_id: uuid.UUID
    partitions: Mapping[int, PartitionRegistration]


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """A registered broker: where to reach it and whether it may lead or join an ISR."""

    broker_id: int
    broker_epoch: int
    host: str
    port: int
    rack: str | None = None
    fenced: bool = False
    in_controlled_shutdown: bool = False
    incarnation_id: uuid.UUID = uuid.UUID(int=0)  # a new one each time the broker process starts


@dataclass(frozen=True, slots=True)
class MetadataImage:
    """The whole cluster at one offset of the metadata log. Immutable; shared by readers."""

    offset: int = -1  # the last metadata record this image includes
    brokers: Mapping[int, BrokerRegistration] = field(default_factory=dict)
    topics: Mapping[str, TopicImage] = field(default_factory=dict)
    features: Mapping[str, int] = field(default_factory=dict)  # finalized levels: metadata.version
    configs: Mapping[tuple[int, str], Mapping[str, str]] = field(default_factory=dict)  # (type, name)
    next_producer_id: int = 0  # the first id of the next block the controller hands out

    def partition(self, topic: str, partition: int) -> PartitionRegistration | None:
        image = self.topics.get(topic)
        return None if image is None else image.partitions.get(partition)

    def is_isr_eligible(self, broker_id: int, fetch_broker_epoch: int | None) -> bool:
        """May this broker join an ISR? Kafka's KRaft rule: it is registered, not fenced, not
        shutting down, and the broker epoch its fetch carried is its current one (or none was
        sent). A broker that restarted gets a new epoch, so fetches from its past life cannot
        put it back into the ISR."""
        broker = self.brokers.get(broker_id)
        if broker is None or broker.fenced or broker.in_controlled_shutdown or fetch_broker_epoch is None:
            return False
        return fetch_broker_epoch in (NO_BROKER_EPOCH, broker.broker_epoch)


__all__ = [
    "NO_BROKER_EPOCH", "NO_LEADER", "BrokerRegistration", "MetadataImage", "PartitionRegistration", "TopicImage",
]
