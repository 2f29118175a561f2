"""The controller's decisions and the images it publishes, for a cluster it alone governs.

Theory of operation
-------------------
In KRaft every change to the cluster is decided by the active controller and published as a new
:class:`~kafkalab.metadata.image.MetadataImage`; brokers act on the image (become leader, become
follower, create or delete logs). :class:`LocalController` makes those decisions -- topic ids,
replica placement, partition leaders and ISRs (through :mod:`.partition_change`) -- and publishes
each new image synchronously to its subscribers, the replica managers. It is the controller of a
one-process cluster; the KRaft quorum replicates the same decisions through the metadata log.

Placement stripes a new topic's partitions over the sorted live brokers: partition ``p`` starts
at broker ``(start + p) mod n`` and its other replicas follow in order, with ``start`` drawn from
the injected ``random.Random`` so that topics spread their leaders (Kafka's placers also draw a
random start, and add rack awareness and shifted followers on top). The first replica is the
preferred leader, and leads at first.

Worked example: brokers [1, 2, 3], start 1, a topic of 3 partitions with replication factor 2
gets replicas [2, 3], [3, 1], [1, 2]; leaders 2, 3, 1; every ISR equals its replicas; leader
epoch 0, partition epoch 0.

Topic names are checked here, as Kafka's controller checks them (``Topic.validate``).
"""

from __future__ import annotations

import random
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from kafkalab.controller.partition_change import change_partition, fence_broker, validate_alter_partition
from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.metadata.image import NO_LEADER, BrokerRegistration, MetadataImage, PartitionRegistration, TopicImage

TOPIC_NAME_CHARS_MAX = 249  # Kafka's Topic.MAX_NAME_LENGTH
PARTITIONS_MAX = 10_000  # a per-topic bound so one request cannot create millions of logs
_LEGAL_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")


class TopicError(KafkaError):
    """A topic operation refused with a specific Kafka error code."""


def validate_topic_name(name: str) -> None:
    """Kafka's ``Topic.validate``: 1-249 characters of ``[a-zA-Z0-9._-]``, not ``.`` or ``..``."""
    if not name or name in (".", ".."):
        raise TopicError(f"topic name {name!r} is illegal", error_code=ErrorCode.INVALID_TOPIC_EXCEPTION)
    if len(name) > TOPIC_NAME_CHARS_MAX:
        raise TopicError(
            f"topic name is {len(name)} characters, more than {TOPIC_NAME_CHARS_MAX}",
            error_code=ErrorCode.INVALID_TOPIC_EXCEPTION,
        )
    if not _LEGAL_NAME.match(name):
        raise TopicError(
            f"topic name {name!r} contains characters outside [a-zA-Z0-9._-]",
            error_code=ErrorCode.INVALID_TOPIC_EXCEPTION,
        )


def check_partition_count(partition_count: int) -> None:
    if not 1 <= partition_count <= PARTITIONS_MAX:
        raise TopicError(
            f"Number of partitions must be in [1, {PARTITIONS_MAX}], got {partition_count}",
            error_code=ErrorCode.INVALID_PARTITIONS,
        )


ImageListener = Callable[[MetadataImage], None]


class LocalController:
    """Decides and publishes cluster metadata. Not thread-safe; owned by one process."""

    def __init__(self, brokers: Sequence[BrokerRegistration], rng: random.Random) -> None:
        self._rng = rng
        self.image = MetadataImage(brokers={b.broker_id: b for b in brokers})
        self._listeners: list[ImageListener] = []

    def subscribe(self, listener: ImageListener) -> Callable[[], None]:
        """Receive every image published from now on (call :meth:`publish` to send the current);
        returns a function that stops it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def publish(self, image: MetadataImage | None = None) -> None:
        if image is not None:
            self.image = replace(image, offset=self.image.offset + 1)
        for listener in self._listeners:
            listener(self.image)

    def register_broker(self, broker: BrokerRegistration) -> None:
        """A broker joins or rejoins (BrokerRegistration), unfenced. A registration of a broker
        the controller still has unfenced is a new incarnation -- the process restarted, its
        memory is gone -- so the old one is fenced first: it leaves every ISR and gives up its
        leaderships, and no leader epoch survives a restart. Partitions that lost every leader
        may then elect the returning broker again (an ISR member coming back)."""
        known = self.image.brokers.get(broker.broker_id)
        if known is not None and not known.fenced:
            self.fence_broker(broker.broker_id)
        brokers = {**self.image.brokers, broker.broker_id: broker}
        image = replace(self.image, brokers=brokers)
        self.publish(self._reelect(image, lambda r: r in brokers and not brokers[r].fenced))

    def fence_broker(self, broker_id: int, unclean_enabled: Callable[[str], bool] = lambda topic: False) -> None:
        """Kafka's ``handleBrokerFenced``, after ``broker.session.timeout.ms`` without a
        heartbeat: the broker leaves every ISR and its partitions elect other leaders."""
        broker = self.image.brokers.get(broker_id)
        if broker is None or broker.fenced:
            return
        brokers = {**self.image.brokers, broker_id: replace(broker, fenced=True)}
        partitions = [(t.name, i, p) for t in self.image.topics.values() for i, p in t.partitions.items()]
        changes = fence_broker(partitions, broker_id, lambda r: r in brokers and not brokers[r].fenced,
                               unclean_enabled)
        self.publish(_with_partitions(replace(self.image, brokers=brokers), changes))

    def _reelect(self, image: MetadataImage, acceptable: Callable[[int], bool]) -> MetadataImage:
        changes = []
        for topic in image.topics.values():
            for index, registration in topic.partitions.items():
                if registration.leader == NO_LEADER:
                    changed = change_partition(registration, registration.isr, acceptable)
                    if changed is not None:
                        changes.append((topic.name, index, changed))
        return _with_partitions(image, changes)

    # --- topics --------------------------------------------------------------------------------

    def restore_topic(self, name: str, topic_id: uuid.UUID, partition_count: int) -> None:
        """Adopt a topic found on disk (a data directory from before the controller kept
        records), led by the only broker; published with the next change or :meth:`publish`."""
        (broker_id,) = self.image.brokers  # only a one-broker cluster can adopt local logs
        partitions = {p: PartitionRegistration((broker_id,), (broker_id,), broker_id) for p in range(partition_count)}
        self.image = replace(self.image, topics={**self.image.topics, name: TopicImage(name, topic_id, partitions)})

    def create_topic(self, name: str, partition_count: int, replication_factor: int) -> TopicImage:
        validate_topic_name(name)
        if name in self.image.topics:
            raise TopicError(f"Topic '{name}' already exists.", error_code=ErrorCode.TOPIC_ALREADY_EXISTS)
        check_partition_count(partition_count)
        topic_id = self.new_topic_id()
        topic = TopicImage(name, topic_id, self._place(range(partition_count), replication_factor))
        self.publish(replace(self.image, topics={**self.image.topics, name: topic}))
        return topic

    def new_topic_id(self) -> uuid.UUID:
        """A random (version 4) topic id from the injected generator."""
        return uuid.UUID(int=self._rng.getrandbits(128), version=4)

    def create_partitions(self, name: str, partition_count: int) -> TopicImage:
        topic = self._topic(name)
        current = len(topic.partitions)
        if partition_count <= current:
            raise TopicError(
                f"Topic currently has {current} partitions, which is higher than or equal to the "
                f"requested {partition_count}.", error_code=ErrorCode.INVALID_PARTITIONS)
        check_partition_count(partition_count)
        replication_factor = len(topic.partitions[0].replicas)
        added = self._place(range(current, partition_count), replication_factor)
        grown = replace(topic, partitions={**topic.partitions, **added})
        self.publish(replace(self.image, topics={**self.image.topics, name: grown}))
        return grown

    def delete_topic(self, name: str) -> None:
        self._topic(name)
        self.publish(replace(self.image, topics={k: v for k, v in self.image.topics.items() if k != name}))

    def _topic(self, name: str) -> TopicImage:
        topic = self.image.topics.get(name)
        if topic is None:
            raise TopicError(f"This server does not host this topic: {name}",
                             error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return topic

    def _place(self, indexes: range, replication_factor: int) -> Mapping[int, PartitionRegistration]:
        live = sorted(b for b, reg in self.image.brokers.items() if not reg.fenced)
        if not 1 <= replication_factor <= len(live):
            raise TopicError(
                f"Unable to replicate the partition {replication_factor} time(s): The target "
                f"replication factor of {replication_factor} cannot be reached because only "
                f"{len(live)} broker(s) are registered.", error_code=ErrorCode.INVALID_REPLICATION_FACTOR)
        start = self._rng.randrange(len(live)) if len(live) > 1 else 0  # one broker: nothing to draw
        placed = {}
        for p in indexes:
            replicas = tuple(live[(start + p + k) % len(live)] for k in range(replication_factor))
            placed[p] = PartitionRegistration(replicas, replicas, replicas[0])
        return placed

    # --- ISR changes ---------------------------------------------------------------------------

    def alter_partition(
        self, broker_id: int, topic: str, partition: int, leader_epoch: int, partition_epoch: int,
        new_isr: Sequence[tuple[int, int]],
    ) -> tuple[ErrorCode, PartitionRegistration | None]:
        """A leader's ISR proposal (AlterPartition): (NONE, the new registration) or (error, None)."""
        current = self.image.partition(topic, partition)
        error = validate_alter_partition(current, broker_id, leader_epoch, partition_epoch, new_isr,
                                         self.image.brokers)
        if error != ErrorCode.NONE:
            return error, None
        assert current is not None
        brokers = self.image.brokers

        def acceptable(replica: int) -> bool:
            return replica in brokers and not brokers[replica].fenced
        changed = change_partition(current, [b for b, _ in new_isr], acceptable)
        if changed is None:
            return ErrorCode.NONE, current
        topic_image = self.image.topics[topic]
        updated = replace(topic_image, partitions={**topic_image.partitions, partition: changed})
        self.publish(replace(self.image, topics={**self.image.topics, topic: updated}))
        return ErrorCode.NONE, changed


def _with_partitions(
    image: MetadataImage, changes: Sequence[tuple[str, int, PartitionRegistration]],
) -> MetadataImage:
    topics = dict(image.topics)
    for name, index, registration in changes:
        topics[name] = replace(topics[name], partitions={**topics[name].partitions, index: registration})
    return replace(image, topics=topics)


__all__ = [
    "PARTITIONS_MAX", "TOPIC_NAME_CHARS_MAX", "ImageListener", "LocalController", "TopicError",
    "check_partition_count", "validate_topic_name",
]
