"""Which log to clean, from where to where: Kafka's ``LogCleanerManager`` and ``LogCleaner``.

Every compacted log has a *cleaner checkpoint*: the offset below which it is already clean,
kept in the data directory's ``cleaner-offset-checkpoint`` (``topic partition offset``
lines). From it and the log's state come two offsets (Kafka's ``cleanableOffsets``)::

    first dirty       = checkpoint, or the log start offset if the checkpoint is missing,
                        below the log start offset or past the log end offset
    first uncleanable = min(last stable offset (never past an undecided transaction; it is
                            the high watermark when none is open),
                            the active segment's base offset,
                            the first dirty segment with a record younger than
                            min.compaction.lag.ms)

and the *dirty ratio* = dirty bytes / (clean bytes + dirty bytes), where clean bytes are the
segments below the first dirty offset and dirty bytes the segments between the two offsets.

Worked example: segments 0 (600 bytes), 40 (400), 90 (500), 130 (500) and 170 (active);
checkpoint 90. Clean bytes = 1000, dirty bytes = 1000, ratio 0.5. With the default
``min.cleanable.dirty.ratio = 0.5`` the log is *not* cleanable yet (Kafka's test is strictly
greater); one more 100-byte dirty segment makes it 0.52 and it is. A log whose oldest dirty
record is older than ``max.compaction.lag.ms`` is cleanable whatever its ratio.

:meth:`LogCleaner.clean_once` picks the filthiest cleanable log, cleans it and moves its
checkpoint to the clean's end offset. No threads: a broker or a test calls it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from kafkalab.config.definitions import broker_default
from kafkalab.config.types import LONG_MAX
from kafkalab.storage.checkpoints import CLEANER_OFFSET_CHECKPOINT, read_offsets, write_offsets
from kafkalab.storage.cleaner.cleaner import CleanableLog, Cleaner, CleanResult
from kafkalab.storage.cleaner.rules import LastRecord
from kafkalab.storage.events import Listener, LogEvent, Truncated
from kafkalab.storage.producer_state_manager import ProducerStateManager
from kafkalab.storage.retention import largest_timestamp_ms

DEDUPE_BUFFER_BYTES_DEFAULT: int = broker_default("log.cleaner.dedupe.buffer.size")
LOAD_FACTOR_DEFAULT: float = broker_default("log.cleaner.io.buffer.load.factor")


class ManagedLog(CleanableLog, Protocol):
    """What the manager reads besides the cleanable surface (``Log`` has all of it)."""

    topic: str
    partition: int
    log_start_offset: int
    high_watermark: int
    producer_state: ProducerStateManager

    @property
    def log_end_offset(self) -> int: ...

    @property
    def last_stable_offset(self) -> int: ...


class WatchedLog(ManagedLog, Protocol):
    """A log that announces its events (``Log.subscribe``)."""

    def subscribe(self, listener: Listener) -> Callable[[], None]: ...


@dataclass(frozen=True, slots=True)
class LogToClean:
    """One log's cleanable range and how dirty it is (Kafka's ``LogToClean``)."""

    log: ManagedLog
    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    dirty_bytes: int
    compaction_delay_ms: int  # > 0: max.compaction.lag.ms has passed for the oldest dirty record

    @property
    def dirty_ratio(self) -> float:
        total = self.clean_bytes + self.dirty_bytes
        return self.dirty_bytes / total if total else 0.0

    @property
    def cleanable(self) -> bool:
        if self.compaction_delay_ms > 0 and self.dirty_bytes > 0:
            return True
        return self.dirty_ratio > self.log.config.min_cleanable_dirty_ratio


def last_records_of_active_producers(log: ManagedLog) -> dict[int, LastRecord]:
    """Each producer the partition remembers: its last data offset (None if only markers are
    left of it) and epoch, whose batches a clean must keep (Kafka's
    ``UnifiedLog.lastRecordsOfActiveProducers``)."""
    return {
        producer_id: LastRecord(entry.last_data_offset if entry.last_data_offset >= 0 else None, entry.producer_epoch)
        for producer_id, entry in log.producer_state.producers.items()
    }


def is_compacted(log: ManagedLog) -> bool:
    return log.config.compacted


def cleanable_offsets(log: ManagedLog, checkpoint: int | None, now_ms: int) -> tuple[int, int]:
    """``(first dirty, first uncleanable)`` offsets, as described in the module docstring."""
    segments = log.segments
    if checkpoint is None or checkpoint < log.log_start_offset or checkpoint > log.log_end_offset:
        first_dirty = log.log_start_offset
    else:
        first_dirty = checkpoint
    candidates = [log.last_stable_offset, segments[-1].base_offset]
    lag_ms = log.config.min_compaction_lag_ms
    if lag_ms > 0:
        for segment in segments[:-1]:
            if segment.read_next_offset() <= first_dirty:
                continue
            if largest_timestamp_ms(segment) > now_ms - lag_ms:
                candidates.append(segment.base_offset)
                break
    return first_dirty, max(first_dirty, min(candidates))


def log_to_clean(log: ManagedLog, checkpoint: int | None, now_ms: int) -> LogToClean:
    first_dirty, first_uncleanable = cleanable_offsets(log, checkpoint, now_ms)
    segments = log.segments
    clean_bytes = dirty_bytes = 0
    first_dirty_timestamp: int | None = None
    for index, segment in enumerate(segments):
        next_base = segments[index + 1].base_offset if index + 1 < len(segments) else log.log_end_offset
        if next_base <= first_dirty:
            clean_bytes += segment.size_bytes
        elif segment.base_offset < first_uncleanable:
            dirty_bytes += segment.size_bytes
        if index + 1 < len(segments) and next_base > first_dirty:
            # Kafka's maxCompactionDelay: the earliest positive first-batch max timestamp of
            # the dirty non-active segments (LogSegment.getFirstBatchTimestamp).
            first = segment.entry_at(0)
            if first is not None and first.max_timestamp > 0:
                first_dirty_timestamp = min(first.max_timestamp, first_dirty_timestamp or first.max_timestamp)
    delay_ms = 0
    max_lag_ms = log.config.max_compaction_lag_ms
    if max_lag_ms < LONG_MAX and first_dirty_timestamp is not None:
        delay_ms = max(0, now_ms - first_dirty_timestamp - max_lag_ms)
    return LogToClean(log, first_dirty, first_uncleanable, clean_bytes, dirty_bytes, delay_ms)


class CleanerCheckpoint:
    """``cleaner-offset-checkpoint`` of one data directory. Not thread-safe; one per manager."""

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / CLEANER_OFFSET_CHECKPOINT
        self.offsets: dict[tuple[str, int], int] = read_offsets(self.path) if self.path.exists() else {}

    def get(self, topic: str, partition: int) -> int | None:
        return self.offsets.get((topic, partition))

    def update(self, topic: str, partition: int, offset: int) -> None:
        self.offsets[(topic, partition)] = offset
        write_offsets(self.path, self.offsets)

    def remove(self, topic: str, partition: int) -> None:
        if self.offsets.pop((topic, partition), None) is not None:
            write_offsets(self.path, self.offsets)


@dataclass(frozen=True, slots=True)
class CleanOutcome:
    topic: str
    partition: int
    dirty_ratio: float
    result: CleanResult


class LogCleaner:
    """Cleans the filthiest compacted log per call (Kafka's ``LogCleaner`` without threads).

    Not thread-safe; owned by the log manager of one data directory.
    """

    def __init__(
        self, data_dir: Path, now_ms: Callable[[], int], *,
        dedupe_buffer_bytes: int = DEDUPE_BUFFER_BYTES_DEFAULT, load_factor: float = LOAD_FACTOR_DEFAULT,
        cleaner: Cleaner | None = None,
    ) -> None:
        self.checkpoint = CleanerCheckpoint(data_dir)
        self._now_ms = now_ms
        self.cleaner = cleaner or Cleaner(dedupe_buffer_bytes, load_factor)

    def filthiest(self, logs: Sequence[ManagedLog]) -> LogToClean | None:
        """The cleanable compacted log with the highest dirty ratio (``grabFilthiestCompactedLog``).

        A log is cleanable when its dirty ratio is above ``min.cleanable.dirty.ratio``, or when
        ``max.compaction.lag.ms`` has passed for its oldest dirty record and it has dirty bytes;
        ``min.compaction.lag.ms`` has already shrunk its dirty section (:func:`cleanable_offsets`).
        A stored checkpoint outside the log (below its start or past its end) is reset to the
        first dirty offset, as Kafka's ``forceUpdateCheckpoint`` does."""
        now_ms = self._now_ms()
        candidates = []
        for log in logs:
            if not is_compacted(log):
                continue
            stored = self.checkpoint.get(log.topic, log.partition)
            candidate = log_to_clean(log, stored, now_ms)
            if stored is not None and stored != candidate.first_dirty_offset:
                self.checkpoint.update(log.topic, log.partition, candidate.first_dirty_offset)
            if candidate.clean_bytes + candidate.dirty_bytes > 0:  # Kafka skips empty logs
                candidates.append(candidate)
        cleanable = [c for c in candidates if c.cleanable]
        return max(cleanable, key=lambda c: c.dirty_ratio, default=None)

    def clean_once(self, logs: Sequence[ManagedLog]) -> CleanOutcome | None:
        """Clean one log if any is cleanable; returns what happened, or None."""
        chosen = self.filthiest(logs)
        if chosen is None:
            return None
        return self.clean_log(chosen)

    def clean_log(self, chosen: LogToClean) -> CleanOutcome:
        log = chosen.log
        result = self.cleaner.clean(log, chosen.first_dirty_offset, chosen.first_uncleanable_offset, self._now_ms(),
                                    last_records_of_active_producers(log))
        self.checkpoint.update(log.topic, log.partition, result.end_offset)
        return CleanOutcome(log.topic, log.partition, chosen.dirty_ratio, result)

    def maybe_truncate_checkpoint(self, log: ManagedLog, offset: int) -> bool:
        """Move a compacted log's checkpoint down to ``offset`` if it is above it (Kafka's
        ``LogCleanerManager.maybeTruncateCheckpoint``). Returns whether it moved.

        The log manager calls this after truncating a log, with the active segment's base
        offset: the cleaned range must never claim offsets the log no longer has."""
        existing = self.checkpoint.get(log.topic, log.partition)
        if not is_compacted(log) or existing is None or existing <= offset:
            return False
        self.checkpoint.update(log.topic, log.partition, offset)
        return True

    def watch(self, log: WatchedLog) -> Callable[[], None]:
        """Follow ``log``'s truncations from now on (Kafka's ``LogManager.truncateTo`` calls
        ``maybeTruncateCheckpoint`` itself; kafkalab's ``Log`` announces a truncation as a
        :class:`~kafkalab.storage.events.Truncated` event). Returns a function that stops it."""
        def on_event(event: LogEvent) -> None:
            if isinstance(event, Truncated):
                self.after_truncation(log)

        return log.subscribe(on_event)

    def after_truncation(self, log: ManagedLog) -> bool:
        """The hook for ``Log.truncate_to`` / ``truncate_fully_and_start_at`` callers (Kafka's
        ``LogManager.truncateTo``): clamp the checkpoint to the new active segment's base."""
        return self.maybe_truncate_checkpoint(log, log.segments[-1].base_offset)

    def force_clean(self, log: ManagedLog) -> CleanOutcome:
        """Clean ``log`` now, whatever its dirty ratio (tests, notebooks, ``kafkalab`` tools)."""
        chosen = log_to_clean(log, self.checkpoint.get(log.topic, log.partition), self._now_ms())
        return self.clean_log(chosen)
