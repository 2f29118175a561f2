"""Magic v0 and v1: Kafka's ``LegacyRecord`` message sets, still found in old logs.

Theory of operation
-------------------
Before v2 every message carried its own header; a log entry is one message::

    offset int64 | size int32 | crc uint32 | magic int8 | attributes int8 |
    [v1: timestamp int64] | keyLength int32 | key | valueLength int32 | value

``crc`` is CRC-32 (IEEE) over magic..end. Lengths of -1 mean null. Attribute bits 0-2 are the
codec; in v1 bit 3 is the timestamp type. The header is 26 bytes in v0 and 34 in v1 (with the
12-byte log overhead).

Compression wraps a whole *inner* message set into the value of one *wrapper* message. In v0
the inner offsets are absolute. In v1 (KIP-31) they are relative -- 0, 1, 2, ... -- and the
wrapper carries the absolute offset of the *last* inner message, so the broker can assign
offsets by rewriting only the wrapper::

    wrapper offset 42, inner relative offsets 0 1 2  ->  absolute 40 41 42

With LogAppendTime the broker stamps only the wrapper's timestamp and attribute bit, and
readers report that timestamp for every inner message. Mirrors Kafka's ``LegacyRecord`` and
``AbstractLegacyRecordBatch``; Kafka 4.0 stopped writing these formats (KIP-724).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence

from kafkalab.errors import CorruptRecordError, InvalidRecordError
from kafkalab.records.compression import DECOMPRESSED_BYTES_MAX, compress, decompress
from kafkalab.records.header import (
    COMPRESSION_CODEC_MASK,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
    BatchHeader,
    Compression,
    HeaderWalker,
    TimestampType,
    read_header,
    verify_crc,
)
from kafkalab.records.model import Record, RecordBatch

_INT32 = struct.Struct(">i")
_PREFIX = struct.Struct(">qiIbb")

# Inner message sets hold at most this many messages; each inner message is at least 26 bytes,
# so the decompression limit bounds it first -- this names the bound for readers.
INNER_MESSAGES_MAX = DECOMPRESSED_BYTES_MAX // 26


def encode_message(offset: int, magic: int, attributes: int, timestamp: int,
                   key: bytes | None, value: bytes | None) -> bytes:
    """One legacy message with its log overhead (Kafka's ``LegacyRecord.write``)."""
    body = bytearray(struct.pack(">bb", magic, attributes))
    if magic == 1:
        body += struct.pack(">q", timestamp)
    for field in (key, value):
        if field is None:
            body += _INT32.pack(-1)
        else:
            body += _INT32.pack(len(field)) + field
    crc = zlib.crc32(body) & 0xFFFFFFFF
    return struct.pack(">qiI", offset, len(body) + 4, crc) + bytes(body)


def build_legacy(
    records: Sequence[Record], *, magic: int, compression: Compression = Compression.NONE,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    log_append_time_ms: int | None = None,
) -> bytes:
    """Encode records as a v0/v1 message set: one message per record, or one compressed wrapper."""
    if magic not in (0, 1):
        raise InvalidRecordError(f"legacy magic must be 0 or 1, got {magic}")
    if any(r.headers for r in records):
        raise InvalidRecordError(f"magic {magic} messages cannot carry headers")
    if not records:
        return b""
    compression = Compression(compression)
    timestamp_type = TimestampType(timestamp_type)
    type_bit = TIMESTAMP_TYPE_MASK if (magic == 1 and timestamp_type is TimestampType.LOG_APPEND_TIME) else 0
    if compression is Compression.NONE:
        return b"".join(
            encode_message(r.offset, magic, type_bit,
                           _timestamp(r.timestamp, magic, type_bit, log_append_time_ms), r.key, r.value)
            for r in records
        )
    base = records[0].offset
    inner = b"".join(
        encode_message(r.offset - base if magic == 1 else r.offset, magic, 0,
                       r.timestamp if magic == 1 else NO_TIMESTAMP, r.key, r.value)
        for r in records
    )
    wrapper_ts = max(r.timestamp for r in records) if magic == 1 else NO_TIMESTAMP
    wrapper_ts = _timestamp(wrapper_ts, magic, type_bit, log_append_time_ms)
    payload = compress(compression, inner, magic=magic)
    return encode_message(records[-1].offset, magic, int(compression) | type_bit, wrapper_ts, None, payload)


def _timestamp(create_time: int, magic: int, type_bit: int, log_append_time_ms: int | None) -> int:
    if magic == 0:
        return NO_TIMESTAMP
    if type_bit:
        if log_append_time_ms is None:
            raise InvalidRecordError("LogAppendTime messages need log_append_time_ms")
        return log_append_time_ms
    return create_time


def _read_key_value(buf, header: BatchHeader) -> tuple[bytes | None, bytes | None]:
    cursor = header.position + (18 if header.magic == 0 else 26)
    end = header.end_position
    fields: list[bytes | None] = []
    for name in ("key", "value"):
        if cursor + 4 > end:
            raise CorruptRecordError(f"{name} length runs past the message", position=header.position)
        (length,) = _INT32.unpack_from(buf, cursor)
        cursor += 4
        if length == -1:
            fields.append(None)
            continue
        if length < 0 or cursor + length > end:
            raise CorruptRecordError(
                f"{name} length {length} invalid with {end - cursor} bytes left", position=header.position
            )
        fields.append(bytes(buf[cursor : cursor + length]))
        cursor += length
    if cursor != end:
        raise CorruptRecordError(
            f"message has {end - cursor} bytes after its value", position=header.position
        )
    return fields[0], fields[1]


def _check_crc(buf, header: BatchHeader) -> None:
    if not verify_crc(buf, header):
        raise CorruptRecordError(f"CRC mismatch: stored {header.crc:#010x}", position=header.position)


def _inner_records(payload: bytes, wrapper: BatchHeader, check_crc: bool) -> list[Record]:
    walker = HeaderWalker(payload)
    inner = []
    for h in walker:
        if h.magic != wrapper.magic:
            raise CorruptRecordError(
                f"inner message magic {h.magic} differs from wrapper magic {wrapper.magic}",
                position=wrapper.position,
            )
        if h.compression is not Compression.NONE:
            raise CorruptRecordError("inner message is itself compressed", position=wrapper.position)
        if check_crc:
            _check_crc(payload, h)
        inner.append((h, *_read_key_value(payload, h)))
    if walker.remaining_bytes or not inner:
        raise CorruptRecordError(
            f"inner message set is empty or has {walker.remaining_bytes} stray bytes",
            position=wrapper.position,
        )
    # KIP-31: in v1 the wrapper holds the last absolute offset and inner offsets are relative.
    # A wrapper offset of 0 means "not yet assigned" (some producers send that); Kafka then
    # treats the relative offsets as absolute, and so do we.
    shift = 0
    if wrapper.magic == 1 and wrapper.last_offset != 0:
        shift = wrapper.last_offset - inner[-1][0].last_offset
        if shift < 0:
            raise CorruptRecordError(
                f"wrapper offset {wrapper.last_offset} is below the last inner offset "
                f"{inner[-1][0].last_offset}",
                position=wrapper.position,
            )
    log_append = wrapper.timestamp_type is TimestampType.LOG_APPEND_TIME
    return [
        Record(h.last_offset + shift, wrapper.max_timestamp if log_append else h.max_timestamp, key, value)
        for h, key, value in inner
    ]


def decode_legacy_entry(buf, header: BatchHeader, *, check_crc: bool = True,
                        limit_bytes: int = DECOMPRESSED_BYTES_MAX) -> RecordBatch:
    """Decode one v0/v1 entry: a plain message, or a wrapper with its inner messages."""
    if check_crc:
        _check_crc(buf, header)
    key, value = _read_key_value(buf, header)
    if header.attributes & COMPRESSION_CODEC_MASK == 0:
        return RecordBatch(header, (Record(header.last_offset, header.max_timestamp, key, value),))
    if value is None:
        raise CorruptRecordError("compressed wrapper message has a null value", position=header.position)
    payload = decompress(header.compression, value, magic=header.magic, position=header.position,
                         limit_bytes=limit_bytes)
    return RecordBatch(header, tuple(_inner_records(payload, header, check_crc)))


def decode_legacy(data: bytes, position: int = 0) -> RecordBatch:
    """Convenience: read the entry header at ``position`` and decode it."""
    return decode_legacy_entry(data, read_header(data, position))


assert MAGIC_OFFSET == 16 and LOG_OVERHEAD == 12
assert _PREFIX.size == 18
