"""Retention: which old segments a log deletes.

Mirrors Kafka's ``UnifiedLog.deleteOldSegments`` and its three helpers. On every check a log
runs, in this order:

1. **log start offset** -- a segment goes when the *next* segment's base offset is at or below
   the log start offset (everything in it is below the start). DeleteRecords moves the start.
2. **size** -- while the whole log is larger than ``retention.bytes``, the oldest segments
   go, whole segments only, and only if removing one still leaves the log at or above the
   limit (``-1``: unlimited).
3. **time** -- a segment goes when ``now - largest timestamp > retention.ms``. The largest
   timestamp is the newest record's timestamp, never the file's mtime, which ``touch``, a
   copy or a reassignment would reset (``-1``: forever).

Steps 2 and 3 run only when ``cleanup.policy`` contains ``delete``; a ``compact``-only topic
keeps its data and only step 1 applies. For each step, segments are taken from the oldest
while the rule holds and stop at the first that fails; a segment is never deleted unless the
high watermark has reached its end (its next segment's base offset, or the log end offset), so
no unreplicated data is lost; and an empty active segment is never a candidate.

Worked example, log start offset rule: segments with base offsets 0, 11, 23 and 30 (the
active one), ``log_start_offset = 25``. Segment 0's next base is 11 <= 25: delete; segment
11's next base is 23 <= 25: delete; segment 23's next base is 30 > 25: stop. Offsets 23 and 24
stay on disk but are below the log start offset, so no reader sees them.

When every segment is deletable the active one is rolled first, so the log keeps an empty
active segment at the log end offset (Kafka's rule). Deletion itself is the log's job
(``Log.delete_segments``: drop from the segment map, rename to ``.deleted``, remove the files
after ``file.delete.delay.ms`` on the scheduler). The broker runs :func:`delete_old_segments` over
every log each ``log.retention.check.interval.ms`` (its ``kafka-log-retention`` task, in
:mod:`kafkalab.broker.housekeeping`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from kafkalab.storage.log_config import LogConfig


class SegmentLike(Protocol):
    """What retention reads from a segment (``LogSegment`` has all of it)."""

    base_offset: int
    created_ms: int

    @property
    def size_bytes(self) -> int: ...

    @property
    def max_timestamp_so_far(self) -> int: ...


S = TypeVar("S", bound=SegmentLike)


class RetentionLog(Protocol[S]):
    """The part of ``Log`` retention needs, over the log's own segment type ``S`` (``Log`` is a
    ``RetentionLog[LogSegment]``): what it lists is what it is asked to delete."""

    @property
    def config(self) -> LogConfig: ...

    @property
    def segments(self) -> Sequence[S]: ...

    @property
    def log_start_offset(self) -> int: ...

    @property
    def log_end_offset(self) -> int: ...

    @property
    def high_watermark(self) -> int: ...

    def roll(self, reason: str) -> object: ...

    def delete_segments(self, segments: list[S], reason: str) -> object: ...

    def increment_log_start_offset(self, offset: int) -> object: ...


Predicate = Callable[[SegmentLike, "SegmentLike | None"], bool]


@dataclass(frozen=True, slots=True)
class RetentionResult:
    """How many segments each rule deleted in one check."""

    log_start_offset_breached: int = 0
    size_breached: int = 0
    time_breached: int = 0

    @property
    def total(self) -> int:
        return self.log_start_offset_breached + self.size_breached + self.time_breached


def largest_timestamp_ms(segment: SegmentLike) -> int:
    """The newest record's timestamp; a segment without timestamps (legacy v0 records) falls
    back to its creation time from the log's clock. Kafka falls back to the file's mtime here;
    kafkalab never reads mtime, for the reasons in the module docstring."""
    largest = segment.max_timestamp_so_far
    return largest if largest >= 0 else segment.created_ms


def deletable_segments(log: RetentionLog[S], predicate: Predicate) -> list[S]:
    """Oldest-first segments for which ``predicate(segment, next_segment)`` holds, stopping at
    the first that fails, that ends above the high watermark, or that is an empty active one
    (Kafka's ``UnifiedLog.deletableSegments``)."""
    segments = list(log.segments)
    result: list[S] = []
    for index, segment in enumerate(segments):
        following = segments[index + 1] if index + 1 < len(segments) else None
        upper_bound_offset = following.base_offset if following is not None else log.log_end_offset
        is_last_and_empty = following is None and segment.size_bytes == 0
        if is_last_and_empty or log.high_watermark < upper_bound_offset or not predicate(segment, following):
            break
        result.append(segment)
    return result


def log_start_offset_predicate(log_start_offset: int) -> Predicate:
    def breached(segment: SegmentLike, following: SegmentLike | None) -> bool:
        return following is not None and following.base_offset <= log_start_offset

    return breached


def retention_size_predicate(log_size_bytes: int, retention_bytes: int) -> Predicate:
    excess = [log_size_bytes - retention_bytes]  # shrinks as segments are taken

    def breached(segment: SegmentLike, following: SegmentLike | None) -> bool:
        if excess[0] - segment.size_bytes < 0:
            return False
        excess[0] -= segment.size_bytes
        return True

    return breached


def retention_time_predicate(now_ms: int, retention_ms: int) -> Predicate:
    def breached(segment: SegmentLike, following: SegmentLike | None) -> bool:
        return now_ms - largest_timestamp_ms(segment) > retention_ms

    return breached


def delete_old_segments(log: RetentionLog[S], now_ms: int) -> RetentionResult:
    """One retention check of one log: the three rules in Kafka's order."""
    by_start = _delete(log, log_start_offset_predicate(log.log_start_offset), "log start offset breach")
    if "delete" not in _policies(log.config):
        return RetentionResult(log_start_offset_breached=by_start)
    by_size = 0
    retention_bytes = log.config.retention_bytes
    size_bytes = sum(s.size_bytes for s in log.segments)
    if retention_bytes >= 0 and size_bytes >= retention_bytes:
        by_size = _delete(log, retention_size_predicate(size_bytes, retention_bytes), "retention size breach")
    by_time = 0
    if log.config.retention_ms >= 0:
        by_time = _delete(log, retention_time_predicate(now_ms, log.config.retention_ms), "retention time breach")
    return RetentionResult(by_start, by_size, by_time)


def _policies(config: LogConfig) -> set[str]:
    return {p.strip() for p in config.cleanup_policy.split(",")}


def _delete(log: RetentionLog[S], predicate: Predicate, reason: str) -> int:
    doomed = deletable_segments(log, predicate)
    if not doomed:
        return 0
    if len(doomed) == len(log.segments):
        # Deleting every segment would leave no active segment: roll a fresh, empty one at the
        # log end offset first, then delete all the old ones (Kafka's deleteSegments).
        log.roll(reason)
    log.delete_segments(doomed, reason)
    # Nothing below the new first segment exists any more (UnifiedLog.maybeIncrementLogStartOffset).
    first_base_offset = log.segments[0].base_offset
    if first_base_offset > log.log_start_offset:
        log.increment_log_start_offset(first_base_offset)
    return len(doomed)
