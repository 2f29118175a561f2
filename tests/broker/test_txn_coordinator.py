"""The transaction coordinator through the sans-I/O broker: offsets sent with a transaction,
restarts that replay ``__transaction_state`` and ``__consumer_offsets``, and the dump tool
reading what the coordinator wrote."""

from __future__ import annotations

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
    described = again.call(ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [TXN]}).transaction_states[0]
    assert (described.transaction_state, described.producer_id, described.topics[0].topic) == (
        "Ongoing", pid, "__consumer_offsets")
    assert _init(again)[0] == ErrorCode.CONCURRENT_TRANSACTIONS  # the open transaction is aborted first
    assert _init(again) == (0, pid, epoch + 2)
    assert _fetch(again, require_stable=True) == (0, 5)
    again.close()


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
