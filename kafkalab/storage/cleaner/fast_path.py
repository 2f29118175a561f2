"""The compiled cleaner: both phases over numpy columns, one numba kernel per step.

Theory of operation
-------------------
The reference path (:mod:`.reference`) builds a Python object per record and hashes each key
with MD5 -- a few hundred thousand records a second. Here a segment is read in chunks of whole
batches (``CHUNK_BYTES``), each chunk decoded once into columns by
:func:`kafkalab.records.columnar.decode_columns`, and the per-record work is done by kernels::

    chunk bytes --decode_columns--> offset, timestamp, key/value spans, batch index
      map phase:  hash_keys -> put_batches            (stops where the map fills)
      copy phase: hash_keys -> get_offsets -> decide  (keep mask + per-batch counts)
                  per batch:  all kept, no new horizon  -> original bytes, copied as a run
                              some kept, uncompressed   -> rebuild_batches kernel
                              some kept, compressed     -> reference rebuild (codec in Python)
                              none kept                 -> empty header if RETAIN_EMPTY, else gone

A rebuilt uncompressed batch keeps its base offset, so every kept record keeps its offset delta
and its bytes from the offset delta on; only the record length, the attributes byte (written 0,
as Kafka's builder does) and the timestamp delta are written anew, against the new base
timestamp (the first kept record's, or the delete horizon). The header is the original's with
length, attributes, timestamps and count patched; the CRC is computed last.

Chunks holding v0/v1 entries go to the reference path (one Python pass), since the columnar
decoder reads magic 2 only.

Worked example: a 1 MiB chunk of 300 uncompressed batches of 50 records is one decode, two
hash passes and two kernel calls; if 290 batches lose records, the rebuild kernel writes all
290 in one call and Python only computes 290 CRCs and joins the pieces.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from typing import NamedTuple

import crc32c as _crc32c
import numpy as np
from numba import njit

from kafkalab.errors import CorruptRecordError
from kafkalab.records.columnar import RecordColumns, decode_columns, put_varint, varint_size
from kafkalab.records.header import (
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    V2_ATTRIBUTES_OFFSET,
    V2_HEADER_SIZE,
    BatchHeader,
    Compression,
    iter_headers,
)
from kafkalab.records.model import Record, RecordBatch
from kafkalab.storage.cleaner import reference
from kafkalab.storage.cleaner.fast_map import FastOffsetMap, get_offsets, hash_keys, put_batches
from kafkalab.storage.cleaner.rules import (
    BatchRetention,
    RetentionRule,
    batch_retention,
    empty_batch,
    retains_deletes,
    _v2_attributes,
)
from kafkalab.storage.cleaner.stats import CleanerStats
from kafkalab.storage.segment import LogSegment

CHUNK_BYTES = 8 * 1024 * 1024  # bytes read per step: bounds memory, amortises per-call overhead
VARLONG_BYTES_MAX = 10  # a rebuilt record's timestamp delta may grow to this many bytes
_SIZE = struct.Struct(">i")
_CRC = struct.Struct(">I")
NO_HORIZON = np.iinfo(np.int64).min


class Written(NamedTuple):
    """One entry to append to the cleaned segment, with what its indexes need."""

    data: bytes | memoryview
    last_offset: int
    max_timestamp: int
    delete_horizon_ms: int | None


# --- reading whole batches in chunks ----------------------------------------------------------------


def read_chunks(segment: LogSegment, position: int) -> Iterator[tuple[bytes, list[BatchHeader]]]:
    """Whole entries from ``position`` on, at most ``CHUNK_BYTES`` at a time (more only when a
    single entry is larger, as Kafka's ``growBuffersOrFail`` allows)."""
    size = segment.size_bytes
    while position < size:
        data = os.pread(segment.fd, min(CHUNK_BYTES, size - position), position)
        walker = iter_headers(data)
        headers = list(walker)
        if not headers:
            data = os.pread(segment.fd, _entry_bytes(segment, position), position)
            walker = iter_headers(data)
            headers = list(walker)
            if not headers:
                raise CorruptRecordError(f"no complete entry at byte {position} of {segment.log_path}",
                                         position=position)
        # bytes, not a memoryview: the columnar decoder's per-batch steps run twice as fast on them
        yield (data if walker.valid_end == len(data) else data[: walker.valid_end]), headers
        position += walker.valid_end


def _entry_bytes(segment: LogSegment, position: int) -> int:
    prefix = os.pread(segment.fd, LOG_OVERHEAD, position)
    remaining = segment.size_bytes - position
    entry = _SIZE.unpack_from(prefix, 8)[0] + LOG_OVERHEAD if len(prefix) == LOG_OVERHEAD else remaining + 1
    if not LOG_OVERHEAD < entry <= remaining:
        raise CorruptRecordError(
            f"entry at byte {position} of {segment.log_path} claims {entry} bytes; {remaining} remain",
            position=position)
    return entry


def _batch_first_rows(headers: list[BatchHeader]) -> np.ndarray:
    first = np.zeros(len(headers) + 1, np.int64)
    np.cumsum([h.records_count for h in headers], out=first[1:])
    return first


# --- map phase --------------------------------------------------------------------------------------


def map_chunk(view: bytes, headers: list[BatchHeader], start_offset: int, offset_map: FastOffsetMap,
              stats: CleanerStats) -> bool:
    """Map one chunk's keys; True when the map filled up inside it."""
    stats.map_bytes_read += len(view)
    if any(h.magic < 2 for h in headers):
        stats.legacy_chunks += 1
        return any(reference.map_batch(h, view, start_offset, offset_map, stats) for h in headers)
    cols = decode_columns(view)
    h1, h2 = hash_keys(cols.data, cols.key_start, cols.key_length)
    last_offsets = np.array([h.last_offset for h in headers], np.int64)
    mappable = np.array([not h.is_control for h in headers], np.bool_)  # + not aborted (no txns yet)
    size, latest, full, mapped = put_batches(
        offset_map.table, offset_map.size, offset_map.max_entries, h1, h2, cols.offset, cols.key_length,
        _batch_first_rows(headers), last_offsets, mappable, start_offset, offset_map.latest_offset)
    offset_map.size, offset_map.latest_offset = int(size), int(latest)
    stats.map_records += int(mapped)
    return bool(full)


# --- copy phase -------------------------------------------------------------------------------------


@njit(cache=True)
def decide(offset, key_length, value_length, found, first, discard, control, retain_deletes,
           latest_offset):  # pragma: no cover - compiled
    """Keep mask and per-batch (kept, tombstones kept) counts; (unkeyed, tombstones) removed."""
    n_batches = len(first) - 1
    keep = np.zeros(len(offset), np.bool_)
    kept = np.zeros(n_batches, np.int64)
    tombstones = np.zeros(n_batches, np.int64)
    unkeyed = 0
    removed_tombstones = 0
    for b in range(n_batches):
        for i in range(first[b], first[b + 1]):
            if discard[b]:
                k = False
            elif control[b] or offset[i] > latest_offset:
                k = True
            elif key_length[i] < 0:
                unkeyed += 1
                k = False
            elif offset[i] < found[i]:
                k = False
            elif value_length[i] < 0 and not retain_deletes[b]:
                removed_tombstones += 1
                k = False
            else:
                k = True
            keep[i] = k
            if k:
                kept[b] += 1
                if value_length[i] < 0:
                    tombstones[b] += 1
    return keep, kept, tombstones, unkeyed, removed_tombstones


@njit(cache=True, inline="always")
def _varint_at(data, p):  # pragma: no cover - compiled
    """(zigzag-decoded value, next position) of the varint/varlong at ``p``."""
    raw = np.uint64(0)
    shift = 0
    while True:
        byte = data[p]
        raw |= np.uint64(byte & 0x7F) << np.uint64(shift)
        p += 1
        if byte < 0x80:
            break
        shift += 7
    return np.int64(raw >> np.uint64(1)) ^ -np.int64(raw & np.uint64(1)), p


@njit(cache=True, inline="always")
def _put_be(out, p, value, width):  # pragma: no cover - compiled
    for i in range(width):
        out[p + i] = np.uint8((value >> (8 * (width - 1 - i))) & 0xFF)


@njit(cache=True)
def rebuild_batches(data, batches, positions, ends, first, keep, timestamp, horizons, attributes,
                    log_append, out):  # pragma: no cover - compiled
    """Write each listed uncompressed batch with only its kept records into ``out``.

    Returns (end position in ``out`` per batch, new max timestamp per batch)."""
    out_ends = np.empty(len(batches), np.int64)
    max_ts = np.empty(len(batches), np.int64)
    q = 0
    for j in range(len(batches)):
        b = batches[j]
        start = q
        out[q : q + 61] = data[positions[b] : positions[b] + 61]
        q += 61
        base_ts = horizons[j]
        newest = np.int64(-1)
        count = 0
        p = positions[b] + 61
        for i in range(first[b], first[b + 1]):
            length, body = _varint_at(data, p)
            rec_end = body + length
            if keep[i]:
                if count == 0 and base_ts == NO_HORIZON:
                    base_ts = timestamp[i]
                _old_delta, rest = _varint_at(data, body + 1)
                delta = timestamp[i] - base_ts
                new_length = 1 + varint_size(delta) + (rec_end - rest)
                q = put_varint(out, q, new_length)
                out[q] = 0
                q = put_varint(out, q + 1, delta)
                out[q : q + rec_end - rest] = data[rest:rec_end]
                q += rec_end - rest
                newest = max(newest, timestamp[i])
                count += 1
            p = rec_end
        _put_be(out, start + 8, q - start - 12, 4)
        _put_be(out, start + 21, attributes[j], 2)
        _put_be(out, start + 27, base_ts, 8)
        if not log_append[b]:
            _put_be(out, start + 35, newest, 8)
        _put_be(out, start + 57, count, 4)
        out_ends[j] = q
        max_ts[j] = newest
    return out_ends, max_ts


def filter_chunk(view: bytes, headers: list[BatchHeader], rule: RetentionRule, offset_map: FastOffsetMap,
                 retain_legacy_deletes: bool, stats: CleanerStats) -> list[Written]:
    """The entries to keep from one chunk, in order."""
    if any(h.magic < 2 for h in headers):
        stats.legacy_chunks += 1
        return _filter_reference(view, headers, rule, offset_map, retain_legacy_deletes, stats)
    cols = decode_columns(view)
    first = _batch_first_rows(headers)
    retention = [batch_retention(h, rule) for h in headers]
    h1, h2 = hash_keys(cols.data, cols.key_start, cols.key_length)
    found = get_offsets(offset_map.table, h1, h2, cols.key_length)
    keep, kept, tombstones, unkeyed, removed = decide(
        cols.offset, cols.key_length, cols.value_length, found, first,
        np.array([d for _, d in retention], np.bool_), np.array([h.is_control for h in headers], np.bool_),
        np.array([retains_deletes(h, rule.now_ms, True) for h in headers], np.bool_), offset_map.latest_offset)
    stats.unkeyed_removed += int(unkeyed)
    stats.tombstones_removed += int(removed)
    stats.records_read += len(cols)
    stats.records_kept += int(kept.sum())
    counts = np.diff(first)
    has_horizon = np.array([h.has_delete_horizon for h in headers], np.bool_)
    needs_horizon = (tombstones > 0) & ~has_horizon
    whole = (kept == counts) & ~needs_horizon & (kept > 0)
    rebuilt = _rebuild_all(view, cols, headers, first, keep, kept, whole, needs_horizon, rule, stats)
    return _assemble(view, headers, retention, kept, whole, rebuilt, stats)


def _rebuild_all(view: bytes, cols: RecordColumns, headers: list[BatchHeader], first: np.ndarray,
                 keep: np.ndarray, kept: np.ndarray, whole: np.ndarray, needs_horizon: np.ndarray,
                 rule: RetentionRule, stats: CleanerStats) -> dict[int, Written]:
    """Rebuild every batch that keeps some but not all of its records (or needs a horizon)."""
    partial = np.flatnonzero(~whole & (kept > 0))
    rebuilt: dict[int, Written] = {}
    if not len(partial):
        return rebuilt
    stats.batches_rewritten += len(partial)
    new_horizon = rule.now_ms + rule.delete_retention_ms
    plain: list[int] = []
    for b in partial.tolist():
        header = headers[b]
        horizon = new_horizon if needs_horizon[b] else header.delete_horizon_ms
        if header.compression is Compression.NONE:
            plain.append(b)
            continue
        batch = RecordBatch(header, tuple(_records(cols, header, first, keep, b)))
        data = reference.rebuild(batch, batch.records, horizon)
        rebuilt[b] = Written(data, header.last_offset, _max_timestamp(data), horizon)
    if plain:
        rebuilt.update(_rebuild_plain(view, cols, headers, first, keep, plain, needs_horizon, new_horizon))
    return rebuilt


def _rebuild_plain(view: bytes, cols: RecordColumns, headers: list[BatchHeader], first: np.ndarray,
                   keep: np.ndarray, plain: list[int], needs_horizon: np.ndarray,
                   new_horizon: int) -> dict[int, Written]:
    horizons = [new_horizon if needs_horizon[b] else headers[b].delete_horizon_ms for b in plain]
    capacity = sum(headers[b].size_bytes for b in plain) + VARLONG_BYTES_MAX * int(
        sum(headers[b].records_count for b in plain))
    out = np.empty(capacity, np.uint8)
    batches = np.array(plain, np.int64)
    ends, max_ts = rebuild_batches(
        cols.data, batches, np.array([h.position for h in headers], np.int64),
        np.array([h.end_position for h in headers], np.int64), first, keep, cols.timestamp,
        np.array([NO_HORIZON if h is None else h for h in horizons], np.int64),
        np.array([_v2_attributes(headers[b], h is not None) for b, h in zip(plain, horizons)], np.int64),
        np.array([h.attributes & TIMESTAMP_TYPE_MASK != 0 for h in headers], np.bool_), out)
    buf = out.data.cast("B")
    result = {}
    start = 0
    for j, b in enumerate(plain):
        end = int(ends[j])
        _CRC.pack_into(buf, start + 17, _crc32c.crc32c(buf[start + V2_ATTRIBUTES_OFFSET : end]))
        header = headers[b]
        newest = header.max_timestamp if header.attributes & TIMESTAMP_TYPE_MASK else int(max_ts[j])
        result[b] = Written(buf[start:end], header.last_offset, newest, horizons[j])
        start = end
    return result


def _records(cols: RecordColumns, header: BatchHeader, first: np.ndarray, keep: np.ndarray, b: int) -> list[Record]:
    rows = [i for i in range(int(first[b]), int(first[b + 1])) if keep[i]]
    return [
        Record(int(cols.offset[i]), int(cols.timestamp[i]),
               cols._span(int(cols.key_start[i]), int(cols.key_length[i])),
               cols._span(int(cols.value_start[i]), int(cols.value_length[i])), cols.headers_of(i))
        for i in rows
    ]


def _max_timestamp(batch: bytes) -> int:
    return int(struct.unpack_from(">q", batch, 35)[0])


def _assemble(view: bytes, headers: list[BatchHeader], retention: list[tuple[BatchRetention, bool]],
              kept: np.ndarray, whole: np.ndarray, rebuilt: dict[int, Written],
              stats: CleanerStats) -> list[Written]:
    """Runs of whole batches become one slice each; the rest come from ``rebuilt`` or are empty."""
    out: list[Written] = []
    run_start = -1
    whole_list = whole.tolist()
    kept_list = kept.tolist()
    for b, header in enumerate(headers):
        if whole_list[b]:
            if run_start < 0:
                run_start = b
            continue
        if run_start >= 0:
            out.append(_run(view, headers, run_start, b))
            run_start = -1
        if b in rebuilt:
            out.append(rebuilt[b])
        elif kept_list[b] == 0 and retention[b][0] is BatchRetention.RETAIN_EMPTY:
            stats.empty_batches_kept += 1
            out.append(Written(empty_batch(header), header.last_offset, header.max_timestamp, None))
    if run_start >= 0:
        out.append(_run(view, headers, run_start, len(headers)))
    return out


def _run(view: bytes, headers: list[BatchHeader], lo: int, hi: int) -> Written:
    run = headers[lo:hi]
    horizons = [h.delete_horizon_ms for h in run if h.delete_horizon_ms is not None]
    return Written(view[run[0].position : run[-1].end_position], run[-1].last_offset,
                   max(h.max_timestamp for h in run), min(horizons) if horizons else None)


def _filter_reference(view: bytes, headers: list[BatchHeader], rule: RetentionRule,
                      offset_map: FastOffsetMap, retain_legacy_deletes: bool, stats: CleanerStats) -> list[Written]:
    out = []
    for header in headers:
        entry = reference.filter_entry(header, view, rule, offset_map, retain_legacy_deletes, stats)
        if entry is not None:
            out.append(written_entry(entry))
    return out


def written_entry(entry: bytes) -> Written:
    """Describe one entry built by the reference path."""
    header = next(iter(iter_headers(entry)))
    return Written(entry, header.last_offset, header.max_timestamp, header.delete_horizon_ms)


assert V2_HEADER_SIZE == 61
