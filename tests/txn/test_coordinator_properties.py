"""Random request sequences against the coordinator: what it keeps in memory is always what a
reload of ``__transaction_state`` rebuilds, epochs never go back, and every answer is one of
the codes Kafka's coordinator gives."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalab.errors import ErrorCode as E
from kafkalab.txn.state import TransactionState as S
from tests.txn._harness import Txns

IDS = ("a", "b")
PARTITIONS = (("orders", 0), ("orders", 1), ("__consumer_offsets", 7))
ANSWERS = {E.NONE, E.CONCURRENT_TRANSACTIONS, E.PRODUCER_FENCED, E.INVALID_TXN_STATE,
           E.INVALID_PRODUCER_ID_MAPPING}

op = st.one_of(
    st.tuples(st.just("init"), st.sampled_from(IDS), st.booleans()),
    st.tuples(st.just("add"), st.sampled_from(IDS), st.integers(-1, 0), st.sampled_from(PARTITIONS)),
    st.tuples(st.just("end"), st.sampled_from(IDS), st.integers(-1, 0), st.booleans()),
    st.tuples(st.just("advance"), st.integers(1, 4_000)),
)


def _snapshot(t: Txns) -> dict[str, tuple]:
    return {tid: (m.producer_id, m.producer_epoch, m.state, frozenset(m.partitions), m.timeout_ms, m.start_ms)
            for tid, m in t.coordinator.transactions.items() if m.producer_epoch >= 0}


def _apply(t: Txns, step: tuple) -> None:
    kind, *args = step
    if kind == "advance":
        t.advance(args[0])
        return
    tid = args[0]
    meta = t.coordinator.transactions.get(tid)
    pid, epoch = (meta.producer_id, meta.producer_epoch) if meta else (999, 0)
    if kind == "init":
        result = t.init(tid, timeout_ms=5_000, expected=(pid, epoch) if args[1] and meta else None)
        assert result.error_code in ANSWERS
    elif kind == "add":
        assert t.add(tid, pid, epoch + args[1], args[2]) in ANSWERS
    else:
        assert t.end(tid, pid, epoch + args[1], commit=args[2]) in ANSWERS


@settings(max_examples=150, deadline=None)
@given(st.lists(op, max_size=30))
def test_memory_matches_the_log_and_epochs_only_grow(steps):
    t = Txns()
    epochs: dict[str, tuple[int, int]] = {}
    for step in steps:
        _apply(t, step)
        for tid, (pid, epoch, state, partitions, *_rest) in _snapshot(t).items():
            assert state not in (S.PREPARE_EPOCH_FENCE, S.DEAD, S.PREPARE_COMMIT, S.PREPARE_ABORT)
            assert (state is S.ONGOING) == bool(partitions)
            assert (pid, epoch) >= epochs.get(tid, (pid, -1)), "an epoch went back"
            epochs[tid] = (pid, epoch)
    reloaded = Txns(log=t.log)
    reloaded.clock.advance_ms(t.now_ms - reloaded.now_ms)
    reloaded.coordinator.load(reloaded.now_ms)
    assert _snapshot(reloaded) == _snapshot(t)
