"""Durability across a clean restart, and two different clients on one broker at once."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Callable

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from kafka import KafkaProducer

from kafkalab.client.launcher import ServerProcess
from tests.interop.support import CLIENT_TIMEOUT_MS, DEADLINE_S, create_topic

RECORD_COUNT = 300


def produce_numbered(bootstrap: str, topic: str, count: int, codec: str | None = None) -> list[int]:
    """Produce ``count`` records ``n -> value-n`` with kafka-python; return acknowledged offsets."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1, compression_type=codec,
                             request_timeout_ms=CLIENT_TIMEOUT_MS, max_block_ms=CLIENT_TIMEOUT_MS,
                             batch_size=4096, linger_ms=2)
    try:
        futures = [producer.send(topic, key=str(n).encode(), value=f"value-{n}".encode(), partition=0)
                   for n in range(count)]
        producer.flush(timeout=CLIENT_TIMEOUT_MS / 1000)
        return [f.get(timeout=CLIENT_TIMEOUT_MS / 1000).offset for f in futures]
    finally:
        producer.close(timeout=5)


def consume_all(bootstrap: str, topic: str, count: int, deadline_s: float = DEADLINE_S) -> list[tuple[int, bytes]]:
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": "interop-assign-only",
        "enable.auto.commit": False, "socket.timeout.ms": CLIENT_TIMEOUT_MS,
        "fetch.wait.max.ms": 100, "topic.metadata.refresh.interval.ms": 1000,
    })
    got: list[tuple[int, bytes]] = []
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        end_s = time.monotonic() + deadline_s
        while len(got) < count and time.monotonic() < end_s:
            for m in consumer.consume(num_messages=500, timeout=0.2):
                if m.error() is None:
                    got.append((m.offset(), m.value()))
    finally:
        consumer.close()
    return got


@pytest.mark.timeout(90)
def test_everything_acknowledged_survives_a_restart(
    tmp_path: Path, server_factory: Callable[[Path], ServerProcess],
) -> None:
    data_dir = tmp_path / "data"
    first = server_factory(data_dir)
    create_topic(first.bootstrap, "durable")
    acknowledged = produce_numbered(first.bootstrap, "durable", RECORD_COUNT, codec="gzip")
    assert acknowledged == list(range(RECORD_COUNT))
    assert first.stop() == 0, f"unclean shutdown; log:\n{first.log_tail()}"
    second = server_factory(data_dir)
    got = consume_all(second.bootstrap, "durable", RECORD_COUNT)
    assert got == [(n, f"value-{n}".encode()) for n in range(RECORD_COUNT)]
    # The restarted log keeps growing from where it stopped.
    assert produce_numbered(second.bootstrap, "durable", 5) == list(range(RECORD_COUNT, RECORD_COUNT + 5))


@pytest.mark.timeout(90)
def test_kafka_python_produces_while_confluent_kafka_consumes(bootstrap: str, topic_name: str) -> None:
    create_topic(bootstrap, topic_name)
    consumed: list[tuple[int, bytes]] = []
    consumer_thread = threading.Thread(
        target=lambda: consumed.extend(consume_all(bootstrap, topic_name, RECORD_COUNT)))
    consumer_thread.start()
    try:
        offsets = produce_numbered(bootstrap, topic_name, RECORD_COUNT, codec="snappy")
    finally:
        consumer_thread.join(timeout=DEADLINE_S + 10)
    assert not consumer_thread.is_alive(), "consumer did not finish within its deadline"
    assert offsets == list(range(RECORD_COUNT))
    assert consumed == [(n, f"value-{n}".encode()) for n in range(RECORD_COUNT)]
