"""Fetch's hot path: its request and its response encoded and decoded field by field, by hand.

Theory of operation
-------------------
A consumer reading as fast as it can sends one Fetch per megabyte, and the broker spends more
time interpreting the generic schemas (:mod:`kafkalab.protocol.schema`) for that one request and
its response than it spends finding the records; a follower decodes a response naming every
partition it follows several times a second. Kafka generates a dedicated Java reader and
writer per message from its JSON schemas; this module is the same idea written out for the one
message on the consume and replication paths, for every version the broker serves (4-12,
flexible from 12).

Both directions stay exactly equal to the generic codec, which remains the definition:

* :func:`decode_fetch_request` takes the shape every real consumer sends -- no tagged fields,
  no null arrays -- and returns the same frozen dataclasses the schema would. Anything else
  (a tagged ``cluster_id``, a truncated body, a bad UTF-8 name) is handed to the generic
  decoder, which decodes it or raises its usual :class:`~kafkalab.errors.ProtocolError`.
* :func:`encode_fetch_response` writes the size prefix, the response header and the body into
  one ``bytearray`` per run of in-memory bytes, leaving each partition's file slices as parts
  for ``sendfile``, and the aborted transactions a read_committed consumer gets as fixed
  16-byte runs. A body it does not expect (a diverging epoch, which only followers see) goes
  to the generic encoder.
* :func:`decode_fetch_response` takes what a leader sends -- no tagged fields -- and returns
  the same frozen dataclasses, records as bytes; a diverging epoch (a tagged field), a
  truncated body or trailing bytes go to the generic decoder.

The tests compare all three against the generic codec on seeded random values at every version.

Worked example: a v12 request for ``orders-0`` at offset 41 is 7 ints in one
``unpack_from(">iiiibii")``, a compact array count ``02`` (one topic), the compact string
``07 orders``, ``02`` (one partition), one ``unpack_from(">iiqiqi")`` and three empty tag
sections; its response for one 999,875-byte slice is ``[4-byte size][61 bytes of header and
fields][the slice][3 empty tag sections]``.
"""

from __future__ import annotations

import struct
from typing import Any

from kafkalab.protocol.fast_reads import IrregularBody as _Irregular
from kafkalab.protocol.fast_reads import read_uvarint as _uvarint
from kafkalab.protocol.messages.fetch import FETCH_REQUEST, FETCH_RESPONSE
from kafkalab.protocol.types import Part, RecordsParts

FLEXIBLE_FROM = FETCH_REQUEST.flexible_from  # 12
TOPICS_MAX = 100_000  # more topics or partitions in one request than this is not a consumer
PARTITIONS_MAX = 100_000

_REQ = FETCH_REQUEST.cls
_TOPIC = _REQ.FetchTopic
_PARTITION = _TOPIC.FetchPartition
_FORGOTTEN = _REQ.ForgottenTopic
_RESP = FETCH_RESPONSE.cls
_TOPIC_DATA = _RESP.FetchableTopicResponse
_PARTITION_DATA = _TOPIC_DATA.PartitionData
_ABORTED_TXN = _PARTITION_DATA.AbortedTransaction

_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_ABORTED = struct.Struct(">qq")  # AbortedTransaction: producer_id int64, first_offset int64
# The request's fixed-width runs by version: the top-level ints and each partition's ints.
_TOP_RUN = {v: struct.Struct(">iiiib" + ("ii" if v >= 7 else "")) for v in range(4, 13)}
_PARTITION_RUN = {
    v: struct.Struct(">i" + ("i" if v >= 9 else "") + "q" + ("i" if v >= 12 else "") + ("q" if v >= 5 else "") + "i")
    for v in range(4, 13)
}
_RESPONSE_TOP = {v: struct.Struct(">i" + ("hi" if v >= 7 else "")) for v in range(4, 13)}
_RESPONSE_PARTITION = {v: struct.Struct(">ihq" + "q" + ("q" if v >= 5 else "")) for v in range(4, 13)}


def decode_fetch_request(data: bytes | bytearray | memoryview, version: int) -> Any:
    """The request body at ``version``, equal to ``FETCH_REQUEST.decode(data, version,
    allow_trailing=True)``; raises what that raises."""
    if 4 <= version <= 12:
        try:
            return _decode(memoryview(data), version)
        except (_Irregular, struct.error, IndexError, UnicodeDecodeError, ValueError):
            pass
    return FETCH_REQUEST.decode(data, version, allow_trailing=True)


def _decode(view: memoryview, version: int) -> Any:
    flexible = version >= FLEXIBLE_FROM
    top = _TOP_RUN[version]
    values = top.unpack_from(view, 0)
    position = top.size
    count, position = _count(view, position, flexible, TOPICS_MAX)
    topics = []
    partition_run = _PARTITION_RUN[version]
    for _ in range(count):
        name, position = _string(view, position, flexible)
        partition_count, position = _count(view, position, flexible, PARTITIONS_MAX)
        partitions = []
        for _ in range(partition_count):
            fields = partition_run.unpack_from(view, position)
            position += partition_run.size
            position = _no_tags(view, position, flexible)
            partitions.append(_partition(fields, version))
        position = _no_tags(view, position, flexible)
        topics.append(_TOPIC(topic=name, partitions=tuple(partitions)))
    forgotten: tuple[Any, ...] = ()
    rack_id = ""
    if version >= 7:
        forgotten_count, position = _count(view, position, flexible, TOPICS_MAX)
        if forgotten_count:
            raise _Irregular("forgotten topics (fetch sessions) are left to the generic decoder")
    if version >= 11:
        rack_id, position = _string(view, position, flexible)
    cluster_id, position = _request_tags(view, position, flexible)
    replica_id, max_wait_ms, min_bytes, max_bytes = values[:4]
    isolation_level = values[4]
    session_id, session_epoch = values[5:7] if version >= 7 else (0, -1)
    return _REQ(
        cluster_id=cluster_id, replica_id=replica_id, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes,
        isolation_level=isolation_level, session_id=session_id, session_epoch=session_epoch,
        topics=tuple(topics), forgotten_topics_data=forgotten, rack_id=rack_id,
    )


def _partition(fields: tuple[int, ...], version: int) -> Any:
    items = iter(fields)
    partition = next(items)
    current_leader_epoch = next(items) if version >= 9 else -1
    fetch_offset = next(items)
    last_fetched_epoch = next(items) if version >= 12 else -1
    log_start_offset = next(items) if version >= 5 else -1
    partition_max_bytes = next(items)
    return _PARTITION(partition=partition, current_leader_epoch=current_leader_epoch, fetch_offset=fetch_offset,
                      last_fetched_epoch=last_fetched_epoch, log_start_offset=log_start_offset,
                      partition_max_bytes=partition_max_bytes)


def _count(view: memoryview, position: int, flexible: bool, limit: int) -> tuple[int, int]:
    if flexible:
        count, position = _uvarint(view, position)
        count -= 1
    else:
        (count,) = _I32.unpack_from(view, position)
        position += 4
    if not 0 <= count <= limit:
        raise _Irregular("null or oversized array")
    return count, position


def _string(view: memoryview, position: int, flexible: bool) -> tuple[str, int]:
    if flexible:
        length, position = _uvarint(view, position)
        length -= 1
    else:
        (length,) = _I16.unpack_from(view, position)
        position += 2
    end = position + length
    if length < 0 or end > len(view):
        raise _Irregular("null or truncated string")
    return str(view[position:end], "utf-8"), end


def _request_tags(view: memoryview, position: int, flexible: bool) -> tuple[str | None, int]:
    """The request's own tag section: none, or only tag 0, the ``cluster_id`` a KRaft
    observer's fetch carries (KIP-595); anything else is irregular."""
    if not flexible or view[position] == 0:
        return None, _no_tags(view, position, flexible)
    if view[position] != 1 or view[position + 1] != 0:
        raise _Irregular("request tags other than cluster_id")
    size, start = _uvarint(view, position + 2)
    cluster_id, end = _string(view, start, flexible)
    if end != start + size:
        raise _Irregular("cluster_id tag size")
    return cluster_id, end


def _no_tags(view: memoryview, position: int, flexible: bool) -> int:
    if not flexible:
        return position
    if view[position] != 0:
        raise _Irregular("tagged fields")
    return position + 1


# --- the response --------------------------------------------------------------------------


def encode_fetch_response(correlation_id: int, version: int, body: Any) -> list[Part] | None:
    """The whole framed response as parts, equal to the generic ``encode_response``; None for a
    body this writer does not take (the caller then uses the generic encoder)."""
    if not 4 <= version <= 12:
        return None
    flexible = version >= FLEXIBLE_FROM
    parts: list[Part] = []
    out = bytearray(_I32.pack(correlation_id))
    if flexible:
        out.append(0)  # response header v1: no tagged fields
    top = _RESPONSE_TOP[version]
    out += top.pack(body.throttle_time_ms, body.error_code, body.session_id) if version >= 7 else \
        top.pack(body.throttle_time_ms)
    _put_count(out, len(body.responses), flexible)
    partition_run = _RESPONSE_PARTITION[version]
    for topic in body.responses:
        _put_string(out, topic.topic, flexible)
        _put_count(out, len(topic.partitions), flexible)
        for data in topic.partitions:
            if data.diverging_epoch is not None:  # rare: left to the schema
                return None
            fields = (data.partition_index, data.error_code, data.high_watermark, data.last_stable_offset)
            out += partition_run.pack(*fields, data.log_start_offset) if version >= 5 else \
                partition_run.pack(*fields)
            _put_aborted(out, data.aborted_transactions, flexible)
            if version >= 11:
                out += _I32.pack(data.preferred_read_replica)
            out = _put_records(out, parts, data.records, flexible)
            if flexible:
                out.append(0)
        if flexible:
            out.append(0)
    if flexible:
        out.append(0)
    if out:
        parts.append(bytes(out))
    size_bytes = sum(len(p) if isinstance(p, bytes) else p.size_bytes for p in parts)
    return [_I32.pack(size_bytes), *parts]


def _put_aborted(out: bytearray, aborted: Any, flexible: bool) -> None:
    """The nullable ``aborted_transactions`` array: (producer id, first offset) each."""
    if aborted is None:
        _put_count(out, -1, flexible)
        return
    _put_count(out, len(aborted), flexible)
    for txn in aborted:
        out += _ABORTED.pack(txn.producer_id, txn.first_offset)
        if flexible:
            out.append(0)  # the struct's empty tag section


def _put_uvarint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _put_count(out: bytearray, count: int, flexible: bool) -> None:
    if flexible:
        _put_uvarint(out, count + 1)
    else:
        out += _I32.pack(count)


def _put_string(out: bytearray, value: str, flexible: bool) -> None:
    raw = value.encode("utf-8")
    if flexible:
        _put_uvarint(out, len(raw) + 1)
    else:
        out += _I16.pack(len(raw))
    out += raw


def _put_records(out: bytearray, parts: list[Part], records: Any, flexible: bool) -> bytearray:
    """Append a records field; file slices close the current run of bytes. Returns the buffer
    to keep writing into (a new one after a slice)."""
    if records is None:
        if flexible:
            out.append(0)
        else:
            out += _I32.pack(-1)
        return out
    if not isinstance(records, RecordsParts):
        _put_count(out, len(records), flexible)
        out += records
        return out
    _put_count(out, records.size_bytes, flexible)
    for part in records.parts:
        if isinstance(part, bytes):
            out += part
        else:  # a file slice, sent from the segment file
            if out:
                parts.append(bytes(out))
            parts.append(part)
            out = bytearray()
    return out


# --- the response, read back (followers and consumers) ----------------------------------------


def decode_fetch_response(data: bytes | bytearray | memoryview, version: int, *,
                          allow_trailing: bool = False) -> Any:
    """The response body at ``version``, equal to ``FETCH_RESPONSE.decode(data, version,
    allow_trailing=allow_trailing)``; raises what that raises."""
    if 4 <= version <= 12:
        try:
            body, end = _decode_response(memoryview(data), version)
            if allow_trailing or end == len(data):
                return body
        except (_Irregular, struct.error, IndexError, UnicodeDecodeError, ValueError):
            pass
    return FETCH_RESPONSE.decode(data, version, allow_trailing=allow_trailing)


def _decode_response(view: memoryview, version: int) -> tuple[Any, int]:
    """(body, where it ends)."""
    flexible = version >= FLEXIBLE_FROM
    top = _RESPONSE_TOP[version]
    values = top.unpack_from(view, 0)
    position = top.size
    count, position = _count(view, position, flexible, TOPICS_MAX)
    topics = []
    for _ in range(count):
        name, position = _string(view, position, flexible)
        partition_count, position = _count(view, position, flexible, PARTITIONS_MAX)
        partitions = []
        for _ in range(partition_count):
            data, position = _partition_data(view, position, version, flexible)
            partitions.append(data)
        position = _no_tags(view, position, flexible)
        topics.append(_TOPIC_DATA(topic=name, partitions=tuple(partitions)))
    position = _no_tags(view, position, flexible)
    error_code, session_id = values[1:] if version >= 7 else (0, 0)
    body = _RESP(throttle_time_ms=values[0], error_code=error_code, session_id=session_id, responses=tuple(topics))
    return body, position


def _partition_data(view: memoryview, position: int, version: int, flexible: bool) -> tuple[Any, int]:
    run = _RESPONSE_PARTITION[version]
    fields = run.unpack_from(view, position)
    aborted, position = _aborted(view, position + run.size, flexible)
    preferred_read_replica = -1
    if version >= 11:
        (preferred_read_replica,) = _I32.unpack_from(view, position)
        position += 4
    records, position = _records(view, position, flexible)
    position = _no_tags(view, position, flexible)
    data = _PARTITION_DATA(
        partition_index=fields[0], error_code=fields[1], high_watermark=fields[2], last_stable_offset=fields[3],
        log_start_offset=fields[4] if version >= 5 else -1, aborted_transactions=aborted,
        preferred_read_replica=preferred_read_replica, records=records)
    return data, position


def _aborted(view: memoryview, position: int, flexible: bool) -> tuple[tuple[Any, ...] | None, int]:
    """The nullable ``aborted_transactions`` array."""
    count, position = _length(view, position, flexible)
    if count == -1:
        return None, position
    if not 0 <= count <= PARTITIONS_MAX:
        raise _Irregular("oversized array")
    entries = []
    for _ in range(count):
        producer_id, first_offset = _ABORTED.unpack_from(view, position)
        position = _no_tags(view, position + _ABORTED.size, flexible)
        entries.append(_ABORTED_TXN(producer_id=producer_id, first_offset=first_offset))
    return tuple(entries), position


def _records(view: memoryview, position: int, flexible: bool) -> tuple[bytes | None, int]:
    """A nullable records field, copied out of the frame."""
    length, position = _length(view, position, flexible)
    if length == -1:
        return None, position
    end = position + length
    if length < 0 or end > len(view):
        raise _Irregular("truncated records")
    return bytes(view[position:end]), end


def _length(view: memoryview, position: int, flexible: bool) -> tuple[int, int]:
    """A length or count that may be -1 (null)."""
    if flexible:
        length, position = _uvarint(view, position)
        return length - 1, position
    (length,) = _I32.unpack_from(view, position)
    return length, position + 4
