"""Storage benchmarks: appending through the log, and offset lookups on a large log.

``storage.append``
    Pre-built 16 KiB batches through :meth:`Log.append_as_leader` (validation, offset
    assignment, index maintenance, rolling at 64 MiB, no forced flush) against raw
    ``os.write`` of the same bytes to one file, measured in the same run, alternating, best
    of six rounds each. Only the writes are timed on both sides (not opening or closing the
    log, which fsyncs checkpoint files; raw ``os.write`` has no fsync either). Target: the
    log keeps at least half the raw write rate. Default 128 MiB per round; ``--full`` 1 GiB.
``storage.lookup``
    Random offset -> (segment, file position) lookups through the segment map (bisect), the
    offset index (warm/cold section + numpy search) and the scan of batch headers, on a
    log of 10 million records (1,000-record batches, ~8 KiB each). Target 200,000 lookups/s.
``storage.lookup_growth``
    The lookup rate on 1M records divided by the rate on 10M records: lookups are
    O(log segments + log entries + one scan step), so growing the log tenfold must not cost
    more than 1.5x. ``--full`` uses 10M and 100M records.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import time
from pathlib import Path

from kafkalab.bench.report import Reporter, best_rate
from kafkalab.clock import ManualClock
from kafkalab.records import Record, build_batch
from kafkalab.storage import Log, LogConfig

MIB = 1024 * 1024
BATCH_BYTES = 16 * 1024
SEGMENT_BYTES = 64 * MIB
APPEND_ROUNDS = 6  # best of six alternating rounds a side; each round is ~0.1-0.3 s
LOOKUPS = 100_000
RECORDS_PER_LOOKUP_BATCH = 1000


def _batch_of_about(size_bytes: int) -> bytes:
    value = b"x" * 90
    count = size_bytes // 100
    records = [Record(i, 1_000 + i, None, value) for i in range(count)]
    return build_batch(records, base_offset=0)


def _append_rates(directory: Path, total_bytes: int, rounds: int) -> tuple[float, float]:
    """Best MiB/s of ``Log.append_as_leader`` and of raw ``os.write``, timed alternately.

    Fair to both sides: the same 16 KiB batch, one write of it per append, a fresh file (or
    log) per round created *before* the clock starts and closed and deleted after it stops,
    no fsync on either side. Only the appends are timed -- opening and closing a log write
    and fsync its checkpoint files, which raw ``os.write`` has no counterpart for -- while
    rolling at 64 MiB (new segment files, index trimming) stays inside the timed loop.
    """
    batch = _batch_of_about(BATCH_BYTES)
    appends = max(1, total_bytes // len(batch))
    config = LogConfig(segment_bytes=SEGMENT_BYTES)

    def through_log(path: Path) -> float:
        log = Log.open(path, config, ManualClock(0))
        append = log.append_as_leader
        start = time.perf_counter()
        for _ in range(appends):
            append(batch, 0)
        elapsed = time.perf_counter() - start
        log.close()
        shutil.rmtree(path)
        return elapsed

    def raw(path: Path) -> float:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            start = time.perf_counter()
            for _ in range(appends):
                os.write(fd, batch)
            elapsed = time.perf_counter() - start
        finally:
            os.close(fd)
        path.unlink()
        return elapsed

    log_best = raw_best = float("inf")
    for n in range(rounds):  # alternating, so both see the same machine load and page cache
        sides = (raw, through_log) if n % 2 == 0 else (through_log, raw)
        for side in sides:
            elapsed = side(directory / f"{side.__name__}-{n}")
            if side is raw:
                raw_best = min(raw_best, elapsed)
            else:
                log_best = min(log_best, elapsed)
    written = appends * len(batch)
    return written / log_best, written / raw_best


def _build_log(directory: Path, records: int) -> Log:
    batch = build_batch(
        [Record(i, 1_000 + i, None, None) for i in range(RECORDS_PER_LOOKUP_BATCH)], base_offset=0
    )
    log = Log.open(directory, LogConfig(segment_bytes=SEGMENT_BYTES), ManualClock(0))
    for _ in range(records // RECORDS_PER_LOOKUP_BATCH):
        log.append_as_leader(batch, 0)  # the log patches each copy's base offset
    return log


def _lookup_rate(log: Log, seed: int) -> float:
    rng = random.Random(seed)
    targets = [rng.randrange(log.log_end_offset) for _ in range(LOOKUPS)]
    lookup = log.lookup

    def work() -> int:
        for offset in targets:
            lookup(offset)
        return len(targets)

    work()  # fault the mapped pages in once
    return best_rate(work, repeat=3)


def run(reporter: Reporter, full: bool = False) -> None:
    with tempfile.TemporaryDirectory(prefix="kafkalab-bench-storage-") as tmp:
        root = Path(tmp)
        start = time.perf_counter()
        log_rate, raw_rate = _append_rates(root, (1024 if full else 128) * MIB, APPEND_ROUNDS)
        reporter.report("storage.append", log_rate / MIB, "MiB/s", raw_rate / MIB, ">=0.5")
        small_records, large_records = (10_000_000, 100_000_000) if full else (1_000_000, 10_000_000)
        small = _build_log(root / "small-0", small_records)
        small_rate = _lookup_rate(small, seed=1)
        small.close()
        large = _build_log(root / "large-0", large_records)
        large_rate = _lookup_rate(large, seed=2)
        large.close()
        reporter.report("storage.lookup", large_rate, "lookups/s", 200_000, ">=1.0")
        reporter.report("storage.lookup_growth", small_rate / large_rate, "x", 1.0, "<=1.5")
        print(f"# storage benchmarks took {time.perf_counter() - start:.1f} s")
