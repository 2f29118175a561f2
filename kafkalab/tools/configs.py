"""``kafkalab configs``: describe and alter dynamic configs, like ``kafka-configs.sh``.

Flags and output follow Kafka's ``ConfigCommand``::

    $ kafkalab configs --data-dir D --entity-type topics --entity-name t --alter --add-config retention.ms=1000
    Completed updating config for topic t.
    $ kafkalab configs --data-dir D --entity-type topics --entity-name t --describe
    Dynamic configs for topic t are:
      retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000, DEFAULT_CONFIG:log.retention.hours=168}

``--add-config`` takes ``k1=v1,k2=[a,b]``: square brackets group a value that contains commas.

The tool talks to a :class:`ConfigTarget`. :class:`LocalConfigTarget` reads and writes a data
directory (:class:`~kafkalab.config.store.DynamicConfigStore`) -- use it on a stopped broker;
:class:`NetworkConfigTarget` (``--bootstrap-server``) implements the same three methods with
DescribeConfigs / IncrementalAlterConfigs requests to a running one, which resolves and stores
the configs itself, so both paths print the same lines.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TextIO

from kafkalab.client.connection import bootstrap, check_error
from kafkalab.config.definitions import BROKER_KEYS, QUOTA_KEYS, TOPIC_KEYS
from kafkalab.config.resolve import (
    ConfigEntry,
    ConfigSource,
    ConfigSynonym,
    describe_broker_config,
    describe_topic_config,
)
from kafkalab.config.store import DEFAULT_ENTITY, ENTITY_TYPES, DynamicConfigStore
from kafkalab.config.types import format_value
from kafkalab.errors import ConfigError, ErrorCode, KafkaError
from kafkalab.protocol.api_keys import ApiKey

ADD_CONFIG_ITEMS_MAX = 1000  # one --add-config with more items than this is a mistake

# Split on commas that are not inside [...]: "a=1,b=[x,y],c=3" -> a=1 | b=[x,y] | c=3.
_TOP_LEVEL_COMMA = re.compile(r",(?=[^\]]*(?:\[|$))")


@dataclass(frozen=True, slots=True)
class Entity:
    """What a command is about: ``("topics", "t")``, ``("brokers", None)`` for the default."""

    entity_type: str
    name: str | None  # None: the default entity (--entity-default)


class ConfigTarget(Protocol):
    """Where configs live: a data directory now, a broker over the network later."""

    def describe(self, entity: Entity, include_all: bool) -> list[ConfigEntry]: ...

    def alter(self, entity: Entity, add: dict[str, str], delete: list[str]) -> None: ...

    def entity_names(self, entity_type: str) -> list[str]: ...


class LocalConfigTarget:
    """A :class:`ConfigTarget` over a data directory. Not thread-safe; one per invocation."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self.store = DynamicConfigStore(self.data_dir)

    def topic_exists(self, topic: str) -> bool:
        prefix = topic + "-"
        return any(
            p.is_dir() and p.name.startswith(prefix) and p.name[len(prefix) :].isdigit()
            for p in self.data_dir.iterdir()
        ) or topic in self.store.entity_names("topics")

    def entity_names(self, entity_type: str) -> list[str]:
        names = set(self.store.entity_names(entity_type))
        if entity_type == "topics" and self.data_dir.is_dir():
            names |= {p.name.rsplit("-", 1)[0] for p in self.data_dir.iterdir() if _is_partition_dir(p)}
        return sorted(n for n in names if n != DEFAULT_ENTITY)

    def describe(self, entity: Entity, include_all: bool) -> list[ConfigEntry]:
        describer = _DESCRIBERS[entity.entity_type]
        return describer(self, entity, include_all)

    def alter(self, entity: Entity, add: dict[str, str], delete: list[str]) -> None:
        if entity.entity_type == "topics":
            assert entity.name is not None
            if not self.topic_exists(entity.name):
                raise KafkaError(f"The topic '{entity.name}' does not exist.", error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        self.store.alter(entity.entity_type, entity.name or DEFAULT_ENTITY, add, delete)


def _is_partition_dir(path: Path) -> bool:
    name, _, partition = path.name.rpartition("-")
    return path.is_dir() and bool(name) and partition.isdigit()


def _describe_topic(target: LocalConfigTarget, entity: Entity, include_all: bool) -> list[ConfigEntry]:
    assert entity.name is not None
    layers = target.store.layers()
    entries = [describe_topic_config(layers, entity.name, name) for name in sorted(TOPIC_KEYS)]
    return entries if include_all else [e for e in entries if e.source is ConfigSource.DYNAMIC_TOPIC_CONFIG]


def _describe_broker(target: LocalConfigTarget, entity: Entity, include_all: bool) -> list[ConfigEntry]:
    layers = target.store.layers()
    entries = [describe_broker_config(layers, entity.name, name) for name in sorted(BROKER_KEYS)]
    wanted = ConfigSource.DYNAMIC_BROKER_CONFIG if entity.name is not None else ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    return entries if include_all else [e for e in entries if e.source is wanted]


def _describe_quota(target: LocalConfigTarget, entity: Entity, include_all: bool) -> list[ConfigEntry]:
    configs = target.store.get(entity.entity_type, entity.name or DEFAULT_ENTITY)
    return [
        ConfigEntry(name, configs[name], ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, False, False, ())
        for name in sorted(configs)
    ]


_DESCRIBERS: dict[str, Callable[[LocalConfigTarget, Entity, bool], list[ConfigEntry]]] = {
    "topics": _describe_topic,
    "brokers": _describe_broker,
    "users": _describe_quota,
    "clients": _describe_quota,
}

# --- the --bootstrap-server target --------------------------------------------------------------

_RESOURCE_TYPES = {"topics": 2, "brokers": 4}  # ConfigResource.Type TOPIC and BROKER
_SOURCES_BY_ID = {1: ConfigSource.DYNAMIC_TOPIC_CONFIG, 2: ConfigSource.DYNAMIC_BROKER_CONFIG,
                  3: ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, 4: ConfigSource.STATIC_BROKER_CONFIG,
                  5: ConfigSource.DEFAULT_CONFIG}  # DescribeConfigsResponse.ConfigSource ids
_OP_SET, _OP_DELETE = 0, 1  # IncrementalAlterConfigs operations


class NetworkConfigTarget:
    """A :class:`ConfigTarget` over a running broker: DescribeConfigs (with synonyms) and
    IncrementalAlterConfigs, as ``kafka-configs.sh --bootstrap-server`` sends them. One short
    connection per call. Not thread-safe; one per invocation.

    Topics and brokers only: user and client quotas travel in DescribeClientQuotas /
    AlterClientQuotas, which kafkalab's broker does not implement.
    """

    def __init__(self, bootstrap_servers: str) -> None:
        self.bootstrap_servers = bootstrap_servers

    def entity_names(self, entity_type: str) -> list[str]:
        _resource_type(entity_type)
        if entity_type == "brokers":
            return []
        with bootstrap(self.bootstrap_servers) as connection:
            metadata = connection.metadata(None)
        return sorted(t.name for t in metadata.topics if t.error_code == 0)

    def describe(self, entity: Entity, include_all: bool) -> list[ConfigEntry]:
        resource = {"resource_type": _resource_type(entity.entity_type),
                    "resource_name": entity.name or "", "configuration_keys": None}
        with bootstrap(self.bootstrap_servers) as connection:
            response = connection.request(ApiKey.DESCRIBE_CONFIGS, {"resources": [resource], "include_synonyms": True})
        [result] = response.results
        _raise_for(result.error_code, result.error_message, f"Describe configs of {entity.entity_type} {entity.name}")
        entries = [_entry_from_wire(c) for c in result.configs]
        return entries if include_all else [e for e in entries if e.source is _dynamic_source(entity)]

    def alter(self, entity: Entity, add: dict[str, str], delete: list[str]) -> None:
        current = {e.name for e in self.describe(entity, include_all=False)}
        missing = [key for key in delete if key not in current]
        if missing:  # kafka-configs checks this against a describe first, as here
            raise ConfigError(f"Invalid config(s): {','.join(missing)} (not set on {entity.entity_type} "
                              f"{entity.name or DEFAULT_ENTITY!r}, cannot delete)")
        configs = [{"name": k, "config_operation": _OP_SET, "value": v} for k, v in add.items()]
        configs += [{"name": k, "config_operation": _OP_DELETE, "value": None} for k in delete]
        resource = {"resource_type": _resource_type(entity.entity_type), "resource_name": entity.name or "",
                    "configs": configs}
        with bootstrap(self.bootstrap_servers) as connection:
            response = connection.request(ApiKey.INCREMENTAL_ALTER_CONFIGS,
                                          {"resources": [resource], "validate_only": False})
        [result] = response.responses
        _raise_for(result.error_code, result.error_message, f"Alter configs of {entity.entity_type} {entity.name}")


def _resource_type(entity_type: str) -> int:
    if entity_type not in _RESOURCE_TYPES:
        raise ConfigError(f"--entity-type {entity_type} is not supported with --bootstrap-server "
                          "(quotas need the client-quota APIs, which kafkalab's broker lacks); use --data-dir")
    return _RESOURCE_TYPES[entity_type]


def _dynamic_source(entity: Entity) -> ConfigSource:
    if entity.entity_type == "topics":
        return ConfigSource.DYNAMIC_TOPIC_CONFIG
    return ConfigSource.DYNAMIC_BROKER_CONFIG if entity.name is not None else ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG


def _source(source_id: int) -> ConfigSource:
    if source_id not in _SOURCES_BY_ID:
        raise ConfigError(f"the broker reported config source {source_id}, not one of {sorted(_SOURCES_BY_ID)}")
    return _SOURCES_BY_ID[source_id]


def _entry_from_wire(config: Any) -> ConfigEntry:
    synonyms = tuple(ConfigSynonym(_source(s.source), s.name, s.value) for s in config.synonyms)
    return ConfigEntry(config.name, config.value, _source(config.config_source), config.is_sensitive,
                       config.read_only, synonyms)


def _raise_for(error_code: int, message: str | None, what: str) -> None:
    """An INVALID_CONFIG answer raises ConfigError, as the --data-dir path would; others the
    client's BrokerResponseError."""
    if error_code == ErrorCode.INVALID_CONFIG:
        raise ConfigError(message or f"{what} failed with INVALID_CONFIG")
    check_error(error_code, what, message)


TARGET_FACTORIES: dict[str, Callable[[argparse.Namespace], ConfigTarget]] = {
    "data-dir": lambda args: LocalConfigTarget(Path(args.data_dir)),
    "bootstrap-server": lambda args: NetworkConfigTarget(args.bootstrap_server),
}


# --- parsing the command line -------------------------------------------------------------------


def parse_add_config(text: str) -> dict[str, str]:
    """``'k1=v1,k2=[a,b]'`` -> ``{"k1": "v1", "k2": "a,b"}`` (Kafka's ``parseConfigsToBeAdded``)."""
    items = [item for item in _TOP_LEVEL_COMMA.split(text) if item.strip()]
    if len(items) > ADD_CONFIG_ITEMS_MAX:
        raise ConfigError(f"--add-config has {len(items)} items, at most {ADD_CONFIG_ITEMS_MAX}")
    result: dict[str, str] = {}
    for item in items:
        key, separator, value = item.partition("=")
        if not separator or not key.strip():
            raise ConfigError(f'Invalid entity config: all configs to be added must be in the format "key=val", got {item!r}')
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            value = value[1:-1]
        result[key.strip()] = value
    return result


def parse_delete_config(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--data-dir", help="Data directory whose dynamic configs to read and write.")
    where.add_argument("--bootstrap-server", help="Broker to connect to (host:port).")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--describe", action="store_true", help="List configs for the given entity.")
    action.add_argument("--alter", action="store_true", help="Alter the configuration for the entity.")
    parser.add_argument("--entity-type", required=True, choices=ENTITY_TYPES, help="Type of entity.")
    who = parser.add_mutually_exclusive_group()
    who.add_argument("--entity-name", help="Name of entity (topic name, broker id, user, client id).")
    who.add_argument("--entity-default", action="store_true", help="The default entity (brokers, users, clients).")
    parser.add_argument("--add-config", help="Configs to set: 'k1=v1,k2=[v1,v2,v2],k3=v3'.")
    parser.add_argument("--delete-config", help="Config keys to remove: 'k1,k2'.")
    parser.add_argument("--all", action="store_true", help="With --describe: every config, not only dynamic ones.")


def _entity(args: argparse.Namespace) -> Entity:
    if args.entity_default and args.entity_type == "topics":
        raise ConfigError("--entity-default is not valid for topics; set the brokers' log.* defaults instead")
    return Entity(args.entity_type, None if args.entity_default else args.entity_name)


# --- output -------------------------------------------------------------------------------------

_SINGULAR = {"topics": "topic", "brokers": "broker", "users": "user", "clients": "client"}
_QUOTA_ENTITY = {"users": "user-principal", "clients": "client-id"}


def print_describe(target: ConfigTarget, entity: Entity, include_all: bool, out: TextIO) -> None:
    """Print ``--describe`` for one entity, or for every named entity when the name is absent."""
    if entity.name is None and entity.entity_type == "topics":
        for name in target.entity_names("topics"):
            print_describe(target, Entity("topics", name), include_all, out)
        return
    entries = target.describe(entity, include_all)
    if entity.entity_type in _QUOTA_ENTITY:
        who = _QUOTA_ENTITY[entity.entity_type]
        label = f"the default {who}" if entity.name is None else f"{who} '{entity.name}'"
        # Quotas travel as doubles in Kafka's client-quota API, so 1024 prints as 1024.0.
        quotas = ", ".join(f"{e.name}={_quota_text(e)}" for e in entries)
        print(f"Quota configs for {label} are {quotas}", file=out)
        return
    if entity.name is None:
        print("Default configs for brokers in the cluster are:", file=out)
    else:
        kind = "All" if include_all else "Dynamic"
        print(f"{kind} configs for {_SINGULAR[entity.entity_type]} {entity.name} are:", file=out)
    for entry in entries:
        print(entry.describe_line(), file=out)


def _quota_text(entry: ConfigEntry) -> str:
    value = QUOTA_KEYS[entry.name].parse(entry.value or "")
    assert isinstance(value, (int, float)), value
    return format_value(float(value)) or ""


def print_altered(entity: Entity, out: TextIO) -> None:
    if entity.name is None and entity.entity_type == "brokers":
        print("Completed updating default config for brokers in the cluster.", file=out)
    else:
        print(f"Completed updating config for {_SINGULAR[entity.entity_type]} {entity.name or DEFAULT_ENTITY}.", file=out)


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        entity = _entity(args)
        factory = TARGET_FACTORIES.get("data-dir" if args.data_dir else "bootstrap-server")
        if factory is None:
            raise ConfigError("--bootstrap-server is not available yet in kafkalab; use --data-dir")
        target = factory(args)
        if args.describe:
            print_describe(target, entity, args.all, out)
            return 0
        return _alter(target, entity, args, out)
    except KafkaError as error:
        print(f"Error while executing config command with args '{_argv_text(args)}'", file=err)
        print(f"{type(error).__name__}: {error}", file=err)
        return 1


def _alter(target: ConfigTarget, entity: Entity, args: argparse.Namespace, out: TextIO) -> int:
    if entity.name is None and not args.entity_default:
        raise ConfigError(f"--entity-name or --entity-default must be specified with --alter of {args.entity_type}")
    if args.add_config is None and args.delete_config is None:
        raise ConfigError("At least one of --add-config or --delete-config must be specified with --alter")
    add = parse_add_config(args.add_config or "")
    delete = parse_delete_config(args.delete_config or "")
    both = sorted(set(add) & set(delete))
    if both:
        raise ConfigError(f"Invalid config(s): {','.join(both)} in both --add-config and --delete-config")
    target.alter(entity, add, delete)
    print_altered(entity, out)
    return 0


def _argv_text(args: argparse.Namespace) -> str:
    flags = []
    for name, value in vars(args).items():
        if value is None or value is False:
            continue
        flag = "--" + name.replace("_", "-")
        flags.append(flag if value is True else f"{flag} {value}")
    return " ".join(flags)
