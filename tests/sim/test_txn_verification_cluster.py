"""Transaction verification (KIP-890 part 1) across brokers in the simulation: a partition
leader that does not coordinate the transactional id sends AddPartitionsToTxn ``verify_only``
to the coordinator's broker over the simulated network, and holds the Produce until it answers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkalab.errors import ErrorCode
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.records.model import Record
from kafkalab.records.v2 import build_v2_batch
from kafkalab.sim.cluster import CLIENT, START_MS, SimCluster
from kafkalab.txn.coordinator import TRANSACTION_STATE_TOPIC, partition_for

TXN_ID = "app"
STATE_PARTITIONS = 3  # fewer than Kafka's 50: quicker to create and to close


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[SimCluster]:
    sim = SimCluster(tmp_path, nodes=3, seed=7,
                     properties={"transaction.state.log.num.partitions": str(STATE_PARTITIONS)})
    yield sim
    sim.close()


def _call(sim: SimCluster, node: int, api_key: int, version: int, body: dict) -> Any:
    """One request, waited for longer than the leader waits for the coordinator (30 s)."""
    answers: list[Any] = []
    sim._send(CLIENT, node, api_key, version, body, answers.append, timeout_ms=60_000)
    sim.run_until(lambda: bool(answers), 60_000)
    [answer] = answers
    return answer


def _setup(cluster: SimCluster) -> tuple[int, int, int, int]:
    """(coordinator, a partition of ``orders`` led elsewhere, producer id, epoch), that
    partition not yet in the transaction."""
    cluster.create_topic(TRANSACTION_STATE_TOPIC, STATE_PARTITIONS, 3)
    cluster.create_topic("orders", 3, 3)
    cluster.run_for(2_000)
    coordinator = cluster.leader(TRANSACTION_STATE_TOPIC, partition_for(TXN_ID, STATE_PARTITIONS))
    elsewhere = next(p for p in range(3) if cluster.leader("orders", p) != coordinator)
    init = _call(cluster, coordinator, ApiKey.INIT_PRODUCER_ID, 4, {
        "transactional_id": TXN_ID, "transaction_timeout_ms": 60_000, "producer_id": -1, "producer_epoch": -1})
    assert init.error_code == 0
    return coordinator, elsewhere, init.producer_id, init.producer_epoch


def _produce(cluster: SimCluster, partition: int, pid: int, epoch: int) -> Any:
    batch = build_v2_batch([Record(0, START_MS, None, b"v")], producer_id=pid, producer_epoch=epoch,
                           base_sequence=0, is_transactional=True)
    answer = _call(cluster, cluster.leader("orders", partition), ApiKey.PRODUCE, 9, {
        "transactional_id": TXN_ID, "acks": -1, "timeout_ms": 30_000,
        "topic_data": [{"name": "orders", "partition_data": [{"index": partition, "records": batch}]}]})
    return answer.responses[0].partition_responses[0]


def _add(cluster: SimCluster, coordinator: int, partition: int, pid: int, epoch: int) -> None:
    added = _call(cluster, coordinator, ApiKey.ADD_PARTITIONS_TO_TXN, 3, {
        "v3_and_below_transactional_id": TXN_ID, "v3_and_below_producer_id": pid,
        "v3_and_below_producer_epoch": epoch, "v3_and_below_topics": [{"name": "orders", "partitions": [partition]}]})
    assert added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0


def test_a_leader_asks_the_coordinator_on_another_broker(cluster: SimCluster) -> None:
    coordinator, partition, pid, epoch = _setup(cluster)
    leader = cluster.leader("orders", partition)
    refused = _produce(cluster, partition, pid, epoch)
    assert refused.error_code == ErrorCode.INVALID_TXN_STATE
    assert cluster.nodes[leader].broker.topics.log("orders", partition).log_end_offset == 0
    _add(cluster, coordinator, partition, pid, epoch)
    cluster.network.cut(leader, coordinator)
    answer = _produce(cluster, partition, pid, epoch)  # answered when the leader gives up, after 30 s
    assert answer.error_code == ErrorCode.NOT_ENOUGH_REPLICAS  # as Kafka answers: every client retries
    cluster.network.heal()
    assert _produce(cluster, partition, pid, epoch).error_code == 0
    assert cluster.nodes[leader].broker.topics.log("orders", partition).log_end_offset == 1
