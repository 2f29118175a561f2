"""Magic v2: ``DefaultRecordBatch`` and ``DefaultRecord``, the format Kafka writes since 0.11.

Theory of operation
-------------------
A v2 batch is a fixed 61-byte header followed by ``recordsCount`` records (compressed as one
block when the codec bits are set; the count itself stays outside the compression)::

    0  baseOffset int64         27 baseTimestamp int64    57 recordsCount int32
    8  batchLength int32        35 maxTimestamp int64     61 records ...
    12 partitionLeaderEpoch     43 producerId int64
    16 magic int8 = 2           51 producerEpoch int16
    17 crc uint32  (CRC-32C over [21, end))
    21 attributes int16         53 baseSequence int32
    23 lastOffsetDelta int32

Each record is small because everything shared lives in the batch header and the rest is
varints (see :mod:`kafkalab.records.varint`)::

    length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
    keyLength varint | key | valueLength varint | value | headerCount varint |
    (headerKeyLength varint | headerKey utf-8 | headerValueLength varint | headerValue)*

Worked example: the record ``key=b"k", value=b"v"`` at offset delta 0 and timestamp delta 0
with no headers is ``10 00 00 00 02 6b 02 76 00`` -- length 8 (zig-zag 16 = 0x10), attributes
0, two zero deltas, key length 1 (zig-zag 2), ``k``, value length 1, ``v``, 0 headers.

With LogAppendTime the broker rewrites only ``maxTimestamp`` (and the attribute bit); readers
then report that time for every record, which is why the deltas need not change. Mirrors
Kafka's ``DefaultRecordBatch`` and ``DefaultRecord``.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import crc32c as _crc32c

from kafkalab.errors import CorruptRecordError, InvalidRecordError
from kafkalab.records.compression import DECOMPRESSED_BYTES_MAX, compress, decompress
from kafkalab.records.header import (
    CONTROL_FLAG_MASK,
    DELETE_HORIZON_FLAG_MASK,
    LOG_OVERHEAD,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
    V2_ATTRIBUTES_OFFSET,
    V2_CRC_OFFSET,
    V2_HEADER,
    V2_HEADER_SIZE,
    BatchHeader,
    Compression,
    TimestampType,
    increment_sequence,
    read_header,
    verify_crc,
)
from kafkalab.records.model import Header, Record, RecordBatch
from kafkalab.records.varint import encode_varint, encode_varlong, read_varint, read_varlong

_UINT32 = struct.Struct(">I")


# ----------------------------------------------------------------------------- encode


_NULL_LENGTH = encode_varint(-1)  # a null key, value or header value


def _encode_bytes(data: bytes | None) -> bytes:
    if data is None:
        return _NULL_LENGTH
    return encode_varint(len(data)) + data


def encode_record(offset_delta: int, timestamp_delta: int, key: bytes | None,
                  value: bytes | None, headers: Sequence[Header] = ()) -> bytes:
    """One ``DefaultRecord``, length prefix included. (A producer calls this once per record,
    so the key and value are framed inline rather than through :func:`_encode_bytes`.)"""
    parts = [b"\x00", encode_varlong(timestamp_delta), encode_varint(offset_delta),
             _NULL_LENGTH if key is None else encode_varint(len(key)) + key,
             _NULL_LENGTH if value is None else encode_varint(len(value)) + value,
             encode_varint(len(headers)) if headers else b"\x00"]
    for header in headers:
        parts.append(_encode_bytes(header.key.encode("utf-8")))
        parts.append(_encode_bytes(header.value))
    body = b"".join(parts)
    return encode_varint(len(body)) + body


def _attributes(compression: Compression, timestamp_type: TimestampType, is_transactional: bool,
                is_control: bool, has_delete_horizon: bool) -> int:
    attributes = int(compression)
    if timestamp_type is TimestampType.LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    if is_transactional:
        attributes |= TRANSACTIONAL_FLAG_MASK
    if is_control:
        attributes |= CONTROL_FLAG_MASK
    if has_delete_horizon:
        attributes |= DELETE_HORIZON_FLAG_MASK
    return attributes


def _check_offsets(records: Sequence[Record], base_offset: int) -> None:
    previous = base_offset - 1
    for record in records:
        if record.offset <= previous:
            raise InvalidRecordError(
                f"record offsets must increase from base offset {base_offset}: "
                f"{record.offset} follows {previous}"
            )
        previous = record.offset


def build_v2_batch(
    records: Sequence[Record], *, base_offset: int | None = None,
    compression: Compression = Compression.NONE,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    log_append_time_ms: int | None = None, producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH, base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False, is_control: bool = False,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH, delete_horizon_ms: int | None = None,
) -> bytes:
    """Encode one v2 batch (mirrors Kafka's ``MemoryRecordsBuilder`` for magic 2).

    Record offsets are absolute; ``base_offset`` defaults to the first record's offset.
    ``baseTimestamp`` is the first record's timestamp, or the delete horizon when one is set.
    """
    if base_offset is None:
        base_offset = records[0].offset if records else 0
    _check_offsets(records, base_offset)
    compression = Compression(compression)
    timestamp_type = TimestampType(timestamp_type)
    if delete_horizon_ms is not None:
        base_timestamp = delete_horizon_ms
    else:
        base_timestamp = records[0].timestamp if records else NO_TIMESTAMP
    body = b"".join(
        encode_record(r.offset - base_offset, r.timestamp - base_timestamp, r.key, r.value, r.headers)
        for r in records
    )
    if timestamp_type is TimestampType.LOG_APPEND_TIME:
        if log_append_time_ms is None:
            raise InvalidRecordError("LogAppendTime batches need log_append_time_ms")
        max_timestamp = log_append_time_ms
    else:
        max_timestamp = max((r.timestamp for r in records), default=NO_TIMESTAMP)
    last_offset_delta = records[-1].offset - base_offset if records else 0
    attributes = _attributes(compression, timestamp_type, is_transactional, is_control,
                             delete_horizon_ms is not None)
    return seal_v2_batch(body, len(records), base_offset=base_offset, last_offset_delta=last_offset_delta,
                         base_timestamp=base_timestamp, max_timestamp=max_timestamp, attributes=attributes,
                         producer_id=producer_id, producer_epoch=producer_epoch,
                         base_sequence=base_sequence, partition_leader_epoch=partition_leader_epoch)


def seal_v2_batch(body: bytes, count: int, *, base_offset: int, last_offset_delta: int, base_timestamp: int,
                  max_timestamp: int, attributes: int, producer_id: int = NO_PRODUCER_ID,
                  producer_epoch: int = NO_PRODUCER_EPOCH, base_sequence: int = NO_SEQUENCE,
                  partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH) -> bytes:
    """Put the 61-byte header (and the CRC) in front of ``count`` records already encoded with
    :func:`encode_record`, compressing them first when ``attributes`` names a codec. A producer
    encodes each record once, as it is appended, and seals the batch when it is sent."""
    compression = Compression(attributes & 0x07)
    if compression is not Compression.NONE:
        body = compress(compression, body, magic=2)
    header = bytearray(V2_HEADER.pack(
        base_offset, V2_HEADER_SIZE - LOG_OVERHEAD + len(body), partition_leader_epoch, 2, 0,
        attributes, last_offset_delta, base_timestamp, max_timestamp, producer_id,
        producer_epoch, base_sequence, count,
    ))
    crc = _crc32c.crc32c(body, _crc32c.crc32c(bytes(header[V2_ATTRIBUTES_OFFSET:])))
    _UINT32.pack_into(header, V2_CRC_OFFSET, crc)
    return bytes(header) + body


# ----------------------------------------------------------------------------- decode


def _read_bytes(buf, position: int, end: int, what: str) -> tuple[bytes | None, int]:
    length, position = read_varint(buf, position, end)
    if length == -1:
        return None, position
    if length < 0 or position + length > end:
        raise CorruptRecordError(
            f"{what} length {length} invalid with {end - position} bytes left in the record",
            position=position,
        )
    return bytes(buf[position : position + length]), position + length


def _read_headers(buf, position: int, end: int) -> tuple[tuple[Header, ...], int]:
    count, position = read_varint(buf, position, end)
    if count < 0:
        raise CorruptRecordError(f"negative header count {count}", position=position)
    headers = []
    for _ in range(count):  # each header consumes at least two bytes or raises: bounded by end
        key_length, _ = read_varint(buf, position, end)
        if key_length < 0:
            raise CorruptRecordError(f"negative header key length {key_length}", position=position)
        key, position = _read_bytes(buf, position, end, "header key")
        value, position = _read_bytes(buf, position, end, "header value")
        try:
            headers.append(Header(key.decode("utf-8"), value))  # type: ignore[union-attr]
        except UnicodeDecodeError:
            raise CorruptRecordError("header key is not valid UTF-8", position=position) from None
    return tuple(headers), position


def read_record(buf, position: int, end: int, batch: BatchHeader) -> tuple[Record, int]:
    """Decode the record at ``position`` of a record region ending at ``end``."""
    length, body = read_varint(buf, position, end)
    if length < 1 or body + length > end:
        raise CorruptRecordError(
            f"record length {length} invalid with {end - body} bytes left in the batch",
            position=position,
        )
    record_end = body + length
    timestamp_delta, cursor = read_varlong(buf, body + 1, record_end)  # skip attributes int8
    offset_delta, cursor = read_varint(buf, cursor, record_end)
    key, cursor = _read_bytes(buf, cursor, record_end, "key")
    value, cursor = _read_bytes(buf, cursor, record_end, "value")
    headers, cursor = _read_headers(buf, cursor, record_end)
    if cursor != record_end:
        raise CorruptRecordError(
            f"record declared {length} bytes but its fields used {cursor - body}", position=position
        )
    if batch.timestamp_type is TimestampType.LOG_APPEND_TIME:
        timestamp = batch.max_timestamp
    else:
        timestamp = batch.base_timestamp + timestamp_delta
    # Like Kafka's DefaultRecord: only a non-negative base sequence gives records sequences.
    sequence = increment_sequence(batch.base_sequence, offset_delta) if batch.base_sequence >= 0 else NO_SEQUENCE
    record = Record(batch.base_offset + offset_delta, timestamp, key, value, headers, sequence)
    return record, record_end


def records_region(buf, header: BatchHeader, *, limit_bytes: int = DECOMPRESSED_BYTES_MAX):
    """The uncompressed record bytes of a v2 batch: a zero-copy view, or the decompressed block."""
    view = memoryview(buf)[header.position + V2_HEADER_SIZE : header.end_position]
    if header.compression is Compression.NONE:
        return view
    return decompress(header.compression, view, magic=2, position=header.position,
                      limit_bytes=limit_bytes)


def decode_v2_batch(buf, header: BatchHeader, *, check_crc: bool = True,
                    limit_bytes: int = DECOMPRESSED_BYTES_MAX) -> RecordBatch:
    """Decode every record of the v2 batch described by ``header``."""
    if check_crc and not verify_crc(buf, header):
        raise CorruptRecordError(f"CRC mismatch: stored {header.crc:#010x}", position=header.position)
    if header.compression is Compression.NONE:  # positions in errors are then buffer positions
        region, cursor, end = buf, header.position + V2_HEADER_SIZE, header.end_position
    else:
        region = records_region(buf, header, limit_bytes=limit_bytes)
        cursor, end = 0, len(region)
    records: list[Record] = []
    for _ in range(header.records_count):
        if cursor >= end:
            raise CorruptRecordError(
                f"batch declares {header.records_count} records but holds {len(records)}",
                position=header.position,
            )
        record, cursor = read_record(region, cursor, end, header)
        records.append(record)
    if cursor != end:
        raise CorruptRecordError(
            f"{end - cursor} bytes left after the batch's {header.records_count} records",
            position=header.position,
        )
    return RecordBatch(header, tuple(records))


def decode_v2(data: bytes, position: int = 0) -> RecordBatch:
    """Convenience: read the header at ``position`` and decode the batch."""
    return decode_v2_batch(data, read_header(data, position))
