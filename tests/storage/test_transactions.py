"""The last stable offset and the ``.txnindex`` of a partition log, driven with transactional
batches built by kafka-python and markers appended with origin COORDINATOR.

The expected values follow Kafka's rules (``ProducerStateManager.firstUnstableOffset``,
``lastStableOffset(CompletedTxn)``, ``UnifiedLog.lastStableOffset``); the hypothesis test
checks the log against a plain model of open and decided transactions."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from idempotent_helpers import idempotent_batch
from storage_helpers import build_batch

from kafkalab.clock import ManualClock
from kafkalab.records.control import build_end_txn_marker
from kafkalab.storage import Log, LogConfig
from kafkalab.storage.producer_state import AppendOrigin
from kafkalab.storage.txn_index import AbortedTxn

A, B, C = 100, 200, 300
SMALL = LogConfig(segment_bytes=400, index_interval_bytes=100)


class Producers:
    """Transactional producers writing to one log, each with its own sequence counter."""

    def __init__(self, log: Log) -> None:
        self.log = log
        self.sequence: dict[int, int] = {}

    def send(self, pid: int, count: int = 1, transactional: bool = True) -> int:
        seq = self.sequence.get(pid, 0)
        self.sequence[pid] = seq + count
        info = self.log.append_as_leader(idempotent_batch(pid, 0, seq, count, transactional=transactional), 0)
        return info.first_offset

    def end(self, pid: int, commit: bool, coordinator_epoch: int = 0) -> int:
        marker = build_end_txn_marker(commit=commit, offset=0, timestamp_ms=1_000_000, producer_id=pid,
                                      producer_epoch=0, coordinator_epoch=coordinator_epoch)
        return self.log.append_as_leader(marker, 0, origin=AppendOrigin.COORDINATOR).first_offset


def test_worked_example_of_the_module_docstring(tmp_path: Path, clock: ManualClock) -> None:
    log = Log.open(tmp_path / "orders-0", LogConfig(), clock)
    p = Producers(log)
    assert log.last_stable_offset == 0
    p.send(A, 2)  # 0, 1
    assert log.last_stable_offset == 0 and log.high_watermark == 2
    p.send(B)  # 2
    p.send(A)  # 3
    p.send(C, transactional=False)  # 4
    p.send(B)  # 5
    assert log.last_stable_offset == 0
    assert p.end(A, commit=False) == 6
    assert log.last_stable_offset == 2
    assert log.active_segment.txn_index.entries == [AbortedTxn(A, 0, 6, 2)]
    assert p.end(B, commit=True) == 7
    assert log.last_stable_offset == log.high_watermark == 8
    assert log.active_segment.txn_index.entries == [AbortedTxn(A, 0, 6, 2)]  # commits are not indexed
    assert (tmp_path / "orders-0" / "00000000000000000000.txnindex").read_bytes() == (
        AbortedTxn(A, 0, 6, 2).encode())
    log.close()


def test_a_decided_transaction_stays_unstable_until_the_hw_passes_its_marker(tmp_path: Path, clock: ManualClock) -> None:
    log = Log.open(tmp_path / "orders-0", LogConfig(), clock)
    log.auto_advance_high_watermark = False  # as a leader with followers: the HW lags
    p = Producers(log)
    p.send(C, 3, transactional=False)  # 0..2
    p.send(A, 2)  # 3, 4
    assert log.last_stable_offset == 0  # the HW is still 0
    log.update_high_watermark(5)
    assert log.last_stable_offset == 3
    p.end(A, commit=True)  # 5
    assert log.last_stable_offset == 3  # the marker at 5 is not replicated yet
    log.update_high_watermark(6)
    assert log.last_stable_offset == 6
    log.close()


def test_the_txnindex_lso_is_the_oldest_other_open_transaction(tmp_path: Path, clock: ManualClock) -> None:
    log = Log.open(tmp_path / "orders-0", LogConfig(), clock)
    p = Producers(log)
    p.send(B)  # 0: B opens first
    p.send(A)  # 1
    p.end(A, commit=False)  # 2: LSO after it is B's first offset, 0
    p.end(B, commit=False)  # 3: nothing else open: 4
    assert log.active_segment.txn_index.entries == [AbortedTxn(A, 1, 2, 0), AbortedTxn(B, 0, 3, 4)]
    assert log.collect_aborted_transactions(0, 4) == [AbortedTxn(A, 1, 2, 0), AbortedTxn(B, 0, 3, 4)]
    assert log.collect_aborted_transactions(3, 4) == [AbortedTxn(B, 0, 3, 4)]
    log.close()


def test_markers_index_into_the_segment_that_holds_them(tmp_path: Path, clock: ManualClock) -> None:
    """Aborted transactions spanning segments: each entry sits in the segment of its marker,
    and a fetch from an early segment collects the later segments' entries too."""
    log = Log.open(tmp_path / "orders-0", SMALL, clock)
    p = Producers(log)
    first = p.send(A, 2)
    for _ in range(6):
        p.send(C, 2, transactional=False)
    abort_at = p.end(A, commit=False)
    assert len(log.segments) > 1 and log.segments[0].txn_index.entries == []
    assert log.active_segment.txn_index.entries == [AbortedTxn(A, first, abort_at, abort_at + 1)]
    assert log.collect_aborted_transactions(0, log.log_end_offset) == [AbortedTxn(A, first, abort_at, abort_at + 1)]
    assert log.collect_aborted_transactions(abort_at + 1, log.log_end_offset) == []
    log.close()


def test_clean_restart_reopens_transactions_from_the_snapshot(tmp_path: Path, clock: ManualClock) -> None:
    directory = tmp_path / "orders-0"
    log = Log.open(directory, LogConfig(), clock)
    p = Producers(log)
    p.send(C, transactional=False)  # 0
    p.send(A, 2)  # 1, 2
    p.send(B)  # 3
    p.end(B, commit=False)  # 4
    assert log.last_stable_offset == 1
    log.close()
    again = Log.open(directory, LogConfig(), clock, had_clean_shutdown=True, recovery_point=5)
    assert again.last_stable_offset == 1
    assert again.producer_state.producers[A].current_txn_first_offset == 1
    Producers(again).end(A, commit=True)
    assert again.last_stable_offset == 6
    assert again.active_segment.txn_index.entries == [AbortedTxn(B, 3, 4, 1)]
    again.close()


def test_recovery_rebuilds_a_lost_txnindex_and_open_transactions(tmp_path: Path, clock: ManualClock) -> None:
    directory = tmp_path / "orders-0"
    log = Log.open(directory, SMALL, clock)
    p = Producers(log)
    p.send(A, 2)
    p.send(B, 2)
    for _ in range(4):
        p.send(C, 2, transactional=False)
    p.end(A, commit=False)
    p.send(C, transactional=False)
    expected = [(s.base_offset, s.txn_index.entries) for s in log.segments]
    lso = log.last_stable_offset
    assert any(entries for _, entries in expected) and lso == 2  # B is open from 2
    for segment in log.segments:
        segment.close_handlers()  # a crash: no final snapshot
    for path in [*directory.glob("*.txnindex"), *directory.glob("*.snapshot")]:
        path.unlink()
    again = Log.open(directory, SMALL, clock)
    assert [(s.base_offset, s.txn_index.entries) for s in again.segments] == expected
    assert again.last_stable_offset == lso
    again.close()


def test_follower_builds_the_same_txnindex_and_lso(tmp_path: Path, clock: ManualClock) -> None:
    leader = Log.open(tmp_path / "orders-0", LogConfig(), clock)
    follower = Log.open(tmp_path / "copy" / "orders-0", LogConfig(), clock)
    p = Producers(leader)
    p.send(B)
    p.send(A, 2)
    p.end(A, commit=False)
    p.send(C, transactional=False)
    follower.append_as_follower(leader.read(0, 1 << 20).read_bytes())
    assert follower.active_segment.txn_index.entries == leader.active_segment.txn_index.entries == [
        AbortedTxn(A, 1, 3, 0)]
    assert follower.last_stable_offset == leader.last_stable_offset == 0
    leader.close()
    follower.close()


def test_lso_never_below_log_start_offset(tmp_path: Path, clock: ManualClock) -> None:
    log = Log.open(tmp_path / "orders-0", LogConfig(), clock)
    p = Producers(log)
    p.send(A)  # 0, open
    log.append_as_leader(build_batch(3), 0)  # 1..3
    log.increment_log_start_offset(2)
    assert log.last_stable_offset == 2
    log.close()


# -- invariants against a model ----------------------------------------------------------------

PIDS = (A, B, C)
operation = st.one_of(
    st.tuples(st.just("send"), st.sampled_from(PIDS), st.integers(1, 3)),
    st.tuples(st.just("plain"), st.just(0), st.integers(1, 3)),
    st.tuples(st.just("commit"), st.sampled_from(PIDS), st.just(0)),
    st.tuples(st.just("abort"), st.sampled_from(PIDS), st.just(0)),
    st.tuples(st.just("hw"), st.just(0), st.integers(0, 6)),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(operation, max_size=30))
def test_lso_matches_a_model_and_never_passes_an_open_transaction(tmp_path_factory, operations) -> None:
    directory = tmp_path_factory.mktemp("txn") / "orders-0"
    log = Log.open(directory, SMALL, ManualClock(now_ms=1_000_000))
    log.auto_advance_high_watermark = False
    p = Producers(log)
    open_txns: dict[int, int] = {}  # producer -> first offset
    decided: dict[int, int] = {}  # first offset -> marker offset
    aborted: list[tuple[int, int, int]] = []
    last_lso = 0
    for kind, pid, n in operations:
        if kind == "send":
            first = p.send(pid, n)
            open_txns.setdefault(pid, first)
        elif kind == "plain":
            log.append_as_leader(build_batch(n), 0)
        elif kind == "hw":
            log.update_high_watermark(min(log.high_watermark + n, log.log_end_offset))
        else:
            marker_at = p.end(pid, commit=kind == "commit")
            if pid in open_txns:
                first = open_txns.pop(pid)
                decided[first] = marker_at
                if kind == "abort":
                    aborted.append((pid, first, marker_at))
        hw = log.high_watermark
        unstable = [*open_txns.values(), *(f for f, last in decided.items() if last >= hw)]
        lso = log.last_stable_offset
        assert lso == min([*unstable, hw])
        assert log.log_start_offset <= lso <= hw <= log.log_end_offset
        assert all(lso <= first for first in open_txns.values())
        assert lso >= last_lso
        last_lso = lso
    indexed = [(t.producer_id, t.first_offset, t.last_offset) for s in log.segments for t in s.txn_index.entries]
    assert indexed == aborted
    assert [(t.producer_id, t.first_offset, t.last_offset)
            for t in log.collect_aborted_transactions(0, log.log_end_offset)] == aborted
    log.close()
