"""DescribeConfigs over ``kafkalab.config``: what this broker knows of a topic's or its own configs.

Resources are topics (type 2) and brokers (type 4; name ``""`` is the cluster-wide default,
otherwise this broker's node id). Values resolve through kafkalab.config's layers -- dynamic
topic, dynamic per-broker, dynamic cluster default, server.properties, Kafka's default -- and
each described entry reports which layer won (Kafka's ``ConfigSource``). Changes are the
controller's (AlterConfigs and IncrementalAlterConfigs, :mod:`kafkalab.controller.controller_apis`);
a cluster's broker learns them as ConfigRecords and copies them into its config store. After a
change the config store reconfigures the affected live partition logs (``DynamicConfigStore.attach_log``),
so ``retention.ms`` takes effect on the next retention check without a restart.

Worked example: IncrementalAlterConfigs ``topic orders: SET retention.ms=60000`` stores the
override; DescribeConfigs then reports ``retention.ms=60000`` with source 1
(DYNAMIC_TOPIC_CONFIG) and, with synonyms requested, the broker's ``log.retention.hours=168``
(DEFAULT_CONFIG, 5) behind it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkalab.broker.request import Request
from kafkalab.config import DEFAULT_ENTITY, ConfigEntry
from kafkalab.config.definitions import BROKER_KEYS, TOPIC_KEYS
from kafkalab.config.resolve import describe_broker_config, describe_topic_config
from kafkalab.controller.controller_apis import TOPIC_CONFIG_SOURCES, ResourceError
from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.protocol.messages.configs import DESCRIBE_CONFIGS_RESPONSE, RESOURCE_BROKER, RESOURCE_TOPIC

if TYPE_CHECKING:
    from kafkalab.broker.broker import Broker

_D = DESCRIBE_CONFIGS_RESPONSE.cls.DescribeConfigsResult
_CONFIG_TYPE_IDS = {  # Kafka's DescribeConfigsResponse.ConfigType ids
    "boolean": 1, "string": 2, "int": 3, "short": 4, "long": 5, "double": 6, "list": 7,
    "class": 8, "password": 9,
}


def _entity(broker: Broker, resource_type: int, name: str) -> tuple[str, str]:
    """(store entity type, entity name) of a resource, or ResourceError."""
    if resource_type == RESOURCE_TOPIC:
        if broker.topics.get(name) is None:
            raise ResourceError(f"Topic {name} does not exist", error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return "topics", name
    if resource_type == RESOURCE_BROKER:
        if name == "":
            return "brokers", DEFAULT_ENTITY
        if name != str(broker.settings.node_id):
            raise ResourceError(f"broker {name!r} is not this broker ({broker.settings.node_id})",
                                error_code=ErrorCode.INVALID_REQUEST)
        return "brokers", name
    raise ResourceError(f"config resource type {resource_type} is not supported",
                        error_code=ErrorCode.INVALID_REQUEST)


def handle_describe_configs(broker: Broker, request: Request) -> Any:
    body = request.body
    results = []
    for resource in body.resources:
        try:
            entries = _describe(broker, resource)
        except KafkaError as error:
            results.append(_D(error_code=error.error_code, error_message=str(error),
                              resource_type=resource.resource_type, resource_name=resource.resource_name))
            continue
        configs = tuple(_entry(e, body.include_synonyms, _type_of(resource.resource_type, e.name)) for e in entries)
        results.append(_D(error_code=0, resource_type=resource.resource_type,
                          resource_name=resource.resource_name, configs=configs))
    return DESCRIBE_CONFIGS_RESPONSE.cls(results=tuple(results))


def _describe(broker: Broker, resource: Any) -> list[ConfigEntry]:
    entity_type, name = _entity(broker, resource.resource_type, resource.resource_name)
    layers = broker.config_store.layers()
    node = str(broker.settings.node_id)
    keys = TOPIC_KEYS if entity_type == "topics" else BROKER_KEYS
    # Null *or empty* means every key, as in Kafka's ConfigHelper (kafka-python sends []).
    wanted = sorted(keys) if not resource.configuration_keys else [
        k for k in resource.configuration_keys if k in keys
    ]
    if entity_type == "topics":
        return [describe_topic_config(layers, name, key, node) for key in wanted]
    broker_id = None if name == DEFAULT_ENTITY else name
    return [describe_broker_config(layers, broker_id, key) for key in wanted]


def _type_of(resource_type: int, name: str) -> int:
    keys = TOPIC_KEYS if resource_type == RESOURCE_TOPIC else BROKER_KEYS
    return _CONFIG_TYPE_IDS.get(keys[name].type.value, 0)


def _entry(entry: ConfigEntry, include_synonyms: bool, config_type: int) -> Any:
    C = _D.DescribeConfigsResourceResult
    synonyms = tuple(
        C.DescribeConfigsSynonym(s.name, None if entry.sensitive else s.value, TOPIC_CONFIG_SOURCES[s.source.value])
        for s in entry.synonyms
    ) if include_synonyms else ()
    return C(
        name=entry.name, value=None if entry.sensitive else entry.value, read_only=entry.read_only,
        config_source=TOPIC_CONFIG_SOURCES[entry.source.value], is_sensitive=entry.sensitive,
        synonyms=synonyms, config_type=config_type,
    )
