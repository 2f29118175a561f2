"""The transaction coordinator follows the ``__transaction_state`` leader in the three-broker
simulation: a coordinator that dies after PrepareCommit is replaced by the partition's next
leader, which loads the decision and writes the markers with its leader epoch as coordinator
epoch (a marker of the old epoch is then refused), and the coordinator answers only once the
ISR has its record (acks=all). TxnOffsetCommit is answered by the group's coordinator only."""

from __future__ import annotations

from typing import Any

from kafkalab.errors import ErrorCode
from kafkalab.group.partitioner import OFFSETS_TOPIC
from kafkalab.group.partitioner import partition_for as group_partition_for
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.records.model import Record
from kafkalab.records.v2 import build_v2_batch
from kafkalab.sim.cluster import CLIENT, START_MS, SimCluster
from kafkalab.txn.coordinator import TRANSACTION_STATE_TOPIC, partition_for
from kafkalab.txn.state import TransactionState

TXN_ID = "app"
TXN_PARTITION = partition_for(TXN_ID, 50)


def _call(sim: SimCluster, node: int, api_key: int, version: int, body: dict, wait_ms: int = 60_000) -> Any:
    answers: list[Any] = []
    sim._send(CLIENT, node, api_key, version, body, answers.append, timeout_ms=wait_ms)
    sim.run_until(lambda: bool(answers), wait_ms)
    return answers[0] if answers else None


def _open_transaction(sim: SimCluster) -> tuple[int, int, int]:
    """(coordinator, producer id, epoch) of a transaction that wrote one record to orders-0..2."""
    sim.create_topic(TRANSACTION_STATE_TOPIC, 50, 3)
    sim.create_topic("orders", 3, 3)
    sim.run_for(2_000)
    coordinator = sim.leader(TRANSACTION_STATE_TOPIC, TXN_PARTITION)
    init = _call(sim, coordinator, ApiKey.INIT_PRODUCER_ID, 4, {
        "transactional_id": TXN_ID, "transaction_timeout_ms": 60_000, "producer_id": -1, "producer_epoch": -1})
    pid, epoch = init.producer_id, init.producer_epoch
    added = _call(sim, coordinator, ApiKey.ADD_PARTITIONS_TO_TXN, 3, {
        "v3_and_below_transactional_id": TXN_ID, "v3_and_below_producer_id": pid,
        "v3_and_below_producer_epoch": epoch, "v3_and_below_topics": [{"name": "orders", "partitions": [0, 1, 2]}]})
    assert all(p.partition_error_code == 0 for t in added.results_by_topic_v3_and_below for p in t.results_by_partition)
    for partition in range(3):
        batch = build_v2_batch([Record(0, START_MS, None, b"v")], producer_id=pid, producer_epoch=epoch,
                               base_sequence=0, is_transactional=True)
        assert sim.produce("orders", partition, batch).error_code == 0
    return coordinator, pid, epoch


def _end_body(pid: int, epoch: int) -> dict:
    return {"transactional_id": TXN_ID, "producer_id": pid, "producer_epoch": epoch, "committed": True}


def test_the_next_leader_finishes_a_commit_whose_coordinator_died(cluster: SimCluster) -> None:
    old, pid, epoch = _open_transaction(cluster)
    answers: list[Any] = []

    def answered(response: Any) -> None:
        answers.append(response)
        cluster.crash(old)  # PrepareCommit is on every replica; markers may be lost with the broker

    cluster._send(CLIENT, old, ApiKey.END_TXN, 3, _end_body(pid, epoch), answered)
    cluster.run_until(lambda: bool(answers), 10_000)
    assert answers[0].error_code == 0
    cluster.run_for(20_000)  # the controller fences the dead broker and elects another leader
    new = cluster.leader(TRANSACTION_STATE_TOPIC, TXN_PARTITION)
    assert new != old
    coordinator = cluster.nodes[new].broker.txn_coordinator
    new_epoch = coordinator.epoch_of(TXN_PARTITION)
    assert new_epoch >= 1
    _, metadata = coordinator.describe(TXN_ID)
    assert metadata is not None and metadata.state is TransactionState.COMPLETE_COMMIT
    for partition in range(3):
        leader = cluster.nodes[cluster.leader("orders", partition)].broker
        log = leader.topics.log("orders", partition)
        assert log.last_stable_offset == log.high_watermark >= 2  # the record and a COMMIT marker
        assert log.producer_state.producers[pid].coordinator_epoch == new_epoch
    stale = {"markers": [{"producer_id": pid, "producer_epoch": epoch, "transaction_result": False,
                          "coordinator_epoch": new_epoch - 1,
                          "topics": [{"name": "orders", "partition_indexes": [0]}]}]}
    answer = _call(cluster, cluster.leader("orders", 0), ApiKey.WRITE_TXN_MARKERS, 1, stale)
    assert answer.markers[0].topics[0].partitions[0].error_code == ErrorCode.TRANSACTION_COORDINATOR_FENCED


def test_end_txn_is_answered_only_once_the_isr_has_the_record(cluster: SimCluster) -> None:
    coordinator, pid, epoch = _open_transaction(cluster)
    follower = next(n for n in cluster.nodes if n != coordinator)
    cluster.crash(follower)
    answers: list[Any] = []
    cluster._send(CLIENT, coordinator, ApiKey.END_TXN, 3, _end_body(pid, epoch), answers.append)
    cluster.run_for(5_000)
    assert not answers  # the dead follower is still in the ISR and lacks PrepareCommit
    _, metadata = cluster.nodes[coordinator].broker.txn_coordinator.describe(TXN_ID)
    assert metadata is not None and metadata.state is TransactionState.ONGOING  # not applied yet
    retried = _call(cluster, coordinator, ApiKey.END_TXN, 3, _end_body(pid, epoch))
    assert retried.error_code == ErrorCode.CONCURRENT_TRANSACTIONS
    cluster.run_until(lambda: bool(answers), 20_000)  # the controller fences it: the ISR shrinks
    assert answers and answers[0].error_code == 0
    registration = cluster.controller.image.partition(TRANSACTION_STATE_TOPIC, TXN_PARTITION)
    assert registration is not None and follower not in registration.isr


def test_txn_offset_commit_to_another_broker_is_answered_not_coordinator(cluster: SimCluster) -> None:
    cluster.create_topic(OFFSETS_TOPIC, 50, 3)
    cluster.run_for(1_000)
    leader = cluster.leader(OFFSETS_TOPIC, group_partition_for("g"))
    body = {"transactional_id": TXN_ID, "producer_id": 4000, "producer_epoch": 0, "group_id": "g", "topics": [
        {"name": "orders", "partitions": [{"partition_index": 0, "committed_offset": 5, "committed_metadata": ""}]}]}
    for node in cluster.nodes:
        answer = _call(cluster, node, ApiKey.TXN_OFFSET_COMMIT, 0, body)
        expected = ErrorCode.NONE if node == leader else ErrorCode.NOT_COORDINATOR
        assert answer is not None and answer.topics[0].partitions[0].error_code == expected
