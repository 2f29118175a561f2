"""The transaction checker names each anomaly when fed a history that has it, and none for a
clean one -- so a campaign that passes it has been checked by something that can fail."""

from __future__ import annotations

import pytest

from kafkalab.sim.txn_checker import ANOMALY_KINDS, Outcome, Read, TxnWrite, check, summary

A, B = ("orders", 0), ("orders", 1)
COMMITTED = TxnWrite("p", 1, (A, B), Outcome.COMMITTED)
ABORTED = TxnWrite("p", 2, (A, B), Outcome.ABORTED)
UNKNOWN = TxnWrite("q", 1, (A, B), Outcome.UNKNOWN)
WRITES = [COMMITTED, ABORTED, UNKNOWN]


def _read(tp: tuple[str, int], *records: tuple[int, bytes], lso: int = 100, hw: int = 100) -> Read:
    return Read(tp, lso, hw, tuple(records))


def _clean_final() -> list[Read]:
    return [_read(A, (0, b"p/1"), (5, b"q/1")), _read(B, (3, b"p/1"), (9, b"q/1"))]


def test_a_clean_history_has_no_anomaly() -> None:
    reads = [_read(A, (0, b"p/1"), lso=2), _read(B, (3, b"p/1"), (9, b"q/1"), lso=11)]
    assert check(WRITES, reads, _clean_final()) == []
    # an unknown outcome may also be wholly invisible
    assert check(WRITES, [], [_read(A, (0, b"p/1")), _read(B, (3, b"p/1"))]) == []


BAD_HISTORIES = {
    "aborted-read": ([], [_read(A, (0, b"p/1"), (2, b"p/2"), (5, b"q/1")), _read(B, (3, b"p/1"), (9, b"q/1"))]),
    "partial-read": ([], [_read(A, (0, b"p/1"), (5, b"q/1")), _read(B, (3, b"p/1"))]),
    "lost-write": ([], [_read(A, (0, b"p/1"), (5, b"q/1")), _read(B, (9, b"q/1"))]),
    "duplicate": ([], [_read(A, (0, b"p/1"), (4, b"p/1"), (5, b"q/1")), _read(B, (3, b"p/1"), (9, b"q/1"))]),
    "read-past-lso": ([_read(A, (0, b"p/1"), lso=0)], _clean_final()),
    "hanging-txn": ([], [_read(A, (0, b"p/1"), (5, b"q/1"), lso=6, hw=8), _read(B, (3, b"p/1"), (9, b"q/1"))]),
    "garbage-read": ([], [_read(A, (0, b"p/1"), (5, b"q/1"), (6, b"x/9")), _read(B, (3, b"p/1"), (9, b"q/1"))]),
}


@pytest.mark.parametrize("kind", ANOMALY_KINDS)
def test_each_anomaly_is_named_when_the_history_has_it(kind: str) -> None:
    reads, final = BAD_HISTORIES[kind]
    anomalies = check(WRITES, reads, final)
    assert kind in {a.kind for a in anomalies}, anomalies
    assert kind in summary(anomalies)


def test_a_transaction_read_during_the_run_must_still_be_there_at_the_end() -> None:
    """An UNKNOWN outcome read committed mid-run has committed: losing it later is a lost write."""
    reads = [_read(A, (5, b"q/1"), lso=6)]
    final = [_read(A, (0, b"p/1")), _read(B, (3, b"p/1"))]
    assert [a.kind for a in check(WRITES, reads, final)] == ["lost-write"]


@pytest.mark.parametrize(("offset", "kind"), [(-1, "lost-write"), (2, "aborted-read"), (1, "partial-read")])
def test_the_committed_offsets_must_be_the_last_committed_transactions(offset: int, kind: str) -> None:
    """``p``'s group must hold 1 (p/1 committed, p/2 aborted) and p/1's records must be there."""
    final = _clean_final() if kind != "partial-read" else [_read(A, (5, b"q/1")), _read(B, (9, b"q/1"))]
    anomalies = check(WRITES, [], final, offsets={"p": offset, "q": 1})
    assert kind in {a.kind for a in anomalies}, anomalies
    assert check(WRITES, [], _clean_final(), offsets={"p": 1, "q": 1}) == []
    assert check(WRITES, [], _clean_final(), offsets={"p": 1, "q": -1}) == []  # q/1: unknown outcome
    assert [a.kind for a in check(WRITES, [], _clean_final(), offsets={"p": 1, "q": None})] == ["hanging-txn"]
