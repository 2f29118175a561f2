"""A transaction whose partitions are led by other brokers than its coordinator, end to end in
the three-broker simulation: every partition must get its COMMIT marker and its LSO must reach
the HW. The coordinator's marker channel sends WriteTxnMarkers over the simulated network to
each partition's leader."""

from __future__ import annotations

from typing import Any

from kafkalab.protocol.api_keys import ApiKey
from kafkalab.records.model import Record
from kafkalab.records.v2 import build_v2_batch
from kafkalab.sim.cluster import CLIENT, START_MS, SimCluster
from kafkalab.txn.coordinator import TRANSACTION_STATE_TOPIC, partition_for
from kafkalab.txn.state import TransactionState

TXN_ID = "app"


def _call(sim: SimCluster, node: int, api_key: int, version: int, body: dict) -> Any:
    answers: list[Any] = []
    sim._send(CLIENT, node, api_key, version, body, answers.append)
    sim.run_until(lambda: bool(answers), 60_000)
    [answer] = answers
    return answer


def test_a_commit_reaches_partitions_led_by_other_brokers(cluster: SimCluster) -> None:
    cluster.create_topic(TRANSACTION_STATE_TOPIC, 50, 3)
    cluster.create_topic("orders", 3, 3)
    cluster.run_for(2_000)
    coordinator = cluster.leader(TRANSACTION_STATE_TOPIC, partition_for(TXN_ID, 50))
    leaders = {p: cluster.leader("orders", p) for p in range(3)}
    assert set(leaders.values()) - {coordinator}, "the test needs a partition led elsewhere"
    init = _call(cluster, coordinator, ApiKey.INIT_PRODUCER_ID, 4, {
        "transactional_id": TXN_ID, "transaction_timeout_ms": 60_000, "producer_id": -1, "producer_epoch": -1})
    assert init.error_code == 0
    pid, epoch = init.producer_id, init.producer_epoch
    added = _call(cluster, coordinator, ApiKey.ADD_PARTITIONS_TO_TXN, 3, {
        "v3_and_below_transactional_id": TXN_ID, "v3_and_below_producer_id": pid,
        "v3_and_below_producer_epoch": epoch, "v3_and_below_topics": [{"name": "orders", "partitions": [0, 1, 2]}]})
    assert all(p.partition_error_code == 0 for t in added.results_by_topic_v3_and_below for p in t.results_by_partition)
    for partition, leader in leaders.items():
        batch = build_v2_batch([Record(0, START_MS, None, b"v")], producer_id=pid, producer_epoch=epoch,
                               base_sequence=0, is_transactional=True)
        answer = _call(cluster, leader, ApiKey.PRODUCE, 9, {
            "transactional_id": TXN_ID, "acks": -1, "timeout_ms": 30_000,
            "topic_data": [{"name": "orders", "partition_data": [{"index": partition, "records": batch}]}]})
        assert answer.responses[0].partition_responses[0].error_code == 0
    ended = _call(cluster, coordinator, ApiKey.END_TXN, 3, {
        "transactional_id": TXN_ID, "producer_id": pid, "producer_epoch": epoch, "committed": True})
    assert ended.error_code == 0
    cluster.run_for(5_000)
    _, metadata = cluster.nodes[coordinator].broker.txn_coordinator.describe(TXN_ID)
    assert metadata is not None and metadata.state == TransactionState.COMPLETE_COMMIT
    for partition in leaders:
        fetched = cluster.consume("orders", partition, 0)
        assert fetched.last_stable_offset == fetched.high_watermark == 2
