"""Storage benchmarks: appending through the log, and offset lookups on a large log.

Every figure is the run with the median ratio of RUNS runs, each run timing the subject and its
baseline side by side (the order reversed every run, see :func:`kafkalab.bench.report.alternate`)
and giving one ratio, and prints the spread of the per-run ratios beside it.

``storage.append``
    Pre-built 16 KiB batches through :meth:`Log.append_as_leader` (validation, offset
    assignment, index maintenance, rolling at 64 MiB, no forced flush) against raw
    ``os.write`` of the same bytes to one file. Only the writes are timed on both sides (not
    opening or closing the log, which fsyncs checkpoint files; raw ``os.write`` has no fsync
    either). Target: the log keeps at least half the raw write rate. Default 128 MiB per run;
    ``--full`` 1 GiB.
``storage.lookup``
    Random offset -> (segment, file position) lookups through the log's index half: the
    segment map (:meth:`Log.floor_segment`, a bisect over base offsets) and the segment's
    offset index (:meth:`OffsetIndex.floor_position`, a bisect over its in-memory mirror of the
    ``.index`` file), on a log of 10 million records (1,000-record batches, ~8 KiB each),
    against a pure in-memory ``bisect`` over the same index entries (every segment's entries as
    one sorted list of absolute offsets, answering the entry's segment and position). Both
    sides answer the same question, so the ratio is what the two-level structure (segments,
    then one index per segment) costs over one flat list. Target: at least half the rate.
``storage.lookup_batch``
    A context line: the whole :meth:`Log.lookup`, which also reads the batch headers from the
    index entry's position to the batch holding the offset (``LogSegment.translateOffset``
    does the same in Kafka), against the same ``bisect``. Two header reads from the mapped
    file cost about three times the index half, so this line sits near 0.15-0.2.
``storage.lookup_growth``
    The lookup rate on 1M records against the rate on 10M records: lookups are
    O(log segments + log entries + one scan step), so growing the log tenfold must not cost
    more than 1.5x. ``--full`` uses 10M and 100M records.
"""

from __future__ import annotations

import bisect
import os
import random
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from kafkalab.bench.report import CONTEXT, Reporter, alternate
from kafkalab.clock import ManualClock
from kafkalab.records import Record, build_batch
from kafkalab.storage import Log, LogConfig
from kafkalab.storage.segment import LogSegment

MIB = 1024 * 1024
BATCH_BYTES = 16 * 1024
SEGMENT_BYTES = 64 * MIB
RUNS = 5  # side-by-side runs per figure; each append run is ~0.1-0.3 s a side
LOOKUPS = 100_000
RECORDS_PER_LOOKUP_BATCH = 1000


def _batch_of_about(size_bytes: int) -> bytes:
    value = b"x" * 90
    count = size_bytes // 100
    records = [Record(i, 1_000 + i, None, value) for i in range(count)]
    return build_batch(records, base_offset=0)


def _append_rates(directory: Path, total_bytes: int, runs: int) -> dict[str, list[float]]:
    """MiB/s of ``Log.append_as_leader`` ("log") and of raw ``os.write`` ("raw"), per run.

    Fair to both sides: the same 16 KiB batch, one write of it per append, a fresh file (or
    log) per run created *before* the clock starts and closed and deleted after it stops,
    no fsync on either side. Only the appends are timed -- opening and closing a log write
    and fsync its checkpoint files, which raw ``os.write`` has no counterpart for -- while
    rolling at 64 MiB (new segment files, index trimming) stays inside the timed loop. The log
    stamps offsets into a writable buffer in place, as the produce handler does with its
    request frame. One untimed run of each side goes first: the very first 128 MiB written in
    a process waits for the kernel to hand out fresh page-cache pages (measured at a quarter
    of the later runs' rate), which would charge whichever side ran first.
    """
    batch = _batch_of_about(BATCH_BYTES)
    appends = max(1, total_bytes // len(batch))
    mebibytes = appends * len(batch) / MIB
    config = LogConfig(segment_bytes=SEGMENT_BYTES)
    serial = iter(range(1 << 30))

    def through_log() -> float:
        path = directory / f"log-{next(serial)}"
        log = Log.open(path, config, ManualClock(0))
        append, frame = log.append_as_leader, bytearray(batch)
        start = time.perf_counter()
        for _ in range(appends):
            append(frame, 0, in_place=True)
        elapsed = time.perf_counter() - start
        log.close()
        shutil.rmtree(path)
        return mebibytes / elapsed

    def raw() -> float:
        path = directory / f"raw-{next(serial)}"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            start = time.perf_counter()
            for _ in range(appends):
                os.write(fd, batch)
            elapsed = time.perf_counter() - start
        finally:
            os.close(fd)
        path.unlink()
        return mebibytes / elapsed

    raw(), through_log()  # warm-up, untimed
    return alternate({"raw": raw, "log": through_log}, runs)


def _build_log(directory: Path, records: int) -> Log:
    batch = build_batch(
        [Record(i, 1_000 + i, None, None) for i in range(RECORDS_PER_LOOKUP_BATCH)], base_offset=0
    )
    log = Log.open(directory, LogConfig(segment_bytes=SEGMENT_BYTES), ManualClock(0))
    for _ in range(records // RECORDS_PER_LOOKUP_BATCH):
        log.append_as_leader(batch, 0)  # the log patches each copy's base offset
    return log


class InMemoryIndex:
    """The lookup baseline: every segment's offset-index entries in one sorted Python list of
    absolute offsets, searched with ``bisect``. It answers what the index half of
    :meth:`Log.lookup` answers -- the segment and the file position of the last entry at or
    below the offset -- with no mapped file, no numpy and no scan of batch headers."""

    def __init__(self, log: Log) -> None:
        self.offsets: list[int] = []
        self.homes: list[tuple[LogSegment, int]] = []
        for segment in log.segments:
            self.offsets.append(segment.base_offset)  # a segment's start needs no entry
            self.homes.append((segment, 0))
            for key, position in segment.offset_index.raw_entries():
                if segment.base_offset + key > self.offsets[-1]:
                    self.offsets.append(segment.base_offset + key)
                    self.homes.append((segment, position))

    def lookup(self, offset: int) -> tuple[LogSegment, int]:
        return self.homes[bisect.bisect_right(self.offsets, offset) - 1]


def _index_lookup(log: Log) -> Callable[[int], tuple[LogSegment, int] | None]:
    """The index half of :meth:`Log.lookup`: the floor segment, then its offset index's floor
    entry's position -- where the scan for the batch would start."""
    floor_segment = log.floor_segment

    def lookup(offset: int) -> tuple[LogSegment, int] | None:
        segment = floor_segment(offset)
        return None if segment is None else (segment, segment.offset_index.floor_position(offset))
    return lookup


def _lookup_rates(lookups: dict[str, tuple[Callable[[int], object], int]], seed: int,
                  runs: int) -> dict[str, list[float]]:
    """Lookups/s of each ``(lookup, end_offset)`` over random offsets below its end, per run."""

    def rate_of(lookup: Callable[[int], object], end_offset: int) -> Callable[[], float]:
        rng = random.Random(seed)
        targets = [rng.randrange(end_offset) for _ in range(LOOKUPS)]

        def rate() -> float:
            start = time.perf_counter()
            for offset in targets:
                lookup(offset)
            return len(targets) / (time.perf_counter() - start)
        return rate

    steps = {name: rate_of(lookup, end) for name, (lookup, end) in lookups.items()}
    for step in steps.values():
        step()  # fault the mapped pages in once
    return alternate(steps, runs)


def run(reporter: Reporter, full: bool = False) -> None:
    with tempfile.TemporaryDirectory(prefix="kafkalab-bench-storage-") as tmp:
        root = Path(tmp)
        start = time.perf_counter()
        append = _append_rates(root, (1024 if full else 128) * MIB, RUNS)
        reporter.report_runs("storage.append", append["log"], "MiB/s", append["raw"], ">=0.5")
        small_records, large_records = (10_000_000, 100_000_000) if full else (1_000_000, 10_000_000)
        small = _build_log(root / "small-0", small_records)
        large = _build_log(root / "large-0", large_records)
        end = large.log_end_offset
        rates = _lookup_rates({"index": (_index_lookup(large), end), "log": (large.lookup, end),
                               "bisect": (InMemoryIndex(large).lookup, end)}, seed=2, runs=RUNS)
        reporter.report_runs("storage.lookup", rates["index"], "lookups/s", rates["bisect"], ">=0.5")
        reporter.report_runs("storage.lookup_batch", rates["log"], "lookups/s", rates["bisect"], CONTEXT)
        growth = _lookup_rates({"small": (small.lookup, small.log_end_offset), "large": (large.lookup, end)},
                               seed=1, runs=RUNS)
        reporter.report_runs("storage.lookup_growth", growth["small"], "lookups/s", growth["large"], "<=1.5")
        small.close()
        large.close()
        print(f"# storage benchmarks took {time.perf_counter() - start:.1f} s")
