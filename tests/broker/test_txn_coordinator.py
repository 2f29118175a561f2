"""The transaction coordinator through the sans-I/O broker: offsets sent with a transaction,
restarts that replay ``__transaction_state`` and ``__consumer_offsets``, and the dump tool
reading what the coordinator wrote."""

from __future__ import annotations

from typing import Any

from kafkalab.errors import ErrorCode
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.tools.cli import main
from kafkalab.txn.coordinator import TRANSACTION_STATE_TOPIC, partition_for
from tests.broker._harness import Harness

TXN = "app"
GROUP = "g"


def _init(h: Harness) -> tuple[int, int, int]:
    r = h.call(ApiKey.INIT_PRODUCER_ID, 1, {"transactional_id": TXN, "transaction_timeout_ms": 60_000})
    return r.error_code, r.producer_id, r.producer_epoch


def _send_offset(h: Harness, pid: int, epoch: int, offset: int) -> None:
    ids = {"transactional_id": TXN, "producer_id": pid, "producer_epoch": epoch}
    assert h.call(ApiKey.ADD_OFFSETS_TO_TXN, 0, {**ids, "group_id": GROUP}).error_code == 0
    r = h.call(ApiKey.TXN_OFFSET_COMMIT, 0, {**ids, "group_id": GROUP, "topics": [
        {"name": "orders", "partitions": [{"partition_index": 0, "committed_offset": offset,
                                           "committed_metadata": ""}]}]})
    assert r.topics[0].partitions[0].error_code == 0


def _end(h: Harness, pid: int, epoch: int, commit: bool) -> int:
    return h.call(ApiKey.END_TXN, 0, {"transactional_id": TXN, "producer_id": pid, "producer_epoch": epoch,
                                      "committed": commit}).error_code


def _fetch(h: Harness, require_stable: bool = False) -> tuple[int, int]:
    r = h.call(ApiKey.OFFSET_FETCH, 7, {"group_id": GROUP, "require_stable": require_stable,
                                        "topics": [{"name": "orders", "partition_indexes": [0]}]})
    p = r.topics[0].partitions[0]
    return p.error_code, p.committed_offset


def test_offsets_become_visible_with_the_commit_and_survive_a_restart(tmp_path):
    h = Harness(tmp_path)
    h.create_topic("orders")
    error, pid, epoch = _init(h)
    assert error == 0
    _send_offset(h, pid, epoch, 5)
    assert _fetch(h) == (0, -1)  # pending: not visible yet
    assert _fetch(h, require_stable=True) == (ErrorCode.UNSTABLE_OFFSET_COMMIT, -1)
    assert _end(h, pid, epoch, commit=True) == 0
    assert _fetch(h, require_stable=True) == (0, 5)
    _send_offset(h, pid, epoch, 9)
    assert _end(h, pid, epoch, commit=False) == 0
    assert _fetch(h) == (0, 5)  # the aborted 9 is dropped
    _send_offset(h, pid, epoch, 11)  # left open across the restart
    h.close()

    again = Harness(tmp_path)
    assert _fetch(again) == (0, 5)
    assert _fetch(again, require_stable=True) == (ErrorCode.UNSTABLE_OFFSET_COMMIT, -1)  # 11 is pending again
    described = again.call(ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [TXN]}).transaction_states[0]
    assert (described.transaction_state, described.producer_id, described.topics[0].topic) == (
        "Ongoing", pid, "__consumer_offsets")
    assert _init(again)[0] == ErrorCode.CONCURRENT_TRANSACTIONS  # the open transaction is aborted first
    assert _init(again) == (0, pid, epoch + 2)
    assert _fetch(again, require_stable=True) == (0, 5)  # the fence's ABORT marker dropped 11
    again.close()


def test_offsets_of_a_prepared_commit_survive_a_crash_before_the_markers(tmp_path):
    """PrepareCommit is written but the broker stops before any marker: on restart the group
    coordinator holds the offset pending and the transaction coordinator finishes the commit."""
    h = Harness(tmp_path)
    h.create_topic("orders")
    _, pid, epoch = _init(h)
    _send_offset(h, pid, epoch, 21)
    coordinator = h.broker.txn_coordinator
    coordinator.channel = _Lost()  # markers never arrive
    assert _end(h, pid, epoch, commit=True) == 0
    h.close()
    again = Harness(tmp_path)  # load: PrepareCommit found, markers re-sent in process
    assert _fetch(again, require_stable=True) == (0, 21)
    state = again.call(ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [TXN]}).transaction_states[0]
    assert state.transaction_state == "CompleteCommit"
    again.close()


class _Lost:
    def send(self, request: Any, on_complete: Any) -> None:
        pass


def test_dump_log_reads_the_coordinators_records(tmp_path, capsys):
    h = Harness(tmp_path)
    h.create_topic("orders")
    _, pid, epoch = _init(h)
    ids = {"v3_and_below_transactional_id": TXN, "v3_and_below_producer_id": pid,
           "v3_and_below_producer_epoch": epoch}
    added = h.call(ApiKey.ADD_PARTITIONS_TO_TXN, 3, {**ids, "v3_and_below_topics": [
        {"name": "orders", "partitions": [0]}, {"name": "missing", "partitions": [0]}]})
    errors = {t.name: t.results_by_partition[0].partition_error_code for t in added.results_by_topic_v3_and_below}
    assert errors == {"orders": ErrorCode.OPERATION_NOT_ATTEMPTED, "missing": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    added = h.call(ApiKey.ADD_PARTITIONS_TO_TXN, 3, {**ids, "v3_and_below_topics": [
        {"name": "orders", "partitions": [0]}]})
    assert added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0
    assert _end(h, pid, epoch, commit=True) == 0
    h.close()
    segment = tmp_path / f"{TRANSACTION_STATE_TOPIC}-{partition_for(TXN, 50)}" / ("0" * 20 + ".log")
    assert main(["dump-log", "--files", str(segment), "--transaction-log-decoder"]) == 0
    payloads = [line for line in capsys.readouterr().out.splitlines() if "payload:" in line]
    statuses = [line.split('"transactionStatus":')[1].split(",")[0] for line in payloads]
    assert statuses == ["0", "1", "2", "4"]  # Empty, Ongoing, PrepareCommit, CompleteCommit
    assert '"transactionPartitions":[{"topic":"orders","partitionIds":[0]}]' in payloads[2]
    assert '"transactionPartitions":null' in payloads[0]


def _kafka_python_call(h: Harness, request: Any, response_class: Any, version: int) -> Any:
    """Send a request kafka-python encoded and decode the answer with kafka-python (flexible
    versions: the response header carries an empty tag section)."""
    h._correlation_id += 1
    request.with_header(correlation_id=h._correlation_id, client_id="broker-2")
    h.broker.handle(1, bytes(request.encode(header=True)), h.clock.milliseconds())
    [out] = h.outgoing()
    data = b"".join(p if isinstance(p, bytes) else p.read_bytes() for p in out.parts)
    return response_class.decode(data[4 + 4 + 1:], version=version)


def test_batched_add_partitions_v4_adds_and_verifies(tmp_path):
    """The brokers' form (KIP-890), encoded and decoded by kafka-python: two transactions in
    one request, one adding a partition, one only asking whether its partition was added."""
    from kafka.protocol.producer import AddPartitionsToTxnRequest, AddPartitionsToTxnResponse

    h = Harness(tmp_path)
    h.create_topic("orders", 2)
    _, pid, epoch = _init(h)
    R = AddPartitionsToTxnRequest
    request = R(version=4, transactions=[
        R.AddPartitionsToTxnTransaction(transactional_id=TXN, producer_id=pid, producer_epoch=epoch,
                                        verify_only=False, topics=[R.AddPartitionsToTxnTopic(name="orders", partitions=[1])]),
        R.AddPartitionsToTxnTransaction(transactional_id=TXN, producer_id=pid, producer_epoch=epoch,
                                        verify_only=True, topics=[R.AddPartitionsToTxnTopic(name="orders", partitions=[0, 1])]),
    ])
    response = _kafka_python_call(h, request, AddPartitionsToTxnResponse, 4)
    results = [{(t.name, p.partition_index): p.partition_error_code for t in r.topic_results for p in t.results_by_partition}
               for r in response.results_by_transaction]
    assert results == [{("orders", 1): 0},
                       {("orders", 0): ErrorCode.TRANSACTION_ABORTABLE, ("orders", 1): 0}]
    h.close()


def test_transaction_timeout_aborts_through_the_brokers_timer(tmp_path):
    h = Harness(tmp_path)
    h.create_topic("orders")
    r = h.call(ApiKey.INIT_PRODUCER_ID, 1, {"transactional_id": TXN, "transaction_timeout_ms": 2_000})
    ids = {"v3_and_below_transactional_id": TXN, "v3_and_below_producer_id": r.producer_id,
           "v3_and_below_producer_epoch": r.producer_epoch}
    h.call(ApiKey.ADD_PARTITIONS_TO_TXN, 0, {**ids, "v3_and_below_topics": [{"name": "orders", "partitions": [0]}]})
    h.advance(1_999)
    state = h.call(ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [TXN]}).transaction_states[0]
    assert state.transaction_state == "Ongoing"
    h.advance(1)
    state = h.call(ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [TXN]}).transaction_states[0]
    assert (state.transaction_state, state.producer_epoch) == ("CompleteAbort", r.producer_epoch + 1)
    assert _end(h, r.producer_id, r.producer_epoch, commit=True) == ErrorCode.PRODUCER_FENCED
    marker = h.log_store.get_log("orders", 0)
    assert marker.log_end_offset == 1  # the ABORT marker
    h.close()


def test_kip_360_request_must_name_both_producer_id_and_epoch(tmp_path):
    h = Harness(tmp_path)
    body = {"transactional_id": TXN, "transaction_timeout_ms": 60_000}
    first = h.call(ApiKey.INIT_PRODUCER_ID, 3, {**body, "producer_id": -1, "producer_epoch": -1})
    assert first.error_code == 0
    half = h.call(ApiKey.INIT_PRODUCER_ID, 3, {**body, "producer_id": first.producer_id, "producer_epoch": -1})
    assert half.error_code == ErrorCode.INVALID_REQUEST
    bumped = h.call(ApiKey.INIT_PRODUCER_ID, 3, {**body, "producer_id": first.producer_id, "producer_epoch": 0})
    assert (bumped.error_code, bumped.producer_epoch) == (0, 1)
    h.close()


def test_a_deleted_topic_does_not_hold_the_commit_back(tmp_path):
    h = Harness(tmp_path)
    h.create_topic("orders")
    h.create_topic("gone")
    _, pid, epoch = _init(h)
    ids = {"v3_and_below_transactional_id": TXN, "v3_and_below_producer_id": pid,
           "v3_and_below_producer_epoch": epoch}
    h.call(ApiKey.ADD_PARTITIONS_TO_TXN, 0, {**ids, "v3_and_below_topics": [
        {"name": "orders", "partitions": [0]}, {"name": "gone", "partitions": [0]}]})
    assert h.call(ApiKey.DELETE_TOPICS, 4, {"topic_names": ["gone"], "timeout_ms": 1000}).responses[0].error_code == 0
    assert _end(h, pid, epoch, commit=True) == 0
    state = h.call(ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [TXN]}).transaction_states[0]
    assert state.transaction_state == "CompleteCommit"
    assert h.log_store.get_log("orders", 0).log_end_offset == 1  # its COMMIT marker
    h.close()


def test_a_marker_over_the_wire_settles_the_pending_offsets(tmp_path):
    """A WriteTxnMarkers request (as `kafkalab transactions abort` or a coordinator on another
    broker sends) completes the transaction's offset commits, as Kafka's handler does."""
    from kafkalab.group.partitioner import partition_for as group_partition

    h = Harness(tmp_path)
    h.create_topic("orders")
    _, pid, epoch = _init(h)
    _send_offset(h, pid, epoch, 7)
    assert _fetch(h, require_stable=True) == (ErrorCode.UNSTABLE_OFFSET_COMMIT, -1)
    marker = {"producer_id": pid, "producer_epoch": epoch, "transaction_result": True, "coordinator_epoch": 0,
              "topics": [{"name": "__consumer_offsets", "partition_indexes": [group_partition(GROUP)]}]}
    r = h.call(ApiKey.WRITE_TXN_MARKERS, 1, {"markers": [marker]})
    assert r.markers[0].topics[0].partitions[0].error_code == 0
    assert _fetch(h, require_stable=True) == (0, 7)
    h.close()


def test_a_partition_load_hands_over_only_its_own_undecided_offsets(tmp_path):
    """Found by the transaction campaign (seed 27): open transactions remembered from an earlier
    partition load were handed over again at the next load, after their marker had decided them,
    and the group coordinator held their offsets pending for good (OffsetFetch require_stable
    answered UNSTABLE_OFFSET_COMMIT)."""
    h = Harness(tmp_path)
    h.create_topic("orders")
    _, pid, epoch = _init(h)
    _send_offset(h, pid, epoch, 7)
    log = h.broker.offsets_log
    mine = h.broker.group_coordinator.partition_of(GROUP)
    list(log.replay_partition(mine))  # a load while the transaction is open
    assert list(log.open_transactions()) == [pid]
    assert _end(h, pid, epoch, commit=True) == 0
    other = (mine + 1) % log.partition_count
    list(log.replay_partition(other))  # the next load, of another partition
    assert log.open_transactions() == {}
    assert _fetch(h, require_stable=True) == (0, 7)
