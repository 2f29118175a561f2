"""Shallow reading of log entries: batch headers without touching the records inside.

Theory of operation
-------------------
A Kafka log (a ``.log`` segment, a produce request's record set, a fetch response) is a plain
concatenation of *entries*. Every entry, whatever its format, starts with the same 12 bytes,
the *log overhead*::

    offset 0        8           12                16      17
           +--------+-----------+-----------------+-------+---------------------------
           | offset | size      | v0/v1: crc      | magic | ...  (format-specific)
           | int64  | int32     | v2: leaderEpoch |  int8 |
           +--------+-----------+-----------------+-------+---------------------------
           <----- LOG_OVERHEAD ----->

``size`` counts the bytes after itself, so an entry occupies ``12 + size`` bytes and the next
entry starts right after it. The magic byte sits at byte 16 in every format, which is how a
reader (Kafka's ``ByteBufferLogInputStream``) learns how to parse the rest:

* magic 2 -- a ``DefaultRecordBatch``: a 61-byte header followed by one or more records.
* magic 0 / 1 -- a ``LegacyRecord`` (one message). A compressed legacy message is a *wrapper*
  whose value holds a whole inner message set; shallowly it still counts as one entry.

Worked example: a v2 batch of 3 uncompressed records with base offset 100 whose ``size``
field reads 87 occupies 99 bytes; :func:`read_header` at position 0 returns
``BatchHeader(base_offset=100, last_offset=102, size_bytes=99, records_count=3, ...)`` and the
next entry starts at byte 99.

Shallow reading never copies the buffer and never decompresses: the storage layer uses it to
recover segments, build indexes and assign offsets. Because a v2 CRC covers only bytes
``[21, end)``, a broker can stamp ``baseOffset`` and ``partitionLeaderEpoch`` in place
(:func:`patch_base_offset`, :func:`patch_partition_leader_epoch`) without recomputing it.
"""

from __future__ import annotations

import enum
import mmap
import struct
import zlib
from collections.abc import Iterator
from typing import NamedTuple, Union

import crc32c as _crc32c

from kafkalab.errors import CorruptRecordError

Buffer = Union[bytes, bytearray, memoryview, mmap.mmap]  # any buffer-protocol object

LOG_OVERHEAD = 12  # offset int64 + size int32, common to every magic
MAGIC_OFFSET = 16  # the magic byte sits at byte 16 in v0, v1 and v2 alike

# The v2 batch header (Kafka's DefaultRecordBatch), in wire order: the one declaration of its
# layout. ``V2_HEADER`` (struct), the columnar reader's numpy dtype and the byte offsets below
# are all views of it; records/v2.py's docstring draws it.
V2_HEADER_FIELDS = (
    ("base_offset", "q"), ("batch_length", "i"), ("partition_leader_epoch", "i"), ("magic", "b"),
    ("crc", "I"), ("attributes", "h"), ("last_offset_delta", "i"), ("base_timestamp", "q"),
    ("max_timestamp", "q"), ("producer_id", "q"), ("producer_epoch", "h"),
    ("base_sequence", "i"), ("records_count", "i"),
)
V2_HEADER = struct.Struct(">" + "".join(code for _, code in V2_HEADER_FIELDS))
V2_HEADER_SIZE = 61
V2_PARTITION_LEADER_EPOCH_OFFSET = 12
V2_CRC_OFFSET = 17
V2_ATTRIBUTES_OFFSET = 21  # the v2 CRC covers [21, end)
V2_LAST_OFFSET_DELTA_OFFSET = 23
V2_BASE_TIMESTAMP_OFFSET = 27
V2_MAX_TIMESTAMP_OFFSET = 35
V2_RECORDS_COUNT_OFFSET = 57
# What the storage layer reads of every batch it scans -- baseOffset, batchLength, magic,
# lastOffsetDelta, maxTimestamp -- skipping the fields in between: the header's first 43 bytes.
V2_PREFIX = struct.Struct(">qi4xb6xi8xq")
V2_PREFIX_SIZE = V2_PREFIX.size
LEGACY_CRC_OFFSET = 12
LEGACY_TIMESTAMP_OFFSET = 18  # v1 only: after offset, size, crc, magic, attributes
LEGACY_HEADER_SIZE_V0 = LOG_OVERHEAD + 4 + 1 + 1 + 4 + 4  # crc, magic, attrs, key len, value len
LEGACY_HEADER_SIZE_V1 = LEGACY_HEADER_SIZE_V0 + 8  # + timestamp
MAGIC_VALUES = (0, 1, 2)

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
NO_TIMESTAMP = -1
INT32_MAX = 2**31 - 1

COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG_MASK = 0x10
CONTROL_FLAG_MASK = 0x20
DELETE_HORIZON_FLAG_MASK = 0x40

_LEGACY_PREFIX = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")


def _v2_offset(name: str) -> int:
    """Byte offset of a header field, computed from V2_HEADER_FIELDS."""
    names = [field for field, _ in V2_HEADER_FIELDS]
    codes = "".join(code for _, code in V2_HEADER_FIELDS[: names.index(name)])
    return struct.calcsize(">" + codes)


assert V2_HEADER.size == V2_HEADER_SIZE
assert (V2_PARTITION_LEADER_EPOCH_OFFSET, V2_CRC_OFFSET, V2_ATTRIBUTES_OFFSET,
        V2_LAST_OFFSET_DELTA_OFFSET, V2_BASE_TIMESTAMP_OFFSET, V2_MAX_TIMESTAMP_OFFSET,
        V2_RECORDS_COUNT_OFFSET, MAGIC_OFFSET) == tuple(_v2_offset(name) for name in (
            "partition_leader_epoch", "crc", "attributes", "last_offset_delta", "base_timestamp",
            "max_timestamp", "records_count", "magic"))
assert V2_PREFIX.size == V2_MAX_TIMESTAMP_OFFSET + 8


class Compression(enum.IntEnum):
    """The codec ids in the low three attribute bits (Kafka's ``CompressionType``)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


class TimestampType(enum.IntEnum):
    """Whose clock a timestamp came from (Kafka's ``TimestampType``)."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1

    @property
    def label(self) -> str:
        """The name Kafka prints, e.g. ``CreateTime``."""
        return {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}[int(self)]


# The highest codec id each magic can carry: zstd arrived with v2 only (KIP-110).
MAX_CODEC_FOR_MAGIC = {0: Compression.LZ4, 1: Compression.LZ4, 2: Compression.ZSTD}
_V2_CODEC_MAX = int(Compression.ZSTD)


class BatchHeader(NamedTuple):
    """One log entry seen shallowly: a v2 batch, or a v0/v1 message (a wrapper counts as one).

    For v0/v1 entries ``base_offset`` equals ``last_offset`` (the offset field); for a
    compressed wrapper the first inner offset is only known after decompression, and
    ``records_count`` is -1 for the same reason. Immutable; safe to share.

    A named tuple rather than a frozen dataclass: the broker builds one per appended batch,
    and a 14-field frozen dataclass costs several microseconds to construct -- a visible share
    of appending a 16 KiB batch.
    """

    position: int
    base_offset: int
    last_offset: int
    size_bytes: int
    magic: int
    crc: int
    attributes: int
    partition_leader_epoch: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def compression(self) -> Compression:
        return Compression(self.attributes & COMPRESSION_CODEC_MASK)

    @property
    def timestamp_type(self) -> TimestampType:
        if self.magic == 0:
            return TimestampType.NO_TIMESTAMP_TYPE
        if self.attributes & TIMESTAMP_TYPE_MASK:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & TRANSACTIONAL_FLAG_MASK)

    @property
    def is_control(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & CONTROL_FLAG_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & DELETE_HORIZON_FLAG_MASK)

    @property
    def delete_horizon_ms(self) -> int | None:
        """When the cleaner set the flag, baseTimestamp holds the delete horizon (KIP-534)."""
        return self.base_timestamp if self.has_delete_horizon else None

    @property
    def last_sequence(self) -> int:
        return increment_sequence(self.base_sequence, self.last_offset - self.base_offset)

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def end_position(self) -> int:
        return self.position + self.size_bytes


# Builds a BatchHeader from a ready tuple of its 14 fields, in field order, without the
# generated keyword-handling ``__new__``: ~0.2 us instead of ~0.4 us, once per appended batch.
_new_header = tuple.__new__


def increment_sequence(sequence: int, increment: int) -> int:
    """Sequence numbers wrap from INT32_MAX to 0 (Kafka's ``DefaultRecordBatch.incrementSequence``)."""
    if sequence == NO_SEQUENCE:
        return NO_SEQUENCE
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def decrement_sequence(sequence: int, decrement: int) -> int:
    """The inverse of :func:`increment_sequence` (Kafka's ``DefaultRecordBatch.decrementSequence``):
    a batch whose last sequence is 1 and offset delta 3 began at INT32_MAX - 1."""
    if sequence < decrement:
        return INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


def _entry_bounds(buf: Buffer, position: int) -> tuple[int, int]:
    """Check the 17-byte prefix of an entry; return (size_bytes, magic). Raises on corruption."""
    available = len(buf) - position
    if position < 0 or available < MAGIC_OFFSET + 1:
        raise CorruptRecordError(
            f"need {MAGIC_OFFSET + 1} bytes to read an entry prefix, {max(available, 0)} available",
            position=position,
        )
    size = _INT32.unpack_from(buf, position + 8)[0]
    magic = buf[position + MAGIC_OFFSET]
    if magic not in MAGIC_VALUES:
        raise CorruptRecordError(f"unknown magic {magic} (expected 0, 1 or 2)", position=position)
    _check_minimum_size(size, magic, position)
    return LOG_OVERHEAD + size, magic


_ENTRY_BYTES_MIN = (LEGACY_HEADER_SIZE_V0, LEGACY_HEADER_SIZE_V1, V2_HEADER_SIZE)  # by magic


def _check_minimum_size(size: int, magic: int, position: int) -> None:
    minimum = _ENTRY_BYTES_MIN[magic]
    if size < minimum - LOG_OVERHEAD:
        raise CorruptRecordError(
            f"entry size {size} is below the minimum {minimum - LOG_OVERHEAD} for magic {magic}",
            position=position,
        )


def _check_codec(attributes: int, magic: int, position: int) -> None:
    codec = attributes & COMPRESSION_CODEC_MASK
    if codec > MAX_CODEC_FOR_MAGIC[magic]:
        raise CorruptRecordError(
            f"compression codec id {codec} is not valid for magic {magic}", position=position
        )


def _read_v2(buf: Buffer, position: int) -> BatchHeader:
    """The whole 61-byte header in one unpack; the caller made sure 61 bytes are there."""
    (base_offset, size, epoch, magic, crc, attributes, last_offset_delta, base_ts, max_ts,
     producer_id, producer_epoch, base_sequence, count) = V2_HEADER.unpack_from(buf, position)
    size_bytes = LOG_OVERHEAD + size
    # One combined test on the hot path (every appended batch); the detailed checks below only
    # run to say which rule a bad header broke.
    if not (V2_HEADER_SIZE <= size_bytes <= len(buf) - position and last_offset_delta >= 0
            and count >= 0 and attributes & COMPRESSION_CODEC_MASK <= _V2_CODEC_MAX):
        _check_minimum_size(size, magic, position)
        _check_fits(buf, position, size_bytes)
        _check_codec(attributes, magic, position)
        raise CorruptRecordError(
            f"negative lastOffsetDelta {last_offset_delta} or recordsCount {count}",
            position=position,
        )
    return _new_header(BatchHeader, (
        position, base_offset, base_offset + last_offset_delta, size_bytes, magic, crc,
        attributes & 0xFFFF, epoch, base_ts, max_ts, producer_id, producer_epoch,
        base_sequence, count,
    ))


def _read_legacy(buf: Buffer, position: int, size_bytes: int) -> BatchHeader:
    offset, _size, crc, magic, attributes = _LEGACY_PREFIX.unpack_from(buf, position)
    attributes &= 0xFF
    _check_codec(attributes, magic, position)
    timestamp = NO_TIMESTAMP
    if magic == 1:
        timestamp = _INT64.unpack_from(buf, position + LEGACY_TIMESTAMP_OFFSET)[0]
    count = 1 if attributes & COMPRESSION_CODEC_MASK == 0 else -1
    return BatchHeader(
        position, offset, offset, size_bytes, magic, crc, attributes,
        NO_PARTITION_LEADER_EPOCH, timestamp, timestamp, NO_PRODUCER_ID, NO_PRODUCER_EPOCH,
        NO_SEQUENCE, count,
    )


def read_header(buf: Buffer, position: int) -> BatchHeader:
    """Read the entry starting at ``position``; the whole entry must lie inside ``buf``.

    Raises :class:`CorruptRecordError` for a short buffer, an unknown magic, a size below the
    format's minimum, an entry running past the end of ``buf`` or an invalid codec id.
    """
    if position >= 0 and len(buf) - position >= V2_HEADER_SIZE and buf[position + MAGIC_OFFSET] == 2:
        return _read_v2(buf, position)  # the common case: one unpack, no prefix pass
    size_bytes, magic = _entry_bounds(buf, position)
    _check_fits(buf, position, size_bytes)
    if magic == 2:
        return _read_v2(buf, position)
    return _read_legacy(buf, position, size_bytes)


def _check_fits(buf: Buffer, position: int, size_bytes: int) -> None:
    if position + size_bytes > len(buf):
        raise CorruptRecordError(
            f"entry of {size_bytes} bytes runs past the end of the buffer "
            f"({len(buf) - position} bytes available)",
            position=position,
        )


class HeaderWalker:
    """Iterates over the entries of a buffer shallowly; after iteration ``valid_end`` is the
    end of the last complete entry and ``remaining_bytes`` how many bytes follow it.

    Like Kafka's ``ByteBufferLogInputStream``, a trailing entry whose prefix or body is cut
    short ends the walk quietly (a fetch response may end mid-batch); an entry whose prefix is
    malformed, or larger than ``max_batch_bytes``, raises :class:`CorruptRecordError`.
    Not thread-safe; owned by one reader.
    """

    __slots__ = ("_buf", "_start", "_max_batch_bytes", "valid_end", "entries_count")

    def __init__(self, buf: Buffer, position: int = 0, *, max_batch_bytes: int | None = None):
        if position < 0 or position > len(buf):
            raise CorruptRecordError(
                f"start position {position} outside buffer of {len(buf)} bytes", position=position
            )
        self._buf = buf
        self._start = position
        self._max_batch_bytes = max_batch_bytes
        self.valid_end = position
        self.entries_count = 0

    @property
    def remaining_bytes(self) -> int:
        return len(self._buf) - self.valid_end

    def __iter__(self) -> Iterator[BatchHeader]:
        buf, position, end = self._buf, self._start, len(self._buf)
        while end - position >= LOG_OVERHEAD:
            size = _INT32.unpack_from(buf, position + 8)[0]
            if size < LEGACY_HEADER_SIZE_V0 - LOG_OVERHEAD:
                raise CorruptRecordError(
                    f"entry size {size} is below the smallest legal entry "
                    f"({LEGACY_HEADER_SIZE_V0 - LOG_OVERHEAD})",
                    position=position,
                )
            if self._max_batch_bytes is not None and size + LOG_OVERHEAD > self._max_batch_bytes:
                raise CorruptRecordError(
                    f"entry size {size + LOG_OVERHEAD} bytes exceeds the limit "
                    f"{self._max_batch_bytes} bytes",
                    position=position,
                )
            if end - position <= MAGIC_OFFSET:
                break  # partial trailing entry: not even the magic byte arrived
            size_bytes, _magic = _entry_bounds(buf, position)
            if position + size_bytes > end:
                break  # partial trailing entry
            header = read_header(buf, position)
            position = header.end_position
            self.valid_end = position
            self.entries_count += 1
            yield header


def iter_headers(
    buf: Buffer, position: int = 0, *, max_batch_bytes: int | None = None
) -> HeaderWalker:
    """Walk entries from ``position``; see :class:`HeaderWalker` for the trailing-bytes rules."""
    return HeaderWalker(buf, position, max_batch_bytes=max_batch_bytes)


def compute_crc(buf: Buffer, header: BatchHeader) -> int:
    """The CRC the entry should carry: CRC-32C over [21, end) for v2, CRC-32 over magic..end
    (bytes [16, end)) for v0/v1."""
    view = memoryview(buf)
    start = header.position + (V2_ATTRIBUTES_OFFSET if header.magic == 2 else MAGIC_OFFSET)
    body = view[start : header.end_position]
    if header.magic == 2:
        return _crc32c.crc32c(body)
    return zlib.crc32(body) & 0xFFFFFFFF


def verify_crc(buf: Buffer, header: BatchHeader) -> bool:
    """True when the stored CRC matches the bytes (Kafka's ``isValid``)."""
    return compute_crc(buf, header) == header.crc


def _require_v2(buf: Buffer, position: int, what: str) -> None:
    if len(buf) - position < V2_HEADER_SIZE or position < 0:
        raise CorruptRecordError(f"cannot patch {what}: no v2 header at this position", position=position)
    if buf[position + MAGIC_OFFSET] != 2:
        raise CorruptRecordError(
            f"cannot patch {what} of a magic {buf[position + MAGIC_OFFSET]} entry in place",
            position=position,
        )


def patch_base_offset(buf: bytearray | memoryview, position: int, base_offset: int) -> None:
    """Overwrite a v2 batch's baseOffset in place; the CRC does not cover it, so it stays valid."""
    _require_v2(buf, position, "baseOffset")
    _INT64.pack_into(buf, position, base_offset)


def patch_partition_leader_epoch(buf: bytearray | memoryview, position: int, epoch: int) -> None:
    """Overwrite a v2 batch's partitionLeaderEpoch in place (also outside the CRC)."""
    _require_v2(buf, position, "partitionLeaderEpoch")
    _INT32.pack_into(buf, position + V2_PARTITION_LEADER_EPOCH_OFFSET, epoch)
