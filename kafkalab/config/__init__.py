"""Kafka's configuration: every key's definition, precedence between layers, and the store
of dynamic configs. See :mod:`kafkalab.config.resolve` for the precedence rules."""

from kafkalab.config.definitions import BROKER_KEYS, QUOTA_KEYS, TOPIC_KEYS, TOPIC_TO_BROKER, ConfigKey, UpdateMode
from kafkalab.config.resolve import (
    ConfigEntry,
    ConfigLayers,
    ConfigSource,
    ConfigSynonym,
    describe_broker_config,
    describe_topic_config,
    topic_properties,
    topic_value,
)
from kafkalab.config.store import DEFAULT_ENTITY, DynamicConfigStore
from kafkalab.config.types import ConfigType

__all__ = [
    "BROKER_KEYS",
    "DEFAULT_ENTITY",
    "QUOTA_KEYS",
    "TOPIC_KEYS",
    "TOPIC_TO_BROKER",
    "ConfigEntry",
    "ConfigKey",
    "ConfigLayers",
    "ConfigSource",
    "ConfigSynonym",
    "ConfigType",
    "DynamicConfigStore",
    "UpdateMode",
    "describe_broker_config",
    "describe_topic_config",
    "topic_properties",
    "topic_value",
]
