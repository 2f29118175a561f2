"""confluent-kafka (librdkafka) against a kafkalab server: produce, consume, lookups, admin."""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING, TIMESTAMP_CREATE_TIME, Consumer, KafkaException, Producer, TopicPartition,
)
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, OffsetSpec

from tests.interop.support import (
    CLIENT_TIMEOUT_MS, DEADLINE_S, LOOKUP_INDEX, Rec, assert_records_equal, lookup_target_ms,
    sample_records,
)

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
# Short timeouts everywhere so that a broker bug fails a test instead of hanging it.
COMMON: dict[str, Any] = {
    "socket.timeout.ms": CLIENT_TIMEOUT_MS,
    "socket.connection.setup.timeout.ms": CLIENT_TIMEOUT_MS,
    "topic.metadata.refresh.interval.ms": 1000,
}


def create_topic(bootstrap: str, topic: str, partitions: int = 1) -> None:
    admin = AdminClient({**COMMON, "bootstrap.servers": bootstrap})
    timeout_s = CLIENT_TIMEOUT_MS / 1000
    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)],
                                  request_timeout=timeout_s, operation_timeout=timeout_s)
    futures[topic].result(timeout=timeout_s)


def produce(bootstrap: str, topic: str, records: list[Rec], codec: str) -> list[int]:
    producer = Producer({
        **COMMON, "bootstrap.servers": bootstrap, "acks": 1, "compression.type": codec,
        "linger.ms": 5, "message.timeout.ms": CLIENT_TIMEOUT_MS,
        "request.timeout.ms": CLIENT_TIMEOUT_MS, "enable.idempotence": False,
    })
    reports: list[tuple[int, int]] = []
    errors: list[object] = []

    def on_delivery(error: object, message: Any) -> None:
        if error is not None:
            errors.append(error)
        else:
            reports.append((message.offset(), int(message.key() is not None)))

    for r in records:
        producer.produce(topic, value=r.value, key=r.key, headers=list(r.headers), partition=0,
                         timestamp=r.timestamp_ms, on_delivery=on_delivery)
    remaining = producer.flush(CLIENT_TIMEOUT_MS / 1000 + 2)
    assert remaining == 0 and not errors, f"{remaining} undelivered; errors {errors}"
    return sorted(offset for offset, _ in reports)


def new_consumer(bootstrap: str) -> Consumer:
    # A group.id is mandatory in the client's config, but the test only uses assign() and never
    # commits, so no group coordinator is needed.
    return Consumer({
        **COMMON, "bootstrap.servers": bootstrap, "group.id": "interop-assign-only",
        "enable.auto.commit": False, "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100,
    })


def consume(consumer: Consumer, count: int) -> list[Rec]:
    got: list[Rec] = []
    deadline_s = time.monotonic() + DEADLINE_S
    while len(got) < count and time.monotonic() < deadline_s:
        for m in consumer.consume(num_messages=count - len(got), timeout=0.2):
            if m.error() is not None:
                raise KafkaException(m.error())
            ts_type, ts = m.timestamp()
            assert ts_type == TIMESTAMP_CREATE_TIME
            got.append(Rec(m.key(), m.value(), tuple(m.headers() or ()), ts, m.offset()))
    return got


@pytest.mark.timeout(60)
@pytest.mark.parametrize("codec", CODECS)
def test_produce_consume_and_lookup(bootstrap: str, topic_name: str, codec: str) -> None:
    create_topic(bootstrap, topic_name)
    records = sample_records()
    assert produce(bootstrap, topic_name, records, codec) == list(range(len(records)))
    consumer = new_consumer(bootstrap)
    try:
        consumer.assign([TopicPartition(topic_name, 0, OFFSET_BEGINNING)])
        assert_records_equal(records, consume(consumer, len(records)))
        low, high = consumer.get_watermark_offsets(
            TopicPartition(topic_name, 0), timeout=CLIENT_TIMEOUT_MS / 1000)
        assert (low, high) == (0, len(records))
    finally:
        consumer.close()


@pytest.mark.timeout(60)
def test_offsets_for_times_inside_a_compressed_batch(bootstrap: str, topic_name: str) -> None:
    create_topic(bootstrap, topic_name)
    records = sample_records()
    produce(bootstrap, topic_name, records, "zstd")  # one batch: the lookup must look inside it
    consumer = new_consumer(bootstrap)
    try:
        (found,) = consumer.offsets_for_times(
            [TopicPartition(topic_name, 0, lookup_target_ms(records))], timeout=CLIENT_TIMEOUT_MS / 1000)
        assert found.error is None and found.offset == LOOKUP_INDEX
    finally:
        consumer.close()


@pytest.mark.timeout(60)
def test_list_offsets_max_timestamp_names_the_record_not_the_batch_end(bootstrap: str, topic_name: str) -> None:
    """KIP-734 through librdkafka's ListOffsets v7+: the offset of the record with the largest
    timestamp, which sits in the middle of its compressed batch."""
    create_topic(bootstrap, topic_name)
    records = sample_records()
    newest = 5
    latest_ms = records[-1].timestamp_ms + 1
    records[newest] = Rec(records[newest].key, records[newest].value, records[newest].headers, latest_ms, newest)
    produce(bootstrap, topic_name, records, "zstd")
    admin = AdminClient({**COMMON, "bootstrap.servers": bootstrap})
    partition = TopicPartition(topic_name, 0)
    futures = admin.list_offsets({partition: OffsetSpec.max_timestamp()},
                                 request_timeout=CLIENT_TIMEOUT_MS / 1000)
    found = futures[partition].result(timeout=CLIENT_TIMEOUT_MS / 1000)
    assert (found.offset, found.timestamp) == (newest, latest_ms)


@pytest.mark.timeout(60)
def test_produce_to_a_new_topic_auto_creates_it_through_metadata(bootstrap: str, topic_name: str) -> None:
    """librdkafka asks Metadata for an unknown topic before producing; that request creates it
    (auto.create.topics.enable), since a Produce alone never does."""
    records = sample_records()
    assert produce(bootstrap, topic_name, records, "none") == list(range(len(records)))


@pytest.mark.timeout(60)
def test_admin_create_describe_delete(bootstrap: str, topic_name: str) -> None:
    admin = AdminClient({**COMMON, "bootstrap.servers": bootstrap})
    timeout_s = CLIENT_TIMEOUT_MS / 1000
    futures = admin.create_topics(
        [NewTopic(topic_name, num_partitions=2, replication_factor=1,
                  config={"cleanup.policy": "compact"})],
        request_timeout=timeout_s, operation_timeout=timeout_s)
    futures[topic_name].result(timeout=timeout_s)
    metadata = admin.list_topics(topic=topic_name, timeout=timeout_s)
    assert sorted(metadata.topics[topic_name].partitions) == [0, 1]
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic_name)
    entries = admin.describe_configs([resource], request_timeout=timeout_s)[resource].result(timeout=timeout_s)
    assert entries["cleanup.policy"].value == "compact"
    admin.delete_topics([topic_name], operation_timeout=timeout_s)[topic_name].result(timeout=timeout_s)
    deadline_s = time.monotonic() + DEADLINE_S
    while topic_name in admin.list_topics(timeout=timeout_s).topics and time.monotonic() < deadline_s:
        time.sleep(0.1)
    assert topic_name not in admin.list_topics(timeout=timeout_s).topics
