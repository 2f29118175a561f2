"""Cleaner throughput against a sequential read of the same segments.

Builds a compacted log of single-digit-kilobyte batches with many duplicate keys, then
measures, in the same process:

* baseline -- a sequential read that decodes every batch of every non-active segment
  (the least work any record-level reader does);
* value -- a full clean of the same dirty log (map build, copy, swap), on a fresh copy of the
  directory each time.

Both are MB/s of dirty log bytes. The cleaner reads the dirty section twice (once to map keys,
once to copy) and hashes every key, so it should stay below the baseline; the target asks for
at least 0.3 of it.
"""

from __future__ import annotations

import random
import shutil
import tempfile
import time
from pathlib import Path

from kafkalab.bench.report import Reporter
from kafkalab.clock import ManualClock
from kafkalab.records.codec import build_batch, decode_batch
from kafkalab.records.header import iter_headers
from kafkalab.records.model import Record
from kafkalab.storage.cleaner import LogCleaner
from kafkalab.storage.cleaner.cleaner import read_segment
from kafkalab.storage.log import Log
from kafkalab.storage.log_config import LogConfig

CONFIG = {"segment.bytes": str(1024 * 1024), "cleanup.policy": "compact"}
REPEATS = 3


def _build(directory: Path, batches: int, rng: random.Random) -> int:
    clock = ManualClock(now_ms=1_700_000_000_000)
    log = Log.open(directory, LogConfig.from_properties(CONFIG), clock)
    for _ in range(batches):
        records = [
            Record(i, clock.milliseconds(), b"key-%06d" % rng.randrange(20_000), rng.randbytes(40))
            for i in range(50)
        ]
        log.append_as_leader(build_batch(records), 0)
        clock.advance_ms(1)
    log.roll("bench")
    dirty_bytes = sum(s.size_bytes for s in log.segments[:-1])
    log.close()
    return dirty_bytes


def _open(directory: Path) -> tuple[Log, ManualClock]:
    clock = ManualClock(now_ms=1_800_000_000_000)
    return Log.open(directory, LogConfig.from_properties(CONFIG), clock, had_clean_shutdown=True), clock


def _read_all(directory: Path) -> float:
    log, _ = _open(directory)
    start = time.perf_counter()
    for segment in log.segments[:-1]:
        data = read_segment(segment)
        for header in iter_headers(data):
            decode_batch(data, header)
    elapsed = time.perf_counter() - start
    log.close()
    return elapsed


def _clean(source: Path, scratch: Path) -> float:
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(source, scratch)
    log, clock = _open(scratch)
    cleaner = LogCleaner(scratch.parent, clock.milliseconds)
    start = time.perf_counter()
    cleaner.force_clean(log)
    elapsed = time.perf_counter() - start
    log.close()
    return elapsed


def run(reporter: Reporter, full: bool = False) -> None:
    batches = 4_000 if full else 1_200  # about 3.6 MB / 1.1 MB of dirty log
    with tempfile.TemporaryDirectory(prefix="kafkalab-bench-cleaner-") as tmp:
        source = Path(tmp) / "data" / "t-0"
        dirty_bytes = _build(source, batches, random.Random(7))
        megabytes = dirty_bytes / 1e6
        read_rate = max(megabytes / _read_all(source) for _ in range(REPEATS))
        scratch = Path(tmp) / "scratch" / "t-0"
        clean_rate = max(megabytes / _clean(source, scratch) for _ in range(REPEATS))
    reporter.report("cleaner_throughput", clean_rate, "MB/s", read_rate, ">=0.3")
