"""kafkalab's producer against brokers nobody here wrote (librdkafka's mock cluster) and against
kafkalab's server, read back with confluent-kafka's consumer; key placement checked against
librdkafka's ``murmur2_random`` partitioner and Kafka's Java ``BuiltInPartitioner``."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kafkalab.client.launcher import ServerProcess
from kafkalab.client.producer import ProducerRecord, RecordMetadata
from kafkalab.client.producer.network import KafkaProducer
from kafkalab.errors import KafkaError
from kafkalab.partitioner import partition_for_key
from tests.java_client import java_client

confluent_kafka = pytest.importorskip("confluent_kafka")

PARTITIONS = 4  # the mock cluster creates topics with 4 partitions unless told otherwise
KEYS = [f"key-{i}".encode() for i in range(200)] + [b"", b"foobar", b"\x00\xff" * 7, "ключ".encode()]


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def start_mock_cluster(brokers: int = 3) -> tuple[object, str]:
    """A librdkafka mock cluster and its bootstrap address, which librdkafka logs at debug level:
    "Mock cluster enabled: ... replaced with 127.0.0.1:port,...". The returned handle keeps it up."""
    lines = _Lines()
    logger = logging.getLogger(f"rdkafka-mock-{random.random()}")
    logger.addHandler(lines)
    logger.setLevel(logging.DEBUG)
    handle = confluent_kafka.Producer({"test.mock.num.brokers": brokers, "debug": "mock", "logger": logger})
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        handle.poll(0.1)
        for line in lines.lines:
            if "Mock cluster enabled" in line:
                return handle, line.rsplit(" ", 1)[1]
    raise AssertionError(f"librdkafka logged no mock cluster address: {lines.lines[-5:]}")


@pytest.fixture(scope="module")
def mock_bootstrap() -> Iterator[str]:
    handle, bootstrap = start_mock_cluster()
    yield bootstrap
    del handle


def consume_all(bootstrap: str, topic: str, expected: int) -> list[tuple[int, int, bytes | None, bytes]]:
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{topic}",
                                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    got: list[tuple[int, int, bytes | None, bytes]] = []
    deadline = time.monotonic() + 60
    try:
        while len(got) < expected and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            got.append((message.partition(), message.offset(), message.key(), message.value()))
    finally:
        consumer.close()
    return got


def produce_keyed(bootstrap: str, topic: str, properties: dict[str, object]) -> dict[bytes, RecordMetadata]:
    acknowledged: dict[bytes, RecordMetadata] = {}
    errors: list[KafkaError] = []

    def on_completion(key: bytes) -> object:
        def callback(metadata: RecordMetadata | None, error: KafkaError | None) -> None:
            if metadata is not None:
                acknowledged[key] = metadata
            if error is not None:
                errors.append(error)
        return callback

    with KafkaProducer({"bootstrap.servers": bootstrap, **properties}) as producer:
        producer.send(ProducerRecord(topic, b"first", key=b"first")).get(30_000)  # sync
        for key in KEYS:
            producer.send(ProducerRecord(topic, b"value-of-" + key, key=key), callback=on_completion(key))
    assert errors == []
    return acknowledged


@pytest.mark.parametrize("topic, properties", [
    ("defaults", {}),  # Kafka's defaults: acks=all, idempotence on
    ("acks1-lz4-linger", {"acks": "1", "linger.ms": 20, "compression.type": "lz4"}),
    ("zstd-small-batches", {"acks": "all", "compression.type": "zstd", "batch.size": 1024}),
    ("gzip-acks1", {"acks": "1", "compression.type": "gzip"}),
    ("snappy-in-flight-1", {"compression.type": "snappy", "max.in.flight.requests.per.connection": 1}),
    # acks=0 against the mock cluster, which answers such requests (Kafka does not): close() must
    # not reset the connection over the unread answers and lose the last requests
    ("gzip-acks0", {"acks": "0", "compression.type": "gzip"}),
])
def test_every_acknowledged_record_is_on_the_mock_cluster(mock_bootstrap: str, topic: str,
                                                           properties: dict[str, object]) -> None:
    acknowledged = produce_keyed(mock_bootstrap, topic, properties)
    assert len(acknowledged) == len(KEYS)
    consumed = consume_all(mock_bootstrap, topic, len(KEYS) + 1)
    by_key = {key or b"": (partition, offset, value) for partition, offset, key, value in consumed}
    for key, metadata in acknowledged.items():
        partition, offset, value = by_key[key]
        assert partition == metadata.partition
        assert offset == metadata.offset or (properties.get("acks") == "0" and metadata.offset == -1)
        assert value == b"value-of-" + key
        assert partition == partition_for_key(key, PARTITIONS)


def test_keyed_partitions_match_librdkafkas_murmur2(mock_bootstrap: str) -> None:
    """librdkafka's ``murmur2_random`` partitioner places keys as Java's does; ours must agree."""
    topic = "placed-by-librdkafka"
    placed: dict[bytes, int] = {}
    producer = confluent_kafka.Producer({"bootstrap.servers": mock_bootstrap, "partitioner": "murmur2_random"})
    for key in KEYS:
        if key:  # murmur2_random sends an empty key to a random partition
            producer.produce(topic, b"v", key=key,
                             on_delivery=lambda err, msg: placed.__setitem__(msg.key(), msg.partition()))
    producer.flush(30)
    assert len(placed) == len(KEYS) - 1
    assert placed == {key: partition_for_key(key, PARTITIONS) for key in placed}


def test_keyed_partitions_match_kafkas_java_partitioner() -> None:
    client = java_client()
    for partitions in (1, 3, 4, 7, 50):
        out = client.run("KeyPartitions", "\n".join([str(partitions)] + [k.hex() for k in KEYS]) + "\n")
        assert [int(line) for line in out.split()] == [partition_for_key(k, partitions) for k in KEYS]


def test_against_kafkalab_server(bootstrap: str) -> None:
    from tests.interop.support import create_topic

    create_topic(bootstrap, "producer-check", PARTITIONS)
    acknowledged = produce_keyed(bootstrap, "producer-check", {"linger.ms": 5})
    consumed = consume_all(bootstrap, "producer-check", len(KEYS) + 1)
    by_key = {key or b"": (partition, offset) for partition, offset, key, _ in consumed}
    assert {k: (m.partition, m.offset) for k, m in acknowledged.items()} == {k: by_key[k] for k in acknowledged}
    assert all(m.partition == partition_for_key(k, PARTITIONS) for k, m in acknowledged.items())


def test_a_dead_broker_fails_records_after_delivery_timeout(server_factory: Callable[[Path], ServerProcess],
                                                            tmp_path: Path) -> None:
    from kafkalab.client.producer.errors import DeliveryTimeoutError

    server = server_factory(tmp_path / "data")
    settings = {"bootstrap.servers": server.bootstrap, "request.timeout.ms": 1000, "delivery.timeout.ms": 2500,
                "linger.ms": 0}
    with KafkaProducer(settings) as producer:
        assert producer.send(ProducerRecord("doomed", b"before")).get(30_000).offset == 0
        server.kill()
        started = time.monotonic()
        future = producer.send(ProducerRecord("doomed", b"after"))
        with pytest.raises(DeliveryTimeoutError):
            future.get(30_000)
        assert time.monotonic() - started < 10


def test_close_writes_every_acks_0_request_before_closing_the_socket(bootstrap: str) -> None:
    """acks=0 records count as sent once drained; close() must still get their bytes out."""
    from tests.interop.support import create_topic

    create_topic(bootstrap, "fire-and-forget", 1)
    count = 3000
    with KafkaProducer({"bootstrap.servers": bootstrap, "acks": "0", "batch.size": 1_000_000}) as producer:
        for i in range(count):
            producer.send(ProducerRecord("fire-and-forget", bytes(2048), key=str(i).encode()))
    assert len(consume_all(bootstrap, "fire-and-forget", count)) == count


def test_batches_over_the_topics_max_message_bytes_are_split(bootstrap: str) -> None:
    """kafkalab's server refuses batches over the topic's ``max.message.bytes`` as Kafka does;
    the producer splits them until they fit and fails only the record that cannot fit alone."""
    from kafka.admin import KafkaAdminClient, NewTopic

    from kafkalab.errors import RecordTooLargeError

    topic, count = "small-messages", 60
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    try:
        admin.create_topics([NewTopic(topic, 1, 1, topic_configs={"max.message.bytes": "4000"})], timeout_ms=10_000)
    finally:
        admin.close()
    outcomes: dict[int, RecordMetadata | KafkaError] = {}

    def on_completion(index: int) -> Callable[[RecordMetadata | None, KafkaError | None], None]:
        return lambda metadata, error: outcomes.__setitem__(index, metadata or error)  # type: ignore[arg-type]

    with KafkaProducer({"bootstrap.servers": bootstrap, "linger.ms": 50}) as producer:  # idempotent, acks=all
        for i in range(count):
            value = b"big" * 2000 if i == count // 2 else b"%04d" % i + bytes(1020)
            producer.send(ProducerRecord(topic, value, partition=0), callback=on_completion(i))
    too_large = outcomes.pop(count // 2)
    assert isinstance(too_large, RecordTooLargeError)
    assert [m.offset for m in outcomes.values() if isinstance(m, RecordMetadata)] == list(range(count - 1))
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "unused"})
    consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])  # no group join: quicker
    try:
        messages = consumer.consume(count - 1, timeout=20)
    finally:
        consumer.close()
    assert [m.value()[:4] for m in messages] == [b"%04d" % i for i in range(count) if i != count // 2]
