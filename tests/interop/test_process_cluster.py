"""Real clients against a kafkalab cluster of real processes: three brokers
(``process.roles=broker``) and one controller (``process.roles=controller``), configured and
formatted as ``kafkalab cluster-start --nodes 3`` does, each its own ``kafkalab server-start``.

kafka-python's admin client creates a topic with replication factor 3 through a broker (which
forwards CreateTopics to the controller); an idempotent producer writes with acks=all and
``min.insync.replicas=2``. Kafka's Java producer, confluent-kafka, aiokafka and kcat (when
installed) each write and read back a topic of their own. The slow test then SIGKILLs the partition leader's process, then the
controller's, and restarts both: the producer carries on, and every acknowledged record is read
back once, in order.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
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
    # DescribeQuorum, forwarded by a broker, is answered by the controller process: node 4.
    status = subprocess.run([sys.executable, "-m", "kafkalab", "metadata-quorum", "--bootstrap-server",
                             cluster.bootstrap.split(",")[0], "describe", "--status"],
                            capture_output=True, text=True, timeout=WAIT_S, check=True).stdout
    assert re.search(r"^LeaderId:\s+4$", status, re.MULTILINE) and re.search(r"^CurrentVoters:\s+\[\{\"id\": 4", status,
                                                                          re.MULTILINE), status


def test_every_client_writes_acks_all_and_reads_back(cluster: ProcessCluster) -> None:
    """Kafka's Java producer, confluent-kafka, aiokafka and kcat against the three brokers,
    each on its own RF=3 topic; each client reads its records back (kcat, when installed)."""
    import asyncio
    import shutil
    import subprocess

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from confluent_kafka import Consumer, Producer, TopicPartition as CkTopicPartition

    from tests.java_client import java_client

    bootstrap = cluster.bootstrap
    for topic in ("java", "librdkafka", "aiokafka", "kcat"):
        _create(bootstrap, topic)
    until(lambda: all(_leader_and_isr(bootstrap, t)[1] == [1, 2, 3] for t in ("java", "librdkafka", "aiokafka")),
          "three in-sync replicas each")
    out = java_client().run("IdempotentProducer", "", bootstrap, "java", str(BATCH), timeout_s=60)
    assert sorted(map(int, out.split())) == list(range(BATCH))
    assert len(_read_all(bootstrap, "java", BATCH)) == BATCH

    common = {"bootstrap.servers": bootstrap, "socket.timeout.ms": 10_000}
    producer = Producer({**common, "acks": "all", "enable.idempotence": True, "linger.ms": 2})
    for i in range(BATCH):
        producer.produce("librdkafka", value=f"ck-{i}".encode(), partition=0)
    assert producer.flush(WAIT_S) == 0
    consumer = Consumer({**common, "group.id": "unused", "enable.auto.commit": False})
    try:
        consumer.assign([CkTopicPartition("librdkafka", 0, 0)])
        values = []
        while len(values) < BATCH:
            message = consumer.poll(WAIT_S)
            assert message is not None and message.error() is None, message and message.error()
            values.append(message.value())
    finally:
        consumer.close()
    assert values == [f"ck-{i}".encode() for i in range(BATCH)]

    async def aiokafka_round_trip() -> list[bytes]:
        async with AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True) as sender:
            for i in range(BATCH):
                await sender.send_and_wait("aiokafka", f"ai-{i}".encode(), partition=0)
        async with AIOKafkaConsumer("aiokafka", bootstrap_servers=bootstrap, auto_offset_reset="earliest") as reader:
            return [(await reader.getone()).value for _ in range(BATCH)]

    assert asyncio.run(asyncio.wait_for(aiokafka_round_trip(), WAIT_S)) == [f"ai-{i}".encode() for i in range(BATCH)]

    kcat = shutil.which("kcat")
    if kcat is not None:
        lines = "".join(f"kc-{i}\n" for i in range(BATCH))
        subprocess.run([kcat, "-b", bootstrap, "-P", "-t", "kcat", "-p", "0", "-X", "acks=all"], input=lines,
                       text=True, check=True, timeout=WAIT_S)
        read = subprocess.run([kcat, "-b", bootstrap, "-C", "-t", "kcat", "-p", "0", "-o", "beginning", "-e"],
                              capture_output=True, text=True, check=True, timeout=WAIT_S)
        assert read.stdout.split() == [f"kc-{i}" for i in range(BATCH)]


class SteadyProducer:
    """An idempotent acks=all producer sending one record every few milliseconds in a thread,
    recording which values were acknowledged."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.producer = _producer(bootstrap)
        self.topic = topic
        self.acknowledged: list[bytes] = []
        self.failed: list[Exception] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        i = 0
        while not self._stop.is_set():
            value = f"r{i}".encode()
            future = self.producer.send(self.topic, value, partition=0)
            future.add_callback(lambda _metadata, v=value: self.acknowledged.append(v))
            future.add_errback(self.failed.append)
            i += 1
            time.sleep(0.005)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(WAIT_S)
        self.producer.flush(WAIT_S)
        self.producer.close(2)


def _read_at_least(consumer: KafkaConsumer, read: list[bytes], count: int) -> None:
    """Poll (the producer may still be writing) until ``read`` holds ``count`` records."""
    deadline = time.monotonic() + WAIT_S
    while len(read) < count and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            read += [r.value for r in records]


@pytest.mark.slow
def test_sigkill_of_the_leader_then_of_the_controller_under_load_loses_no_acknowledged_record(
        cluster: ProcessCluster) -> None:
    _create(cluster.bootstrap, "orders")
    until(lambda: _leader_and_isr(cluster.bootstrap, "orders")[1] == [1, 2, 3], "the topic on three brokers")
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap, enable_auto_commit=False,
                             metadata_max_age_ms=1_000)
    consumer.assign([TopicPartition("orders", 0)])
    consumer.seek_to_beginning()
    read: list[bytes] = []
    steady = SteadyProducer(cluster.bootstrap, "orders")
    try:
        until(lambda: len(steady.acknowledged) >= 100, "records acknowledged before the kill")
        leader, _ = _leader_and_isr(cluster.bootstrap, "orders")
        cluster.kill(leader)  # fenced after broker.session.timeout.ms, a new leader from the ISR
        until(lambda: _leader_and_isr(cluster.bootstrap, "orders")[0] not in (leader, -1), "a new leader")
        acked = len(steady.acknowledged)
        until(lambda: len(steady.acknowledged) >= acked + 100, "records acknowledged by the new leader")
        _read_at_least(consumer, read, acked)  # the consumer follows the leader to its new broker
        cluster.kill(cluster.controller_id)  # the data path needs no controller: the ISR holds 2
        acked = len(steady.acknowledged)
        until(lambda: len(steady.acknowledged) >= acked + 100, "records acknowledged without a controller")
        cluster.start(cluster.controller_id)  # replays its log; the brokers heartbeat on
        cluster.start(leader)  # registers again, catches up, rejoins the ISR
        until(lambda: _leader_and_isr(cluster.bootstrap, "orders")[1] == [1, 2, 3], "the ISR whole again")
        acked = len(steady.acknowledged)
        until(lambda: len(steady.acknowledged) >= acked + 100, "records acknowledged after the restarts")
    finally:
        steady.stop()
    assert not steady.failed
    _read_at_least(consumer, read, len(steady.acknowledged))
    consumer.close()
    assert len(read) == len(set(read)), "a record was read twice"
    assert [int(v[1:]) for v in read] == sorted(int(v[1:]) for v in read), "records out of order"
    assert set(steady.acknowledged) <= set(read), "an acknowledged record is missing"
