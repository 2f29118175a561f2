"""Reading a segment for the cleaner: whole entries in large chunks, planned as numpy columns.

Theory of operation
-------------------
Both phases of a clean read every byte of the segments they touch, so the reading is done in
``CHUNK_BYTES`` pieces into one reused buffer (no allocation per read, no page faults on a
fresh buffer), and each piece is cut at the end of its last complete entry::

    segment  |b0|b1|b2| ... |b511|b512 (cut)|...
    chunk 1  |b0 ........... b511|            one pread, scan_entries finds 512 entries
    chunk 2                     |b512 ...     the next pread starts where chunk 1 ended

An entry larger than a chunk gets a read of its own size (Kafka's ``growBuffersOrFail``).

:func:`plan_v2` turns a chunk of v2 batches into arrays without a Python object per batch:
the 61-byte headers come from one structured numpy view (:func:`decode_v2_headers`), are
checked with vectorised comparisons (a failure re-reads the chunk with :func:`iter_headers`,
whose message names the broken rule), each batch's CRC-32C is checked by the C library, and
one compiled kernel parses every record. Compressed batches are decompressed one call each and
their record regions appended after the chunk's bytes, so every record is a span of one array.

Worked example: a 8 MiB chunk of 16 KiB batches holding 1 KiB values is ~510 batches and
~7,700 records: one pread, one header view, 510 CRC calls, one kernel call -- about a
millisecond of Python per chunk; the rest runs at memory speed.

Chunks holding any v0/v1 entry are handed to the reference path with :meth:`Chunk.headers`.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass

import crc32c as _crc32c
import numpy as np

from kafkalab.errors import CorruptRecordError
# The record kernel and its error texts are the records package's own; the cleaner calls them
# with header arrays it already has, where decode_columns would walk the headers again in Python.
from kafkalab.records.columnar import _ERRORS, _decode_all, decode_v2_headers, scan_entries
from kafkalab.records.compression import DECOMPRESSED_BYTES_MAX, decompress
from kafkalab.records.header import (
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    DELETE_HORIZON_FLAG_MASK,
    LOG_OVERHEAD,
    MAX_CODEC_FOR_MAGIC,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
    V2_ATTRIBUTES_OFFSET,
    V2_HEADER_SIZE,
    BatchHeader,
    iter_headers,
)
from kafkalab.storage.segment import LogSegment

CHUNK_BYTES = 8 * 1024 * 1024  # bytes read per step: bounds memory, amortises per-call overhead
RECORD_BYTES_MIN = 7  # length, attributes, two deltas, key length, value length, header count
NO_FIXED_TIMESTAMP = np.iinfo(np.int64).min  # the record kernel's "CreateTime" marker
_SIZE = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class Chunk:
    """Whole entries read from one segment; ``data`` is valid until the next chunk is read.

    Owned by the reading loop; never kept past it."""

    data: memoryview
    positions: np.ndarray  # entry starts within ``data``
    sizes: np.ndarray
    magics: np.ndarray
    segment_base_offset: int = -1  # where the chunk was read: the segment ...
    file_position: int = -1  # ... and the byte of its file at which ``data`` starts

    @property
    def is_v2(self) -> bool:
        return bool(np.all(self.magics == 2))

    def headers(self) -> list[BatchHeader]:
        """Every entry as a :class:`BatchHeader` (the reference and legacy paths use these)."""
        return list(iter_headers(self.data))


class ChunkBuffers:
    """The read and output buffers of a clean, reused across chunks and segments so that no
    step pays for fresh pages. Not thread-safe; owned by one cleaner."""

    def __init__(self) -> None:
        self._read = bytearray()
        self._out = np.empty(0, np.uint8)

    def read_buffer(self, size_bytes: int) -> memoryview:
        if len(self._read) < size_bytes:
            self._read = bytearray(size_bytes)
        return memoryview(self._read)[:size_bytes]

    def out_buffer(self, size_bytes: int) -> np.ndarray:
        if len(self._out) < size_bytes:
            self._out = np.empty(size_bytes, np.uint8)
        return self._out[:size_bytes]


def read_chunks(segment: LogSegment, position: int, buffers: ChunkBuffers | None = None) -> Iterator[Chunk]:
    """Whole entries from ``position`` on, at most ``CHUNK_BYTES`` at a time (more only when a
    single entry is larger). Each chunk overwrites the previous one's buffer."""
    buffers = buffers or ChunkBuffers()
    size = segment.size_bytes
    while position < size:
        want = min(CHUNK_BYTES, size - position)
        view = _pread(segment, buffers.read_buffer(want), position)
        positions, sizes, magics = scan_entries(np.frombuffer(view, np.uint8))
        if not len(positions):
            view = _pread(segment, buffers.read_buffer(_entry_bytes(segment, position)), position)
            positions, sizes, magics = scan_entries(np.frombuffer(view, np.uint8))
            if not len(positions):
                raise CorruptRecordError(f"no complete entry at byte {position} of {segment.log_path}",
                                         position=position)
        end = int(positions[-1] + sizes[-1])
        yield Chunk(view[:end], positions, sizes, magics, segment.base_offset, position)
        position += end


def _pread(segment: LogSegment, into: memoryview, position: int) -> memoryview:
    got = os.preadv(segment.fd, [into], position)
    if got != len(into):
        raise CorruptRecordError(f"short read of {segment.log_path} at byte {position}: {got} of "
                                 f"{len(into)} bytes", position=position)
    return into


def _entry_bytes(segment: LogSegment, position: int) -> int:
    prefix = os.pread(segment.fd, LOG_OVERHEAD, position)
    remaining = segment.size_bytes - position
    entry = _SIZE.unpack_from(prefix, 8)[0] + LOG_OVERHEAD if len(prefix) == LOG_OVERHEAD else remaining + 1
    if not LOG_OVERHEAD < entry <= remaining:
        raise CorruptRecordError(
            f"entry at byte {position} of {segment.log_path} claims {entry} bytes; {remaining} remain",
            position=position)
    return entry


# --- a v2 chunk as columns ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Records:
    """One record per row; key/value spans index into :attr:`V2Plan.data`. Owned by its plan."""

    offset: np.ndarray
    timestamp: np.ndarray
    key_start: np.ndarray
    key_length: np.ndarray
    value_start: np.ndarray
    value_length: np.ndarray


@dataclass(frozen=True, slots=True)
class V2Plan:
    """A chunk of v2 batches: header fields per batch, record columns per record.

    ``first[b]:first[b + 1]`` are batch b's record rows; ``region_start[b]:region_end[b]`` are its
    (possibly decompressed) records in ``data``. Owned by one step of a clean."""

    chunk: Chunk
    data: np.ndarray
    position: np.ndarray
    size: np.ndarray
    base_offset: np.ndarray
    last_offset: np.ndarray
    attributes: np.ndarray
    base_timestamp: np.ndarray
    max_timestamp: np.ndarray
    producer_id: np.ndarray
    records_count: np.ndarray
    region_start: np.ndarray
    region_end: np.ndarray
    first: np.ndarray
    records: Records

    @property
    def is_control(self) -> np.ndarray:
        return (self.attributes & CONTROL_FLAG_MASK) != 0

    @property
    def is_transactional(self) -> np.ndarray:
        return (self.attributes & TRANSACTIONAL_FLAG_MASK) != 0

    @property
    def is_compressed(self) -> np.ndarray:
        return (self.attributes & COMPRESSION_CODEC_MASK) != 0

    @property
    def has_delete_horizon(self) -> np.ndarray:
        return (self.attributes & DELETE_HORIZON_FLAG_MASK) != 0

    @property
    def log_append_time(self) -> np.ndarray:
        return (self.attributes & TIMESTAMP_TYPE_MASK) != 0

    def header(self, b: int) -> BatchHeader:
        """Batch ``b`` as a :class:`BatchHeader` (for the rare batches handled in Python)."""
        return next(iter(iter_headers(self.chunk.data, int(self.position[b]))))


def plan_v2(chunk: Chunk, *, limit_bytes: int = DECOMPRESSED_BYTES_MAX) -> V2Plan:
    """Check and decode a chunk of v2 batches (headers, CRCs, records) into a :class:`V2Plan`."""
    raw = np.frombuffer(chunk.data, np.uint8)
    heads = decode_v2_headers(raw, chunk.positions)
    sizes = chunk.sizes
    counts = heads["records_count"].astype(np.int64)
    codecs = heads["attributes"] & COMPRESSION_CODEC_MASK
    if not bool(np.all((sizes >= V2_HEADER_SIZE) & (heads["last_offset_delta"] >= 0) & (counts >= 0)
                       & (codecs <= int(MAX_CODEC_FOR_MAGIC[2])))):
        chunk.headers()  # raises with the rule the bad header broke
        raise CorruptRecordError("invalid v2 batch header in chunk", position=int(chunk.positions[0]))
    _check_crcs(chunk, heads["crc"])
    data, starts, ends = _record_regions(chunk, raw, codecs, limit_bytes)
    short = np.flatnonzero(counts * RECORD_BYTES_MIN > ends - starts)
    if len(short):
        b = int(short[0])
        raise CorruptRecordError(f"recordsCount {counts[b]} cannot fit in {ends[b] - starts[b]} record bytes",
                                 position=int(chunk.positions[b]))
    base_offset = heads["base_offset"].astype(np.int64)
    attributes = heads["attributes"].astype(np.int64) & 0xFFFF
    max_ts = heads["max_timestamp"].astype(np.int64)
    fixed = np.where(attributes & TIMESTAMP_TYPE_MASK != 0, max_ts, NO_FIXED_TIMESTAMP)
    first = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=first[1:])
    total = int(first[-1])
    out = (np.empty(total, np.int64), np.empty(total, np.int64), np.empty(total, np.int64),
           np.empty(total, np.int32), np.empty(total, np.int64), np.empty(total, np.int32),
           np.empty(total, np.int64), np.empty(total, np.int32), np.empty(total, np.int32))
    base_ts = heads["base_timestamp"].astype(np.int64)
    _n, code, pos, b = _decode_all(data, starts, ends, counts, base_offset, base_ts, fixed, out)
    if code:
        raise CorruptRecordError(f"{_ERRORS[code]} (batch at byte {chunk.positions[b]})",
                                 position=int(pos) if pos < len(chunk.data) else int(chunk.positions[b]))
    return V2Plan(chunk, data, chunk.positions, sizes, base_offset,
                  base_offset + heads["last_offset_delta"].astype(np.int64), attributes, base_ts, max_ts,
                  heads["producer_id"].astype(np.int64), counts, starts, ends, first,
                  Records(out[0], out[1], out[2], out[3], out[4], out[5]))


def _check_crcs(chunk: Chunk, stored: np.ndarray) -> None:
    view = chunk.data
    crc = _crc32c.crc32c
    for start, size, expected in zip(chunk.positions.tolist(), chunk.sizes.tolist(), stored.tolist()):
        if crc(view[start + V2_ATTRIBUTES_OFFSET : start + size]) != expected:
            raise CorruptRecordError(f"CRC mismatch: stored {expected:#010x}", position=start)


def _record_regions(chunk: Chunk, raw: np.ndarray, codecs: np.ndarray,
                    limit_bytes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The bytes the record kernel reads and each batch's record region in them."""
    starts = chunk.positions + V2_HEADER_SIZE
    ends = chunk.positions + chunk.sizes
    compressed = np.flatnonzero(codecs)
    if not len(compressed):
        return raw, starts, ends
    extra: list[bytes] = []
    cursor = len(raw)
    for b in compressed.tolist():
        region = chunk.data[int(starts[b]) : int(ends[b])]
        blob = decompress(int(codecs[b]), region, position=int(chunk.positions[b]), limit_bytes=limit_bytes)
        starts[b], ends[b] = cursor, cursor + len(blob)
        cursor += len(blob)
        extra.append(blob)
    data = np.concatenate([raw, *(np.frombuffer(blob, np.uint8) for blob in extra)])
    return data, starts, ends
