"""Helpers for cleaner tests: a real Log on a ManualClock and readers of what is on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab.clock import ManualClock
from kafkalab.records.codec import build_batch, iter_batches
from kafkalab.records.header import Compression
from kafkalab.records.model import Record
from kafkalab.storage.cleaner.cleaner import read_segment
from kafkalab.storage.log import Log
from kafkalab.storage.log_config import LogConfig


class LogFixture:
    def __init__(self, root: Path, **props: str) -> None:
        self.root = root
        self.directory = root / "t-0"
        self.clock = ManualClock(now_ms=1_000_000)
        self.props = {"segment.bytes": "400", "cleanup.policy": "compact", "delete.retention.ms": "1000", **props}
        self.log = Log.open(self.directory, LogConfig.from_properties(self.props), self.clock)

    def append(self, pairs: list[tuple[bytes | None, bytes | None]], compression: Compression = Compression.NONE) -> None:
        records = [Record(i, self.clock.milliseconds(), k, v) for i, (k, v) in enumerate(pairs)]
        self.log.append_as_leader(build_batch(records, compression=compression), 0)

    def reopen(self) -> Log:
        self.log = Log.open(self.directory, LogConfig.from_properties(self.props), self.clock)
        return self.log


def records_on_disk(log: Log) -> list[Record]:
    return [r for s in log.segments for b in iter_batches(read_segment(s)) for r in b.records]


def batches_on_disk(log: Log) -> list:  # type: ignore[type-arg]
    return [b for s in log.segments for b in iter_batches(read_segment(s))]


@pytest.fixture
def make_log(tmp_path: Path):  # type: ignore[no-untyped-def]
    def make(**props: str) -> LogFixture:
        return LogFixture(tmp_path, **props)

    return make
