"""Real clients against a KRaft combined node started as a Kafka user starts one:

    kafkalab storage random-uuid
    kafkalab storage format -t <id> -c server.properties
    kafkalab server-start server.properties

with ``process.roles=broker,controller`` and ``controller.quorum.voters=1@127.0.0.1:<port>``.
kafka-python, confluent-kafka (librdkafka) and Kafka's own Java producer write with acks=all;
every record is read back, and every client sees the cluster id the format wrote.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from kafkalab.client.launcher import start_server, unused_port
from tests.interop.support import CLIENT_TIMEOUT_MS, create_topic
from tests.java_client import java_client

RECORDS = 40
TIMEOUT_S = 30


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(bootstrap, cluster id) of a formatted combined node, stopped at the end of the module."""
    root = tmp_path_factory.mktemp("kraft")
    controller_port = unused_port()
    config = root / "server.properties"
    config.write_text(
        "process.roles=broker,controller\nnode.id=1\n"
        f"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:{controller_port}\n"
        "controller.listener.names=CONTROLLER\n"
        f"controller.quorum.voters=1@127.0.0.1:{controller_port}\n"
        f"log.dirs={root / 'data'}\n")
    cluster_id = _kafkalab("storage", "random-uuid").strip()
    _kafkalab("storage", "format", "-t", cluster_id, "-c", str(config))
    server = start_server(root / "data", config=config)
    try:
        yield server.bootstrap, cluster_id
    finally:
        server.stop()


def _kafkalab(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "kafkalab", *args], capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=True)
    return done.stdout


def _read_all(bootstrap: str, topic: str, expected: int) -> list[bytes]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=10_000)
    try:
        partition = TopicPartition(topic, 0)
        consumer.assign([partition])
        consumer.seek_to_beginning(partition)
        values: list[bytes] = []
        for message in consumer:
            values.append(message.value)
            if len(values) == expected:
                break
        return values
    finally:
        consumer.close()


@pytest.mark.timeout(60)
def test_kafka_python_acks_all(node: tuple[str, str], topic_name: str) -> None:
    bootstrap, _ = node
    create_topic(bootstrap, topic_name)
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", request_timeout_ms=CLIENT_TIMEOUT_MS)
    try:
        offsets = [producer.send(topic_name, f"kp-{i}".encode(), partition=0).get(TIMEOUT_S).offset
                   for i in range(RECORDS)]
    finally:
        producer.close()
    assert offsets == list(range(RECORDS))
    assert _read_all(bootstrap, topic_name, RECORDS) == [f"kp-{i}".encode() for i in range(RECORDS)]


@pytest.mark.timeout(60)
def test_confluent_kafka_sees_the_cluster_id_and_round_trips(node: tuple[str, str], topic_name: str) -> None:
    bootstrap, cluster_id = node
    common: dict[str, Any] = {"bootstrap.servers": bootstrap, "socket.timeout.ms": CLIENT_TIMEOUT_MS}
    assert AdminClient(common).describe_cluster(request_timeout=10).result(TIMEOUT_S).cluster_id == cluster_id
    create_topic(bootstrap, topic_name)
    producer = Producer({**common, "acks": "all", "enable.idempotence": True, "linger.ms": 2,
                         "message.timeout.ms": CLIENT_TIMEOUT_MS})
    errors: list[object] = []
    for i in range(RECORDS):
        producer.produce(topic_name, value=f"ck-{i}".encode(), partition=0,
                         on_delivery=lambda error, _: errors.append(error) if error else None)
    assert producer.flush(TIMEOUT_S) == 0 and not errors
    consumer = Consumer({**common, "group.id": "unused", "enable.auto.commit": False})
    try:
        consumer.assign([CkTopicPartition(topic_name, 0, 0)])
        values: list[bytes] = []
        while len(values) < RECORDS:
            message = consumer.poll(TIMEOUT_S)
            assert message is not None and message.error() is None, message and message.error()
            values.append(message.value())
    finally:
        consumer.close()
    assert values == [f"ck-{i}".encode() for i in range(RECORDS)]


@pytest.mark.timeout(120)
def test_java_idempotent_producer(node: tuple[str, str], topic_name: str) -> None:
    bootstrap, _ = node
    client = java_client()
    create_topic(bootstrap, topic_name)
    out = client.run("IdempotentProducer", "", bootstrap, topic_name, str(RECORDS), timeout_s=60)
    assert sorted(map(int, out.split())) == list(range(RECORDS))
    assert len(_read_all(bootstrap, topic_name, RECORDS)) == RECORDS
