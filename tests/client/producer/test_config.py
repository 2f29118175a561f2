"""Producer settings: Kafka's defaults and Kafka's cross-checks (ProducerConfig in Kafka 3.9)."""

from __future__ import annotations

import pytest

from kafkalab.client.producer.config import producer_config
from kafkalab.errors import ConfigError, ErrorCode
from kafkalab.records.header import Compression


def test_defaults_are_kafkas() -> None:
    config = producer_config({})
    assert (config.acks, config.enable_idempotence, config.batch_size, config.linger_ms) == (-1, True, 16384, 0)
    assert (config.buffer_memory, config.max_block_ms, config.max_request_size) == (33554432, 60000, 1048576)
    assert (config.retries, config.delivery_timeout_ms, config.request_timeout_ms) == (2**31 - 1, 120000, 30000)
    assert config.max_in_flight_requests_per_connection == 5
    assert (config.send_buffer_bytes, config.receive_buffer_bytes) == (131072, 32768)
    assert config.compression_type is Compression.NONE


def test_default_idempotence_gives_way_to_acks_1() -> None:
    assert not producer_config({"acks": "1"}).enable_idempotence


@pytest.mark.parametrize("properties, message", [
    ({"acks": "1"}, "Must set acks to all"),
    ({"max.in.flight.requests.per.connection": 6}, "at most 5"),
    ({"retries": 0}, "retries to non-zero"),
])
def test_explicit_idempotence_conflicts_are_errors(properties: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        producer_config({"enable.idempotence": "true", **properties})
    assert caught.value.error_code is ErrorCode.INVALID_CONFIG


def test_delivery_timeout_must_cover_linger_and_request_timeout() -> None:
    with pytest.raises(ConfigError, match="delivery.timeout.ms"):
        producer_config({"delivery.timeout.ms": 1000, "linger.ms": 100, "request.timeout.ms": 1000})
    assert producer_config({"linger.ms": 100_000}).delivery_timeout_ms == 130_000


@pytest.mark.parametrize("key, value", [("acks", "2"), ("batch.size", "-1"), ("compression.type", "z4"),
                                        ("linger.ms", "soon"), ("enable.idempotence", "yes"), ("no.such.key", 1)])
def test_bad_values_are_config_errors(key: str, value: object) -> None:
    with pytest.raises(ConfigError):
        producer_config({key: value})


def test_codecs_by_name() -> None:
    assert producer_config({"compression.type": "zstd"}).compression_type is Compression.ZSTD
    assert producer_config({"compression.type": "lz4"}).compression_type is Compression.LZ4
