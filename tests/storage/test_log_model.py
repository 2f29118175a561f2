"""A hypothesis stateful model: the log against a plain list of record values.

Appends, manual rolls, truncations, DeleteRecords, clean reopens and crash reopens (files left
untrimmed, recovery from a checkpointed recovery point) are interleaved at random with a small
``segment.bytes`` so rolls happen constantly. After every step the log must hold exactly the
model's records from the log start offset on, at the same offsets.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from kafka.record.memory_records import MemoryRecords
from storage_helpers import build_batch

from kafkalab.clock import ManualClock
from kafkalab.storage import Log, LogConfig

CONFIG = LogConfig(segment_bytes=700, index_interval_bytes=90, segment_index_bytes=240)


class LogModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="kafkalab-model-"))
        self.directory = self.root / "model-0"
        self.clock = ManualClock(1_000)
        self.log = Log.open(self.directory, CONFIG, self.clock)
        self.values: list[bytes] = []  # the model: value of offset i is values[i]
        self.start = 0

    def teardown(self) -> None:
        self.log.close()
        shutil.rmtree(self.root, ignore_errors=True)

    @rule(count=st.integers(1, 6), size=st.integers(0, 60), epoch=st.integers(0, 3))
    def append(self, count: int, size: int, epoch: int) -> None:
        first = len(self.values)
        value = bytes([65 + first % 26]) * size
        self.clock.advance_ms(7)
        info = self.log.append_as_leader(build_batch(count, value=value, timestamp_ms=self.clock.milliseconds()), epoch)
        assert info.first_offset == first and info.last_offset == first + count - 1
        self.values += [value] * count

    @rule()
    def roll(self) -> None:
        self.log.roll()

    @precondition(lambda self: len(self.values) > self.start)
    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        target = data.draw(st.integers(self.start, len(self.values)))
        self.log.truncate_to(target)
        # Truncation is batch-aligned: the log tells us where it really ended.
        assert self.log.log_end_offset <= target
        self.values = self.values[: self.log.log_end_offset]
        self.start = min(self.start, len(self.values))

    @precondition(lambda self: len(self.values) > self.start)
    @rule(data=st.data())
    def delete_records(self, data: st.DataObject) -> None:
        target = data.draw(st.integers(self.start, len(self.values)))
        self.log.increment_log_start_offset(target)
        self.start = max(self.start, target)

    @rule()
    def reopen_clean(self) -> None:
        start = self.log.log_start_offset
        self.log.flush()
        self.log.close()
        self.log = Log.open(self.directory, CONFIG, self.clock, log_start_offset=start, had_clean_shutdown=True)

    @rule(flush=st.booleans())
    def reopen_after_crash(self, flush: bool) -> None:
        if flush:
            self.log.flush()
        point, start = self.log.recovery_point, self.log.log_start_offset
        for segment in self.log.segments:
            segment.close_handlers()
        self.log = Log.open(self.directory, CONFIG, self.clock, recovery_point=point, log_start_offset=start)

    @invariant()
    def log_matches_model(self) -> None:
        log = self.log
        assert log.log_end_offset == len(self.values)
        assert log.log_start_offset == self.start
        offset, got = self.start, []
        while offset < log.log_end_offset:
            records = MemoryRecords(log.read(offset, 2000).read_bytes())
            batch_values = []
            while records.has_next():
                batch_values += [(r.offset, r.value) for r in records.next_batch() if r.offset >= offset]
            assert batch_values, f"no progress reading from {offset}"
            got += batch_values
            offset = batch_values[-1][0] + 1
        assert got == [(i, self.values[i]) for i in range(self.start, len(self.values))]
        bases = [s.base_offset for s in log.segments]
        assert bases == sorted(bases) and bases[-1] <= log.log_end_offset


TestLogModel = LogModel.TestCase
TestLogModel.settings = settings(max_examples=40, stateful_step_count=30, deadline=None)
