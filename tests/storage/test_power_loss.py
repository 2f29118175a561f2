"""Power loss: a segment keeps what was fsynced plus a prefix of the rest, and recovery makes a
log of whole batches again, with indexes rebuilt."""

from __future__ import annotations

import random
from pathlib import Path

from storage_helpers import batch_of_size

from kafkalab.clock import ManualClock
from kafkalab.storage import Log, LogConfig
from kafkalab.storage.power_loss import lose_unflushed, unflushed_tails

SMALL = LogConfig(segment_bytes=1000, index_interval_bytes=100)


class Draw(random.Random):
    """A generator whose draws are given: how many unflushed bytes the kernel wrote back."""

    def __init__(self, *draws: int) -> None:
        super().__init__(0)
        self.draws = list(draws)

    def randrange(self, stop: int, *args: object, **kwargs: object) -> int:  # type: ignore[override]
        value = self.draws.pop(0)
        assert 0 <= value < stop
        return value


def halt(log: Log) -> None:
    for segment in log.segments:
        segment.close_handlers()


def test_only_unflushed_bytes_are_at_risk(log_dir: Path, clock: ManualClock) -> None:
    log = Log.open(log_dir, SMALL, clock)
    for i in range(4):
        log.append_as_leader(batch_of_size(150, timestamp_ms=1000 + i), 1)
    log.flush()
    assert unflushed_tails([log]) == []
    for i in range(2):
        log.append_as_leader(batch_of_size(150, timestamp_ms=2000 + i), 1)
    [tail] = unflushed_tails([log])
    assert (tail.durable_bytes, tail.size_bytes) == (600, 900)
    log.close()


def test_a_torn_batch_is_cut_and_the_indexes_rebuilt(log_dir: Path, clock: ManualClock) -> None:
    log = Log.open(log_dir, SMALL, clock)
    for i in range(3):
        log.append_as_leader(batch_of_size(150, timestamp_ms=1000 + i), 1)
    log.flush()  # offsets 0-2 durable
    for i in range(3):
        log.append_as_leader(batch_of_size(150, timestamp_ms=2000 + i), 1)  # offsets 3-5 in the page cache
    tails = unflushed_tails([log])
    halt(log)
    [lost] = lose_unflushed(tails, Draw(150 + 70))  # batch 3 reached the disk, batch 4 only in part
    assert (lost.kept_bytes, lost.lost_bytes) == (450 + 220, 900 - 670)
    assert not (log_dir / "00000000000000000000.index").exists()
    again = Log.open(log_dir, SMALL, clock)
    assert again.log_end_offset == 4 and again.active_segment.size_bytes == 600
    assert [again.lookup(o)[1].base_offset for o in range(4)] == [0, 1, 2, 3]  # type: ignore[index]
    assert again.append_as_leader(batch_of_size(150, timestamp_ms=3000), 1).first_offset == 4
    again.close()


def test_a_fully_flushed_log_loses_nothing(log_dir: Path, clock: ManualClock) -> None:
    log = Log.open(log_dir, SMALL, clock)
    for i in range(8):  # two segments
        log.append_as_leader(batch_of_size(150, timestamp_ms=1000 + i), 1)
    log.flush()
    tails = unflushed_tails([log])
    halt(log)
    assert lose_unflushed(tails, Draw()) == []
    again = Log.open(log_dir, SMALL, clock)
    assert again.log_end_offset == 8
    again.close()
