"""The consumer protocol: the bytes a consumer puts into JoinGroup and the leader into SyncGroup.

Theory of operation
-------------------
The bytes themselves -- ``ConsumerProtocolSubscription`` and ``ConsumerProtocolAssignment``, each
an int16 version and a never-flexible struct -- are declared once, below the client, in
:mod:`kafkalab.protocol.messages.consumer_protocol`, because the group coordinator and the dump
tool read them too. This module is the client's side: the :class:`Subscription` and
:class:`Assignment` an assignor works with, and how they become bytes. Topics and owned
partitions are written sorted and grouped by topic, as Kafka's ``ConsumerProtocol`` writes them.

Worked example: ``Subscription(("b", "a"), (("a", 1), ("a", 0)), 5, "r1")`` encodes at v3 as
the 43 bytes of that module's example: topics ``["a", "b"]``, owned ``a`` partitions ``[0, 1]``.

Two compatibility rules follow Kafka's reader: a version newer than 3 is read as v3 (later
versions only add fields at the end, so the v3 prefix is still valid), and bytes after the
fields are ignored. A version below 0 is an error.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kafkalab.errors import ProtocolError
from kafkalab.protocol.messages.consumer_protocol import (
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    CONSUMER_PROTOCOL_VERSION_MAX,
    NO_GENERATION,
    PROTOCOL_TYPE,
)
from kafkalab.protocol.types import Reader, Writer
from kafkalab.storage.checkpoints import TopicPartition


@dataclass(frozen=True, slots=True)
class Subscription:
    """What one member asks for: its topics, what it owns now, its generation and rack."""

    topics: tuple[str, ...]
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation_id: int = NO_GENERATION
    rack_id: str | None = None
    user_data: bytes | None = None

    def __post_init__(self) -> None:
        if any(partition < 0 for _, partition in self.owned_partitions):
            raise ProtocolError(f"subscription owns a negative partition: {self.owned_partitions}")


@dataclass(frozen=True, slots=True)
class Assignment:
    """What the leader gives one member."""

    partitions: tuple[TopicPartition, ...]
    user_data: bytes | None = None


def _group_by_topic(partitions: Iterable[TopicPartition], cls: Any) -> list[Any]:
    """``[("a", 1), ("a", 0), ("b", 2)]`` -> ``[cls("a", [1, 0]), cls("b", [2])]``, first-seen order."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    return [cls(topic=topic, partitions=tuple(ps)) for topic, ps in by_topic.items()]


def _read_version(data: bytes | bytearray | memoryview, what: str) -> tuple[Reader, int]:
    reader = Reader(data)
    version = reader.int16()
    if version < 0:
        raise ProtocolError(f"{what}: unsupported consumer protocol version {version}")
    return reader, min(version, CONSUMER_PROTOCOL_VERSION_MAX)


def _check_version(version: int) -> None:
    if not 0 <= version <= CONSUMER_PROTOCOL_VERSION_MAX:
        raise ProtocolError(
            f"consumer protocol version {version} is outside 0-{CONSUMER_PROTOCOL_VERSION_MAX}")


def encode_subscription(subscription: Subscription, version: int = CONSUMER_PROTOCOL_VERSION_MAX) -> bytes:
    """Version-prefixed subscription bytes; topics and owned partitions sorted, as Kafka writes them."""
    _check_version(version)
    cls: Any = CONSUMER_PROTOCOL_SUBSCRIPTION.cls
    value = cls(
        topics=tuple(sorted(subscription.topics)),
        user_data=subscription.user_data,
        owned_partitions=tuple(_group_by_topic(sorted(subscription.owned_partitions), cls.TopicPartition)),
        generation_id=subscription.generation_id,
        rack_id=subscription.rack_id,
    )
    writer = Writer()
    writer.int16(version)
    CONSUMER_PROTOCOL_SUBSCRIPTION.encode_into(writer, value, version)
    return writer.to_bytes()


def decode_subscription(data: bytes | bytearray | memoryview) -> Subscription:
    """Read a subscription of any version; an empty rack id means no rack, as in Kafka."""
    reader, version = _read_version(data, "ConsumerProtocolSubscription")
    value = CONSUMER_PROTOCOL_SUBSCRIPTION.read(reader, version)
    owned = tuple((tp.topic, p) for tp in value.owned_partitions for p in tp.partitions)
    return Subscription(
        topics=tuple(value.topics),
        owned_partitions=owned,
        generation_id=value.generation_id,
        rack_id=value.rack_id or None,
        user_data=None if value.user_data is None else bytes(value.user_data),
    )


def encode_assignment(assignment: Assignment, version: int = CONSUMER_PROTOCOL_VERSION_MAX) -> bytes:
    """Version-prefixed assignment bytes; partitions grouped by topic in first-seen order."""
    _check_version(version)
    cls: Any = CONSUMER_PROTOCOL_ASSIGNMENT.cls
    value = cls(
        assigned_partitions=tuple(_group_by_topic(assignment.partitions, cls.TopicPartition)),
        user_data=assignment.user_data,
    )
    writer = Writer()
    writer.int16(version)
    CONSUMER_PROTOCOL_ASSIGNMENT.encode_into(writer, value, version)
    return writer.to_bytes()


def decode_assignment(data: bytes | bytearray | memoryview) -> Assignment:
    """Read an assignment of any version."""
    reader, version = _read_version(data, "ConsumerProtocolAssignment")
    value = CONSUMER_PROTOCOL_ASSIGNMENT.read(reader, version)
    partitions = tuple((tp.topic, p) for tp in value.assigned_partitions for p in tp.partitions)
    return Assignment(partitions, None if value.user_data is None else bytes(value.user_data))


__all__ = [
    "CONSUMER_PROTOCOL_ASSIGNMENT",
    "CONSUMER_PROTOCOL_SUBSCRIPTION",
    "CONSUMER_PROTOCOL_VERSION_MAX",
    "NO_GENERATION",
    "PROTOCOL_TYPE",
    "Assignment",
    "Subscription",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
]
