"""Cleaner throughput against reading (and copying) the same segments, in the same run.

The log is what Kafka's cleaner meets at work: 1 KiB values under 13-byte keys, in 16 KiB
batches (the producer's ``batch.size`` default), 16 MiB segments, every segment but the active
one dirty. Keys are drawn uniformly from half as many keys as records, so a clean keeps
``(1 - e**-2) / 2`` = 43% of the records (57% are duplicates) and nearly every batch loses a
record -- the cleaner's hardest realistic case, since only untouched batches are copied whole.
Default size 64 MB of dirty log (``--full``: 256 MB); the whole run stays under a minute.

Reported lines (MB/s of dirty log cleaned; each the median of ``RUNS`` runs in which the clean
and its baselines are timed side by side, with the spread of the per-run ratios):

* ``cleaner.throughput_vs_copy_fsync`` -- against copying the same segments to new files
  (same reads, one large write per MiB, one fsync per file), the least a cleaner that must
  make its output durable does (target >= 0.4);
* ``cleaner.throughput_vs_raw_read`` -- context: against the segment files' bytes
  ``readinto`` one reused 1 MiB buffer, sequentially, from the page cache -- a ceiling no
  cleaner reaches, since it has no writes and no fsync;
* ``cleaner.lz4_throughput_vs_raw_read`` -- the same log with lz4-compressed batches of
  compressible values (every kept record decompressed, every touched batch recompressed);
* ``cleaner.small_records_vs_raw_read`` -- context: 40-byte values, 50 per batch, where the
  per-record work dominates;
* ``cleaner.fast_vs_reference`` -- context: the compiled path over the readable one, on an
  8 MB log (fewer runs: the readable path takes seconds).

A clean runs on a fresh copy of the log directory each time (map build, copy, ``.cleaned``
segments fsynced once each, swap, checkpoint); the copy is not timed.
"""

from __future__ import annotations

import functools
import os
import shutil
import struct
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import crc32c
import numpy as np

from kafkalab.bench.report import Reporter, alternate
from kafkalab.clock import ManualClock
from kafkalab.records.columnar import ByteSpans, encode_spans, scan_entries
from kafkalab.records.compression import compress
from kafkalab.records.header import Compression
from kafkalab.storage.cleaner import Cleaner, LogCleaner
from kafkalab.storage.log import Log
from kafkalab.storage.log_config import LogConfig

CONFIG = {"segment.bytes": str(16 * 1024 * 1024), "cleanup.policy": "compact"}
RUNS = 5
REFERENCE_RUNS = 3
READ_BUFFER_BYTES = 1024 * 1024
KEY_BYTES = 13  # b"key-%09d"
BATCH_BYTES = 16 * 1024  # batch.size default
APPEND_BATCHES = 32  # batches per append: one produce request's worth
DEDUPE_BUFFER_BYTES = 128 * 1024 * 1024  # log.cleaner.dedupe.buffer.size default
START_MS = 1_700_000_000_000


def _batches(total_bytes: int, value_bytes: int, rng: np.random.Generator, *, batch_bytes: int = BATCH_BYTES,
             text: bool = False) -> bytes:
    """Uncompressed v2 batches of ``total_bytes``; keys uniform over half as many keys as records."""
    count = max(1, total_bytes // (value_bytes + KEY_BYTES + 8))
    keyspace = max(1, count // 2)
    key_table = np.frombuffer(b"".join(b"key-%09d" % k for k in range(keyspace)), np.uint8)
    keys = ByteSpans(key_table, rng.integers(0, keyspace, count) * KEY_BYTES, np.full(count, KEY_BYTES, np.int32))
    if text:  # words from a small vocabulary: compresses about like JSON does
        vocabulary = [b"%s " % bytes(rng.integers(97, 123, int(rng.integers(2, 9))).astype(np.uint8))
                      for _ in range(512)]
        pool = np.frombuffer(b"".join(vocabulary[i] for i in rng.integers(0, 512, 1 << 20)), np.uint8)
    else:
        pool = rng.integers(0, 256, 4 << 20, dtype=np.uint8)
    values = ByteSpans(pool, rng.integers(0, len(pool) - value_bytes, count), np.full(count, value_bytes, np.int32))
    timestamps = START_MS + np.arange(count) // 100
    return encode_spans(keys, values, timestamps, batch_bytes=batch_bytes)


def _compressed(data: bytes, codec: Compression) -> bytes:
    """Each batch of ``data`` with its records compressed (what a producer with
    ``compression.type`` would have sent)."""
    positions, sizes, _ = scan_entries(np.frombuffer(data, np.uint8))
    out = []
    for position, size in zip(positions.tolist(), sizes.tolist()):
        header = bytearray(data[position : position + 61])
        body = compress(codec, data[position + 61 : position + size])
        struct.pack_into(">i", header, 8, 49 + len(body))
        struct.pack_into(">h", header, 21, struct.unpack_from(">h", header, 21)[0] | int(codec))
        struct.pack_into(">I", header, 17, crc32c.crc32c(body, crc32c.crc32c(bytes(header[21:]))))
        out.append(bytes(header) + body)
    return b"".join(out)


def _build(directory: Path, data: bytes) -> int:
    """Append ``data`` as a leader would, roll, and return the dirty bytes."""
    log = Log.open(directory, LogConfig.from_properties(CONFIG), ManualClock(now_ms=START_MS))
    positions, sizes, _ = scan_entries(np.frombuffer(data, np.uint8))
    for lo in range(0, len(positions), APPEND_BATCHES):
        hi = min(lo + APPEND_BATCHES, len(positions))
        log.append_as_leader(data[int(positions[lo]) : int(positions[hi - 1] + sizes[hi - 1])], 0)
    log.roll("bench")
    dirty_bytes = sum(s.size_bytes for s in log.segments[:-1])
    log.close()
    return dirty_bytes


def _dirty_paths(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.log"))[:-1]  # every segment but the active one


def _raw_read(source: Path, _scratch: Path) -> float:
    buffer = bytearray(READ_BUFFER_BYTES)
    start = time.perf_counter()
    for path in _dirty_paths(source):
        with open(path, "rb", buffering=0) as file:
            while file.readinto(buffer):
                pass
    return time.perf_counter() - start


def _copy_fsync(source: Path, scratch: Path) -> float:
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    buffer = bytearray(READ_BUFFER_BYTES)
    start = time.perf_counter()
    for path in _dirty_paths(source):
        fd = os.open(scratch / path.name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            with open(path, "rb", buffering=0) as file:
                while n := file.readinto(buffer):
                    os.write(fd, memoryview(buffer)[:n])
            os.fsync(fd)
        finally:
            os.close(fd)
    elapsed = time.perf_counter() - start
    shutil.rmtree(scratch)
    return elapsed


def _clean(source: Path, scratch: Path, fast: bool = True) -> float:
    shutil.rmtree(scratch.parent, ignore_errors=True)  # with its cleaner-offset-checkpoint
    shutil.copytree(source, scratch)
    clock = ManualClock(now_ms=START_MS + 100_000_000)
    log = Log.open(scratch, LogConfig.from_properties(CONFIG), clock, had_clean_shutdown=True)
    cleaner = LogCleaner(scratch.parent, clock.milliseconds, cleaner=Cleaner(DEDUPE_BUFFER_BYTES, fast=fast))
    start = time.perf_counter()
    cleaner.force_clean(log)
    elapsed = time.perf_counter() - start
    log.close()
    shutil.rmtree(scratch.parent)
    return elapsed


def _rates(megabytes: float, source: Path, scratch: Path, steps: dict[str, Callable[[Path, Path], float]],
           runs: int = RUNS) -> dict[str, list[float]]:
    """MB/s of each step per run, the steps alternating run by run (same machine load)."""

    def rate(step: Callable[[Path, Path], float]) -> Callable[[], float]:
        return lambda: megabytes / step(source, scratch)

    return alternate({name: rate(step) for name, step in steps.items()}, runs)


def run(reporter: Reporter, full: bool = False) -> None:
    rng = np.random.default_rng(7)
    total_bytes = (256 if full else 64) * 1_000_000
    with tempfile.TemporaryDirectory(prefix="kafkalab-bench-cleaner-") as tmp:
        root = Path(tmp)
        scratch = root / "scratch" / "t-0"

        def log_of(name: str, data: bytes) -> tuple[Path, float]:
            source = root / name / "t-0"
            return source, _build(source, data) / 1e6

        source, megabytes = log_of("plain", _batches(total_bytes, 1024, rng))
        _clean(source, scratch)  # warm: numba's cached kernels load on first use
        rates = _rates(megabytes, source, scratch, {"copy": _copy_fsync, "clean": _clean, "raw": _raw_read})
        reporter.report_runs("cleaner.throughput_vs_copy_fsync", rates["clean"], "MB/s", rates["copy"], ">=0.4")
        reporter.report_runs("cleaner.throughput_vs_raw_read", rates["clean"], "MB/s", rates["raw"], "none")

        source, megabytes = log_of("lz4", _compressed(_batches(total_bytes // 2, 1024, rng, text=True),
                                                      Compression.LZ4))
        rates = _rates(megabytes, source, scratch, {"raw": _raw_read, "clean": _clean})
        reporter.report_runs("cleaner.lz4_throughput_vs_raw_read", rates["clean"], "MB/s", rates["raw"], "none")

        source, megabytes = log_of("small", _batches(total_bytes // 8, 40, rng, batch_bytes=50 * 62))
        rates = _rates(megabytes, source, scratch, {"raw": _raw_read, "clean": _clean})
        reporter.report_runs("cleaner.small_records_vs_raw_read", rates["clean"], "MB/s", rates["raw"], "none")

        source, megabytes = log_of("reference", _batches(8_000_000, 1024, rng))
        rates = _rates(megabytes, source, scratch,
                       {"fast": _clean, "reference": functools.partial(_clean, fast=False)}, REFERENCE_RUNS)
        reporter.report_runs("cleaner.fast_vs_reference", rates["fast"], "MB/s", rates["reference"], "none")
