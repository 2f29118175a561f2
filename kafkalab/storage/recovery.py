"""Opening a partition directory: stray files, segment loading, crash recovery (``LogLoader``).

What a directory can hold after a crash, and what opening it does, in order:

1. ``*.deleted`` files -- segments already removed from the log whose delayed deletion never
   ran: delete them.
2. ``*.cleaned`` files -- output of a compaction that had not reached the swap step: delete
   them, and with them every ``*.swap`` file at or above the lowest cleaned base offset (that
   compaction never completed).
3. Remaining ``*.swap`` log files -- a compaction past its point of no return: find the offset
   range each swap segment covers, delete the old segment files inside that range, drop the
   ``.swap`` suffix. Swapped index files are deleted in step 2 and rebuilt.
4. Index files without a ``.log`` are deleted; every ``.log`` becomes a segment. A segment
   whose index is missing or fails its sanity checks is recovered (its indexes rebuilt).
5. Unless the broker shut down cleanly, every segment from the one holding the recovery point
   on is *recovered*: each batch is validated (framing, CRC, increasing offsets) and the first
   bad byte ends the segment; any later segments are deleted (their data was never flushed
   after a torn write, so nothing acknowledged-and-flushed can be there).
6. An empty directory gets one empty segment at the log start offset; the active segment's
   indexes are re-extended to ``segment.index.bytes``.
7. Producer state is rebuilt: stray ``.snapshot`` files are removed, the newest snapshot at or
   below the log end offset is loaded and the batches after it replayed
   (:func:`~kafkalab.storage.producer_state_manager.rebuild_producer_state`).

Worked example: the recovery point is 120 and the segments are 0, 100 and 150. Segment 0 is
trusted; segments 100 and 150 are validated. If segment 100 ends in 37 torn bytes at byte
8000, those bytes are cut, segment 150 is deleted, and the LEO is the offset after the last
valid batch of segment 100.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

from kafkalab.clock import Clock
from kafkalab.errors import CorruptIndexError, StorageError
from kafkalab.storage import events as ev
from kafkalab.storage.leader_epoch import LeaderEpochCache
from kafkalab.storage.checkpoints import LEADER_EPOCH_CHECKPOINT, CorruptCheckpointError
from kafkalab.storage.log import Log, Scheduler
from kafkalab.storage.log_config import LogConfig
from kafkalab.storage.producer_state_manager import ProducerStateManager, rebuild_producer_state
from kafkalab.storage.log_files import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    file_name,
)
from kafkalab.storage.segment import SEGMENT_FILE_BYTES_MAX, LogSegment

_SEGMENT_FILE = re.compile(r"^(?P<base>\d{20})(?P<suffix>\.(log|index|timeindex|txnindex))(?P<extra>\.\w+)?$")
# A partition directory of a real broker holds thousands of segments at most; a listing this
# large means something else is wrong with the directory.
DIRECTORY_ENTRIES_MAX = 10_000_000


def _segment_files(directory: Path) -> list[tuple[Path, int, str, str]]:
    """(path, base offset, kind suffix, extra suffix) for every segment-looking file."""
    found = []
    for count, path in enumerate(sorted(directory.iterdir())):
        if count >= DIRECTORY_ENTRIES_MAX:
            raise StorageError(f"{directory} holds more than {DIRECTORY_ENTRIES_MAX} entries")
        match = _SEGMENT_FILE.match(path.name)
        if match and path.is_file():
            found.append((path, int(match["base"]), match["suffix"], match["extra"] or ""))
    return found


def remove_temp_files_and_collect_swaps(directory: Path) -> list[Path]:
    """Steps 1 and 2: returns the ``.log.swap`` files of completed compactions."""
    cleaned_bases: list[int] = []
    swaps: list[tuple[Path, int]] = []
    for path, base, _kind, extra in _segment_files(directory):
        if extra == DELETED_SUFFIX:
            path.unlink(missing_ok=True)
        elif extra == CLEANED_SUFFIX:
            cleaned_bases.append(base)
            path.unlink(missing_ok=True)
        elif extra == SWAP_SUFFIX and _kind != LOG_SUFFIX:
            # Like Kafka's LogLoader: a swapped index is never trusted. Delete it now and let
            # the segment rebuild its indexes; only .log.swap files carry a swap to complete.
            # (Keeping it would orphan it when the crash came after the .log lost its suffix.)
            path.unlink(missing_ok=True)
        elif extra == SWAP_SUFFIX:
            swaps.append((path, base))
    min_cleaned = min(cleaned_bases, default=None)
    valid = []
    for path, base in swaps:
        if min_cleaned is not None and base >= min_cleaned:
            path.unlink(missing_ok=True)
        else:
            valid.append(path)
    return [p for p in valid if p.name.endswith(LOG_SUFFIX + SWAP_SUFFIX)]


def complete_swaps(directory: Path, swap_logs: list[Path], config: LogConfig, clock: Clock) -> None:
    """Step 3: delete the segments the swap segments replace, then drop ``.swap``."""
    if not swap_logs:
        return
    low, high = None, None
    for path in swap_logs:
        base = int(path.name[:20])
        segment = _open_segment(directory, base, config, clock, suffix=SWAP_SUFFIX)
        next_offset = segment.read_next_offset()
        segment.close_handlers()
        low = base if low is None else min(low, base)
        high = next_offset if high is None else max(high, next_offset)
    assert low is not None and high is not None
    for path, base, _kind, extra in _segment_files(directory):
        if extra == "" and low <= base < high:
            path.unlink(missing_ok=True)
    for path in swap_logs:
        path.replace(path.with_name(path.name[: -len(SWAP_SUFFIX)]))
    # Swapped-in index files are not trusted: they are rebuilt when the segment loads. That
    # includes the .index.swap / .timeindex.swap files that opening the swap segment above
    # created.
    for path in swap_logs:
        base = int(path.name[:20])
        for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            (directory / file_name(base, suffix)).unlink(missing_ok=True)
            (directory / (file_name(base, suffix) + SWAP_SUFFIX)).unlink(missing_ok=True)


def _open_segment(
    directory: Path, base: int, config: LogConfig, clock: Clock, *, suffix: str = "",
    listeners: list[ev.Listener] | None = None,
) -> LogSegment:
    return LogSegment(
        directory, base, index_interval_bytes=config.index_interval_bytes,
        max_index_bytes=config.segment_index_bytes, roll_jitter_ms=0,
        created_ms=clock.milliseconds(), suffix=suffix, listeners=listeners,
    )


def load_segments(
    directory: Path, config: LogConfig, clock: Clock, listeners: list[ev.Listener]
) -> tuple[list[LogSegment], set[int]]:
    """Step 4: open every segment; returns them sorted and the bases whose indexes need a rebuild."""
    files = _segment_files(directory)
    log_bases = {base for _p, base, kind, extra in files if kind == LOG_SUFFIX and extra == ""}
    needs_rebuild: set[int] = set()
    for path, base, kind, extra in files:
        if extra == "" and kind != LOG_SUFFIX and base not in log_bases:
            path.unlink(missing_ok=True)  # an orphan index
    for base in sorted(log_bases):
        index_missing = not (directory / file_name(base, INDEX_SUFFIX)).exists()
        time_missing = not (directory / file_name(base, TIME_INDEX_SUFFIX)).exists()
        if index_missing or time_missing:
            needs_rebuild.add(base)
    segments = []
    for base in sorted(log_bases):
        segment = _open_segment(directory, base, config, clock, listeners=listeners)
        try:
            segment.sanity_check()
        except CorruptIndexError:
            needs_rebuild.add(base)
        segments.append(segment)
    return segments, needs_rebuild


def recover_segments(
    segments: list[LogSegment], needs_rebuild: set[int], recovery_point: int,
    had_clean_shutdown: bool, listeners: list[ev.Listener], leader_epochs: LeaderEpochCache,
) -> list[LogSegment]:
    """Step 5: validate unflushed segments and rebuild broken indexes. Returns the survivors."""
    start_slot = 0
    for slot, segment in enumerate(segments):
        if segment.base_offset <= recovery_point:
            start_slot = slot
    for slot, segment in enumerate(segments):
        unflushed = not had_clean_shutdown and slot >= start_slot
        if not unflushed and segment.base_offset not in needs_rebuild:
            continue
        result = segment.recover(SEGMENT_FILE_BYTES_MAX)
        for header in result.headers:
            if header.magic >= 2:
                leader_epochs.assign(header.partition_leader_epoch, header.base_offset)
        if slot < len(segments) - 1:
            segment.on_become_inactive()
        if listeners:
            ev.emit(listeners, ev.Recovered(
                segment.base_offset, result.valid_bytes, result.truncated_bytes,
                result.reason or ("index rebuilt" if segment.base_offset in needs_rebuild else "validated"),
            ))
        if result.truncated_bytes > 0:
            doomed = segments[slot + 1:]
            for later in doomed:
                later.delete_files()
            if doomed and listeners:
                ev.emit(listeners, ev.SegmentsDeleted("recovery", tuple(s.base_offset for s in doomed)))
            return segments[: slot + 1]
    return segments


def load_log(
    directory: Path, config: LogConfig, clock: Clock, *, recovery_point: int,
    log_start_offset: int | None, scheduler: Scheduler | None, had_clean_shutdown: bool,
    rng: random.Random,
) -> Log:
    """Open the partition directory, applying steps 1-6 above."""
    directory.mkdir(parents=True, exist_ok=True)
    listeners: list[ev.Listener] = []
    swaps = remove_temp_files_and_collect_swaps(directory)
    complete_swaps(directory, swaps, config, clock)
    try:
        leader_epochs = LeaderEpochCache.load(directory / LEADER_EPOCH_CHECKPOINT)
    except CorruptCheckpointError:
        # The cache is rebuilt from the batches' epochs of the recovered segments below.
        leader_epochs = LeaderEpochCache(directory / LEADER_EPOCH_CHECKPOINT)
        recovery_point = 0
        had_clean_shutdown = False
    segments, needs_rebuild = load_segments(directory, config, clock, listeners)
    segments = recover_segments(
        segments, needs_rebuild, recovery_point, had_clean_shutdown, listeners, leader_epochs
    )
    start = log_start_offset if log_start_offset is not None else 0
    if not segments:
        segments = [_open_segment(directory, start, config, clock, listeners=listeners)]
    segments[-1].resize_indexes(config.segment_index_bytes)
    next_offset = segments[-1].read_next_offset()
    log_start = max(start, segments[0].base_offset)
    leader_epochs.truncate_from_end(next_offset)
    point = next_offset if had_clean_shutdown else min(recovery_point, next_offset)
    producer_state = ProducerStateManager(directory)
    producer_state.remove_stray_snapshots(s.base_offset for s in segments)
    rebuild_producer_state(
        producer_state, segments, log_start_offset=log_start, last_offset=next_offset,
        had_clean_shutdown=had_clean_shutdown, now_ms=clock.milliseconds(),
    )
    log = Log(
        directory, config, clock, segments, next_offset=next_offset, log_start_offset=log_start,
        recovery_point=point, leader_epoch_cache=leader_epochs, listeners=listeners,
        scheduler=scheduler, rng=rng, producer_state=producer_state,
    )
    log.high_watermark = next_offset
    log.active_segment.roll_jitter_ms = log.draw_jitter_ms()
    return log
