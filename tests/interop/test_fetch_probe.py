"""The consumer settings chapter 16 measures, with kafka-python against a live server:
``max_partition_fetch_bytes`` and ``fetch_max_bytes`` limit whole batches but never return less
than the first (KIP-74), and ``fetch_min_bytes`` above the available data makes the broker wait
``fetch_max_wait_ms``."""

from __future__ import annotations

import pytest

from kafkalab.viz.fetch_probe import first_poll

kafka = pytest.importorskip("kafka")

BATCHES = 5
VALUE_BYTES = 1000


@pytest.fixture(scope="module")
def readings(bootstrap: str) -> str:
    topic_name = "fetch-probe-readings"
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(BATCHES):
        producer.send(topic_name, value=b"x" * VALUE_BYTES, partition=0)
        producer.flush()  # one batch per record
    producer.close()
    return topic_name


def test_the_partition_limit_counts_whole_batches_and_always_returns_the_first(bootstrap: str, readings: str) -> None:
    assert first_poll(bootstrap, readings, 0, 0).records == BATCHES
    assert first_poll(bootstrap, readings, 0, 0, max_partition_fetch_bytes=1).records == 1
    assert first_poll(bootstrap, readings, 0, 0, max_partition_fetch_bytes=2 * VALUE_BYTES + 500).records == 2
    assert first_poll(bootstrap, readings, 0, 0, fetch_max_bytes=1).records == 1  # the response limit too


def test_a_minimum_above_the_data_waits_out_fetch_max_wait(bootstrap: str, readings: str) -> None:
    waited = first_poll(bootstrap, readings, 0, BATCHES - 1, fetch_min_bytes=100_000, fetch_max_wait_ms=300)
    assert waited.records == 1 and waited.seconds >= 0.3
