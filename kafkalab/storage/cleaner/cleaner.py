"""Log compaction: keep the latest record of every key (Kafka's ``Cleaner``).

One clean of one log, in Kafka's steps::

    log start                first dirty            first uncleanable   log end
    |<------- clean -------->|<------- dirty ------>|<-- active / lag -->|
    [seg 0][seg 40]          [seg 90][seg 130]      [seg 170 (active)]

1. **Map** the dirty section: for every keyed record from the first dirty offset up to the
   first uncleanable offset, remember ``key -> offset`` in the offset map. If the map fills,
   the clean stops there: ``end_offset = map.latest_offset + 1``.
2. **Group** the segments below ``end_offset`` so that each group fits one segment
   (``segment.bytes``, and offsets within 2^31 of the group's base: Kafka's
   ``groupSegmentsBySize``). Small segments merge.
3. **Copy** each group into one ``<base>.log.cleaned`` segment under :mod:`.rules`: a record
   stays when no later offset of its key is in the map (``offset >= map[key]``) or when it lies
   past the map's latest offset. A tombstone (null value) is kept until its batch's *delete
   horizon* passes: the first clean that keeps a tombstone rewrites its batch with
   ``deleteHorizonMs = now + delete.retention.ms`` in the header (KIP-534), and a later clean
   after that time drops it. Kept records keep their offsets and timestamps, so gaps appear; a
   batch that loses records is re-encoded with its own magic, codec, producer id, epoch, base
   sequence, base offset and last offset. A batch that loses every record stays as an empty
   batch when an active idempotent producer still needs it or it ends the round. Unkeyed
   records are dropped, as in Kafka.
4. **Swap**: ``Log.replace_segments`` renames ``.cleaned`` -> ``.swap``, puts the new segment
   into the map, renames the old ones ``.deleted``, then drops ``.swap``. A crash before
   ``.swap`` leaves the old segments (recovery deletes ``.cleaned``); a crash after it is
   completed by recovery. Either way, never a mix.

Worked example: records ``k1@0 k2@1 k1@2 k3@3 k2@4(tombstone)`` in a non-active segment,
``delete.retention.ms=100``, now 1000. The map is ``{k1: 2, k3: 3, k2: 4}``; the copy keeps
offsets 2, 3 and 4, and the batch holding 4 gets delete horizon 1100. A clean at 1100 or later
drops offset 4 as well, leaving offsets 2 and 3.

Two paths do steps 1 and 3: :mod:`.fast_path` (numba kernels over columns, the default) and
:mod:`.reference` (one Python object per record, the one the book shows); tests check that they
write the same bytes. Legacy v0/v1 entries are compacted too, in their own format (Kafka's
``filterTo`` keeps a batch's magic); their tombstones go once the segment is older than the
*legacy delete horizon* -- the last clean segment's largest timestamp minus
``delete.retention.ms`` (Kafka uses the file's mtime, which kafkalab never trusts).

Transactions: both phases read the aborted transactions of the range from the ``.txnindex``
files (``Log.collect_aborted_transactions``) into a :class:`~.rules.CleanedTransactions`. An
aborted transaction's data batches put no keys in the map and are dropped; its markers go only
under Kafka's rules (see :mod:`.rules`), and each ABORT that stays has its entry written into
the cleaned segment's ``.txnindex``. The copy phase's state runs across every group of one
clean, as Kafka's does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, cast

from kafkalab.records.header import BatchHeader
from kafkalab.storage.cleaner import fast_path, reference
from kafkalab.storage.cleaner.chunks import Chunk, ChunkBuffers, read_chunks
from kafkalab.storage.cleaner.fast_map import FastOffsetMap
from kafkalab.storage.cleaner.fast_path import DECODED_BYTES_MAX, Cleaned, DecodedChunks
from kafkalab.storage.cleaner.offset_map import OffsetMap
from kafkalab.storage.cleaner.reference import KeyOffsetMap
from kafkalab.storage.cleaner.rules import CleanedTransactions, LastRecord, RetentionRule
from kafkalab.storage.cleaner.stats import CleanerStats
from kafkalab.storage.log_config import LogConfig
from kafkalab.storage.log_files import CLEANED_SUFFIX, SEGMENT_SUFFIXES, file_name
from kafkalab.storage.offset_index import RELATIVE_OFFSET_MAX
from kafkalab.storage.segment import SEGMENT_FILE_BYTES_MAX, LogSegment
from kafkalab.storage.txn_index import AbortedTxn


FaultHook = Callable[[str], None]
__all__ = ["CleanResult", "Cleaner", "CleanerStats", "read_segment"]


class CleanableLog(Protocol):
    """The part of ``Log`` the cleaner uses."""

    config: LogConfig

    @property
    def segments(self) -> list[LogSegment]: ...

    def new_segment(self, base_offset: int, suffix: str = "") -> LogSegment: ...

    def replace_segments(self, new_segments: list[LogSegment], old_segments: list[LogSegment]) -> None: ...

    def collect_aborted_transactions(self, fetch_offset: int, upper_bound_offset: int) -> list[AbortedTxn]: ...


@dataclass(frozen=True, slots=True)
class CleanResult:
    """``end_offset``: everything below it is now clean (the new cleaner checkpoint)."""

    end_offset: int
    stats: CleanerStats


def read_segment(segment: LogSegment) -> bytes:
    """A non-active segment's bytes (at most 2 GiB, the segment format's own bound)."""
    import os

    from kafkalab.errors import StorageError

    size = segment.size_bytes
    assert 0 <= size <= SEGMENT_FILE_BYTES_MAX, size
    data = os.pread(segment.fd, size, 0)
    if len(data) != size:
        raise StorageError(f"short read of {segment.log_path}: {len(data)} of {size} bytes")
    return data


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


def build_offset_map(log: CleanableLog, start_offset: int, end_offset: int, offset_map: KeyOffsetMap,
                     stats: CleanerStats, *, fast: bool, buffers: ChunkBuffers | None = None,
                     decoded: DecodedChunks | None = None) -> None:
    """Map keys of ``[start_offset, end_offset)``, stopping at the record where the map fills
    (Kafka's ``buildOffsetMap``); ``offset_map`` has been cleared by the caller. The compiled
    path keeps each chunk's decoding in ``decoded`` for the copy phase."""
    offset_map.update_latest_offset(start_offset - 1)
    transactions = CleanedTransactions(log.collect_aborted_transactions(start_offset, end_offset))
    dirty = segments_between(log, start_offset, end_offset)
    for index, segment in enumerate(dirty):
        next_start = dirty[index + 1].base_offset if index + 1 < len(dirty) else end_offset
        position = segment.offset_index.lookup(start_offset).position if index == 0 else 0
        for chunk in read_chunks(segment, position, buffers):
            if _map_chunk(chunk, start_offset, offset_map, stats, fast, transactions, decoded):
                return
        # Offsets may have gaps (an earlier clean): the map has seen everything below the next
        # segment's base offset.
        offset_map.update_latest_offset(next_start - 1)


def _map_chunk(chunk: Chunk, start_offset: int, offset_map: KeyOffsetMap, stats: CleanerStats, fast: bool,
               transactions: CleanedTransactions, decoded: DecodedChunks | None) -> bool:
    if fast:
        return fast_path.map_chunk(chunk, start_offset, cast(FastOffsetMap, offset_map), stats, transactions,
                                   decoded)
    stats.map_bytes_read += len(chunk.data)
    return any(reference.map_batch(h, chunk.data, start_offset, offset_map, stats, transactions)
               for h in chunk.headers())


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


def append_cleaned(segment: LogSegment, cleaned: Cleaned, stats: CleanerStats) -> None:
    """Append one chunk's kept entries to the ``.cleaned`` segment with one write (Kafka's
    cleaner writes whenever its write buffer fills; a chunk is that buffer here)."""
    if not cleaned.sizes:
        return
    if cleaned.delete_horizons:
        stats.saw_delete_horizon(min(cleaned.delete_horizons))
    segment.append_batches(cleaned.data, cleaned.last_offsets, cleaned.max_timestamps, cleaned.sizes)
    stats.bytes_written += len(cleaned.data)


# --- the whole clean ------------------------------------------------------------------------------


class Cleaner:
    """Cleans one log at a time on explicit calls. Not thread-safe; no threads of its own.

    ``fast`` picks the compiled path (default) or the reference one; ``decoded_bytes`` bounds
    what its map phase keeps for the copy phase (:class:`~.fast_path.DecodedChunks`). ``fault`` is called with
    the name of each step (``"cleaned-written"``) so tests can stop a clean between steps, as a
    crash would.
    """

    def __init__(self, dedupe_buffer_bytes: int, load_factor: float = 0.9, *, fault: FaultHook | None = None,
                 fast: bool = True, decoded_bytes: int = DECODED_BYTES_MAX) -> None:
        self.fast = fast
        self.offset_map: KeyOffsetMap = (FastOffsetMap if fast else OffsetMap)(dedupe_buffer_bytes, load_factor)
        self._fault = fault or (lambda step: None)
        self._buffers = ChunkBuffers()
        self.decoded = DecodedChunks(decoded_bytes)  # the map phase's decoding, for the copy phase

    def clean(self, log: CleanableLog, first_dirty_offset: int, first_uncleanable_offset: int, now_ms: int,
              active_producers: Mapping[int, LastRecord] | None = None) -> CleanResult:
        try:
            return self._clean(log, first_dirty_offset, first_uncleanable_offset, now_ms, active_producers)
        finally:
            self.decoded.clear()  # what the map phase kept lives for one clean only

    def _clean(self, log: CleanableLog, first_dirty_offset: int, first_uncleanable_offset: int, now_ms: int,
               active_producers: Mapping[int, LastRecord] | None) -> CleanResult:
        stats = CleanerStats()
        self._clear_map(first_uncleanable_offset - first_dirty_offset)
        build_offset_map(log, first_dirty_offset, first_uncleanable_offset, self.offset_map, stats, fast=self.fast,
                         buffers=self._buffers, decoded=self.decoded)
        # Every mapped offset is <= latest_offset, and a map holds at least one entry, so a
        # clean with dirty keyed records always moves forward, even mid-batch.
        end_offset = self.offset_map.latest_offset + 1
        # With nothing new to map, a clean still rewrites the clean section: it is how
        # tombstones whose delete horizon has passed leave the log.
        end_offset = max(end_offset, first_dirty_offset)
        if end_offset == 0:
            return CleanResult(0, stats)
        rule = RetentionRule(now_ms, log.config.delete_retention_ms, first_uncleanable_offset,
                             dict(active_producers or {}), CleanedTransactions())
        legacy_horizon_ms = legacy_delete_horizon_ms(log, first_dirty_offset)
        candidates = segments_between(log, 0, end_offset)
        for group in group_segments_by_size(candidates, log.config.segment_bytes, log.config.segment_index_bytes):
            stats.groups.append([s.base_offset for s in group])
            self._clean_group(log, group, rule, legacy_horizon_ms, stats)
        return CleanResult(end_offset, stats)

    def _clear_map(self, dirty_offsets: int) -> None:
        if isinstance(self.offset_map, FastOffsetMap):
            # A dirty section of n offsets holds at most n keys: size the table for that.
            self.offset_map.clear(records_bound=max(dirty_offsets, 1))
        else:
            cast(OffsetMap, self.offset_map).clear()

    def _clean_group(self, log: CleanableLog, group: list[LogSegment], rule: RetentionRule,
                     legacy_horizon_ms: int, stats: CleanerStats) -> None:
        base_offset = group[0].base_offset
        for suffix in SEGMENT_SUFFIXES:  # leftovers of an interrupted clean
            (group[0].directory / (file_name(base_offset, suffix) + CLEANED_SUFFIX)).unlink(missing_ok=True)
        cleaned = log.new_segment(base_offset, CLEANED_SUFFIX)
        transactions = rule.transactions
        transactions.kept_index = []
        for slot, segment in enumerate(group):
            stats.bytes_read += segment.size_bytes
            # The whole segment's range: the cleaned .txnindex is rebuilt from what stays.
            upper = group[slot + 1].base_offset if slot + 1 < len(group) else segment.read_next_offset()
            transactions.add_aborted(log.collect_aborted_transactions(segment.base_offset, upper))
            retain_legacy = segment.max_timestamp_so_far > legacy_horizon_ms
            for chunk in read_chunks(segment, 0, self._buffers):
                append_cleaned(cleaned, self._filter_chunk(chunk, rule, retain_legacy, stats), stats)
        for entry in transactions.kept_index:
            cleaned.txn_index.append(entry)
        cleaned.on_become_inactive()  # replace_segments fsyncs it before the swap
        self._fault("cleaned-written")
        log.replace_segments([cleaned], group)

    def _filter_chunk(self, chunk: Chunk, rule: RetentionRule, retain_legacy: bool, stats: CleanerStats) -> Cleaned:
        if self.fast:
            return fast_path.filter_chunk(chunk, rule, cast(FastOffsetMap, self.offset_map), retain_legacy, stats,
                                          self._buffers, self.decoded)
        entries = [reference.filter_entry(h, chunk.data, rule, self.offset_map, retain_legacy, stats)
                   for h in chunk.headers()]
        return fast_path.joined([e for e in entries if e is not None])


def legacy_delete_horizon_ms(log: CleanableLog, first_dirty_offset: int) -> int:
    """Below this "age" a v0/v1 segment's tombstones may go: the last clean segment's largest
    timestamp minus ``delete.retention.ms`` (0 when nothing is clean yet), Kafka's
    ``legacyDeleteHorizonMs`` with the largest timestamp standing in for the file's mtime."""
    clean = segments_between(log, 0, first_dirty_offset)
    if not clean:
        return 0
    return clean[-1].max_timestamp_so_far - log.config.delete_retention_ms


def iter_entries(segment: LogSegment) -> Iterator[BatchHeader]:
    """Every entry header of a segment, chunk by chunk."""
    for chunk in read_chunks(segment, 0):
        yield from chunk.headers()
