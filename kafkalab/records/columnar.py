"""A fast path: many v2 batches decoded into numpy columns (and encoded from them) with numba.

Theory of operation
-------------------
The reference decoder (:mod:`kafkalab.records.v2`) builds one Python object per record, which
caps it near half a million records per second. Analytics (the Spark data source, the large-log
labs) want columns instead: one int64 array of offsets, one of timestamps, and for keys and
values a *start* and *length* into a single byte buffer -- no per-record objects at all::

    data      |hdr|rec0 k v|rec1 k v|...|hdr|rec0 ...        (the log bytes, uncopied)
    offset     [  0,   1, ...,  17, ...]
    key_start  [ 66, 109, ...]     key_length [3, 3, ..., -1 (null)]
    value_start[ 69, 112, ...]     value_length [100, 100, ...]
    batch_index[  0,   0, ...,   1, ...]

:func:`decode_columns` walks the batch headers in Python (cheap: one per ~16 KiB), checks each
CRC with the C CRC-32C, decompresses compressed batches into an appended buffer, and hands the
record regions to one compiled kernel that parses every varint. The kernel validates exactly
what the reference decoder validates and reports the first violation as an error code and byte
position, which becomes a :class:`CorruptRecordError`. Allocation is bounded by the bytes
present: a record takes at least 7 bytes, so a batch claiming more records than
``region_bytes / 7`` is rejected before anything is sized by its count.

Worked example: 1,000,000 records of 100-byte values in 16 KiB batches are ~7,600 batches; the
Python side does 7,600 header reads and CRCs, the kernel the rest. Only magic 2 is handled here;
older magics go through the reference decoder.

Two helpers serve batch-level analytics and Arrow: :func:`scan_entries` finds every entry of a
segment in one compiled walk along the ``batchLength`` fields and :func:`decode_v2_headers`
reads all their 61-byte headers with one structured numpy view (no object per batch);
:func:`header_spans` lists record headers as spans of ``data``. The encoder has a span form too
(:func:`encode_spans`): keys and values given as start/length into shared buffers, so a
generator never builds a Python ``bytes`` per record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import crc32c as _crc32c
import numpy as np
from numba import njit

from kafkalab.errors import CorruptRecordError, InvalidRecordError
from kafkalab.records.compression import DECOMPRESSED_BYTES_MAX, decompress
from kafkalab.records.header import (
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    NO_SEQUENCE,
    V2_ATTRIBUTES_OFFSET,
    V2_CRC_OFFSET,
    V2_HEADER_FIELDS,
    V2_HEADER_SIZE,
    BatchHeader,
    Compression,
    TimestampType,
    increment_sequence,
    iter_headers,
    verify_crc,
)
from kafkalab.records.model import Header, Record
from kafkalab.records.v2 import _read_headers

RECORD_BYTES_MIN = 7  # length, attributes, two deltas, key length, value length, header count
BATCH_BYTES_DEFAULT = 16 * 1024  # the producer's batch.size default
_ERRORS = {
    1: "record length invalid for its batch",
    2: "varint longer than 5 bytes or past its record",
    3: "key length invalid",
    4: "value length invalid",
    5: "header count or header length invalid",
    6: "record fields do not fill the declared record length",
    7: "batch holds fewer records than recordsCount",
    8: "bytes left after the batch's records",
}


@dataclass(frozen=True, slots=True)
class RecordColumns:
    """Decoded records as columns; key/value/header spans index into ``data``.

    A length of -1 means null. ``batches[batch_index[i]]`` is record i's batch header.
    Immutable by convention (numpy arrays are not frozen); owned by the caller.
    """

    data: np.ndarray
    offset: np.ndarray
    timestamp: np.ndarray
    key_start: np.ndarray
    key_length: np.ndarray
    value_start: np.ndarray
    value_length: np.ndarray
    headers_start: np.ndarray
    headers_count: np.ndarray
    batch_index: np.ndarray
    batches: tuple[BatchHeader, ...]

    def __len__(self) -> int:
        return len(self.offset)

    def _span(self, start: int, length: int) -> bytes | None:
        return None if length < 0 else self.data[start : start + length].tobytes()

    def headers_of(self, i: int) -> tuple[Header, ...]:
        if self.headers_count[i] == 0:
            return ()
        headers, _ = _read_headers(memoryview(self.data.data), int(self.headers_start[i]), len(self.data))
        return headers

    def to_records(self) -> list[Record]:
        """Materialise :class:`Record` objects (for small results and for tests)."""
        out = []
        for i in range(len(self)):
            batch = self.batches[self.batch_index[i]]
            sequence = NO_SEQUENCE
            if batch.base_sequence >= 0:
                sequence = increment_sequence(batch.base_sequence, int(self.offset[i]) - batch.base_offset)
            out.append(Record(int(self.offset[i]), int(self.timestamp[i]),
                              self._span(int(self.key_start[i]), int(self.key_length[i])),
                              self._span(int(self.value_start[i]), int(self.value_length[i])),
                              self.headers_of(i), sequence))
        return out


@njit(cache=True)
def _varint(data, pos, end):  # pragma: no cover - compiled
    raw = np.uint64(0)
    shift = 0
    for i in range(5):
        if pos + i >= end:
            return 0, -1
        byte = data[pos + i]
        raw |= np.uint64(byte & 0x7F) << np.uint64(shift)
        if byte < 0x80:
            raw &= np.uint64(0xFFFFFFFF)
            value = np.int64(raw >> np.uint64(1)) ^ -np.int64(raw & np.uint64(1))
            return value, pos + i + 1
        shift += 7
    return 0, -1


@njit(cache=True)
def _varlong(data, pos, end):  # pragma: no cover - compiled
    raw = np.uint64(0)
    shift = 0
    for i in range(10):
        if pos + i >= end:
            return 0, -1
        byte = data[pos + i]
        raw |= np.uint64(byte & 0x7F) << np.uint64(shift)
        if byte < 0x80:
            value = np.int64(raw >> np.uint64(1)) ^ -np.int64(raw & np.uint64(1))
            return value, pos + i + 1
        shift += 7
    return 0, -1


@njit(cache=True)
def _decode_region(data, pos, end, count, base_offset, base_ts, fixed_ts, b, n, out):  # pragma: no cover
    """Parse ``count`` records in data[pos:end]; fill the output columns from row n.
    Returns (rows written, error code, error position)."""
    offset, ts, k_start, k_len, v_start, v_len, h_start, h_count, batch = out
    for _ in range(count):
        if pos >= end:
            return n, 7, pos
        length, body = _varint(data, pos, end)
        if body < 0 or length < 1 or body + length > end:
            return n, 1, pos
        rec_end = body + length
        ts_delta, p = _varlong(data, body + 1, rec_end)
        if p < 0:
            return n, 2, pos
        off_delta, p = _varint(data, p, rec_end)
        if p < 0:
            return n, 2, pos
        key_len, p = _varint(data, p, rec_end)
        if p < 0 or key_len < -1 or p + max(key_len, 0) > rec_end:
            return n, 3, pos
        k_start[n] = p
        k_len[n] = key_len
        p += max(key_len, 0)
        value_len, p = _varint(data, p, rec_end)
        if p < 0 or value_len < -1 or p + max(value_len, 0) > rec_end:
            return n, 4, pos
        v_start[n] = p
        v_len[n] = value_len
        p += max(value_len, 0)
        h_start[n] = p  # where the header count varint starts
        headers, p = _varint(data, p, rec_end)
        if p < 0 or headers < 0:
            return n, 5, pos
        h_count[n] = headers
        for _h in range(headers):
            hk, p = _varint(data, p, rec_end)
            if p < 0 or hk < 0 or p + hk > rec_end:
                return n, 5, pos
            p += hk
            hv, p = _varint(data, p, rec_end)
            if p < 0 or hv < -1 or p + max(hv, 0) > rec_end:
                return n, 5, pos
            p += max(hv, 0)
        if p != rec_end:
            return n, 6, pos
        offset[n] = base_offset + off_delta
        ts[n] = fixed_ts if fixed_ts != -9223372036854775808 else base_ts + ts_delta
        batch[n] = b
        n += 1
        pos = rec_end
    if pos != end:
        return n, 8, pos
    return n, 0, pos


@njit(cache=True)
def _decode_all(data, starts, ends, counts, base_offsets, base_ts, fixed_ts, out):  # pragma: no cover
    n = 0
    for b in range(len(starts)):
        n, code, pos = _decode_region(data, starts[b], ends[b], counts[b], base_offsets[b],
                                      base_ts[b], fixed_ts[b], b, n, out)
        if code != 0:
            return n, code, pos, b
    return n, 0, 0, -1


_NO_FIXED_TS = np.iinfo(np.int64).min


def _plan(buf, check_crc: bool, limit_bytes: int):
    """Walk headers; return (headers, data array, region starts/ends, decompressed count)."""
    headers = list(iter_headers(buf))
    extra: list[bytes] = []
    extra_bytes = len(buf)
    starts, ends = [], []
    for header in headers:
        if header.magic != 2:
            raise InvalidRecordError(
                f"the columnar decoder reads magic 2 only; entry at byte {header.position} "
                f"has magic {header.magic} (use kafkalab.records.iter_batches)"
            )
        if check_crc and not verify_crc(buf, header):
            raise CorruptRecordError(f"CRC mismatch: stored {header.crc:#010x}", position=header.position)
        if header.compression is Compression.NONE:
            start, end = header.position + V2_HEADER_SIZE, header.end_position
        else:
            region = memoryview(buf)[header.position + V2_HEADER_SIZE : header.end_position]
            blob = decompress(header.compression, region, position=header.position, limit_bytes=limit_bytes)
            start, end = extra_bytes, extra_bytes + len(blob)
            extra.append(blob)
            extra_bytes = end
        if header.records_count * RECORD_BYTES_MIN > end - start:
            raise CorruptRecordError(
                f"recordsCount {header.records_count} cannot fit in {end - start} record bytes",
                position=header.position,
            )
        starts.append(start)
        ends.append(end)
    base = np.frombuffer(buf, dtype=np.uint8) if len(buf) else np.zeros(0, np.uint8)
    data = np.concatenate([base, *(np.frombuffer(b, np.uint8) for b in extra)]) if extra else base
    return headers, data, np.array(starts, np.int64), np.array(ends, np.int64)


def decode_columns(buf, *, check_crc: bool = True,
                   limit_bytes: int = DECOMPRESSED_BYTES_MAX) -> RecordColumns:
    """Decode every complete v2 batch of ``buf`` (bytes, bytearray, memoryview or mmap) into
    columns. A partial trailing batch is ignored, as :func:`iter_headers` does."""
    headers, data, starts, ends = _plan(buf, check_crc, limit_bytes)
    counts = np.array([h.records_count for h in headers], np.int64)
    total = int(counts.sum()) if len(counts) else 0
    out = (np.empty(total, np.int64), np.empty(total, np.int64), np.empty(total, np.int64),
           np.empty(total, np.int32), np.empty(total, np.int64), np.empty(total, np.int32),
           np.empty(total, np.int64), np.empty(total, np.int32), np.empty(total, np.int32))
    base_offsets = np.array([h.base_offset for h in headers], np.int64)
    base_ts = np.array([h.base_timestamp for h in headers], np.int64)
    fixed = np.array([h.max_timestamp if h.timestamp_type is TimestampType.LOG_APPEND_TIME
                      else _NO_FIXED_TS for h in headers], np.int64)
    n, code, pos, b = _decode_all(data, starts, ends, counts, base_offsets, base_ts, fixed, out)
    if code:
        where = headers[b].position if pos >= len(buf) else int(pos)
        raise CorruptRecordError(f"{_ERRORS[code]} (batch at byte {headers[b].position})", position=where)
    return RecordColumns(data, *out, batches=tuple(headers))


# ----------------------------------------------------------------------------- scan

ENTRIES_PER_SCAN_MAX = 4_000_000  # ~64 GiB of 16 KiB batches: callers split larger ranges
_ENTRY_SIZE_MIN = 14  # a v0 message's smallest body (crc, magic, attributes, two lengths)

# The v2 batch header as one big-endian structured type: header.py's field table, as numpy.
V2_HEADER_DTYPE = np.dtype([(name, ">" + code) for name, code in V2_HEADER_FIELDS])
assert V2_HEADER_DTYPE.itemsize == V2_HEADER_SIZE


@njit(cache=True, nogil=True)
def _walk(buf, start, end, max_count):  # pragma: no cover - compiled
    positions = np.empty(16, np.int64)
    sizes = np.empty(16, np.int64)
    magics = np.empty(16, np.int8)
    count = 0
    pos = start
    while end - pos > MAGIC_OFFSET and count < max_count:  # the magic byte must be there
        size = (np.int64(buf[pos + 8]) << 24) | (np.int64(buf[pos + 9]) << 16) | (
            np.int64(buf[pos + 10]) << 8) | np.int64(buf[pos + 11])
        if size >= 2**31:
            size -= 2**32
        if size < _ENTRY_SIZE_MIN:
            return positions, sizes, magics, count, pos
        if pos + LOG_OVERHEAD + size > end:
            break
        if count == len(positions):
            positions = np.concatenate((positions, np.empty(count, np.int64)))
            sizes = np.concatenate((sizes, np.empty(count, np.int64)))
            magics = np.concatenate((magics, np.empty(count, np.int8)))
        positions[count] = pos
        sizes[count] = LOG_OVERHEAD + size
        magics[count] = buf[pos + MAGIC_OFFSET]
        count += 1
        pos += LOG_OVERHEAD + size
    return positions, sizes, magics, count, -1


def scan_entries(buf: np.ndarray, start: int = 0, end: int | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions, sizes and magics of the complete entries (any magic) in ``buf[start:end]``,
    found by one compiled walk along the ``batchLength`` fields -- no object per batch.

    Like :func:`iter_headers`, a partial trailing entry ends the walk quietly; an entry whose
    length field is below the smallest legal entry raises :class:`CorruptRecordError`.
    """
    end = len(buf) if end is None else end
    positions, sizes, magics, count, bad = _walk(buf, start, end, ENTRIES_PER_SCAN_MAX)
    if bad >= 0:
        raise CorruptRecordError(f"entry size field below the smallest legal entry "
                                 f"({_ENTRY_SIZE_MIN} bytes) at byte {bad}", position=int(bad))
    return positions[:count], sizes[:count], magics[:count]


def decode_v2_headers(buf: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The 61-byte v2 headers at ``positions`` as one native-endian structured array."""
    rows = buf[positions[:, None] + np.arange(V2_HEADER_SIZE)]
    return rows.view(V2_HEADER_DTYPE).ravel().astype(V2_HEADER_DTYPE.newbyteorder("="))


@njit(cache=True, nogil=True)
def _header_spans(data, starts, counts, total):  # pragma: no cover - compiled
    """Spans of every header of every record; the decoder already validated them."""
    out = np.empty((total, 4), np.int64)  # key start, key length, value start, value length
    n = 0
    for i in range(len(starts)):
        if counts[i] == 0:
            continue
        _, p = _varint(data, starts[i], len(data))
        for _h in range(counts[i]):
            hk, p = _varint(data, p, len(data))
            out[n, 0] = p
            out[n, 1] = hk
            p += hk
            hv, p = _varint(data, p, len(data))
            out[n, 2] = p
            out[n, 3] = hv
            p += max(hv, 0)
            n += 1
    return out


def header_spans(columns: RecordColumns) -> np.ndarray:
    """Record headers as spans of ``columns.data``: one row (key start, key length, value start,
    value length) per header, records in order; ``headers_count`` says how many rows each owns."""
    total = int(columns.headers_count.sum())
    return _header_spans(columns.data, columns.headers_start, columns.headers_count, total)


# ----------------------------------------------------------------------------- encode


@njit(cache=True)
def varint_size(value):  # pragma: no cover - compiled
    raw = (value << 1) ^ (value >> 63)
    size = 1
    while raw >= 0x80 or raw < 0:
        raw = np.int64(np.uint64(raw) >> np.uint64(7))
        size += 1
    return size


@njit(cache=True)
def put_varint(out, pos, value):  # pragma: no cover - compiled
    raw = np.uint64((value << 1) ^ (value >> 63))
    while raw >= np.uint64(0x80):
        out[pos] = np.uint8((raw & np.uint64(0x7F)) | np.uint64(0x80))
        raw >>= np.uint64(7)
        pos += 1
    out[pos] = np.uint8(raw)
    return pos + 1


@njit(cache=True)
def _put_be(out, pos, value, width):  # pragma: no cover - compiled
    for i in range(width):
        out[pos + i] = np.uint8((value >> (8 * (width - 1 - i))) & 0xFF)
    return pos + width


@njit(cache=True)
def _plan_batches(timestamps, key_len, value_len, batch_bytes):  # pragma: no cover - compiled
    """Record body sizes and where each batch starts (by record index); total output bytes."""
    n = len(timestamps)
    body = np.empty(n, np.int64)
    first = np.empty(n + 1, np.int64)
    batches = 0
    size = 0
    total = 0
    base_ts = 0
    for i in range(n):
        payload = (varint_size(key_len[i]) + max(key_len[i], 0)
                   + varint_size(value_len[i]) + max(value_len[i], 0) + 2)  # + attributes, header count
        b = 0
        if size > 0:  # try to append to the open batch
            b = payload + varint_size(timestamps[i] - base_ts) + varint_size(i - first[batches - 1])
        if size == 0 or size + varint_size(b) + b > batch_bytes:
            total += size  # close the open batch; record i opens a new one with zero deltas
            first[batches] = i
            batches += 1
            base_ts = timestamps[i]
            size = V2_HEADER_SIZE_NB
            b = payload + 2
        body[i] = b
        size += varint_size(b) + b
    total += size
    first[batches] = n
    return body, first[: batches + 1], total


V2_HEADER_SIZE_NB = V2_HEADER_SIZE


@njit(cache=True)
def _write_batches(out, first, body, timestamps, key_data, key_start, key_len, value_data,
                   value_start, value_len, base_offset, batch_ends):  # pragma: no cover - compiled
    pos = 0
    for b in range(len(first) - 1):
        start = pos
        lo, hi = first[b], first[b + 1]
        base_ts = timestamps[lo]
        max_ts = base_ts
        p = start + V2_HEADER_SIZE_NB
        for i in range(lo, hi):
            max_ts = max(max_ts, timestamps[i])
            p = put_varint(out, p, body[i])
            out[p] = 0
            p = put_varint(out, p + 1, timestamps[i] - base_ts)
            p = put_varint(out, p, i - lo)
            p = put_varint(out, p, key_len[i])
            for j in range(max(key_len[i], 0)):
                out[p + j] = key_data[key_start[i] + j]
            p += max(key_len[i], 0)
            p = put_varint(out, p, value_len[i])
            for j in range(max(value_len[i], 0)):
                out[p + j] = value_data[value_start[i] + j]
            p += max(value_len[i], 0)
            out[p] = 0
            p += 1
        q = _put_be(out, start, base_offset + lo, 8)
        q = _put_be(out, q, p - start - 12, 4)
        q = _put_be(out, q, -1, 4)  # partitionLeaderEpoch: the leader stamps it
        out[q] = 2
        q = _put_be(out, q + 5, 0, 2)  # crc filled in afterwards; attributes 0
        q = _put_be(out, q, hi - lo - 1, 4)
        q = _put_be(out, q, base_ts, 8)
        q = _put_be(out, q, max_ts, 8)
        q = _put_be(out, q, -1, 8)
        q = _put_be(out, q, -1, 2)
        q = _put_be(out, q, -1, 4)
        _put_be(out, q, hi - lo, 4)
        batch_ends[b] = p
        pos = p
    return pos


def _spans(items: Sequence[bytes | None]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    lengths = np.fromiter((-1 if x is None else len(x) for x in items), np.int32, len(items))
    starts = np.zeros(len(items), np.int64)
    if len(items):
        np.cumsum(np.maximum(lengths[:-1], 0), out=starts[1:])
    data = np.frombuffer(b"".join(x for x in items if x), np.uint8)
    return data, starts, lengths


def encode_columns(keys: Sequence[bytes | None], values: Sequence[bytes | None],
                   timestamps: Sequence[int] | np.ndarray, *, base_offset: int = 0,
                   batch_bytes: int = BATCH_BYTES_DEFAULT) -> bytes:
    """Encode records (no headers, uncompressed, CreateTime, no producer id) into consecutive
    v2 batches of at most ``batch_bytes`` each (a single larger record gets a batch of its own),
    offsets ``base_offset, base_offset + 1, ...``. Byte-identical to the reference builder."""
    if not len(keys) == len(values) == len(timestamps):
        raise InvalidRecordError(
            f"keys, values and timestamps differ in length: {len(keys)}, {len(values)}, {len(timestamps)}")
    return encode_spans(ByteSpans(*_spans(keys)), ByteSpans(*_spans(values)), timestamps,
                        base_offset=base_offset, batch_bytes=batch_bytes)


@dataclass(frozen=True, slots=True)
class ByteSpans:
    """Byte strings as spans of one buffer: item i is ``data[start[i]:start[i] + length[i]]``,
    null when ``length[i] == -1``. Spans may overlap or repeat (a key table indexed by rank)."""

    data: np.ndarray
    start: np.ndarray
    length: np.ndarray

    def __post_init__(self) -> None:
        if len(self.start) != len(self.length):
            raise InvalidRecordError(f"{len(self.start)} span starts but {len(self.length)} lengths")
        present = self.length >= 0
        if len(self.start) and (np.any(self.length < -1) or np.any(self.start[present] < 0) or np.any(
                self.start[present] + self.length[present] > len(self.data))):
            raise InvalidRecordError(f"a span falls outside its {len(self.data)}-byte buffer")


def encode_spans(keys: ByteSpans, values: ByteSpans, timestamps: Sequence[int] | np.ndarray, *,
                 base_offset: int = 0, batch_bytes: int = BATCH_BYTES_DEFAULT) -> bytes:
    """:func:`encode_columns` for keys and values already laid out as spans -- no Python object
    per record, so a generator can write millions of records per second."""
    ts = np.asarray(timestamps, np.int64)
    if not len(keys.start) == len(values.start) == len(ts):
        raise InvalidRecordError(
            f"keys, values and timestamps differ in length: {len(keys.start)}, {len(values.start)}, {len(ts)}")
    key_len = keys.length.astype(np.int32)
    value_len = values.length.astype(np.int32)
    body, first, total = _plan_batches(ts, key_len, value_len, batch_bytes)
    out = np.empty(total, np.uint8)
    ends = np.empty(len(first) - 1, np.int64)
    written = _write_batches(out, first, body, ts, keys.data, keys.start.astype(np.int64), key_len,
                             values.data, values.start.astype(np.int64), value_len, base_offset, ends)
    assert written == total, f"planned {total} bytes, wrote {written}"
    buf = out.data.cast("B")
    start = 0
    for end in ends.tolist():
        crc = _crc32c.crc32c(buf[start + V2_ATTRIBUTES_OFFSET : end])
        buf[start + V2_CRC_OFFSET : start + V2_ATTRIBUTES_OFFSET] = crc.to_bytes(4, "big")
        start = end
    return out.tobytes()
