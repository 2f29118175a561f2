"""The records a group coordinator writes to ``__consumer_offsets``, in Kafka's exact schemas.

Theory of operation
-------------------
Each record's key starts with an int16 *record type* (Kafka's ``CoordinatorRecordType``) that
picks the key and value schemas; each value starts with its own int16 *version*. The bodies are
declared in Kafka's ``group-coordinator/src/main/resources/common/message/*.json``. Types 0 and 1
are an offset commit (0 is the pre-0.10 key, laid out the same), 2 is group metadata::

    offset commit   key   = [int16 1][group][topic][int32 partition]      OffsetCommitKey, type 1
                    value = [int16 3][int64 offset][int32 leaderEpoch]
                            [metadata][int64 commitTimestamp]                  OffsetCommitValue v3
    group metadata  key   = [int16 2][group]                              GroupMetadataKey, type 2
                    value = [int16 3][protocolType][int32 generation][protocol][leader]
                            [int64 currentStateTimestamp][members...]          GroupMetadataValue v3

Kafka's specs number a key's versions by its record types (``OffsetCommitKey`` 0-1,
``GroupMetadataKey`` 2); its fields are the same at each, so kafkalab declares each key with the
single version 0 and keeps the type beside it -- the same reading the dump tool's coordinator
decoder (:mod:`kafkalab.tools.decoders.coordinator`) applies to every record type. These
declarations are the only ones: the coordinator writes and replays with them, and
``kafkalab dump-log --offsets-decoder`` prints them.

A null value is a tombstone: the offset was deleted or expired, or the group was deleted. The
topic is compacted, so only the latest record per key survives cleaning -- replaying the log
from its start rebuilds exactly the coordinator's state.

Kafka writes OffsetCommitValue v3 (v1 only when a commit carries an explicit expire timestamp,
OffsetCommit v2-v4's ``retention_time_ms``) and GroupMetadataValue v3: the highest
non-flexible versions. kafkalab does the same.

Worked example: group ``g`` committing ``orders-0`` at offset 42 at t=1000 with metadata ``""``
writes key ``0001 0001 67 0006 6f7264657273 00000000`` (17 bytes) and value
``0003 000000000000002a ffffffff 0000 00000000000003e8`` (24 bytes).
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass
from typing import Any

from kafkalab.errors import CorruptRecordError
from kafkalab.protocol.schema import Message, f, message
from kafkalab.protocol.types import Writer

OFFSET_COMMIT_KEY = message("OffsetCommitKey", valid="0", flexible="none", fields=[
    f("group", "string"),
    f("topic", "string"),
    f("partition", "int32"),
])

OFFSET_COMMIT_VALUE = message("OffsetCommitValue", valid="0-4", flexible="4+", fields=[
    f("offset", "int64"),
    f("leader_epoch", "int32", "3+", default=-1),
    f("metadata", "string"),
    f("commit_timestamp", "int64"),
    f("expire_timestamp", "int64", "1", default=-1),
])

GROUP_METADATA_KEY = message("GroupMetadataKey", valid="0", flexible="none", fields=[
    f("group", "string"),
])

GROUP_METADATA_VALUE = message("GroupMetadataValue", valid="0-4", flexible="4+", fields=[
    f("protocol_type", "string"),
    f("generation", "int32"),
    f("protocol", "string", nullable="0+"),
    f("leader", "string", nullable="0+"),
    f("current_state_timestamp", "int64", "2+", default=-1),
    f("members", "[]MemberMetadata", fields=[
        f("member_id", "string"),
        f("group_instance_id", "string", "3+", nullable="3+"),
        f("client_id", "string"),
        f("client_host", "string"),
        f("rebalance_timeout", "int32", "1+", default=-1),
        f("session_timeout", "int32"),
        f("subscription", "bytes"),
        f("assignment", "bytes"),
    ]),
])

LEGACY_OFFSET_COMMIT_TYPE = 0  # read, never written: Kafka writes type 1
OFFSET_COMMIT_TYPE = 1
GROUP_METADATA_TYPE = 2
KEY_VERSION = 0  # a key's body has one layout; its type says which
OFFSET_COMMIT_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY = 1
GROUP_METADATA_VALUE_VERSION = 3
OFFSET_COMMIT_KEYS_CACHED = 4096  # encoded keys kept: the partitions a busy coordinator commits

# record type -> (key schema, value schema), for the classic group protocol's records
CLASSIC_RECORD_TYPES: dict[int, tuple[Message, Message]] = {
    LEGACY_OFFSET_COMMIT_TYPE: (OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    OFFSET_COMMIT_TYPE: (OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    GROUP_METADATA_TYPE: (GROUP_METADATA_KEY, GROUP_METADATA_VALUE),
}

OffsetCommitValue = OFFSET_COMMIT_VALUE.cls
GroupMetadataValue = GROUP_METADATA_VALUE.cls
MemberMetadata = GroupMetadataValue.MemberMetadata

_INT16 = struct.Struct(">h")


@dataclass(frozen=True, slots=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupKey:
    group: str


def framed(prefix: int, schema: Message, value: Any, version: int) -> bytes:
    """The int16 ``prefix`` (a key's record type, a value's version), then the body."""
    writer = Writer()
    writer.int16(prefix)
    schema.encode_into(writer, value, version)
    return writer.to_bytes()


@functools.lru_cache(maxsize=OFFSET_COMMIT_KEYS_CACHED)
def offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    """A group commits the same partitions again and again: each key is encoded once."""
    body = OFFSET_COMMIT_KEY.cls(group=group, topic=topic, partition=partition)
    return framed(OFFSET_COMMIT_TYPE, OFFSET_COMMIT_KEY, body, KEY_VERSION)


def offset_commit_value(value: Any) -> bytes:
    """An ``OffsetCommitValue``: v1 if it carries an expire timestamp, else v3 (as Kafka)."""
    explicit_expiry = value.expire_timestamp >= 0
    version = OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY if explicit_expiry else OFFSET_COMMIT_VALUE_VERSION
    return framed(version, OFFSET_COMMIT_VALUE, value, version)


def group_metadata_key(group: str) -> bytes:
    body = GROUP_METADATA_KEY.cls(group=group)
    return framed(GROUP_METADATA_TYPE, GROUP_METADATA_KEY, body, KEY_VERSION)


def group_metadata_value(value: Any) -> bytes:
    version = GROUP_METADATA_VALUE_VERSION
    return framed(version, GROUP_METADATA_VALUE, value, version)


CLASSIC_RECORD_TYPE_MAX = GROUP_METADATA_TYPE  # 3+ are KIP-848, share and streams records


def record_type(data: bytes) -> int:
    """A record key's type (Kafka's ``CoordinatorRecordType``)."""
    return _version(data, "key")


def decode_key(data: bytes) -> OffsetKey | GroupKey:
    """The key of a ``__consumer_offsets`` record, by its record type."""
    type_ = _version(data, "key")
    schemas = CLASSIC_RECORD_TYPES.get(type_)
    if schemas is None:
        raise CorruptRecordError(f"__consumer_offsets record type {type_} is not a classic group record", position=0)
    body = schemas[0].decode(memoryview(data)[2:], KEY_VERSION)
    if type_ == GROUP_METADATA_TYPE:
        return GroupKey(body.group)
    return OffsetKey(body.group, body.topic, body.partition)


def decode_offset_value(data: bytes) -> Any:
    return OFFSET_COMMIT_VALUE.decode(memoryview(data)[2:], _version(data, "OffsetCommitValue"))


def decode_group_value(data: bytes) -> Any:
    return GROUP_METADATA_VALUE.decode(memoryview(data)[2:], _version(data, "GroupMetadataValue"))


def _version(data: bytes, what: str) -> int:
    if len(data) < 2:
        raise CorruptRecordError(f"{what} of {len(data)} bytes is too short for its int16 version", position=0)
    return int(_INT16.unpack_from(data)[0])
