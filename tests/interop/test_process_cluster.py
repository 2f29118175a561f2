"""Real clients against a kafkalab cluster of real processes: three brokers
(``process.roles=broker``) and one controller (``process.roles=controller``), configured and
formatted as ``kafkalab cluster-start --nodes 3`` does, each its own ``kafkalab server-start``.

kafka-python's admin client creates a topic with replication factor 3 through a broker (which
forwards CreateTopics to the controller); an idempotent producer writes with acks=all and
``min.insync.replicas=2``. The slow test then SIGKILLs the partition leader's process, then the
controller's, and restarts both: the producer carries on, and every acknowledged record is read
back once, in order.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.errors import KafkaError

from kafkalab.tools.process_cluster import ProcessCluster

WAIT_S = 30.0
BATCH = 20
SESSION_MS = 3_000  # broker.session.timeout.ms, shortened so failover is quick


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ProcessCluster]:
    properties = {"broker.session.timeout.ms": str(SESSION_MS), "min.insync.replicas": "2",
                  "offsets.topic.replication.factor": "3"}
    with ProcessCluster(tmp_path, brokers=3, properties=properties, seed=11) as cluster:
        cluster.start_all()
        yield cluster


def until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except KafkaError:  # a client that bootstrapped from the node just killed
            pass
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _describe(bootstrap: str, topic: str) -> dict[str, object]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    try:
        [description] = admin.describe_topics([topic])
        return description
    finally:
        admin.close()


def _leader_and_isr(bootstrap: str, topic: str) -> tuple[int, list[int]]:
    partitions: list[dict[str, Any]] = _describe(bootstrap, topic)["partitions"]  # type: ignore[assignment]
    return partitions[0]["leader_id"], sorted(partitions[0]["isr_nodes"])


def _create(bootstrap: str, topic: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    try:
        admin.create_topics([NewTopic(topic, 1, 3)])
    finally:
        admin.close()


def _producer(bootstrap: str) -> KafkaProducer:
    return KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, linger_ms=2,
                         request_timeout_ms=5_000, retries=50, retry_backoff_ms=200, metadata_max_age_ms=1_000)


def _produce(producer: KafkaProducer, topic: str, first: int) -> list[int]:
    futures = [producer.send(topic, f"r{i}".encode(), partition=0) for i in range(first, first + BATCH)]
    return [f.get(WAIT_S * 2).offset for f in futures]


def _read_all(bootstrap: str, topic: str, expected: int) -> list[bytes]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=10_000)
    try:
        consumer.assign([TopicPartition(topic, 0)])
        consumer.seek_to_beginning()
        values = []
        for message in consumer:
            values.append(message.value)
            if len(values) == expected:
                break
        return values
    finally:
        consumer.close()


def test_three_broker_processes_replicate_a_topic_created_by_a_client(cluster: ProcessCluster) -> None:
    _create(cluster.bootstrap, "orders")
    until(lambda: _leader_and_isr(cluster.bootstrap, "orders")[1] == [1, 2, 3], "the topic on three brokers")
    producer = _producer(cluster.bootstrap)
    try:
        assert _produce(producer, "orders", 0) == list(range(BATCH))
    finally:
        producer.close(2)
    assert _read_all(cluster.bootstrap, "orders", BATCH) == [f"r{i}".encode() for i in range(BATCH)]


@pytest.mark.slow
def test_sigkill_of_the_leader_then_of_the_controller_loses_no_acknowledged_record(cluster: ProcessCluster) -> None:
    _create(cluster.bootstrap, "orders")
    until(lambda: _leader_and_isr(cluster.bootstrap, "orders")[1] == [1, 2, 3], "the topic on three brokers")
    producer = _producer(cluster.bootstrap)
    try:
        assert _produce(producer, "orders", 0) == list(range(BATCH))
        leader, _ = _leader_and_isr(cluster.bootstrap, "orders")
        cluster.kill(leader)  # fenced after broker.session.timeout.ms, a new leader from the ISR
        until(lambda: _leader_and_isr(cluster.bootstrap, "orders")[0] not in (leader, -1), "a new leader")
        assert _produce(producer, "orders", BATCH) == list(range(BATCH, 2 * BATCH))
        cluster.kill(cluster.controller_id)  # the data path needs no controller: the ISR holds 2
        assert _produce(producer, "orders", 2 * BATCH) == list(range(2 * BATCH, 3 * BATCH))
        cluster.start(cluster.controller_id)  # replays its log; the brokers heartbeat on
        cluster.start(leader)  # registers again, catches up, rejoins the ISR
        until(lambda: _leader_and_isr(cluster.bootstrap, "orders")[1] == [1, 2, 3], "the ISR whole again")
        assert _produce(producer, "orders", 3 * BATCH) == list(range(3 * BATCH, 4 * BATCH))
    finally:
        producer.close(2)
    values = _read_all(cluster.bootstrap, "orders", 4 * BATCH)
    assert values == [f"r{i}".encode() for i in range(4 * BATCH)]  # each once, in order
