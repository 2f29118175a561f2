"""Kafka's precedence: topic > dynamic per-broker > dynamic default > static > default."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kafkalab.config.resolve import (
    ConfigLayers,
    ConfigSource,
    describe_broker_config,
    describe_topic_config,
    topic_properties,
    topic_value,
    validate_broker_configs,
)
from kafkalab.config.definitions import TOPIC_KEYS
from kafkalab.errors import ConfigError

import pytest


def test_defaults_only() -> None:
    entry = describe_topic_config(ConfigLayers(), "t", "retention.ms")
    assert entry.value == "604800000"
    assert entry.source is ConfigSource.DEFAULT_CONFIG
    assert entry.describe_line() == (
        "  retention.ms=604800000 sensitive=false synonyms={DEFAULT_CONFIG:log.retention.hours=168}"
    )


def test_each_layer_beats_the_one_below() -> None:
    layers = ConfigLayers(
        static={"log.retention.ms": "4"},
        dynamic_default={"log.retention.ms": "3"},
        dynamic_brokers={"0": {"log.retention.ms": "2"}},
        topics={"t": {"retention.ms": "1"}},
    )
    assert topic_value(layers, "t", "retention.ms", broker_id="0") == 1
    assert topic_value(layers, "u", "retention.ms", broker_id="0") == 2
    assert topic_value(layers, "u", "retention.ms", broker_id="1") == 3
    assert topic_value(layers, "u", "retention.ms", broker_id=None) == 3
    assert topic_value(ConfigLayers(static={"log.retention.ms": "4"}), "u", "retention.ms") == 4
    entry = describe_topic_config(layers, "t", "retention.ms", broker_id="0")
    assert [s.source for s in entry.synonyms] == [
        ConfigSource.DYNAMIC_TOPIC_CONFIG,
        ConfigSource.DYNAMIC_BROKER_CONFIG,
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
        ConfigSource.STATIC_BROKER_CONFIG,
        ConfigSource.DEFAULT_CONFIG,
    ]
    assert entry.synonyms[-1].name == "log.retention.hours"


def test_ms_beats_minutes_beats_hours_whatever_the_layer() -> None:
    # Layers overlay per key first; only then does ms outrank minutes outrank hours (KafkaConfig).
    hours = ConfigLayers(static={"log.retention.hours": "24"})
    assert topic_value(hours, "t", "retention.ms") == 24 * 3_600_000
    minutes = ConfigLayers(static={"log.retention.hours": "24"}, dynamic_default={"log.retention.minutes": "90"})
    assert topic_value(minutes, "t", "retention.ms") == 90 * 60_000
    ms_low = ConfigLayers(static={"log.retention.ms": "1000"}, dynamic_default={"log.retention.minutes": "90"})
    assert topic_value(ms_low, "t", "retention.ms") == 1000
    assert topic_value(ConfigLayers(static={"log.roll.hours": "2"}), "t", "segment.ms") == 7_200_000
    assert topic_value(ConfigLayers(static={"log.roll.ms": "5", "log.roll.hours": "2"}), "t", "segment.ms") == 5
    assert topic_value(ConfigLayers(static={"log.roll.jitter.hours": "1"}), "t", "segment.jitter.ms") == 3_600_000


def test_negative_retention_means_forever() -> None:
    assert topic_value(ConfigLayers(static={"log.retention.hours": "-1"}), "t", "retention.ms") == -1
    assert topic_value(ConfigLayers(static={"log.retention.ms": "-1"}), "t", "retention.ms") == -1


def test_renamed_keys_map_between_scopes() -> None:
    layers = ConfigLayers(static={"message.max.bytes": "2000", "log.segment.bytes": "1024", "log.cleanup.policy": "compact"})
    props = topic_properties(layers, "t")
    assert props["max.message.bytes"] == "2000"
    assert props["segment.bytes"] == "1024"
    assert props["cleanup.policy"] == "compact"
    assert set(props) <= set(TOPIC_KEYS)


def test_broker_describe_lists_synonyms_name_major() -> None:
    layers = ConfigLayers(static={"log.retention.hours": "24"}, dynamic_brokers={"0": {"log.retention.ms": "5"}})
    entry = describe_broker_config(layers, "0", "log.retention.ms")
    assert entry.source is ConfigSource.DYNAMIC_BROKER_CONFIG
    assert entry.describe_line() == (
        "  log.retention.ms=5 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.retention.ms=5, "
        "STATIC_BROKER_CONFIG:log.retention.hours=24, DEFAULT_CONFIG:log.retention.hours=168}"
    )


def test_sensitive_values_are_hidden() -> None:
    layers = ConfigLayers(dynamic_brokers={"0": {"ssl.keystore.password": "secret"}})
    line = describe_broker_config(layers, "0", "ssl.keystore.password").describe_line()
    assert "secret" not in line
    assert line.startswith("  ssl.keystore.password=null sensitive=true")


def test_dynamic_broker_validation_by_update_mode() -> None:
    validate_broker_configs({"log.retention.ms": "5"}, dynamic=True, per_broker=False)
    with pytest.raises(ConfigError, match="Cannot update these configs dynamically"):
        validate_broker_configs({"broker.id": "3"}, dynamic=True, per_broker=True)
    with pytest.raises(ConfigError, match="broker id must be specified"):
        validate_broker_configs({"listeners": "PLAINTEXT://:9093"}, dynamic=True, per_broker=False)
    validate_broker_configs({"broker.id": "3"}, dynamic=False, per_broker=True)


layer_values = st.one_of(st.none(), st.integers(min_value=1, max_value=10_000))


@given(static=layer_values, default=layer_values, broker=layer_values, topic=layer_values)
def test_precedence_property(static: int | None, default: int | None, broker: int | None, topic: int | None) -> None:
    def props(value: int | None, key: str) -> dict[str, str]:
        return {} if value is None else {key: str(value)}

    layers = ConfigLayers(
        static=props(static, "log.retention.ms"),
        dynamic_default=props(default, "log.retention.ms"),
        dynamic_brokers={"0": props(broker, "log.retention.ms")},
        topics={"t": props(topic, "retention.ms")},
    )
    expected = next((v for v in (topic, broker, default, static) if v is not None), 168 * 3_600_000)
    assert topic_value(layers, "t", "retention.ms", broker_id="0") == expected
