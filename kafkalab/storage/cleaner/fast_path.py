"""The compiled cleaner: both phases over numpy columns, no Python object per record or batch.

Theory of operation
-------------------
The reference path (:mod:`.reference`) builds a Python object per record and hashes each key
with MD5 -- a few hundred thousand records a second. Here a segment is read in large chunks
(:mod:`.chunks`), each planned once into arrays, and the per-record work is done by kernels::

    chunk --plan_v2--> batch arrays (offsets, attributes, ...) + record columns
      map phase:  hash_keys -> put_batches                 (stops where the map fills)
      copy phase: hash_keys -> get_offsets -> decide       (keep mask, kept per batch)
                  action per batch:
                    COPY     every record kept, no new horizon: the original bytes, untouched
                             (no re-encode, no CRC recomputed -- Kafka keeps such batches as is)
                    REBUILD  some kept, uncompressed: rewritten by the kernel, CRC afterwards
                    BLOB     some kept and compressed (kernel rebuild + one codec call), or an
                             empty batch kept for an idempotent producer or the round's end
                    DROP     nothing kept
                  assemble: one kernel writes every COPY/REBUILD/BLOB batch, in order, into
                  one output buffer, appended to the ``.cleaned`` segment with one write

A rebuilt batch keeps its base offset, so every kept record keeps its offset delta and its bytes
from the offset delta on; only the record length, the attributes byte (written 0, as Kafka's
builder does) and the timestamp delta are written anew, against the new base timestamp (the
first kept record's, or the delete horizon). The header is the original's with length,
attributes, timestamps and count patched -- the last offset delta stays (Kafka's
``overrideLastOffset``) -- and the CRC is computed last.

Python runs per chunk, plus once per batch for the CRC check and for the rare batches that
need a :class:`BatchHeader` (transactional ones, an active producer's, the round's last, the
empty and the compressed rebuilt ones). Chunks holding v0/v1 entries go to the reference path.

Worked example: an 8 MiB chunk of 510 uncompressed 16 KiB batches of 1 KiB values, 300 of them
losing a record: one plan, two hash passes, ``decide``, one ``assemble`` writing 210 batches
by copy and 300 by rebuild, then 300 CRC calls and one ``pwrite`` of the result.
"""

from __future__ import annotations

import dataclasses
import struct
from typing import NamedTuple

import crc32c as _crc32c
import numpy as np
from numba import njit
from numba.core import cgutils, types
from numba.extending import intrinsic

from kafkalab.records.columnar import decode_v2_headers, put_varint, varint_size
from kafkalab.records.compression import compress
from kafkalab.records.header import (
    COMPRESSION_CODEC_MASK,
    DELETE_HORIZON_FLAG_MASK,
    LOG_OVERHEAD,
    V2_ATTRIBUTES_OFFSET,
    V2_BASE_TIMESTAMP_OFFSET,
    V2_CRC_OFFSET,
    V2_HEADER_SIZE,
    V2_MAX_TIMESTAMP_OFFSET,
    V2_RECORDS_COUNT_OFFSET,
    BatchHeader,
    iter_headers,
)
from kafkalab.storage.cleaner import reference
from kafkalab.storage.cleaner.chunks import Chunk, ChunkBuffers, V2Plan, plan_v2
from kafkalab.storage.cleaner.fast_map import FastOffsetMap, get_offsets, hash_keys, put_batches
from kafkalab.storage.cleaner.rules import (
    BatchRetention,
    CleanedTransactions,
    RetentionRule,
    REBUILT_ATTRIBUTES_MASK,
    batch_retention,
    empty_batch,
    skip_in_map,
)
from kafkalab.storage.cleaner.stats import CleanerStats

VARLONG_BYTES_MAX = 10  # a rebuilt record's timestamp delta may grow to this many bytes
NO_HORIZON = np.iinfo(np.int64).min
DROP, COPY, REBUILD, BLOB = 0, 1, 2, 3  # what assemble does with each batch
_CRC = struct.Struct(">I")
_SIZE = struct.Struct(">i")
SIZE_POSITION = 8


class Cleaned(NamedTuple):
    """The kept entries of one chunk, ready to append: the bytes, each entry's last offset,
    max timestamp and size (what the segment indexes by), and the delete horizons the batches
    carry. ``data`` may be a view of the cleaner's output buffer: valid until the next chunk
    is filtered."""

    data: bytes | memoryview
    last_offsets: list[int]
    max_timestamps: list[int]
    sizes: list[int]
    delete_horizons: list[int]


class Decoded(NamedTuple):
    """What the map phase learnt of one chunk: its checked plan and its keys' hashes."""

    plan: V2Plan
    h1: np.ndarray
    h2: np.ndarray


# Record columns one clean keeps from its map phase: about a million records' worth, half the
# default log.cleaner.dedupe.buffer.size.
DECODED_BYTES_MAX = 64 * 1024 * 1024


class DecodedChunks:
    """The map phase's decoding of uncompressed v2 chunks, kept for the copy phase.

    Both phases of a clean read every dirty segment, and the copy phase used to decode each
    chunk a second time: check the headers and CRCs, parse every record, hash every key. The
    map phase keeps that work here, keyed by where the chunk was read (segment, file
    position, length), and the copy phase takes it back when it reads the same chunk, so a
    dirty segment is decoded and CRC-checked once. The copy phase still reads the bytes
    again: the kept part is the columns (about 60 bytes a record), not the data.

    Worked example: a 16 MiB dirty segment of 1 KiB records is two 8 MiB chunks of ~7,700
    records each, ~0.5 MB of columns per chunk -- 3% of the data. Memory is bounded by
    ``budget_bytes`` (:data:`DECODED_BYTES_MAX`); past it, and for compressed chunks (whose
    records live in decompressed copies), the copy phase decodes again as before. The first
    dirty segment is read from an offset-index position in the map phase and from its start
    in the copy phase, so its chunks rarely match and it is decoded twice. Segments below the
    active one never change, so a kept plan describes the bytes read again.

    Not thread-safe; owned by one cleaner, emptied at the end of every clean.
    """

    def __init__(self, budget_bytes: int = DECODED_BYTES_MAX) -> None:
        self.budget_bytes = budget_bytes
        self.taken = 0  # chunks the copy phase did not decode again, over this object's life
        self._kept: dict[tuple[int, int, int], Decoded] = {}
        self._bytes = 0

    def keep(self, chunk: Chunk, decoded: Decoded) -> None:
        """Keep the decoding of an uncompressed chunk if the budget allows."""
        if chunk.segment_base_offset < 0:
            return  # not read from a segment: nothing to match it with later
        size = decoded.h1.nbytes + decoded.h2.nbytes + sum(
            getattr(decoded.plan, name).nbytes for name in _PLAN_COLUMNS) + sum(
            getattr(decoded.plan.records, name).nbytes for name in _RECORD_COLUMNS)
        if self._bytes + size <= self.budget_bytes:
            self._kept[_chunk_key(chunk)] = decoded
            self._bytes += size

    def take(self, chunk: Chunk) -> Decoded | None:
        """The kept decoding of ``chunk``, now describing its freshly read bytes, or None."""
        decoded = self._kept.pop(_chunk_key(chunk), None)
        if decoded is None or not np.array_equal(decoded.plan.position, chunk.positions):
            return None
        plan = dataclasses.replace(decoded.plan, chunk=chunk, data=np.frombuffer(chunk.data, np.uint8))
        self.taken += 1
        return Decoded(plan, decoded.h1, decoded.h2)

    def clear(self) -> None:
        self._kept.clear()
        self._bytes = 0


_PLAN_COLUMNS = ("position", "size", "base_offset", "last_offset", "attributes", "base_timestamp",
                 "max_timestamp", "producer_id", "records_count", "region_start", "region_end", "first")
_RECORD_COLUMNS = ("offset", "timestamp", "key_start", "key_length", "value_start", "value_length")


def _chunk_key(chunk: Chunk) -> tuple[int, int, int]:
    return chunk.segment_base_offset, chunk.file_position, len(chunk.data)


def _decode(chunk: Chunk, decoded: DecodedChunks | None) -> Decoded:
    """The chunk's plan and key hashes: kept from the map phase when there, else computed."""
    kept = decoded.take(chunk) if decoded is not None else None
    if kept is not None:
        return kept
    plan = plan_v2(chunk)
    h1, h2 = hash_keys(plan.data, plan.records.key_start, plan.records.key_length)
    return Decoded(plan, h1, h2)


# --- map phase --------------------------------------------------------------------------------------


def map_chunk(chunk: Chunk, start_offset: int, offset_map: FastOffsetMap, stats: CleanerStats,
              transactions: CleanedTransactions, decoded: DecodedChunks | None = None) -> bool:
    """Map one chunk's keys; True when the map filled up inside it. The chunk's decoding is
    kept in ``decoded`` for the copy phase."""
    stats.map_bytes_read += len(chunk.data)
    if not chunk.is_v2:
        stats.legacy_chunks += 1
        return any(reference.map_batch(h, chunk.data, start_offset, offset_map, stats, transactions)
                   for h in chunk.headers())
    plan, h1, h2 = this = _decode(chunk, None)
    if decoded is not None and not bool(plan.is_compressed.any()):
        decoded.keep(chunk, this)
    records = plan.records
    mappable = ~plan.is_control
    for b in np.flatnonzero(plan.is_transactional).tolist():  # markers too: they end transactions
        mappable[b] = not skip_in_map(plan.header(b), plan.chunk.data, transactions)
    size, latest, full, mapped = put_batches(
        offset_map.table, offset_map.size, offset_map.max_entries, h1, h2, records.offset, records.key_length,
        plan.first, plan.last_offset, mappable, start_offset, offset_map.latest_offset)
    offset_map.size, offset_map.latest_offset = int(size), int(latest)
    stats.map_records += int(mapped)
    return bool(full)


# --- copy phase: kernels ----------------------------------------------------------------------------


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


@intrinsic
def copy_bytes(typingctx, dst, dst_at, src, src_at, count):  # pragma: no cover - compiled
    """``dst[dst_at:dst_at + count] = src[src_at:src_at + count]`` as one ``memcpy``.

    numba compiles a slice assignment into a byte loop (~1.5 GB/s here); copying kept records
    and whole batches is most of a clean's work, so it gets the C library's copy (~10 GB/s).
    Callers guarantee both ranges are in bounds, as for any compiled slice."""
    sig = types.void(dst, dst_at, src, src_at, count)

    def codegen(context, builder, signature, args):
        d, d_at, s, s_at, n = args
        d_ptr = builder.gep(context.make_array(signature.args[0])(context, builder, d).data, [d_at])
        s_ptr = builder.gep(context.make_array(signature.args[2])(context, builder, s).data, [s_at])
        cgutils.raw_memcpy(builder, d_ptr, s_ptr, n, 1)
        return context.get_dummy_value()

    return sig, codegen


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
def _rebuild(data, header_at, region_at, lo, hi, keep, timestamp, horizon, attributes, log_append,
             out, q):  # pragma: no cover - compiled
    """Write one batch with only its kept records (uncompressed records) at ``out[q:]``.

    Returns the end position in ``out``."""
    start = q
    copy_bytes(out, q, data, header_at, V2_HEADER_SIZE)
    q += V2_HEADER_SIZE
    base_ts = horizon
    newest = np.int64(-1)
    count = 0
    p = region_at
    for i in range(lo, hi):
        length, body = _varint_at(data, p)
        rec_end = body + length
        if keep[i]:
            if count == 0 and base_ts == NO_HORIZON:
                base_ts = timestamp[i]
            _old_delta, rest = _varint_at(data, body + 1)
            delta = timestamp[i] - base_ts
            q = put_varint(out, q, 1 + varint_size(delta) + (rec_end - rest))
            out[q] = 0
            q = put_varint(out, q + 1, delta)
            copy_bytes(out, q, data, rest, rec_end - rest)
            q += rec_end - rest
            newest = max(newest, timestamp[i])
            count += 1
        p = rec_end
    _put_be(out, start + 8, q - start - 12, 4)
    _put_be(out, start + V2_ATTRIBUTES_OFFSET, attributes, 2)
    _put_be(out, start + V2_BASE_TIMESTAMP_OFFSET, base_ts, 8)
    if not log_append:
        _put_be(out, start + V2_MAX_TIMESTAMP_OFFSET, newest, 8)
    _put_be(out, start + V2_RECORDS_COUNT_OFFSET, count, 4)
    return q


@njit(cache=True)
def assemble(data, position, size, region, first, keep, timestamp, action, horizons, attributes,
             log_append, blobs, blob_at, out):  # pragma: no cover - compiled
    """Write every batch whose action is not DROP, in order, into ``out``.

    Returns (start of each written batch in ``out``, bytes written, whether each was rebuilt)."""
    written = np.empty(len(action), np.int64)
    rebuilt = np.zeros(len(action), np.bool_)
    m = 0
    q = 0
    for b in range(len(action)):
        a = action[b]
        if a == DROP:
            continue
        written[m] = q
        if a == COPY:
            copy_bytes(out, q, data, position[b], size[b])
            q += size[b]
        elif a == REBUILD:
            q = _rebuild(data, position[b], region[b], first[b], first[b + 1], keep, timestamp, horizons[b],
                         attributes[b], log_append[b], out, q)
            rebuilt[m] = True
        else:
            n = blob_at[b + 1] - blob_at[b]
            copy_bytes(out, q, blobs, blob_at[b], n)
            q += n
        m += 1
    return written[:m], q, rebuilt[:m]


# --- copy phase: one chunk ----------------------------------------------------------------------------


def filter_chunk(chunk: Chunk, rule: RetentionRule, offset_map: FastOffsetMap, retain_legacy_deletes: bool,
                 stats: CleanerStats, buffers: ChunkBuffers, decoded: DecodedChunks | None = None) -> Cleaned:
    """The entries to keep from one chunk, in order (decoded once more unless the map phase
    kept its decoding in ``decoded``)."""
    if not chunk.is_v2:
        stats.legacy_chunks += 1
        entries = [reference.filter_entry(h, chunk.data, rule, offset_map, retain_legacy_deletes, stats)
                   for h in chunk.headers()]
        return joined([e for e in entries if e is not None])
    plan, h1, h2 = _decode(chunk, decoded)
    records = plan.records
    retain_empty, discard, marker_may_go = _batch_retention(plan, rule)
    retain_deletes = ~plan.has_delete_horizon | (rule.now_ms < plan.base_timestamp)
    found = get_offsets(offset_map.table, h1, h2, records.key_length)
    keep, kept, tombstones, unkeyed, removed = decide(
        records.offset, records.key_length, records.value_length, found, plan.first, discard, plan.is_control,
        retain_deletes, offset_map.latest_offset)
    stats.unkeyed_removed += int(unkeyed)
    stats.tombstones_removed += int(removed)
    stats.records_read += len(records.offset)
    stats.records_kept += int(kept.sum())
    needs_horizon = ((tombstones > 0) | marker_may_go) & ~plan.has_delete_horizon
    whole = (kept == plan.records_count) & ~needs_horizon & (kept > 0)
    partial = (kept > 0) & ~whole
    stats.batches_rewritten += int(partial.sum())
    horizons = np.where(needs_horizon, rule.now_ms + rule.delete_retention_ms,
                        np.where(plan.has_delete_horizon, plan.base_timestamp, NO_HORIZON))
    new_attributes = _new_attributes(plan, horizons)
    action = np.where(whole, COPY, np.where(partial & ~plan.is_compressed, REBUILD, DROP)).astype(np.int8)
    blobs = _blobs(plan, keep, partial & plan.is_compressed, (kept == 0) & retain_empty, horizons,
                   new_attributes, action, stats)
    return _write(plan, keep, action, horizons, new_attributes, blobs, buffers)


def _batch_retention(plan: V2Plan, rule: RetentionRule) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(retain empty, discard, marker may go) per batch. Only transactional batches, active
    producers' batches and the round's last batch can differ from (False, False, False); those
    go through :func:`~.rules.batch_retention` with a real header, in offset order."""
    n = len(plan.position)
    retain_empty = np.zeros(n, np.bool_)
    discard = np.zeros(n, np.bool_)
    marker_may_go = np.zeros(n, np.bool_)
    special = plan.is_transactional | (plan.last_offset + 1 == rule.upper_bound_offset)
    active = np.array([pid for pid in rule.active_producers if pid >= 0], np.int64)
    if len(active):
        special |= np.isin(plan.producer_id, active)
    for b in np.flatnonzero(special).tolist():
        retention, discard[b], marker_may_go[b] = batch_retention(plan.header(b), rule, plan.chunk.data)
        retain_empty[b] = retention is BatchRetention.RETAIN_EMPTY
    return retain_empty, discard, marker_may_go


def _new_attributes(plan: V2Plan, horizons: np.ndarray) -> np.ndarray:
    """Each batch's attributes if rebuilt (:func:`~.rules.rebuilt_attributes`, per batch)."""
    return (plan.attributes & REBUILT_ATTRIBUTES_MASK) | np.where(horizons != NO_HORIZON, DELETE_HORIZON_FLAG_MASK, 0)


def _blobs(plan: V2Plan, keep: np.ndarray, compressed: np.ndarray, empty: np.ndarray, horizons: np.ndarray,
           attributes: np.ndarray, action: np.ndarray, stats: CleanerStats) -> tuple[np.ndarray, np.ndarray]:
    """Bytes of the batches built in Python (compressed rebuilt ones, kept empty ones), laid
    end to end, and where batch b's bytes start (``blob_at[b]:blob_at[b + 1]``)."""
    pieces: dict[int, bytes] = {}
    for b in np.flatnonzero(compressed).tolist():
        pieces[b] = _rebuild_compressed(plan, keep, b, int(horizons[b]), int(attributes[b]))
    for b in np.flatnonzero(empty).tolist():
        stats.empty_batches_kept += 1
        pieces[b] = empty_batch(plan.header(b))
    lengths = np.zeros(len(action) + 1, np.int64)
    for b, piece in pieces.items():
        lengths[b + 1] = len(piece)
        action[b] = BLOB
    blob_at = np.cumsum(lengths)
    ordered = b"".join(pieces[b] for b in sorted(pieces))
    return np.frombuffer(ordered, np.uint8) if ordered else np.zeros(1, np.uint8), blob_at


def _rebuild_compressed(plan: V2Plan, keep: np.ndarray, b: int, horizon: int, attributes: int) -> bytes:
    """Rebuild batch b's kept records with the kernel, then compress them with its own codec."""
    lo, hi = int(plan.first[b]), int(plan.first[b + 1])
    region_bytes = int(plan.region_end[b] - plan.region_start[b])
    out = np.empty(V2_HEADER_SIZE + region_bytes + VARLONG_BYTES_MAX * (hi - lo), np.uint8)
    end = _rebuild(plan.data, int(plan.position[b]), int(plan.region_start[b]), lo, hi, keep,
                   plan.records.timestamp, horizon, attributes, bool(plan.log_append_time[b]), out, 0)
    body = compress(attributes & COMPRESSION_CODEC_MASK, out[V2_HEADER_SIZE:end].tobytes())
    header = bytearray(out[:V2_HEADER_SIZE].tobytes())
    _SIZE.pack_into(header, SIZE_POSITION, V2_HEADER_SIZE - LOG_OVERHEAD + len(body))
    _CRC.pack_into(header, V2_CRC_OFFSET, _crc32c.crc32c(body, _crc32c.crc32c(bytes(header[V2_ATTRIBUTES_OFFSET:]))))
    return bytes(header) + body


def _write(plan: V2Plan, keep: np.ndarray, action: np.ndarray, horizons: np.ndarray, attributes: np.ndarray,
           blobs: tuple[np.ndarray, np.ndarray], buffers: ChunkBuffers) -> Cleaned:
    blob, blob_at = blobs
    rebuilds = action == REBUILD
    capacity = (int(plan.size[(action == COPY) | rebuilds].sum()) + int(blob_at[-1])
                + VARLONG_BYTES_MAX * int(plan.records_count[rebuilds].sum()))
    out = buffers.out_buffer(max(capacity, 1))
    starts, end, rebuilt = assemble(plan.data, plan.position, plan.size, plan.region_start, plan.first, keep,
                                    plan.records.timestamp, action, horizons, attributes, plan.log_append_time,
                                    blob, blob_at, out)
    assert end <= capacity, (end, capacity)
    bounds = np.append(starts, end)
    patch = np.flatnonzero(rebuilt)
    if len(patch):
        view = memoryview(out.data)
        crc = _crc32c.crc32c
        crcs = [crc(view[s:e]) for s, e in zip((bounds[patch] + V2_ATTRIBUTES_OFFSET).tolist(), bounds[patch + 1].tolist())]
        _put_crcs(out, bounds[patch] + V2_CRC_OFFSET, np.array(crcs, np.int64))
    return _cleaned(out, starts, end)


def _cleaned(out: np.ndarray, starts: np.ndarray, end: int) -> Cleaned:
    """The written batches as a :class:`Cleaned`, their columns read back from the written
    headers; the bytes stay in ``out`` (no copy: they are appended before the next chunk)."""
    if not len(starts):
        return Cleaned(out[:end].data, [], [], [], [])
    heads = decode_v2_headers(out, starts)
    horizons = heads["base_timestamp"][(heads["attributes"] & DELETE_HORIZON_FLAG_MASK) != 0]
    return Cleaned(out[:end].data, (heads["base_offset"] + heads["last_offset_delta"]).tolist(),
                   heads["max_timestamp"].tolist(), (heads["batch_length"].astype(np.int64) + LOG_OVERHEAD).tolist(),
                   horizons.tolist())


@njit(cache=True)
def _put_crcs(out, at, crcs):  # pragma: no cover - compiled
    for j in range(len(at)):
        _put_be(out, at[j], crcs[j], 4)


def joined(entries: list[bytes]) -> Cleaned:
    """Entries built one by one (the reference and legacy paths) as one :class:`Cleaned`."""
    data = b"".join(entries)
    headers = list(iter_headers(data))
    return Cleaned(data, [h.last_offset for h in headers], [h.max_timestamp for h in headers],
                   [h.size_bytes for h in headers], [h.base_timestamp for h in headers if h.has_delete_horizon])
