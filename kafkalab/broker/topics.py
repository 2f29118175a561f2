"""The topics a broker knows: names, topic ids and partition counts.

Rebuilt at start-up from the partition directories the log store finds (``orders-0``,
``orders-1`` ... give ``orders`` two partitions; the id comes from ``partition.metadata`` when
present; a Kafka data dir's ``__cluster_metadata-0``, KRaft's own log, is not a topic), then kept in step with CreateTopics, CreatePartitions and DeleteTopics. Topic ids for
new topics come from an injected ``random.Random`` so simulations replay exactly.

Topic names follow Kafka's ``Topic.validate``: 1-249 characters from ``[a-zA-Z0-9._-]``, and not
``.`` or ``..``. Worked example: ``orders.v2`` is valid; ``orders v2`` and a 250-character name
are refused with INVALID_TOPIC_EXCEPTION (17).
"""

from __future__ import annotations

import random
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.broker.log_store import LogStore, PartitionLog

KRAFT_METADATA_TOPIC = "__cluster_metadata"  # KRaft's own log in a Kafka data dir, not a topic
TOPIC_NAME_CHARS_MAX = 249  # Kafka's Topic.MAX_NAME_LENGTH
PARTITIONS_MAX = 10_000  # a per-topic bound so one request cannot create millions of logs
_LEGAL_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")


class TopicError(KafkaError):
    """A topic operation refused with a specific Kafka error code."""


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    partition_count: int


def validate_topic_name(name: str) -> None:
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


class TopicRegistry:
    """Topic metadata over a log store. Not thread-safe; owned by the broker."""

    def __init__(self, log_store: LogStore, rng: random.Random) -> None:
        self.log_store = log_store
        self._rng = rng
        self._topics: dict[str, TopicInfo] = {}
        self._load()

    def _load(self) -> None:
        counts: dict[str, int] = {}
        for topic, partition in self.log_store.partitions():
            if topic == KRAFT_METADATA_TOPIC:
                continue
            counts[topic] = max(counts.get(topic, 0), partition + 1)
        for topic, count in sorted(counts.items()):
            topic_id = self.log_store.topic_id(topic, 0) or self._new_id()
            self._topics[topic] = TopicInfo(topic, topic_id, count)

    def _new_id(self) -> uuid.UUID:
        return uuid.UUID(int=self._rng.getrandbits(128), version=4)

    def names(self) -> list[str]:
        return sorted(self._topics)

    def get(self, name: str) -> TopicInfo | None:
        return self._topics.get(name)

    def log(self, topic: str, partition: int) -> PartitionLog | None:
        info = self._topics.get(topic)
        if info is None or not 0 <= partition < info.partition_count:
            return None
        return self.log_store.get_log(topic, partition)

    def create(self, name: str, partition_count: int, properties: Mapping[str, str]) -> TopicInfo:
        validate_topic_name(name)
        if name in self._topics:
            raise TopicError(f"Topic '{name}' already exists.", error_code=ErrorCode.TOPIC_ALREADY_EXISTS)
        _check_partition_count(partition_count)
        info = TopicInfo(name, self._new_id(), partition_count)
        for partition in range(partition_count):
            self.log_store.create_log(name, partition, info.topic_id, properties)
        self._topics[name] = info
        return info

    def add_partitions(self, name: str, partition_count: int, properties: Mapping[str, str]) -> TopicInfo:
        info = self._topics.get(name)
        if info is None:
            raise TopicError(f"topic {name!r} does not exist", error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if partition_count <= info.partition_count:
            raise TopicError(
                f"Topic currently has {info.partition_count} partitions, which is higher than or "
                f"equal to the requested {partition_count}.",
                error_code=ErrorCode.INVALID_PARTITIONS,
            )
        _check_partition_count(partition_count)
        for partition in range(info.partition_count, partition_count):
            self.log_store.create_log(name, partition, info.topic_id, properties)
        grown = TopicInfo(name, info.topic_id, partition_count)
        self._topics[name] = grown
        return grown

    def delete(self, name: str) -> None:
        info = self._topics.pop(name, None)
        if info is None:
            raise TopicError(
                f"This server does not host this topic: {name}",
                error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            )
        for partition in range(info.partition_count):
            self.log_store.delete_log(name, partition)


def _check_partition_count(partition_count: int) -> None:
    if not 1 <= partition_count <= PARTITIONS_MAX:
        raise TopicError(
            f"Number of partitions must be in [1, {PARTITIONS_MAX}], got {partition_count}",
            error_code=ErrorCode.INVALID_PARTITIONS,
        )
