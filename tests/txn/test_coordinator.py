"""The transaction coordinator with an in-memory log and a marker channel the test answers."""

from __future__ import annotations

from kafkalab.errors import ErrorCode
from kafkalab.txn.coordinator import TransactionCoordinator, TxnSettings, partition_for
from kafkalab.txn.records import decode_key, decode_value
from tests.txn._harness import FIRST_PRODUCER_ID as PID, Txns

E = ErrorCode


def test_init_producer_id_bumps_the_epoch_and_writes_each_step():
    t = Txns()
    first = t.init()
    assert (first.error_code, first.producer_id, first.producer_epoch) == (0, PID, 0)
    second = t.init()
    assert (second.producer_id, second.producer_epoch) == (PID, 1)
    records = t.log.partitions[partition_for("app-1", 50)]
    assert [decode_key(k) for k, _ in records] == ["app-1", "app-1"]
    assert [decode_value(v).producer_epoch for _, v in records] == [0, 1]


def test_bad_requests():
    t = Txns()
    assert t.init("").error_code == E.INVALID_REQUEST
    assert t.init(timeout_ms=900_001).error_code == E.INVALID_TRANSACTION_TIMEOUT
    assert t.init(timeout_ms=0).error_code == E.INVALID_TRANSACTION_TIMEOUT
    assert t.add("nobody", PID, 0) == E.INVALID_PRODUCER_ID_MAPPING
    t.init()
    assert t.add("app-1", PID + 1, 0) == E.INVALID_PRODUCER_ID_MAPPING
    assert t.end("app-1", PID, 0) == E.INVALID_TXN_STATE  # nothing to commit: Empty


def test_commit_waits_for_every_marker():
    t = Txns(auto=False)
    t.init()
    assert t.add("app-1", PID, 0, ("orders", 0), ("orders", 3)) == E.NONE
    assert t.state() == "Ongoing"
    assert t.end("app-1", PID, 0, commit=True) == E.NONE
    assert t.state() == "PrepareCommit"
    assert t.add("app-1", PID, 0, ("orders", 1)) == E.CONCURRENT_TRANSACTIONS
    assert t.end("app-1", PID, 0, commit=True) == E.CONCURRENT_TRANSACTIONS
    assert t.end("app-1", PID, 0, commit=False) == E.INVALID_TXN_STATE
    request = t.channel.answer()
    assert (request.producer_id, request.producer_epoch, request.commit) == (PID, 0, True)
    assert request.partitions == (("orders", 0), ("orders", 3))
    assert t.state() == "CompleteCommit"
    assert t.end("app-1", PID, 0, commit=True) == E.NONE  # a retried commit
    assert t.add("app-1", PID, 0, ("orders", 1)) == E.NONE  # the next transaction
    assert t.coordinator.transactions["app-1"].partitions == {("orders", 1)}


def test_a_failed_marker_is_retried_for_its_partition_only():
    t = Txns(auto=False)
    t.init()
    t.add("app-1", PID, 0, ("orders", 0), ("orders", 3))
    t.end("app-1", PID, 0)
    t.channel.answer(orders_3=E.NOT_LEADER_OR_FOLLOWER)
    assert t.state() == "PrepareCommit" and not t.channel.sent
    assert t.coordinator.transactions["app-1"].partitions == {("orders", 3)}  # as DescribeTransactions shows
    t.advance(100)  # the marker channel's retry backoff
    assert t.channel.answer().partitions == (("orders", 3),)
    assert t.state() == "CompleteCommit"


def test_a_newer_producer_epoch_at_the_partition_stops_the_markers():
    t = Txns(auto=False)
    t.init()
    t.add("app-1", PID, 0)
    t.end("app-1", PID, 0)
    t.channel.answer(E.INVALID_PRODUCER_EPOCH)
    t.advance(1000)
    assert t.state() == "PrepareCommit" and not t.channel.sent


def test_a_second_producer_fences_the_first_and_aborts_its_transaction():
    t = Txns()
    t.init()
    t.add("app-1", PID, 0)
    fencing = t.init()
    assert fencing.error_code == E.CONCURRENT_TRANSACTIONS
    abort = t.channel.requests[-1]
    assert (abort.commit, abort.producer_epoch) == (False, 1)  # markers carry the bumped epoch
    assert t.state() == "CompleteAbort"
    retried = t.init()
    assert (retried.error_code, retried.producer_epoch) == (0, 2)
    assert t.end("app-1", PID, 0) == E.PRODUCER_FENCED
    assert t.add("app-1", PID, 0) == E.PRODUCER_FENCED


def test_kip_360_recovery_with_the_current_or_previous_epoch():
    t = Txns()
    t.init()
    bumped = t.init(expected=(PID, 0))
    assert (bumped.producer_id, bumped.producer_epoch) == (PID, 1)
    retry = t.init(expected=(PID, 0))  # the answer was lost: same epoch again
    assert (retry.error_code, retry.producer_epoch) == (0, 1)
    assert t.init(expected=(PID, 7)).error_code == E.PRODUCER_FENCED
    assert t.init(expected=(PID + 99, 1)).error_code == E.PRODUCER_FENCED
    other = t.init()  # a new instance forgets the last epoch ...
    assert other.producer_epoch == 2
    assert t.init(expected=(PID, 1)).error_code == E.PRODUCER_FENCED  # ... so the old one is fenced


def test_epoch_exhaustion_rotates_the_producer_id():
    t = Txns()
    t.init()
    t.coordinator.transactions["app-1"].producer_epoch = 32765
    assert t.init().producer_epoch == 32766
    rotated = t.init(expected=(PID, 32766))
    assert (rotated.producer_id, rotated.producer_epoch) == (PID + 1, 0)
    assert t.coordinator.transactions["app-1"].previous_producer_id == PID
    # KIP-360: a retry of the rotation names the old id at its exhausted epoch, and gets the
    # new id's epoch again; a new producer instance gets the next epoch.
    retry = t.init(expected=(PID, 32766))
    assert (retry.error_code, retry.producer_id, retry.producer_epoch) == (0, PID + 1, 0)
    assert t.init().producer_epoch == 1


def test_transaction_timeout_aborts_through_the_timer():
    t = Txns()
    t.init(timeout_ms=5_000)
    t.add("app-1", PID, 0)
    t.advance(4_999)
    assert t.state() == "Ongoing"
    t.advance(1)
    assert t.state() == "CompleteAbort"
    assert (t.channel.requests[-1].commit, t.channel.requests[-1].producer_epoch) == (False, 1)
    assert t.end("app-1", PID, 0) == E.PRODUCER_FENCED


def test_ending_the_transaction_cancels_its_timeout():
    t = Txns()
    t.init(timeout_ms=5_000)
    t.add("app-1", PID, 0)
    t.end("app-1", PID, 0)
    t.advance(10_000)
    assert [r.commit for r in t.channel.requests] == [True]
    assert t.state() == "CompleteCommit"


def test_load_rebuilds_state_and_finishes_prepared_transactions():
    t = Txns(auto=False)
    t.init("app-1")
    t.add("app-1", PID, 0, ("orders", 2))
    t.end("app-1", PID, 0)  # PrepareCommit written; the markers never answered (a crash)
    t.init("app-2", timeout_ms=5_000)
    t.add("app-2", PID + 1, 0)  # Ongoing
    again = Txns(auto=True, log=t.log)
    again.clock.advance_ms(1_000)
    assert again.coordinator.load(again.now_ms) == 5
    assert again.state("app-1") == "CompleteCommit"
    assert again.channel.requests[0].partitions == (("orders", 2),)
    assert again.state("app-2") == "Ongoing"
    again.advance(4_000)  # 5 000 ms after it started
    assert again.state("app-2") == "CompleteAbort"


def test_expired_transactional_ids_are_tombstoned():
    t = Txns(transactional_id_expiration_ms=10_000)
    t.init("idle")
    t.init("busy")
    t.add("busy", PID + 1, 0)
    t.clock.advance_ms(10_000)
    assert t.coordinator.expire_transactional_ids(t.now_ms) == 1
    assert set(t.coordinator.transactions) == {"busy"}
    assert t.log.partitions[partition_for("idle", 50)][-1] == (t.log.partitions[partition_for("idle", 50)][-1][0], None)
    fresh = TransactionCoordinator(TxnSettings(), t.log, t.channel, lambda: 1, t.coordinator.scheduler, t.clock.milliseconds)
    fresh.load(t.now_ms)
    assert set(fresh.transactions) == {"busy"}


def test_describe_and_list():
    t = Txns()
    t.init("a")
    t.init("b")
    t.add("b", PID + 1, 0, ("orders", 1), ("orders", 0))
    assert t.coordinator.describe("")[0] == E.INVALID_REQUEST
    assert t.coordinator.describe("nope")[0] == E.TRANSACTIONAL_ID_NOT_FOUND
    error, meta = t.coordinator.describe("b")
    assert error == 0 and meta is not None and meta.state.value == "Ongoing" and meta.start_ms == t.now_ms
    found, unknown = t.coordinator.list_transactions(["Ongoing", "Bogus"], [], -1, t.now_ms)
    assert [m.transactional_id for m in found] == ["b"] and unknown == ["Bogus"]
    found, _ = t.coordinator.list_transactions([], [PID], -1, t.now_ms)
    assert [m.transactional_id for m in found] == ["a"]
    t.clock.advance_ms(500)
    assert [m.transactional_id for m in t.coordinator.list_transactions(["Ongoing"], [], 499, t.now_ms)[0]] == ["b"]
    assert t.coordinator.list_transactions(["Ongoing"], [], 500, t.now_ms)[0] == []


def test_verify_only_reports_partitions_outside_the_transaction():
    t = Txns()
    t.init()
    t.add("app-1", PID, 0, ("orders", 0))
    assert t.coordinator.verify_partitions("app-1", PID, 0, [("orders", 0), ("orders", 1)]) == {
        ("orders", 0): E.NONE, ("orders", 1): E.TRANSACTION_ABORTABLE}
    assert t.coordinator.verify_partitions("app-1", PID, 1, [("orders", 0)]) == {("orders", 0): E.PRODUCER_FENCED}
