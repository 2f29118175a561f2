"""A log that is dropped without close() must not keep its files open."""

from __future__ import annotations

import gc
import os
from pathlib import Path

from kafkalab.clock import ManualClock
from kafkalab.records import Record, build_batch
from kafkalab.storage.log import Log
from kafkalab.storage.log_config import LogConfig


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_dropped_unclosed_logs_release_their_descriptors(tmp_path: Path) -> None:
    def write_and_drop(name: str) -> int:
        log = Log.open(tmp_path / f"{name}-0", LogConfig.from_properties({"segment.bytes": "200"}),
                       ManualClock(0))
        for _ in range(20):
            log.append_as_leader(build_batch([Record(0, 0, b"k", b"v" * 50)]), 0)
        return len(log.segments)

    gc.collect()
    before = _open_descriptors()
    segments = sum(write_and_drop(f"t{i}") for i in range(5))
    assert segments >= 50  # three files each: plenty to see a leak
    gc.collect()
    assert _open_descriptors() - before <= 2


def test_close_then_drop_closes_each_descriptor_once(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", LogConfig(), ManualClock(0))
    log.append_as_leader(build_batch([Record(0, 0, b"k", b"v")]), 0)
    log.close()
    del log
    gc.collect()  # the finalizers already ran in close(); nothing is closed twice
    probe = os.open(tmp_path, os.O_RDONLY)
    os.close(probe)
