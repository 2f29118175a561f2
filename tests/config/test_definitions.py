"""The key tables: every default parses and validates, and the broker<->topic map is complete."""

from __future__ import annotations

import pytest

from kafkalab.config.definitions import (
    BROKER_KEYS,
    BROKER_SYNONYMS,
    QUOTA_KEYS,
    TOPIC_KEYS,
    TOPIC_TO_BROKER,
    UpdateMode,
    lookup,
)
from kafkalab.errors import ConfigError

ALL_KEYS = [*BROKER_KEYS.values(), *TOPIC_KEYS.values(), *QUOTA_KEYS.values()]


@pytest.mark.parametrize("key", ALL_KEYS, ids=lambda k: k.name)
def test_every_default_round_trips_through_text(key) -> None:  # type: ignore[no-untyped-def]
    text = key.default_text()
    if text is None:
        assert key.default is None
        return
    assert key.parse(text) == key.default


@pytest.mark.parametrize(
    ("name", "default"),
    [
        # Kafka's current defaults, including the ones the source articles get wrong.
        ("log.segment.bytes", 1073741824),
        ("log.retention.hours", 168),
        ("log.retention.bytes", -1),
        ("log.retention.check.interval.ms", 300000),
        ("log.segment.delete.delay.ms", 60000),
        ("unclean.leader.election.enable", False),
        ("num.partitions", 1),
        ("replica.lag.time.max.ms", 30000),
        ("message.max.bytes", 1048588),
        ("log.index.size.max.bytes", 10485760),
        ("log.index.interval.bytes", 4096),
        ("log.cleaner.dedupe.buffer.size", 134217728),
        ("log.cleaner.min.cleanable.ratio", 0.5),
        ("log.cleaner.delete.retention.ms", 86400000),
        ("offsets.topic.num.partitions", 50),
        ("transaction.state.log.num.partitions", 50),
        ("socket.request.max.bytes", 104857600),
        ("queued.max.requests", 500),
        ("log.cleanup.policy", ["delete"]),
    ],
)
def test_kafka_defaults(name: str, default: object) -> None:
    assert BROKER_KEYS[name].default == default


def test_topic_defaults_equal_their_broker_synonym_defaults() -> None:
    # A topic's own default must be what the broker's defaults resolve to, or describe lies.
    for topic_key, synonyms in TOPIC_TO_BROKER.items():
        for synonym in synonyms:
            default = BROKER_KEYS[synonym.broker_key].default
            if default is not None:
                value = default * synonym.to_topic_factor if synonym.to_topic_factor != 1 else default
                assert TOPIC_KEYS[topic_key].default == value, topic_key
                break


def test_retention_synonyms_in_kafka_precedence_order() -> None:
    names = [s.broker_key for s in TOPIC_TO_BROKER["retention.ms"]]
    assert names == ["log.retention.ms", "log.retention.minutes", "log.retention.hours"]
    assert [s.broker_key for s in TOPIC_TO_BROKER["segment.ms"]] == ["log.roll.ms", "log.roll.hours"]
    assert BROKER_SYNONYMS["log.roll.jitter.hours"] == ("log.roll.jitter.ms", "log.roll.jitter.hours")
    assert TOPIC_TO_BROKER["max.message.bytes"][0].broker_key == "message.max.bytes"
    assert TOPIC_TO_BROKER["file.delete.delay.ms"][0].broker_key == "log.segment.delete.delay.ms"


def test_update_modes() -> None:
    assert BROKER_KEYS["log.retention.ms"].update_mode is UpdateMode.CLUSTER_WIDE
    assert BROKER_KEYS["log.retention.hours"].update_mode is UpdateMode.READ_ONLY
    assert BROKER_KEYS["broker.id"].update_mode is UpdateMode.READ_ONLY
    assert BROKER_KEYS["listeners"].update_mode is UpdateMode.PER_BROKER
    assert BROKER_KEYS["ssl.keystore.password"].sensitive


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("segment.bytes", "13"),
        ("retention.ms", "-2"),
        ("min.cleanable.dirty.ratio", "1.5"),
        ("cleanup.policy", "compact,remove"),
        ("message.timestamp.type", "BrokerTime"),
        ("compression.type", "brotli"),
        ("min.insync.replicas", "0"),
        ("max.compaction.lag.ms", "0"),
    ],
)
def test_bad_topic_values_rejected(name: str, raw: str) -> None:
    with pytest.raises(ConfigError) as info:
        TOPIC_KEYS[name].parse(raw)
    assert name in str(info.value) and raw in str(info.value)


def test_unknown_key_did_you_mean() -> None:
    with pytest.raises(ConfigError, match=r"Did you mean 'log.retention.hours'"):
        lookup("log.retention.hour", BROKER_KEYS, "broker")
    with pytest.raises(ConfigError) as info:
        lookup("zzzz", TOPIC_KEYS, "topic")
    assert "Did you mean" not in str(info.value)


def test_components_take_kafkas_defaults_from_the_tables():
    """LogConfig's fields are topic keys and the periodic tasks' intervals are broker keys, so
    each default is written once (in definitions.py) and read everywhere else."""
    import dataclasses

    from kafkalab.broker.housekeeping import _KEYS as INTERVAL_KEYS, HousekeepingIntervals
    from kafkalab.broker.settings import BrokerSettings
    from kafkalab.config.definitions import BROKER_KEYS, TOPIC_KEYS
    from kafkalab.storage.log_config import LogConfig

    config = LogConfig()
    for fld in dataclasses.fields(LogConfig):
        default = TOPIC_KEYS[fld.name.replace("_", ".")].default
        value = getattr(config, fld.name)
        assert value == (",".join(default) if isinstance(default, list) else default), fld.name
    intervals = HousekeepingIntervals()
    for name, key in INTERVAL_KEYS.items():
        assert getattr(intervals, name) == BROKER_KEYS[key].default, key
    settings = BrokerSettings.from_properties({}, bound_host="localhost", bound_port=9092)
    assert (settings.num_partitions, settings.message_max_bytes, settings.auto_create_topics_enable) == (
        1, 1048588, True)  # Kafka 4.x's num.partitions, message.max.bytes, auto.create.topics.enable
    assert config.file_delete_delay_ms == 60_000  # Kafka's file.delete.delay.ms
