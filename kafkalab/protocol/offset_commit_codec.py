"""OffsetCommit's hot path: the flexible request and response (v8+) read and written by hand.

Theory of operation
-------------------
A consumer committing after every poll sends OffsetCommit as often as it fetches, and for a
one-partition commit the broker spent longer interpreting the generic schemas
(:mod:`kafkalab.protocol.schema`) than checking the group and appending the offset record. As
:mod:`kafkalab.protocol.fetch_codec` does for Fetch, this module writes the two out for the
versions real clients send today (librdkafka 2.x sends v9, Kafka's Java client 3.9 v9), while
the generic codec stays the definition:

* :func:`decode_offset_commit_request` takes the shape every client sends -- no tagged fields,
  counts and lengths in one-byte or short varints -- and returns the same frozen dataclasses
  the schema returns. Anything else (a tagged field, a truncated body, a bad UTF-8 name, an
  older version) goes to the generic decoder, which decodes it or raises its usual
  :class:`~kafkalab.errors.ProtocolError`.
* :func:`encode_offset_commit_response` writes the size prefix, the response header and the
  body in one ``bytes``; older versions go to the generic encoder (None).

The tests compare both with the generic codec on seeded random values and with kafka-python's
own OffsetCommit classes.

Worked example: librdkafka's v9 commit of ``commits-0`` at offset 1 for group
``bench-commits`` (no member, generation -1) has the body
``0e "bench-commits" ffffffff 01 00 02 08 "commits" 02 00000000 0000000000000001 ffffffff 01 00
00 00``: the group as a compact string, the generation, an empty member id, a null instance id,
one topic with one partition (index, offset, leader epoch, empty metadata) and three empty tag
sections. Its answer is ``[size 0000001c][corr][00][00000000 02 08 "commits" 02 00000000 0000 00
00 00]``.
"""

from __future__ import annotations

import struct
from typing import Any

from kafkalab.protocol.fast_reads import IrregularBody as _Irregular
from kafkalab.protocol.fast_reads import read_uvarint as _uvarint
from kafkalab.protocol.messages.offsets import OFFSET_COMMIT_REQUEST, OFFSET_COMMIT_RESPONSE
from kafkalab.protocol.types import Part

FLEXIBLE_FROM = OFFSET_COMMIT_REQUEST.flexible_from  # 8
VERSION_MAX = OFFSET_COMMIT_REQUEST.valid[1]
TOPICS_MAX = 100_000  # more topics or partitions than this in one commit is not a consumer
PARTITIONS_MAX = 100_000

_REQ = OFFSET_COMMIT_REQUEST.cls
_TOPIC = _REQ.OffsetCommitRequestTopic
_PARTITION = _TOPIC.OffsetCommitRequestPartition
_RESP = OFFSET_COMMIT_RESPONSE.cls

_I32 = struct.Struct(">i")
_PARTITION_RUN = struct.Struct(">iqi")  # partition_index, committed_offset, committed_leader_epoch
_RESPONSE_PARTITION = struct.Struct(">ih")  # partition_index, error_code


def decode_offset_commit_request(data: bytes | bytearray | memoryview, version: int) -> Any:
    """The request body at ``version``, equal to ``OFFSET_COMMIT_REQUEST.decode(data, version,
    allow_trailing=True)``; raises what that raises."""
    if FLEXIBLE_FROM <= version <= VERSION_MAX:
        try:
            return _decode(memoryview(data))
        except (_Irregular, struct.error, IndexError, UnicodeDecodeError):
            pass
    return OFFSET_COMMIT_REQUEST.decode(data, version, allow_trailing=True)


def _decode(view: memoryview) -> Any:
    group_id, position = _string(view, 0)
    (generation,) = _I32.unpack_from(view, position)
    member_id, position = _string(view, position + 4)
    instance_id, position = _nullable_string(view, position)
    count, position = _count(view, position, TOPICS_MAX)
    topics = []
    for _ in range(count):
        name, position = _string(view, position)
        partition_count, position = _count(view, position, PARTITIONS_MAX)
        partitions = []
        for _ in range(partition_count):
            index, offset, leader_epoch = _PARTITION_RUN.unpack_from(view, position)
            metadata, position = _nullable_string(view, position + _PARTITION_RUN.size)
            position = _no_tags(view, position)
            partitions.append(_PARTITION(partition_index=index, committed_offset=offset,
                                         committed_leader_epoch=leader_epoch, committed_metadata=metadata))
        position = _no_tags(view, position)
        topics.append(_TOPIC(name=name, partitions=tuple(partitions)))
    _no_tags(view, position)
    return _REQ(group_id=group_id, generation_id_or_member_epoch=generation, member_id=member_id,
                group_instance_id=instance_id, retention_time_ms=-1, topics=tuple(topics))


def _count(view: memoryview, position: int, limit: int) -> tuple[int, int]:
    count, position = _uvarint(view, position)
    if not 1 <= count <= limit + 1:
        raise _Irregular("null or oversized array")
    return count - 1, position


def _nullable_string(view: memoryview, position: int) -> tuple[str | None, int]:
    if view[position] == 0:
        return None, position + 1
    return _string(view, position)


def _string(view: memoryview, position: int) -> tuple[str, int]:
    length, position = _uvarint(view, position)
    end = position + length - 1
    if length == 0 or end > len(view):
        raise _Irregular("null or truncated string")
    return str(view[position:end], "utf-8"), end


def _no_tags(view: memoryview, position: int) -> int:
    if view[position] != 0:
        raise _Irregular("tagged fields")
    return position + 1


# --- the response --------------------------------------------------------------------------


def encode_offset_commit_response(correlation_id: int, version: int, body: Any) -> list[Part] | None:
    """The whole framed response, equal to the generic ``encode_response``; None for a version
    this writer does not take (the caller then uses the generic encoder)."""
    if not FLEXIBLE_FROM <= version <= VERSION_MAX:
        return None
    out = bytearray(_I32.pack(correlation_id))
    out.append(0)  # response header v1: no tagged fields
    out += _I32.pack(body.throttle_time_ms)
    _put_uvarint(out, len(body.topics) + 1)
    for topic in body.topics:
        raw = topic.name.encode("utf-8")
        _put_uvarint(out, len(raw) + 1)
        out += raw
        _put_uvarint(out, len(topic.partitions) + 1)
        for partition in topic.partitions:
            out += _RESPONSE_PARTITION.pack(partition.partition_index, partition.error_code)
            out.append(0)
        out.append(0)
    out.append(0)
    return [_I32.pack(len(out)), bytes(out)]


def _put_uvarint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
