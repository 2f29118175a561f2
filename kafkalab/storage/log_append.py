"""Validating a produce request's batches and assigning their offsets (Kafka's ``LogValidator``).

A producer sends complete v2 batches with ``baseOffset`` 0; the leader decides where they go.
Because the v2 CRC covers only bytes ``[21, end)`` -- attributes onwards -- the leader can write
``baseOffset`` (bytes 0-7) and ``partitionLeaderEpoch`` (bytes 12-15) in place and the CRC the
producer computed stays valid: the broker never recomputes it on the common path::

    0        8      12       16   17    21
    [baseOff][length][epoch ][m][crc ][attributes ... records]   CRC-32C over [21, end)
     patched          patched                 covered by the CRC

``LogAppendTime`` is the exception. Then the broker overwrites the timestamp-type bit in
``attributes`` and ``maxTimestamp`` (bytes 35-42) with its own clock; both sit *inside* the
CRC'd range, so the CRC must be recomputed for that batch.

Worked example: the log end offset is 100 and a request holds two batches with
``lastOffsetDelta`` 4 and 9. They become offsets 100..104 and 105..114; ``LogAppendInfo``
reports ``first_offset=100, last_offset=114``.

Checks, each raising a typed error with Kafka's code: entry framing and CRC
(``CORRUPT_MESSAGE``), batch size over ``max.message.bytes`` (``MESSAGE_TOO_LARGE``), count and
offset range disagreeing (``INVALID_RECORD``), magic 0/1 from a client
(``UNSUPPORTED_FOR_MESSAGE_FORMAT``: Kafka 4 writes magic 2 only, KIP-724), for follower
appends offsets that do not increase (``INVALID_RECORD``), a CreateTime record outside
``[now - message.timestamp.before.max.ms, now + message.timestamp.after.max.ms]``
(``INVALID_TIMESTAMP``; see :func:`check_records`), a producer's batch claiming LogAppendTime
where the broker would have to take that claim on trust (``INVALID_TIMESTAMP``; see
:func:`check_timestamp_types`), and on a compacted topic a record
without a key (``INVALID_RECORD``: the cleaner keeps the latest record *per key*, so a keyless
record could never be compacted away). Only that last rule needs the records themselves; the
others read batch headers. So only compacted topics pay for walking every record, as in Kafka,
whose validator walks them for every topic.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, NamedTuple

import crc32c

from kafkalab.errors import (
    CorruptRecordError,
    ErrorCode,
    InvalidRecordError,
    InvalidTimestampError,
    RecordTooLargeError,
    UnsupportedForMessageFormatError,
)
from kafkalab.records.header import (
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    V2_ATTRIBUTES_OFFSET,
    V2_CRC_OFFSET,
    V2_HEADER,
    V2_HEADER_SIZE,
    V2_MAX_TIMESTAMP_OFFSET,
    BatchHeader,
    Compression,
    _new_header,
    read_header,
    verify_crc,
)
from kafkalab.records.varint import read_varint, read_varlong

if TYPE_CHECKING:
    from kafkalab.records.columnar import RecordColumns
    from kafkalab.storage.log_config import LogConfig

_BASE_AND_LENGTH_AND_EPOCH = struct.Struct(">qii")
_ATTRIBUTES = struct.Struct(">h")
_INT64 = struct.Struct(">q")
_UINT32 = struct.Struct(">I")
NO_TIMESTAMP = -1
# Up to this many records, check_records decodes them in Python: the compiled columnar decoder's
# set-up (a dozen numpy arrays) costs more than decoding a few records one by one.
FEW_RECORDS_MAX = 8
# Attributes of a plain batch: a valid codec and no flag (timestamp type, transactional, control,
# delete horizon). Read as a signed int16, any flag above bit 2 makes the value larger.
_CODEC_MAX = int(Compression.ZSTD)


class LogAppendInfo(NamedTuple):
    """What an append did (Kafka's ``LogAppendInfo``). Immutable.

    A named tuple rather than a frozen dataclass because one is built per produce request on
    the hottest path of the broker, and a tuple is several times cheaper to build.

    ``offset_of_max_timestamp`` is Kafka's ``shallowOffsetOfMaxTimestamp``: the *last offset of
    the batch* holding the largest timestamp (the first such batch), -1 when no record has a
    timestamp, and under LogAppendTime the last offset of the append, compressed or not. Kafka
    keeps it per batch on every path (KAFKA-16310) because a follower's append and segment
    recovery read only batch headers; the record itself is found when ListOffsets asks for
    it (:meth:`Log.offset_for_timestamp` with -3).
    """

    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    log_append_time_ms: int
    log_start_offset: int
    valid_bytes: int
    records_count: int
    batches_count: int


_new_info = tuple.__new__  # a LogAppendInfo from its fields in order, as records.header._new_header


def _crc_ok(records: bytes | bytearray | memoryview, header: BatchHeader) -> bool:
    if header.magic == 2:
        start = header.position + V2_ATTRIBUTES_OFFSET
        return crc32c.crc32c(memoryview(records)[start : header.end_position]) == header.crc
    return verify_crc(records, read_header(records, header.position))


def analyze(
    records: bytes | bytearray | memoryview, *, max_message_bytes: int, as_leader: bool
) -> list[BatchHeader]:
    """Walk and check every entry; return their headers. Nothing is modified."""
    headers = []
    position, end = 0, len(records)
    previous_last = -1
    while position < end:  # every entry is >= 26 bytes: at most len/26 steps
        if end - position < LOG_OVERHEAD:
            raise CorruptRecordError(f"{end - position} bytes after the last complete batch", position=position)
        header = read_header(records, position)
        _check_batch(records, header, max_message_bytes, as_leader)
        if not as_leader and header.base_offset <= previous_last:
            raise InvalidRecordError(
                f"out of order offsets: batch at byte {header.position} starts at "
                f"{header.base_offset}, not after {previous_last}"
            )
        previous_last = header.last_offset
        headers.append(header)
        position += header.size_bytes
    if not headers:
        raise InvalidRecordError("an append must carry at least one record batch")
    return headers


def analyze_and_assign(
    records: bytes | bytearray | memoryview, *, next_offset: int, leader_epoch: int, max_message_bytes: int
) -> list[BatchHeader]:
    """The leader's pass: check every batch and return its header *as it will be written*,
    with offsets from ``next_offset`` and the leader epoch. Nothing is modified yet, so a bad
    batch anywhere rejects the whole append.

    Each batch's header is read once (one ``unpack_from``) and its CRC computed once, over a
    memoryview of the request, without copying it.
    """
    headers = []
    view = memoryview(records)
    position, end = 0, len(records)
    while position < end:  # every entry is >= 26 bytes: at most len/26 steps
        if end - position < LOG_OVERHEAD:
            raise CorruptRecordError(f"{end - position} bytes after the last complete batch", position=position)
        header = read_header(records, position)
        count, next_position = header.records_count, position + header.size_bytes
        # The common case in one test; _check_batch names the rule a bad batch broke.
        if not (header.magic == 2 and 0 < count == header.last_offset - header.base_offset + 1
                and header.size_bytes <= max_message_bytes
                and crc32c.crc32c(view[position + V2_ATTRIBUTES_OFFSET : next_position]) == header.crc):
            _check_batch(records, header, max_message_bytes, as_leader=True)
        headers.append(_rebased(header, next_offset, leader_epoch))
        next_offset += count
        position = next_position
    if not headers:
        raise InvalidRecordError("an append must carry at least one record batch")
    return headers


def assign_plain_batch(
    buf: bytearray | memoryview, next_offset: int, leader_epoch: int, now_ms: int, config: LogConfig,
    log_start_offset: int,
) -> LogAppendInfo | None:
    """The leader's pass for the common produce request, in one function: ``buf`` (writable)
    is exactly one v2 batch from a plain producer (producer id -1, no attribute flag set but
    the codec) for a CreateTime topic, and it passes every rule the general path applies --
    size against ``max.message.bytes`` and ``segment.bytes``, record count against the offset
    range, CRC, and the CreateTime bounds when the batch's ``maxTimestamp`` settles them
    (``message.timestamp.before.max.ms`` at its default, never). Then the base offset and
    leader epoch are written into ``buf`` and the append's info returned, as
    :func:`analyze_and_assign`, :func:`stamp` and :func:`summarize` would.

    A compacted topic's batch takes the path too when it is uncompressed and holds at most
    ``FEW_RECORDS_MAX`` records without headers that decode cleanly and all carry a key --
    what the general path's :func:`check_records` would decode and demand of it. That is every
    write of a group or transaction coordinator (one OffsetCommit record, one
    ``__transaction_state`` record).

    Anything else returns None with ``buf`` untouched: several batches, an idempotent or
    transactional batch, a LogAppendTime claim, a LogAppendTime topic, a compressed or larger
    batch for a compacted topic, a record timestamp that needs decoding, or a batch breaking a
    rule -- the general path then decides, and names the broken rule in its typed error.
    Worked example: a 16 KiB batch of 163 records, lastOffsetDelta 162, at LEO 1000 becomes
    offsets 1000..1162 with one ``unpack``, one CRC and one ``pack_into``.
    """
    size_bytes = len(buf)
    if size_bytes < V2_HEADER_SIZE or config.log_append_time:
        return None
    (_base, length, _epoch, magic, crc, attributes, delta, _base_ts, max_ts, producer_id, _producer_epoch,
     _sequence, count) = V2_HEADER.unpack_from(buf, 0)
    if not (length + LOG_OVERHEAD == size_bytes and magic == 2 and 0 <= attributes <= _CODEC_MAX
            and producer_id < 0 and 0 < count == delta + 1
            and size_bytes <= config.max_message_bytes and size_bytes <= config.segment_bytes
            and now_ms <= config.message_timestamp_before_max_ms
            and max_ts <= now_ms + config.message_timestamp_after_max_ms
            and crc32c.crc32c(memoryview(buf)[V2_ATTRIBUTES_OFFSET:]) == crc):
        return None
    if config.compacted and not (attributes == 0 and count <= FEW_RECORDS_MAX and _all_keyed(buf, count)):
        return None
    _BASE_AND_LENGTH_AND_EPOCH.pack_into(buf, 0, next_offset, length, leader_epoch)
    last_offset = next_offset + delta
    return _new_info(LogAppendInfo, (
        next_offset, last_offset, max_ts, last_offset if max_ts > NO_TIMESTAMP else -1, NO_TIMESTAMP,
        log_start_offset, size_bytes, count, 1,
    ))


def _all_keyed(buf: bytearray | memoryview, count: int) -> bool:
    """Do the ``count`` records of the one uncompressed batch in ``buf`` decode, every one with
    a key and without headers? Each record's framing is walked as
    :func:`~kafkalab.records.v2.read_record` reads it (lengths within the record, the fields
    filling it exactly, no bytes after the last), so True means :func:`_check_few` would
    decode the batch and find every key; False leaves the general path to decide. A record
    with headers is left to it too: the decoder checks their keys' UTF-8. Worked example: the
    OffsetCommit record ``5e 00 00 00 22 <17-byte key> 30 <24-byte value> 00`` has length 47,
    key length 17, value length 24 and no headers."""
    position, end = V2_HEADER_SIZE, len(buf)
    try:
        for _ in range(count):
            if position >= end:
                return False
            length, body = read_varint(buf, position, end)
            record_end = body + length
            if length < 1 or record_end > end:
                return False
            _timestamp_delta, cursor = read_varlong(buf, body + 1, record_end)  # after attributes
            _offset_delta, cursor = read_varint(buf, cursor, record_end)
            key_length, cursor = read_varint(buf, cursor, record_end)
            if key_length < 0 or cursor + key_length > record_end:  # a null key, or no room
                return False
            value_length, cursor = read_varint(buf, cursor + key_length, record_end)
            if value_length < -1 or cursor + value_length > record_end:
                return False
            header_count, cursor = read_varint(buf, cursor + max(value_length, 0), record_end)
            if header_count != 0 or cursor != record_end:
                return False
            position = record_end
    except CorruptRecordError:  # a varint running past its region, or too long
        return False
    return position == end


def check_records(
    records: bytes | bytearray | memoryview, headers: list[BatchHeader], *, now_ms: int,
    timestamp_bounds_ms: tuple[int, int] | None, keys_required: bool,
) -> None:
    """The rules that look inside batches, with the records decoded at most once.

    * ``keys_required`` (a compacted topic): a record with a null key is INVALID_RECORD.
    * ``timestamp_bounds_ms`` = (``message.timestamp.before.max.ms``, ``after.max.ms``) for a
      CreateTime topic (KIP-937): a record outside ``[now - before, now + after]`` is
      INVALID_TIMESTAMP; records without a timestamp (-1) pass. The upper bound needs only each
      batch's ``maxTimestamp``; the lower needs every record, so records are decoded for it only
      when it is above zero (``before.max.ms`` defaults to "never", Long.MAX_VALUE) or when a
      batch already breaks the upper bound and the culprit must be named.

    Null keys are reported before timestamps, in Kafka's order. The CRCs were already checked by
    :func:`analyze_and_assign`, so the compiled columnar decoder skips them.
    """
    bounds = None
    if timestamp_bounds_ms is not None:
        before_max_ms, after_max_ms = timestamp_bounds_ms
        bounds = now_ms - before_max_ms, now_ms + after_max_ms
        if bounds[0] <= 0 and _all_below(headers, bounds[1]):
            bounds = None  # the common case: one comparison per batch
    if not keys_required and bounds is None:
        return
    if sum(header.records_count for header in headers) <= FEW_RECORDS_MAX:
        _check_few(records, headers, keys_required, bounds)
        return
    from kafkalab.records.columnar import decode_columns  # numba: imported only when needed

    columns = decode_columns(records, check_crc=False)
    if keys_required:
        _require_keys(columns)
    if bounds is not None:
        _check_timestamps(columns, *bounds)


def check_timestamp_types(headers: list[BatchHeader], *, log_append_time: bool) -> None:
    """Only the broker may set a batch's LogAppendTime bit (attributes bit 3); mirrors the type
    rule of Kafka's ``LogValidator.validateTimestamp``.

    Every record of a LogAppendTime batch reads the batch's ``maxTimestamp`` as its timestamp.
    On a LogAppendTime topic the broker overwrites that value, so a producer claiming the type
    is refused. On a CreateTime topic the claimed value is checked like any CreateTime (and
    :func:`stamp` clears the bit, as Kafka rewrites the type); only a claim with no timestamp
    at all (-1) is refused, since the record would then carry none. Worked example: on a
    CreateTime topic, a batch with attributes 0x0008 and maxTimestamp -1 is INVALID_TIMESTAMP;
    with maxTimestamp 1700000000000 it is stored as a CreateTime batch.
    """
    for header in headers:
        if header.attributes & TIMESTAMP_TYPE_MASK and (log_append_time or header.max_timestamp == NO_TIMESTAMP):
            raise InvalidTimestampError(
                f"Invalid timestamp type in the record batch at byte {header.position} (offsets "
                f"{header.base_offset}..{header.last_offset}, max timestamp {header.max_timestamp}). "
                "Producer should not set timestamp type to LogAppendTime."
            )


def _all_below(headers: list[BatchHeader], upper_ms: int) -> bool:
    for header in headers:
        if header.max_timestamp > upper_ms:
            return False
    return True


def _check_few(records: bytes | bytearray | memoryview, headers: list[BatchHeader], keys_required: bool,
               bounds: tuple[int, int] | None) -> None:
    """:func:`check_records` for a handful of records (a coordinator's one-record commit), decoded
    one by one: the same rules and messages, without the compiled decoder's fixed set-up cost.
    Offsets are named as the batch carries them (the producer's, not yet the assigned ones)."""
    from kafkalab.records.codec import decode_batch

    # (record's offset delta, record) per batch header
    batches = [(header, [(r.offset - b.header.base_offset, r) for r in b.records])
               for header in headers for b in [decode_batch(records, header, check_crc=False)]]
    for header, deltas in batches if keys_required else ():
        for delta, record in deltas:
            if record.key is None:
                raise InvalidRecordError(
                    f"Compacted topic cannot accept message without key: record {delta} of the batch "
                    f"at byte {header.position} has a null key")
    if bounds is None:
        return
    lower, upper = bounds
    for header, deltas in batches:
        for delta, record in deltas:
            if record.timestamp != NO_TIMESTAMP and not lower <= record.timestamp <= upper:
                raise InvalidTimestampError(
                    f"Timestamp {record.timestamp} of message with offset "
                    f"{_INT64.unpack_from(records, header.position)[0] + delta} is out "
                    f"of range. The timestamp should be within [{lower}, {upper}]")


def _check_timestamps(columns: RecordColumns, lower: int, upper: int) -> None:
    stamped = columns.timestamp != NO_TIMESTAMP
    bad = stamped & ((columns.timestamp < lower) | (columns.timestamp > upper))
    if bad.any():
        index = int(bad.argmax())
        raise InvalidTimestampError(
            f"Timestamp {int(columns.timestamp[index])} of message with offset {int(columns.offset[index])} "
            f"is out of range. The timestamp should be within [{lower}, {upper}]"
        )


def _require_keys(columns: RecordColumns) -> None:
    keyless = columns.key_length < 0
    if keyless.any():
        index = int(keyless.argmax())
        batch = columns.batches[int(columns.batch_index[index])]
        raise InvalidRecordError(
            f"Compacted topic cannot accept message without key: record "
            f"{int(columns.offset[index]) - batch.base_offset} of the batch at byte {batch.position} "
            f"has a null key"
        )


def _check_batch(
    records: bytes | bytearray | memoryview, header: BatchHeader, max_message_bytes: int, as_leader: bool
) -> None:
    if as_leader and header.magic != 2:
        raise UnsupportedForMessageFormatError(
            f"entry at byte {header.position} has magic {header.magic}; this log accepts only "
            "magic 2 (record batch v2) from producers"
        )
    if header.size_bytes > max_message_bytes:
        raise RecordTooLargeError(
            f"batch at byte {header.position} is {header.size_bytes} bytes, larger than "
            f"max.message.bytes={max_message_bytes}"
        )
    if not _crc_ok(records, header):
        raise CorruptRecordError(f"CRC mismatch in the batch (stored 0x{header.crc:08x})", position=header.position)
    if header.magic == 2:
        span = header.last_offset - header.base_offset + 1
        if header.records_count <= 0 or (as_leader and span != header.records_count):
            raise InvalidRecordError(
                f"batch at byte {header.position} covers offsets [{header.base_offset}, "
                f"{header.last_offset}] but reports {header.records_count} records"
            )


def check_segment_fit(size_bytes: int, segment_bytes: int) -> None:
    """A whole append must fit in one empty segment (Kafka's ``RecordBatchTooLargeException``)."""
    if size_bytes > segment_bytes:
        raise RecordTooLargeError(
            f"append of {size_bytes} bytes exceeds segment.bytes={segment_bytes}",
            error_code=ErrorCode.RECORD_LIST_TOO_LARGE,
        )


def stamp(
    buf: bytearray | memoryview, headers: list[BatchHeader], log_append_time_ms: int | None
) -> list[BatchHeader]:
    """Write each header's base offset and leader epoch into ``buf`` (writable: a copy of the
    request, or the request frame itself) in place; with ``LogAppendTime`` also the broker's
    timestamp and a fresh CRC. On a CreateTime topic a batch that claimed LogAppendTime (and
    passed :func:`check_timestamp_types`) becomes CreateTime, keeping its max timestamp, as
    Kafka's ``setMaxTimestamp`` does. Returns the headers of ``buf`` as written."""
    for header in headers:
        _BASE_AND_LENGTH_AND_EPOCH.pack_into(
            buf, header.position, header.base_offset, header.size_bytes - LOG_OVERHEAD,
            header.partition_leader_epoch,
        )
    if log_append_time_ms is None:
        claimed = [h for h in headers if h.attributes & TIMESTAMP_TYPE_MASK]
        for header in claimed:
            _restamp(buf, header, header.attributes & ~TIMESTAMP_TYPE_MASK, header.max_timestamp)
        return [read_header(buf, h.position) for h in headers] if claimed else headers
    for header in headers:
        _restamp(buf, header, header.attributes | TIMESTAMP_TYPE_MASK, log_append_time_ms)
    return [read_header(buf, header.position) for header in headers]


def _restamp(buf: bytearray | memoryview, header: BatchHeader, attributes: int, max_timestamp: int) -> None:
    # Both fields are inside the CRC'd range [21, end): the CRC must be recomputed.
    _ATTRIBUTES.pack_into(buf, header.position + V2_ATTRIBUTES_OFFSET, attributes)
    _INT64.pack_into(buf, header.position + V2_MAX_TIMESTAMP_OFFSET, max_timestamp)
    crc = crc32c.crc32c(memoryview(buf)[header.position + V2_ATTRIBUTES_OFFSET : header.end_position])
    _UINT32.pack_into(buf, header.position + V2_CRC_OFFSET, crc)


def _rebased(h: BatchHeader, base_offset: int, leader_epoch: int) -> BatchHeader:
    # Built from a tuple of the fields (see records.header._new_header): NamedTuple._replace
    # costs six times as much, and this runs once per appended batch.
    return _new_header(BatchHeader, (
        h.position, base_offset, base_offset + (h.last_offset - h.base_offset), h.size_bytes,
        h.magic, h.crc, h.attributes, leader_epoch, h.base_timestamp, h.max_timestamp,
        h.producer_id, h.producer_epoch, h.base_sequence, h.records_count,
    ))


def summarize(
    headers: list[BatchHeader], log_append_time_ms: int, log_start_offset: int
) -> LogAppendInfo:
    first, last = headers[0], headers[-1]
    max_ts, offset_of_max, records = NO_TIMESTAMP, -1, 0
    for header in headers:
        if header.max_timestamp > max_ts:
            max_ts, offset_of_max = header.max_timestamp, header.last_offset
        records += max(header.records_count, 1)  # a legacy wrapper's count is unknown (-1)
    if log_append_time_ms != NO_TIMESTAMP:
        offset_of_max = last.last_offset  # every batch carries the same stamp (LogValidator)
    return _new_info(LogAppendInfo, (
        first.base_offset, last.last_offset, max_ts, offset_of_max, log_append_time_ms,
        log_start_offset, last.position + last.size_bytes - first.position, records, len(headers),
    ))
