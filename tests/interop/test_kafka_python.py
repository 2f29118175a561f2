"""kafka-python against a kafkalab server: produce, consume, look up offsets by timestamp, admin."""

from __future__ import annotations

import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic

from tests.interop.support import (
    CLIENT_TIMEOUT_MS, DEADLINE_S, LOOKUP_INDEX, Rec, assert_records_equal, create_topic,
    lookup_target_ms, sample_records,
)

CODECS = [None, "gzip", "snappy", "lz4", "zstd"]


def produce(bootstrap: str, topic: str, records: list[Rec], codec: str | None) -> list[int]:
    producer = KafkaProducer(
        bootstrap_servers=bootstrap, acks=1, compression_type=codec, linger_ms=5,
        request_timeout_ms=CLIENT_TIMEOUT_MS, max_block_ms=CLIENT_TIMEOUT_MS,
        retries=0,
    )
    try:
        futures = [
            producer.send(topic, key=r.key, value=r.value, headers=list(r.headers),
                          partition=0, timestamp_ms=r.timestamp_ms)
            for r in records
        ]
        producer.flush(timeout=CLIENT_TIMEOUT_MS / 1000)
        return [f.get(timeout=CLIENT_TIMEOUT_MS / 1000).offset for f in futures]
    finally:
        producer.close(timeout=5)


def consumer_for(bootstrap: str, topic: str) -> tuple[KafkaConsumer, TopicPartition]:
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
        auto_offset_reset="earliest", request_timeout_ms=CLIENT_TIMEOUT_MS + 1000,
        fetch_max_wait_ms=100,
    )
    partition = TopicPartition(topic, 0)
    consumer.assign([partition])
    return consumer, partition


def consume(consumer: KafkaConsumer, count: int) -> list[Rec]:
    got: list[Rec] = []
    deadline_s = time.monotonic() + DEADLINE_S
    while len(got) < count and time.monotonic() < deadline_s:
        for batch in consumer.poll(timeout_ms=200).values():
            got += [Rec(m.key, m.value, tuple(m.headers), m.timestamp, m.offset) for m in batch]
    return got


@pytest.mark.timeout(60)
@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c or "none")
def test_produce_consume_and_lookup(bootstrap: str, topic_name: str, codec: str | None) -> None:
    create_topic(bootstrap, topic_name)
    records = sample_records()
    assert produce(bootstrap, topic_name, records, codec) == list(range(len(records)))
    consumer, partition = consumer_for(bootstrap, topic_name)
    try:
        consumer.seek_to_beginning(partition)
        assert_records_equal(records, consume(consumer, len(records)))
        assert consumer.beginning_offsets([partition])[partition] == 0
        assert consumer.end_offsets([partition])[partition] == len(records)
    finally:
        consumer.close()


@pytest.mark.timeout(60)
def test_offsets_for_times_inside_a_compressed_batch(bootstrap: str, topic_name: str) -> None:
    create_topic(bootstrap, topic_name)
    records = sample_records()
    produce(bootstrap, topic_name, records, "gzip")  # one batch: the lookup must look inside it
    consumer, partition = consumer_for(bootstrap, topic_name)
    try:
        found = consumer.offsets_for_times({partition: lookup_target_ms(records)})[partition]
        assert found is not None and found.offset == LOOKUP_INDEX
        assert found.timestamp == records[LOOKUP_INDEX].timestamp_ms
        late = records[-1].timestamp_ms + 1
        assert consumer.offsets_for_times({partition: late})[partition] is None
    finally:
        consumer.close()


@pytest.mark.timeout(60)
def test_produce_to_a_new_topic_auto_creates_it_through_metadata(bootstrap: str, topic_name: str) -> None:
    """kafka-python asks Metadata for an unknown topic before producing; that request creates
    it (auto.create.topics.enable), since a Produce alone never does."""
    records = sample_records()
    assert produce(bootstrap, topic_name, records, None) == list(range(len(records)))


@pytest.mark.timeout(60)
def test_consume_from_the_middle(bootstrap: str, topic_name: str) -> None:
    create_topic(bootstrap, topic_name)
    records = sample_records()
    produce(bootstrap, topic_name, records, "lz4")
    consumer, partition = consumer_for(bootstrap, topic_name)
    try:
        consumer.seek(partition, 7)
        assert_records_equal(records[7:], consume(consumer, len(records) - 7))
    finally:
        consumer.close()


@pytest.mark.timeout(60)
def test_admin_create_describe_configs_delete(bootstrap: str, topic_name: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=CLIENT_TIMEOUT_MS)
    try:
        admin.create_topics(
            [NewTopic(topic_name, 3, 1, topic_configs={"retention.ms": "3600000"})],
            timeout_ms=CLIENT_TIMEOUT_MS,
        )
        assert topic_name in admin.list_topics()
        (described,) = admin.describe_topics([topic_name])
        assert described["error_code"] == 0
        assert sorted(p["partition_index"] for p in described["partitions"]) == [0, 1, 2]
        # kafka-python keeps only modified configs unless asked for all of them (client side).
        described_configs = admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic_name)], config_filter="all",
        )["topic"][topic_name]
        assert described_configs["retention.ms"]["value"] == "3600000"
        assert described_configs["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
        assert described_configs["cleanup.policy"]["value"] == "delete"
        admin.delete_topics([topic_name], timeout_ms=CLIENT_TIMEOUT_MS)
        deadline_s = time.monotonic() + DEADLINE_S
        while topic_name in admin.list_topics() and time.monotonic() < deadline_s:
            time.sleep(0.1)
        assert topic_name not in admin.list_topics()
    finally:
        admin.close()

