"""Kafka's config precedence: which layer's value a broker or a topic actually uses.

A value can come from five places. Highest first, as Kafka's ``DescribeConfigs`` names them::

    DYNAMIC_TOPIC_CONFIG           kafka-configs --entity-type topics --entity-name t
    DYNAMIC_BROKER_CONFIG          kafka-configs --entity-type brokers --entity-name 0
    DYNAMIC_DEFAULT_BROKER_CONFIG  kafka-configs --entity-type brokers --entity-default
    STATIC_BROKER_CONFIG           server.properties
    DEFAULT_CONFIG                 the default in definitions.py

Resolution happens in two steps, as in Kafka's ``DynamicBrokerConfig`` and ``KafkaConfig``:

1. For each broker key, overlay the layers (per-broker over cluster default over static over
   default). This gives the broker's effective properties.
2. Among synonyms (``log.retention.ms`` > ``log.retention.minutes`` > ``log.retention.hours``)
   the first with a value wins, converted to the topic key's unit. A topic override, when
   present, beats all of that.

Worked example: ``server.properties`` says ``log.retention.hours=24``, the cluster default says
``log.retention.minutes=90`` and topic ``t`` has no override. Step 1 keeps both keys; step 2
picks minutes (it outranks hours) and ``retention.ms`` for ``t`` is ``90 * 60_000 =
5_400_000``. ``--describe`` shows it as::

    retention.ms=5400000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.minutes=90, STATIC_BROKER_CONFIG:log.retention.hours=24, DEFAULT_CONFIG:log.retention.hours=168}

Values are kept as text in every layer -- the form they are stored and sent in -- and validated
when they enter a layer (:func:`validate_topic_configs`, :func:`validate_broker_configs`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from kafkalab.config.definitions import (
    BROKER_KEYS,
    BROKER_SYNONYMS,
    QUOTA_KEYS,
    TOPIC_KEYS,
    TOPIC_TO_BROKER,
    ConfigKey,
    UpdateMode,
    lookup,
)
from kafkalab.config.types import ConfigValue, format_value
from kafkalab.errors import ConfigError

Properties = Mapping[str, str]


class ConfigSource(enum.Enum):
    """Where a value came from (Kafka's ``ConfigEntry.ConfigSource``), highest precedence first."""

    DYNAMIC_TOPIC_CONFIG = "DYNAMIC_TOPIC_CONFIG"
    DYNAMIC_BROKER_CONFIG = "DYNAMIC_BROKER_CONFIG"
    DYNAMIC_DEFAULT_BROKER_CONFIG = "DYNAMIC_DEFAULT_BROKER_CONFIG"
    STATIC_BROKER_CONFIG = "STATIC_BROKER_CONFIG"
    DEFAULT_CONFIG = "DEFAULT_CONFIG"


@dataclass(frozen=True, slots=True)
class ConfigSynonym:
    """One place a value is set: its source, the key's name there, and the text."""

    source: ConfigSource
    name: str
    value: str | None

    def __str__(self) -> str:
        return f"{self.source.value}:{self.name}={_java_text(self.value)}"


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """A resolved key as ``DescribeConfigs`` reports it."""

    name: str
    value: str | None
    source: ConfigSource
    sensitive: bool
    read_only: bool
    synonyms: tuple[ConfigSynonym, ...]

    def describe_line(self) -> str:
        """The line ``kafka-configs --describe`` prints (Kafka's ``ConfigCommand``)."""
        value = None if self.sensitive else self.value
        synonyms = ", ".join(str(s if not self.sensitive else ConfigSynonym(s.source, s.name, None)) for s in self.synonyms)
        return f"  {self.name}={_java_text(value)} sensitive={str(self.sensitive).lower()} synonyms={{{synonyms}}}"


def _java_text(value: str | None) -> str:
    return "null" if value is None else value  # Kafka's tools print a missing value as null


@dataclass(frozen=True, slots=True)
class ConfigLayers:
    """Every layer's text properties. Immutable; a change builds a new ``ConfigLayers``."""

    static: Properties = field(default_factory=dict)
    dynamic_default: Properties = field(default_factory=dict)
    dynamic_brokers: Mapping[str, Properties] = field(default_factory=dict)
    topics: Mapping[str, Properties] = field(default_factory=dict)

    def broker_layers(self, broker_id: str | None) -> tuple[tuple[ConfigSource, Properties], ...]:
        """The broker layers, highest precedence first (the per-broker one only with an id)."""
        per_broker = self.dynamic_brokers.get(broker_id, {}) if broker_id is not None else {}
        return (
            (ConfigSource.DYNAMIC_BROKER_CONFIG, per_broker),
            (ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, self.dynamic_default),
            (ConfigSource.STATIC_BROKER_CONFIG, self.static),
        )


# --- validation as values enter a layer ---------------------------------------------------------


def validate_topic_configs(configs: Properties) -> dict[str, ConfigValue]:
    """Parse and check topic overrides; unknown keys get a did-you-mean suggestion."""
    return {name: lookup(name, TOPIC_KEYS, "topic").parse(text) for name, text in configs.items()}


def validate_quota_configs(configs: Properties) -> dict[str, ConfigValue]:
    """Parse and check user/client quota configs."""
    return {name: lookup(name, QUOTA_KEYS, "quota").parse(text) for name, text in configs.items()}


def validate_broker_configs(configs: Properties, *, dynamic: bool, per_broker: bool) -> dict[str, ConfigValue]:
    """Parse and check broker configs; dynamic ones must be updatable at the level asked for.

    Mirrors Kafka's ``DynamicBrokerConfig.validateConfigs``: read-only keys live only in
    ``server.properties``, and per-broker keys (listeners) cannot be cluster defaults.
    """
    parsed = {name: lookup(name, BROKER_KEYS, "broker").parse(text) for name, text in configs.items()}
    if dynamic:
        read_only = sorted(n for n in parsed if BROKER_KEYS[n].update_mode is UpdateMode.READ_ONLY)
        if read_only:
            raise ConfigError(f"Cannot update these configs dynamically: {read_only} (read-only; set them in server.properties)")
        if not per_broker:
            per_broker_only = sorted(n for n in parsed if BROKER_KEYS[n].update_mode is UpdateMode.PER_BROKER)
            if per_broker_only:
                raise ConfigError(f"Cannot update these configs at default cluster level, broker id must be specified: {per_broker_only}")
    return parsed


# --- broker resolution --------------------------------------------------------------------------


def broker_sources(layers: ConfigLayers, broker_id: str | None, name: str) -> list[ConfigSynonym]:
    """Every layer that sets ``name`` (including the default), highest precedence first."""
    key = BROKER_KEYS[name]
    found = [ConfigSynonym(source, name, props[name]) for source, props in layers.broker_layers(broker_id) if name in props]
    if key.default is not None:
        found.append(ConfigSynonym(ConfigSource.DEFAULT_CONFIG, name, key.default_text()))
    return found


def describe_broker_config(layers: ConfigLayers, broker_id: str | None, name: str) -> ConfigEntry:
    """``name`` as broker ``broker_id`` (``None``: the cluster default) reports it."""
    key = lookup(name, BROKER_KEYS, "broker")
    synonyms = tuple(s for synonym in BROKER_SYNONYMS.get(name, (name,)) for s in broker_sources(layers, broker_id, synonym))
    own = [s for s in synonyms if s.name == name]
    value = own[0].value if own else None
    source = own[0].source if own else ConfigSource.DEFAULT_CONFIG
    return ConfigEntry(name, value, source, key.sensitive, key.update_mode is UpdateMode.READ_ONLY, synonyms)


def broker_value(layers: ConfigLayers, broker_id: str | None, name: str) -> ConfigValue:
    """The parsed effective value of a broker key (its own layers only, no synonyms)."""
    sources = broker_sources(layers, broker_id, name)
    return BROKER_KEYS[name].parse(sources[0].value) if sources and sources[0].value is not None else None


# --- topic resolution ---------------------------------------------------------------------------


def _topic_default(layers: ConfigLayers, broker_id: str | None, topic_key: ConfigKey) -> tuple[str | None, ConfigSource]:
    """The broker-supplied value for a topic key: first synonym with a value, in topic units."""
    for synonym in TOPIC_TO_BROKER[topic_key.name]:
        sources = broker_sources(layers, broker_id, synonym.broker_key)
        if not sources or sources[0].value is None:
            continue
        value = BROKER_KEYS[synonym.broker_key].parse(sources[0].value)
        if synonym.to_topic_factor != 1:
            assert isinstance(value, int)
            value = value * synonym.to_topic_factor
        if topic_key.name == "retention.ms" and isinstance(value, int) and value < 0:
            value = -1  # Kafka: any negative retention means "keep forever"
        return format_value(value), sources[0].source
    return topic_key.default_text(), ConfigSource.DEFAULT_CONFIG


def describe_topic_config(layers: ConfigLayers, topic: str, name: str, broker_id: str | None = None) -> ConfigEntry:
    """``name`` as topic ``topic`` reports it, with the broker synonyms behind it."""
    key = lookup(name, TOPIC_KEYS, "topic")
    broker_synonyms = [
        s for synonym in TOPIC_TO_BROKER[name] for s in broker_sources(layers, broker_id, synonym.broker_key)
    ]
    override = layers.topics.get(topic, {}).get(name)
    if override is not None:
        own = ConfigSynonym(ConfigSource.DYNAMIC_TOPIC_CONFIG, name, override)
        return ConfigEntry(name, override, own.source, key.sensitive, False, (own, *broker_synonyms))
    value, source = _topic_default(layers, broker_id, key)
    return ConfigEntry(name, value, source, key.sensitive, False, tuple(broker_synonyms))


def topic_properties(layers: ConfigLayers, topic: str, broker_id: str | None = None) -> dict[str, str]:
    """Every topic key's effective text value for ``topic``: the input of
    ``LogConfig.from_properties``. Keys whose value is unset are left out."""
    result: dict[str, str] = {}
    for name in TOPIC_KEYS:
        entry = describe_topic_config(layers, topic, name, broker_id)
        if entry.value is not None:
            result[name] = entry.value
    return result


def topic_value(layers: ConfigLayers, topic: str, name: str, broker_id: str | None = None) -> ConfigValue:
    """The parsed effective value of one topic key."""
    entry = describe_topic_config(layers, topic, name, broker_id)
    return TOPIC_KEYS[name].parse(entry.value) if entry.value is not None else None
