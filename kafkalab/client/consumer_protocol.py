"""The consumer protocol: the bytes a consumer puts into JoinGroup and the leader into SyncGroup.

Theory of operation
-------------------
The group coordinator does not understand consumers. In JoinGroup each member sends an opaque
``metadata`` blob per protocol (assignor) it supports, and in SyncGroup the leader sends one opaque
``assignment`` blob per member. Only clients read them, and Kafka's clients agree on their shape:
``ConsumerProtocolSubscription`` and ``ConsumerProtocolAssignment`` (Kafka's
``ConsumerProtocol``, specs ``ConsumerProtocol*.json``). Each blob is an int16 version followed by
the struct at that version, never flexible (no compact strings, no tagged fields)::

    Subscription v3  = version:int16  topics:[string]  user_data:nullable bytes
                       owned_partitions:[topic:string partitions:[int32]]   (v1+, KIP-429)
                       generation_id:int32                                 (v2+, KIP-792)
                       rack_id:nullable string                             (v3+, KIP-881)
    Assignment v0-3  = version:int16  assigned_partitions:[topic:string partitions:[int32]]
                       user_data:nullable bytes

Worked example: a v3 subscription to ``["a", "b"]`` owning ``a-0`` and ``a-1`` at generation 5
in rack ``r1`` is 43 bytes::

    0003 | 00000002 0001 61 0001 62 | ffffffff | 00000001 0001 61 00000002 00000000 00000001
    ver    topics: 2, "a", "b"        no user    owned: 1 topic "a", partitions [0, 1]
         | 00000005 | 0002 7231
           gen 5      rack "r1"

Two compatibility rules follow Kafka's reader: a version newer than 3 is read as v3 (later
versions only add fields at the end, so the v3 prefix is still valid), and bytes after the
fields are ignored. A version below 0 is an error.

Both are declared here once, with the same ``message``/``f`` DSL as the wire messages
(:mod:`kafkalab.protocol.schema`), as messages without an API key: each blob carries its own
version prefix. ``kafkalab dump-log --offsets-decoder`` imports them to print a classic group's
member metadata as JSON, as Kafka's ``OffsetsMessageParser`` does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kafkalab.errors import ProtocolError
from kafkalab.protocol.schema import f, message
from kafkalab.protocol.types import Reader, Writer
from kafkalab.storage.checkpoints import TopicPartition

PROTOCOL_TYPE = "consumer"  # JoinGroup's protocol_type for every consumer assignor
CONSUMER_PROTOCOL_VERSION_MAX = 3  # the highest version Kafka 3.9's client writes and reads
NO_GENERATION = -1  # generation_id's default: the member has not been in a generation

CONSUMER_PROTOCOL_SUBSCRIPTION = message(
    "ConsumerProtocolSubscription", valid=f"0-{CONSUMER_PROTOCOL_VERSION_MAX}", flexible="none", fields=[
    f("topics", "[]string"),
    f("user_data", "bytes", nullable="0+"),
    f("owned_partitions", "[]TopicPartition", "1+", fields=[
        f("topic", "string", "1+"),
        f("partitions", "[]int32", "1+"),
    ]),
    f("generation_id", "int32", "2+", default=NO_GENERATION),
    f("rack_id", "string", "3+", nullable="3+"),
])

CONSUMER_PROTOCOL_ASSIGNMENT = message(
    "ConsumerProtocolAssignment", valid=f"0-{CONSUMER_PROTOCOL_VERSION_MAX}", flexible="none", fields=[
    f("assigned_partitions", "[]TopicPartition", fields=[
        f("topic", "string"),
        f("partitions", "[]int32"),
    ]),
    f("user_data", "bytes", nullable="0+"),
])


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
