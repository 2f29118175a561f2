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


def append_records(log: Log, batch: bytes, keyless: bool) -> None:
    """Append a client-built batch. A leader refuses keyless records on a compacted topic, so
    those arrive as a follower's append, with offsets already assigned: the way such records
    really reach a compacted log (replicated, or written before ``cleanup.policy`` became
    ``compact``), and the cleaner must still drop them."""
    if not keyless:
        log.append_as_leader(batch, 0)
        return
    placed = bytearray(batch)
    placed[0:8] = log.log_end_offset.to_bytes(8, "big")  # outside the CRC'd range
    log.append_as_follower(bytes(placed))


class LogFixture:
    def __init__(self, root: Path, **props: str) -> None:
        self.root = root
        self.directory = root / "t-0"
        self.clock = ManualClock(now_ms=1_000_000)
        self.props = {"segment.bytes": "400", "cleanup.policy": "compact", "delete.retention.ms": "1000", **props}
        self.log = Log.open(self.directory, LogConfig.from_properties(self.props), self.clock)

    def append(self, pairs: list[tuple[bytes | None, bytes | None]], compression: Compression = Compression.NONE) -> None:
        records = [Record(i, self.clock.milliseconds(), k, v) for i, (k, v) in enumerate(pairs)]
        append_records(self.log, build_batch(records, compression=compression),
                       keyless=any(k is None for k, _ in pairs))

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
