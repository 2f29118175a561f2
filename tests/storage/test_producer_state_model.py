"""A stateful Hypothesis test: the producer state manager against a small model of Kafka's
rules, through appends, duplicates, epoch bumps, wrap-around, expiration and snapshot reloads."""

from __future__ import annotations

import shutil
import tempfile
from collections import deque
from pathlib import Path

from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kafkalab.errors import KafkaError
from kafkalab.records.header import INT32_MAX, BatchHeader
from kafkalab.storage.producer_state import AppendOrigin
from kafkalab.storage.producer_state_manager import ProducerStateManager

PRODUCERS = (1, 2)
SEQ_SPACE = 2**31  # sequences run 0..INT32_MAX and wrap


def header(pid: int, epoch: int, first_seq: int, count: int, base_offset: int, ts: int) -> BatchHeader:
    return BatchHeader(0, base_offset, base_offset + count - 1, 61, 2, 0, 0, 0, ts, ts, pid, epoch, first_seq, count)


class ModelProducer:
    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        self.batches: deque[tuple[int, int, int, int]] = deque(maxlen=5)  # first/last seq, first/last offset


class ProducerStateMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.directory = Path(tempfile.mkdtemp())
        self.manager = ProducerStateManager(self.directory)
        self.model: dict[int, ModelProducer] = {}
        self.next_offset = 0
        self.now = 0

    def teardown(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)

    def expected(self, pid: int, epoch: int, first: int, last: int) -> tuple[str, object]:
        known = self.model.get(pid)
        if known is None:
            return "append", None
        if known.epoch == epoch:
            for batch in known.batches:
                if batch[:2] == (first, last):
                    return "duplicate", batch[2:]
        if epoch < known.epoch:
            return "error", 47
        if epoch > known.epoch:
            return ("append", None) if first == 0 else ("error", 45)
        last_known = known.batches[-1][1]
        return ("append", None) if first == (last_known + 1) % SEQ_SPACE else ("error", 45)

    @rule(pid=st.sampled_from(PRODUCERS), epoch=st.integers(0, 2), count=st.integers(1, 3),
          choice=st.sampled_from(["next", "zero", "remembered", "near-max", "any"]),
          any_seq=st.integers(0, INT32_MAX), pick=st.integers(0, 4))
    def send(self, pid: int, epoch: int, count: int, choice: str, any_seq: int, pick: int) -> None:
        known = self.model.get(pid)
        first = {"zero": 0, "near-max": INT32_MAX - 1, "any": any_seq}.get(choice, 0)
        if known is not None and known.batches and choice == "next":
            first = (known.batches[-1][1] + 1) % SEQ_SPACE
        if known is not None and known.batches and choice == "remembered":
            first, last = known.batches[pick % len(known.batches)][:2]
            count = (last - first) % SEQ_SPACE + 1
        last = (first + count - 1) % SEQ_SPACE
        self.now += 1
        outcome, detail = self.expected(pid, epoch, first, last)
        try:
            updates, duplicate = self.manager.analyze(
                [header(pid, epoch, first, count, self.next_offset, self.now)], AppendOrigin.CLIENT)
        except KafkaError as error:
            assert (outcome, detail) == ("error", error.error_code)
            return
        if duplicate is not None:
            assert (outcome, detail) == ("duplicate", (duplicate.first_offset, duplicate.last_offset))
            return
        assert outcome == "append", (outcome, detail)
        self.manager.commit(updates)
        if known is None or known.epoch != epoch:
            known = self.model[pid] = ModelProducer(epoch)
        known.batches.append((first, last, self.next_offset, self.next_offset + count - 1))
        self.next_offset += count

    @rule()
    def expire_everyone(self) -> None:
        self.manager.remove_expired_producers(self.now, expiration_ms=0)
        self.model.clear()

    @precondition(lambda self: self.next_offset > self.manager.last_snapshot_offset)
    @rule()
    def restart_from_snapshot(self) -> None:
        """A snapshot keeps only each producer's last batch."""
        self.manager.take_snapshot(self.next_offset)
        self.manager = ProducerStateManager(self.directory)
        self.manager.truncate_and_reload(0, self.next_offset, self.now)
        for producer in self.model.values():
            while len(producer.batches) > 1:
                producer.batches.popleft()

    @invariant()
    def same_producers(self) -> None:
        got = {pid: (e.producer_epoch, [(b.first_seq, b.last_seq, b.first_offset, b.last_offset) for b in e.batches])
               for pid, e in self.manager.producers.items()}
        want = {pid: (p.epoch, list(p.batches)) for pid, p in self.model.items()}
        assert got == want


ProducerStateMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
TestProducerState = ProducerStateMachine.TestCase
