"""The transaction coordinator's leadership of ``__transaction_state`` partitions: writes
applied only once committed, and load/unload with a coordinator epoch (Kafka's
``TransactionStateManager``: loadTransactionsForTxnTopicPartition,
removeTransactionsForTxnTopicPartition, appendTransactionToLog)."""

from __future__ import annotations

from collections.abc import Callable

from kafkalab.errors import ErrorCode
from kafkalab.group.log import MemoryCoordinatorLog
from kafkalab.txn.coordinator import InitProducerIdResult, partition_for
from tests.txn._harness import FIRST_PRODUCER_ID as PID, Txns

E = ErrorCode
PARTITION = partition_for("app-1", 50)


class ReplicatingLog(MemoryCoordinatorLog):
    """An in-memory log whose appends are committed only when the test says (the ISR's copy)."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting: list[Callable[[int], None]] = []

    def when_committed(self, partition: int, offset: int, callback: Callable[[int], None]) -> None:
        self.waiting.append(callback)

    def commit(self, error: int = E.NONE) -> None:
        self.waiting.pop(0)(error)


def test_a_write_is_applied_and_answered_only_once_committed():
    log = ReplicatingLog()
    t = Txns(log=log)
    answers: list[InitProducerIdResult] = []
    t.coordinator.init_producer_id("app-1", 60_000, None, t.now_ms, answers.append)
    assert not answers and t.coordinator.transactions["app-1"].producer_epoch == -1
    retry: list[InitProducerIdResult] = []
    t.coordinator.init_producer_id("app-1", 60_000, None, t.now_ms, retry.append)
    assert retry[0].error_code == E.CONCURRENT_TRANSACTIONS  # a write is in flight
    log.commit()
    assert (answers[0].error_code, answers[0].producer_epoch) == (E.NONE, 0)
    errors: list[int] = []
    t.coordinator.add_partitions("app-1", PID, 0, [("orders", 0)], t.now_ms, errors.append)
    log.commit(E.COORDINATOR_NOT_AVAILABLE)  # the ISR never had it (offsets.commit.timeout.ms)
    assert errors == [E.COORDINATOR_NOT_AVAILABLE] and t.state() == "Empty"


def test_a_write_committed_after_resigning_is_answered_not_coordinator():
    log = ReplicatingLog()
    t = Txns(log=log)
    answers: list[InitProducerIdResult] = []
    t.coordinator.init_producer_id("app-1", 60_000, None, t.now_ms, answers.append)
    assert t.coordinator.unload_partition(PARTITION) == ["app-1"]
    log.commit()
    assert answers[0].error_code == E.NOT_COORDINATOR and "app-1" not in t.coordinator.transactions


def test_unload_forgets_the_partition_and_a_reload_resumes_its_markers_with_the_new_epoch():
    t = Txns(auto=False)
    t.coordinator.load_partition(PARTITION, [], 4, t.now_ms)
    t.init()
    t.add("app-1", PID, 0, ("orders", 0), ("orders", 1))
    t.end("app-1", PID, 0)
    assert t.channel.requests[-1].coordinator_epoch == 4
    assert t.coordinator.unload_partition(PARTITION) == ["app-1"]
    written = len(t.log.partitions[PARTITION])
    t.channel.answer()  # a late answer to the deposed coordinator changes nothing
    assert len(t.log.partitions[PARTITION]) == written and not t.coordinator.transactions
    assert t.coordinator.load_partition(PARTITION, t.log.replay(), 5, t.now_ms) == written
    assert t.state() == "PrepareCommit"
    request = t.channel.requests[-1]
    assert (request.coordinator_epoch, request.partitions) == (5, (("orders", 0), ("orders", 1)))
    t.channel.answer()
    assert t.state() == "CompleteCommit"


def test_answers_to_an_older_coordinator_epoch_are_ignored_after_a_reload():
    t = Txns(auto=False)
    t.init()
    t.add("app-1", PID, 0, ("orders", 0))
    t.end("app-1", PID, 0)  # markers sent at coordinator epoch 0
    t.coordinator.load_partition(PARTITION, t.log.replay(), 1, t.now_ms)  # re-elected at epoch 1
    stale_request, stale_done = t.channel.sent.pop(0)
    stale_done({tp: E.NONE for tp in stale_request.partitions})
    assert t.state() == "PrepareCommit"  # the epoch-0 answer completed nothing
    assert t.channel.answer().coordinator_epoch == 1
    assert t.state() == "CompleteCommit"


def test_a_timed_out_transaction_whose_abort_fails_is_aborted_again_later():
    """Found by the transaction campaign (seed 2): the fence's abort could not be written (the
    ISR was short) and the transaction stayed Ongoing for good, its partitions' LSO stuck."""
    log = ReplicatingLog()
    t = Txns(log=log)
    t.coordinator.init_producer_id("app-1", 5_000, None, t.now_ms, lambda result: None)
    log.commit()
    t.coordinator.add_partitions("app-1", PID, 0, [("orders", 0)], t.now_ms, lambda error: None)
    log.commit()
    t.advance(5_000)  # the timeout: PrepareAbort with epoch 1 is appended...
    log.commit(E.COORDINATOR_NOT_AVAILABLE)  # ...and never reaches the ISR
    assert t.state() == "Ongoing"
    t.advance(10_000)  # transaction.abort.timed.out.transaction.cleanup.interval.ms
    log.commit()
    assert t.state() in ("PrepareAbort", "CompleteAbort")
    assert t.coordinator.transactions["app-1"].producer_epoch == 1
