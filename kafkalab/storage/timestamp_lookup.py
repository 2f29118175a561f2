"""ListOffsets by timestamp: which offset answers a timestamp, in a log of segments.

Theory of operation
-------------------
Mirrors Kafka's ``UnifiedLog.fetchOffsetByTimestamp``. Three timestamps are special
(``protocol.messages.list_offsets``): -2 asks for the log start offset, -1 for the log end offset,
and -3 (KIP-734) for the record with the largest timestamp. Any other timestamp ``t`` asks for the
first record whose timestamp is at least ``t``:

1. skip segments whose largest timestamp is below ``t`` (each segment remembers it);
2. in the first segment that reaches ``t``, the time index finds the batch (its entries map
   "largest timestamp so far" to an offset, so the answer's batch is at or after the entry);
3. decode that one batch and take its first record at or after ``t``, as Kafka's
   ``FileRecords.searchForTimestamp`` does -- a batch's records need not be in time order.

Worked example: batches [0..2] with timestamps 10, 30, 20 and [3..4] with 40, 50. ``t=25``
answers offset 1 (timestamp 30); ``t=-3`` answers (50, 4); ``t=60`` answers nothing.

Each answer carries the leader epoch of the batch it came from, which KIP-320 consumers use to
validate their position. Reads only; the log's lock-free single owner calls these.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafkalab.protocol.messages.list_offsets import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP
from kafkalab.records import decode_batch
from kafkalab.records.header import read_header
from kafkalab.storage import events as ev
from kafkalab.storage import log_append
from kafkalab.storage.positions import EntryPosition, FileSlice
from kafkalab.storage.segment import LogSegment

if TYPE_CHECKING:
    from kafkalab.storage.log import Log


@dataclass(frozen=True, slots=True)
class TimestampAndOffset:
    """ListOffsets' answer: a timestamp, the offset found, and that batch's leader epoch."""

    timestamp: int
    offset: int
    leader_epoch: int | None = None


def offset_for_timestamp(log: Log, timestamp_ms: int) -> TimestampAndOffset | None:
    """ListOffsets: the first record whose timestamp is >= ``timestamp_ms``, with -2
    (earliest), -1 (latest) and -3 (the record with the largest timestamp) as Kafka does.

    The log answers "latest" with its log end offset, everything it holds; what a consumer
    may read ends at the high watermark, and the broker's ListOffsets handler answers a
    consumer with that instead (as Kafka's ``Partition`` does before asking its log)."""
    if timestamp_ms == EARLIEST_TIMESTAMP:
        return TimestampAndOffset(-1, log.log_start_offset, epoch_for(log, log.log_start_offset))
    if timestamp_ms == LATEST_TIMESTAMP:
        return TimestampAndOffset(-1, log.log_end_offset, log.leader_epoch_cache.latest_epoch)
    if timestamp_ms == MAX_TIMESTAMP:
        return _record_with_max_timestamp(log)
    listeners = log.listeners
    for segment in log.segments:
        if listeners:
            ev.emit(listeners, ev.LookupStep(
                "segment", -1, segment.base_offset, timestamp=segment.max_timestamp_so_far,
                target_timestamp=timestamp_ms))
        if segment.max_timestamp_so_far >= timestamp_ms:
            entry = segment.find_offset_by_timestamp(timestamp_ms, log.log_start_offset)
            if entry is not None:
                return _first_record_at_or_after(log, segment, entry, timestamp_ms)
    return None


def _record_with_max_timestamp(log: Log) -> TimestampAndOffset | None:
    """KIP-734: the first record carrying the largest timestamp in the log, found as Kafka's
    ``UnifiedLog.fetchOffsetByTimestamp`` finds it. A segment remembers only the batch that
    holds its largest timestamp (that batch's last offset), so the batch is decoded to find
    the record. Worked example: one batch at offsets 0..2 with timestamps 10, 30, 20
    answers (30, 1), not the batch's last offset 2; in a LogAppendTime batch every record
    carries the batch's stamp, so the answer is the batch's first offset."""
    segment = max(log.segments, key=lambda s: s.max_timestamp_so_far)
    max_timestamp = segment.max_timestamp_so_far
    entry = segment.translate_offset(segment.offset_of_max_timestamp_so_far)
    if max_timestamp == log_append.NO_TIMESTAMP or entry is None:
        return None
    data = FileSlice(segment.log_path, entry.position, entry.size_bytes).read_bytes()
    header = read_header(data, 0)
    if header.magic == 0:
        return None  # magic 0 has no timestamps
    for record in decode_batch(data, header).records:
        if record.timestamp == max_timestamp:
            epoch = header.partition_leader_epoch if header.partition_leader_epoch >= 0 else None
            return TimestampAndOffset(max_timestamp, record.offset, epoch)
    return None  # only if the header's max timestamp disagrees with its records


def _first_record_at_or_after(
    log: Log, segment: LogSegment, entry: EntryPosition, timestamp_ms: int
) -> TimestampAndOffset:
    """Inside the batch found by its max timestamp, the first record whose timestamp is
    >= the target (``FileRecords.searchForTimestamp`` decodes the batch the same way)."""
    data = FileSlice(segment.log_path, entry.position, entry.size_bytes).read_bytes()
    batch = decode_batch(data, read_header(data, 0))
    for record in batch.records:
        if record.timestamp >= timestamp_ms and record.offset >= log.log_start_offset:
            return TimestampAndOffset(record.timestamp, record.offset, epoch_for(log, record.offset))
    # Only reachable if the header's max timestamp disagrees with its records.
    offset = max(entry.base_offset, log.log_start_offset)
    return TimestampAndOffset(entry.max_timestamp, offset, epoch_for(log, offset))


def epoch_for(log: Log, offset: int) -> int | None:
    epoch = None
    for known, start in log.leader_epoch_cache.entries:
        if start <= offset:
            epoch = known
    return epoch


__all__ = ["TimestampAndOffset", "epoch_for", "offset_for_timestamp"]
