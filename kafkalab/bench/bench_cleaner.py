"""Cleaner throughput against reading the same segments, in the same run.

Builds a compacted log of ~3 KB batches (50 records, keys drawn from 20,000) so that most
batches lose records, then measures MB/s of dirty log for:

* ``raw read`` -- the segment files' bytes ``readinto`` one reused buffer, sequentially: the
  least any cleaner must do (the issue's baseline);
* ``record read`` -- every record decoded with the columnar fast path, for context;
* ``clean`` -- a full clean of the same dirty log (map build, copy, swap) on a fresh copy of
  the directory each time, with the compiled path and, once, the reference path.

Reported lines: ``cleaner.throughput_vs_raw_read`` (target >= 0.3 of the raw read),
``cleaner.throughput_vs_record_read`` and ``cleaner.fast_vs_reference`` (the speed-up of the
compiled path over the readable one).
"""

from __future__ import annotations

import random
import shutil
import tempfile
import time
from pathlib import Path

from kafkalab.bench.report import Reporter
from kafkalab.clock import ManualClock
from kafkalab.records.codec import build_batch
from kafkalab.records.columnar import decode_columns
from kafkalab.records.model import Record
from kafkalab.storage.cleaner import Cleaner, LogCleaner
from kafkalab.storage.log import Log
from kafkalab.storage.log_config import LogConfig

CONFIG = {"segment.bytes": str(1024 * 1024), "cleanup.policy": "compact"}
REPEATS = 3
READ_BUFFER_BYTES = 1024 * 1024


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


def _dirty_paths(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.log"))[:-1]  # every segment but the active one


def _raw_read(directory: Path) -> float:
    buffer = bytearray(READ_BUFFER_BYTES)
    start = time.perf_counter()
    for path in _dirty_paths(directory):
        with open(path, "rb", buffering=0) as file:
            while file.readinto(buffer):
                pass
    return time.perf_counter() - start


def _record_read(directory: Path) -> float:
    start = time.perf_counter()
    for path in _dirty_paths(directory):
        decode_columns(path.read_bytes())
    return time.perf_counter() - start


def _clean(source: Path, scratch: Path, fast: bool) -> float:
    shutil.rmtree(scratch.parent, ignore_errors=True)  # with its cleaner-offset-checkpoint
    shutil.copytree(source, scratch)
    log, clock = _open(scratch)
    cleaner = LogCleaner(scratch.parent, clock.milliseconds, cleaner=Cleaner(128 * 1024 * 1024, fast=fast))
    start = time.perf_counter()
    cleaner.force_clean(log)
    elapsed = time.perf_counter() - start
    log.close()
    return elapsed


def run(reporter: Reporter, full: bool = False) -> None:
    batches = 4_000 if full else 1_200  # about 3.6 MB / 1.1 MB of dirty log
    with tempfile.TemporaryDirectory(prefix="kafkalab-bench-cleaner-") as tmp:
        source = Path(tmp) / "data" / "t-0"
        megabytes = _build(source, batches, random.Random(7)) / 1e6
        scratch = Path(tmp) / "scratch" / "t-0"
        _clean(source, scratch, fast=True)  # warm: numba's cached kernels load on first use
        raw_rate = max(megabytes / _raw_read(source) for _ in range(REPEATS))
        record_rate = max(megabytes / _record_read(source) for _ in range(REPEATS))
        clean_rate = max(megabytes / _clean(source, scratch, fast=True) for _ in range(REPEATS))
        reference_rate = megabytes / _clean(source, scratch, fast=False)
    reporter.report("cleaner.throughput_vs_raw_read", clean_rate, "MB/s", raw_rate, ">=0.3")
    reporter.report("cleaner.throughput_vs_record_read", clean_rate, "MB/s", record_rate, ">=0.3")
    reporter.report("cleaner.fast_vs_reference", clean_rate, "MB/s", reference_rate, ">=10")
