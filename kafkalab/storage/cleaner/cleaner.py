"""Log compaction: keep the latest record of every key (Kafka's ``Cleaner``).

One clean of one log, in Kafka's steps::

    log start                first dirty            first uncleanable   log end
    |<------- clean -------->|<------- dirty ------>|<-- active / lag -->|
    [seg 0][seg 40]          [seg 90][seg 130]      [seg 170 (active)]

1. **Map** the dirty section: for every keyed record from the first dirty offset up to the
   first uncleanable offset, remember ``key -> offset`` in the :class:`OffsetMap`. If the map
   fills, the clean stops there: ``end_offset = map.latest_offset + 1``.
2. **Group** the segments below ``end_offset`` so that each group fits one segment
   (``segment.bytes``, and offsets within 2^31 of the group's base: Kafka's
   ``groupSegmentsBySize``). Small segments merge.
3. **Copy** each group into one ``<base>.log.cleaned`` segment, keeping a record when no later
   offset of its key is in the map (``offset >= map[key]``). A tombstone (null value) is kept
   until its batch's *delete horizon* passes: the first clean that keeps a tombstone rewrites
   its batch with ``deleteHorizonMs = now + delete.retention.ms`` in the header (KIP-534), and a
   later clean after that time drops it. Kept records keep their offsets and timestamps, so
   gaps appear; a batch that loses records is re-encoded with its own codec, producer id,
   epoch, base sequence and base offset. Unkeyed records are dropped, as in Kafka.
4. **Swap**: ``Log.replace_segments`` renames ``.cleaned`` -> ``.swap``, puts the new segment
   into the map, renames the old ones ``.deleted``, then drops ``.swap``. A crash before
   ``.swap`` leaves the old segments (recovery deletes ``.cleaned``); a crash after it is
   completed by recovery. Either way, never a mix.

Worked example: records ``k1@0 k2@1 k1@2 k3@3 k2@4(tombstone)`` in a non-active segment,
``delete.retention.ms=100``, now 1000. The map is ``{k1: 2, k3: 3, k2: 4}``; the copy keeps
offsets 2, 3 and 4, and the batch holding 4 gets delete horizon 1100. A clean at 1100 or later
drops offset 4 as well, leaving offsets 2 and 3.

Transactional data: aborted batches and their markers are removed only under Kafka's rules,
which need the transaction index; until transactions land, control batches are always kept
and :func:`is_aborted` keeps every data batch (the hook for that issue). Legacy v0/v1 entries
are copied unchanged (Kafka 4 no longer writes them).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kafkalab.errors import StorageError
from kafkalab.records.codec import build_batch, decode_batch
from kafkalab.records.header import BatchHeader, TimestampType, iter_headers
from kafkalab.records.model import Record, RecordBatch
from kafkalab.storage.cleaner.offset_map import OffsetMap
from kafkalab.storage.log_config import LogConfig
from kafkalab.storage.segment import SEGMENT_FILE_BYTES_MAX, SEGMENT_SUFFIXES, LogSegment, file_name

CLEANED_SUFFIX = ".cleaned"
RELATIVE_OFFSET_MAX = 2**31 - 1  # a segment addresses offsets as int32 deltas from its base
WRITE_BUFFER_BYTES = 512 * 1024  # log.cleaner.io.buffer.size default: flush kept batches at this size

FaultHook = Callable[[str], None]


class CleanableLog(Protocol):
    """The part of ``Log`` the cleaner uses."""

    config: LogConfig

    @property
    def segments(self) -> list[LogSegment]: ...

    def new_segment(self, base_offset: int, suffix: str = "") -> LogSegment: ...

    def replace_segments(self, new_segments: list[LogSegment], old_segments: list[LogSegment]) -> None: ...


@dataclass
class CleanerStats:
    """Counters of one clean, as Kafka's ``CleanerStats`` logs them."""

    bytes_read: int = 0
    bytes_written: int = 0
    map_bytes_read: int = 0
    map_records: int = 0
    records_read: int = 0
    records_kept: int = 0
    tombstones_removed: int = 0
    unkeyed_removed: int = 0
    batches_rewritten: int = 0
    groups: list[list[int]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class CleanResult:
    """``end_offset``: everything below it is now clean (the new cleaner checkpoint)."""

    end_offset: int
    stats: CleanerStats


def read_segment(segment: LogSegment) -> bytes:
    """A non-active segment's bytes (at most 2 GiB, the segment format's own bound)."""
    size = segment.size_bytes
    assert 0 <= size <= SEGMENT_FILE_BYTES_MAX, size
    data = os.pread(segment.fd, size, 0)
    if len(data) != size:
        raise StorageError(f"short read of {segment.log_path}: {len(data)} of {size} bytes")
    return data


def is_aborted(header: BatchHeader) -> bool:
    """Hook for the transactions issue: True for a batch of an aborted transaction.

    Kafka learns this from the aborted-transaction index while cleaning; until kafkalab has
    transactions no batch is aborted."""
    return False


def segments_between(log: CleanableLog, start_offset: int, end_offset: int) -> list[LogSegment]:
    """Segments holding any offset in ``[start_offset, end_offset)`` (Kafka's ``logSegments``)."""
    segments = log.segments
    result = []
    for index, segment in enumerate(segments):
        next_base = segments[index + 1].base_offset if index + 1 < len(segments) else None
        if segment.base_offset < end_offset and (next_base is None or next_base > start_offset):
            result.append(segment)
    return result


# --- step 1: the offset map ---------------------------------------------------------------------


def build_offset_map(
    log: CleanableLog, start_offset: int, end_offset: int, offset_map: OffsetMap, stats: CleanerStats
) -> None:
    """Map keys of ``[start_offset, end_offset)``, stopping at the batch where the map fills."""
    offset_map.clear()
    offset_map.update_latest_offset(start_offset - 1)
    for segment in segments_between(log, start_offset, end_offset):
        if _map_segment(segment, start_offset, end_offset, offset_map, stats):
            return


def _map_segment(
    segment: LogSegment, start_offset: int, end_offset: int, offset_map: OffsetMap, stats: CleanerStats
) -> bool:
    """Returns True when the map filled up inside this segment."""
    data = read_segment(segment)
    stats.map_bytes_read += len(data)
    for header in iter_headers(data):
        if header.last_offset < start_offset:
            continue
        if header.base_offset >= end_offset:
            return True
        if not header.is_control and not is_aborted(header):
            for record in decode_batch(data, header).records:
                if record.key is None or record.offset < start_offset:
                    continue
                if not offset_map.try_put(record.key, record.offset):
                    return True
                stats.map_records += 1
        offset_map.update_latest_offset(header.last_offset)
    return False


# --- step 2: grouping ---------------------------------------------------------------------------


def group_segments_by_size(segments: Sequence[LogSegment], max_size_bytes: int, max_index_bytes: int) -> list[list[LogSegment]]:
    """Consecutive segments whose sizes sum to at most ``max_size_bytes``, whose indexes fit
    ``max_index_bytes`` and whose offsets fit int32 deltas from the group's base."""
    groups: list[list[LogSegment]] = []
    remaining = list(segments)
    while remaining:
        group = [remaining.pop(0)]
        log_bytes = group[0].size_bytes
        index_bytes = group[0].offset_index.size_bytes
        while remaining:
            candidate = remaining[0]
            next_base = remaining[1].base_offset if len(remaining) > 1 else candidate.read_next_offset()
            fits = (
                log_bytes + candidate.size_bytes <= max_size_bytes
                and index_bytes + candidate.offset_index.size_bytes <= max_index_bytes
                and next_base - 1 - group[0].base_offset <= RELATIVE_OFFSET_MAX
            )
            if not fits:
                break
            group.append(remaining.pop(0))
            log_bytes += candidate.size_bytes
            index_bytes += candidate.offset_index.size_bytes
        groups.append(group)
    return groups


# --- step 3: copying what survives ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RetentionRule:
    """What decides a record's fate during one clean."""

    offset_map: OffsetMap
    now_ms: int
    delete_retention_ms: int


def filter_batch(batch: RecordBatch, data: bytes, rule: RetentionRule, stats: CleanerStats) -> bytes | None:
    """The bytes to keep for one entry: the original, a re-encoded batch, or None."""
    header = batch.header
    original = data[header.position : header.position + header.size_bytes]
    if header.is_control or header.magic < 2:
        return original
    if is_aborted(header):
        return None  # the transactions issue decides when markers go too
    horizon = header.delete_horizon_ms
    retain_deletes = horizon is None or rule.now_ms < horizon
    kept = [r for r in batch.records if _keep(r, retain_deletes, rule.offset_map, stats)]
    stats.records_read += len(batch.records)
    stats.records_kept += len(kept)
    if not kept:
        return None
    has_tombstone = any(r.value is None for r in kept)
    needs_horizon = horizon is None and has_tombstone
    if len(kept) == len(batch.records) and not needs_horizon:
        return original
    stats.batches_rewritten += 1
    new_horizon = rule.now_ms + rule.delete_retention_ms if needs_horizon else horizon
    return _rebuild(header, kept, new_horizon)


def _keep(record: Record, retain_deletes: bool, offset_map: OffsetMap, stats: CleanerStats) -> bool:
    if record.key is None:
        stats.unkeyed_removed += 1
        return False
    if record.offset < offset_map.get(record.key):
        return False
    if record.value is None and not retain_deletes:
        stats.tombstones_removed += 1
        return False
    return True


def _rebuild(header: BatchHeader, records: list[Record], delete_horizon_ms: int | None) -> bytes:
    log_append = header.timestamp_type is TimestampType.LOG_APPEND_TIME
    return build_batch(
        records, magic=2, base_offset=header.base_offset, compression=header.compression,
        timestamp_type=header.timestamp_type,
        log_append_time_ms=header.max_timestamp if log_append else None,
        producer_id=header.producer_id, producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence, is_transactional=header.is_transactional,
        partition_leader_epoch=header.partition_leader_epoch, delete_horizon_ms=delete_horizon_ms,
    )


class _CleanedWriter:
    """Buffers kept batches and appends them to the ``.cleaned`` segment in chunks."""

    def __init__(self, segment: LogSegment, stats: CleanerStats) -> None:
        self.segment = segment
        self.stats = stats
        self._pending: list[bytes] = []
        self._pending_bytes = 0

    def add(self, entry: bytes) -> None:
        self._pending.append(entry)
        self._pending_bytes += len(entry)
        if self._pending_bytes >= WRITE_BUFFER_BYTES:
            self.flush()

    def flush(self) -> None:
        if not self._pending:
            return
        chunk = b"".join(self._pending)
        headers = list(iter_headers(chunk))
        largest_timestamp = max(h.max_timestamp for h in headers)
        self.segment.append(headers[-1].last_offset, largest_timestamp, chunk, headers)
        self.stats.bytes_written += len(chunk)
        self._pending, self._pending_bytes = [], 0


# --- the whole clean ------------------------------------------------------------------------------


class Cleaner:
    """Cleans one log at a time on explicit calls. Not thread-safe; no threads of its own.

    ``fault`` is called with the name of each step (``"cleaned-written"``) so tests can stop a
    clean between steps, as a crash would.
    """

    def __init__(self, dedupe_buffer_bytes: int, load_factor: float = 0.9, *, fault: FaultHook | None = None) -> None:
        self.offset_map = OffsetMap(dedupe_buffer_bytes, load_factor)
        self._fault = fault or (lambda step: None)

    def clean(self, log: CleanableLog, first_dirty_offset: int, first_uncleanable_offset: int, now_ms: int) -> CleanResult:
        stats = CleanerStats()
        build_offset_map(log, first_dirty_offset, first_uncleanable_offset, self.offset_map, stats)
        # Every mapped offset is <= latest_offset, and a map holds at least one entry, so a
        # clean with dirty keyed records always moves forward, even mid-batch.
        end_offset = self.offset_map.latest_offset + 1
        # With nothing new to map, a clean still rewrites the clean section: it is how
        # tombstones whose delete horizon has passed leave the log.
        end_offset = max(end_offset, first_dirty_offset)
        if end_offset == 0:
            return CleanResult(0, stats)
        rule = RetentionRule(self.offset_map, now_ms, log.config.delete_retention_ms)
        candidates = segments_between(log, 0, end_offset)
        for group in group_segments_by_size(candidates, log.config.segment_bytes, log.config.segment_index_bytes):
            stats.groups.append([s.base_offset for s in group])
            self._clean_group(log, group, rule, stats)
        return CleanResult(end_offset, stats)

    def _clean_group(self, log: CleanableLog, group: list[LogSegment], rule: RetentionRule, stats: CleanerStats) -> None:
        base_offset = group[0].base_offset
        for suffix in SEGMENT_SUFFIXES:  # leftovers of an interrupted clean
            (group[0].directory / (file_name(base_offset, suffix) + CLEANED_SUFFIX)).unlink(missing_ok=True)
        cleaned = log.new_segment(base_offset, CLEANED_SUFFIX)
        writer = _CleanedWriter(cleaned, stats)
        for segment in group:
            data = read_segment(segment)
            stats.bytes_read += len(data)
            for header in iter_headers(data):
                entry = filter_batch(decode_batch(data, header), data, rule, stats)
                if entry is not None:
                    writer.add(entry)
        writer.flush()
        cleaned.on_become_inactive()
        cleaned.flush()
        self._fault("cleaned-written")
        log.replace_segments([cleaned], group)
        self._fault("swapped")
