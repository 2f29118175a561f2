"""aiokafka against a kafkalab server: produce, consume with assign(), offsets_for_times."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from tests.interop.support import (
    CLIENT_TIMEOUT_MS, DEADLINE_S, LOOKUP_INDEX, Rec, assert_records_equal, create_topic,
    lookup_target_ms, sample_records,
)

CODECS = [None, "gzip", "snappy", "lz4", "zstd"]


async def produce(bootstrap: str, topic: str, records: list[Rec], codec: str | None) -> list[int]:
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, acks=1, compression_type=codec,
        request_timeout_ms=CLIENT_TIMEOUT_MS, linger_ms=5,
    )
    await producer.start()
    try:
        futures = [
            await producer.send(topic, key=r.key, value=r.value, headers=list(r.headers),
                                partition=0, timestamp_ms=r.timestamp_ms)
            for r in records
        ]
        metadata = await asyncio.wait_for(asyncio.gather(*futures), CLIENT_TIMEOUT_MS / 1000)
        return [m.offset for m in metadata]
    finally:
        await producer.stop()


async def consume_and_lookup(bootstrap: str, topic: str, count: int, target_ms: int) -> tuple[list[Rec], int | None]:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest",
        request_timeout_ms=CLIENT_TIMEOUT_MS, fetch_max_wait_ms=100,
    )
    await consumer.start()
    try:
        partition = TopicPartition(topic, 0)
        consumer.assign([partition])
        await consumer.seek_to_beginning(partition)
        got: list[Rec] = []
        loop = asyncio.get_running_loop()
        deadline_s = loop.time() + DEADLINE_S
        while len(got) < count and loop.time() < deadline_s:
            for batch in (await consumer.getmany(timeout_ms=200)).values():
                got += [Rec(m.key, m.value, tuple(m.headers), m.timestamp, m.offset) for m in batch]
        found = (await consumer.offsets_for_times({partition: target_ms}))[partition]
        return got, None if found is None else found.offset
    finally:
        await consumer.stop()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c or "none")
def test_produce_consume_and_lookup(bootstrap: str, topic_name: str, codec: str | None) -> None:
    create_topic(bootstrap, topic_name)
    records = sample_records()
    assert asyncio.run(produce(bootstrap, topic_name, records, codec)) == list(range(len(records)))
    got, _ = asyncio.run(
        consume_and_lookup(bootstrap, topic_name, len(records), lookup_target_ms(records)))
    assert_records_equal(records, got)


@pytest.mark.timeout(60)
def test_offsets_for_times_inside_a_compressed_batch(bootstrap: str, topic_name: str) -> None:
    create_topic(bootstrap, topic_name)
    records = sample_records()
    asyncio.run(produce(bootstrap, topic_name, records, "lz4"))  # one batch
    _, found = asyncio.run(
        consume_and_lookup(bootstrap, topic_name, len(records), lookup_target_ms(records)))
    assert found == LOOKUP_INDEX
