"""A data directory laid out by an Apache Kafka broker is served to a real client.

The partition holds the one-message segment a Kafka broker wrote and its users published with
``hexdump -C`` in 2015 (``tests/kafka_written.py``), beside the broker's
own files of that era: ``meta.properties`` and the ``recovery-point-offset-checkpoint`` /
``replication-offset-checkpoint`` text files (version 0, one line per partition). kafkalab must
discover the topic from the directory, serve the old magic-0 entry to kafka-python as it is, and
accept new messages after it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from kafkalab.client.launcher import ServerProcess
from tests.kafka_written import KAFKA_WRITTEN_LOG

TOPIC = "sample-topic"


def _kafka_data_dir(root: Path) -> Path:
    data = root / "kafka-logs"
    partition = data / f"{TOPIC}-0"
    partition.mkdir(parents=True)
    (partition / "00000000000000000000.log").write_bytes(KAFKA_WRITTEN_LOG)
    (partition / "00000000000000000000.index").write_bytes(b"")  # trimmed on clean shutdown
    (data / "meta.properties").write_text("#\nversion=0\nbroker.id=0\n")
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        (data / name).write_text(f"0\n1\n{TOPIC} 0 1\n")
    return data


def _consume_all(bootstrap: str, expected: int) -> list[tuple[int, bytes | None]]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             consumer_timeout_ms=10_000)
    try:
        partition = TopicPartition(TOPIC, 0)
        consumer.assign([partition])
        consumer.seek_to_beginning(partition)
        seen: list[tuple[int, bytes | None]] = []
        for message in consumer:
            seen.append((message.offset, message.value))
            if len(seen) == expected:
                break
        return seen
    finally:
        consumer.close()


def test_kafka_python_reads_and_extends_a_kafka_written_partition(
        server_factory: Callable[[Path], ServerProcess], tmp_path: Path) -> None:
    server = server_factory(_kafka_data_dir(tmp_path))
    assert _consume_all(server.bootstrap, 1) == [(0, b"message1")]

    producer = KafkaProducer(bootstrap_servers=server.bootstrap, acks=1)
    try:
        metadata = producer.send(TOPIC, value=b"message2", partition=0).get(timeout=10)
    finally:
        producer.close()
    assert metadata.offset == 1
    assert _consume_all(server.bootstrap, 2) == [(0, b"message1"), (1, b"message2")]

