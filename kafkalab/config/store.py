"""Dynamic configs persisted in a data directory, and the hook that applies them to live logs.

Kafka keeps dynamic configs in the cluster metadata (``ConfigRecord`` in KRaft, ``/config/...``
znodes before it). kafkalab keeps them in one JSON file in the data directory, written the way
Kafka writes its checkpoint files: to ``<name>.tmp``, flushed, fsynced, then renamed over the
old file, so a crash leaves either the old or the new file::

    <data-dir>/dynamic-configs.json
    {
      "version": 1,
      "topics":  {"orders": {"retention.ms": "1000"}},
      "brokers": {"<default>": {"log.retention.minutes": "90"}, "0": {"num.io.threads": "4"}},
      "users":   {"alice": {"producer_byte_rate": "1048576"}},
      "clients": {}
    }

Entity names are strings; ``<default>`` is the cluster default (Kafka's
``ConfigEntityName.DEFAULT``). Static configs live next to it in ``server.properties``
(``key=value`` lines, ``#`` comments), read once when the store opens.

The live hook: :meth:`DynamicConfigStore.watch_topic` registers a callback that receives a
topic's re-resolved properties (the input of ``LogConfig.from_properties``) whenever an alter
changes them, so lowering ``retention.ms`` takes effect at the next retention check.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from kafkalab.config.resolve import (
    ConfigLayers,
    Properties,
    topic_properties,
    validate_broker_configs,
    validate_quota_configs,
    validate_topic_configs,
)
from kafkalab.errors import ConfigError

if TYPE_CHECKING:
    from kafkalab.storage.log_config import LogConfig

STORE_FILE_NAME = "dynamic-configs.json"
STATIC_FILE_NAME = "server.properties"
STORE_VERSION = 1
DEFAULT_ENTITY = "<default>"
ENTITY_TYPES = ("topics", "brokers", "users", "clients")
STORE_BYTES_MAX = 16 * 1024 * 1024  # a config file larger than this is not one we wrote
PROPERTIES_LINES_MAX = 100_000  # same bound for server.properties

TopicListener = Callable[[str, dict[str, str]], None]


def read_properties(path: Path) -> dict[str, str]:
    """Parse a Java-style ``.properties`` file (``key=value`` or ``key: value``, ``#`` comments)."""
    if path.stat().st_size > STORE_BYTES_MAX:
        raise ConfigError(f"{path} is {path.stat().st_size} bytes, more than {STORE_BYTES_MAX}")
    result: dict[str, str] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if number > PROPERTIES_LINES_MAX:
            raise ConfigError(f"{path} has more than {PROPERTIES_LINES_MAX} lines")
        stripped = line.strip()
        if not stripped or stripped[0] in "#!":
            continue
        separator = min((i for i in (stripped.find("="), stripped.find(":")) if i > 0), default=-1)
        if separator < 0:
            raise ConfigError(f"{path}:{number}: expected key=value, got {stripped!r}")
        result[stripped[:separator].strip()] = stripped[separator + 1 :].strip()
    return result


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via ``path.tmp``, fsync and rename (Kafka's checkpoint recipe)."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    directory_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory_fd)
    finally:
        os.close(directory_fd)


class DynamicConfigStore:
    """Static and dynamic configs of one data directory. Not thread-safe; owned by one broker
    process or one CLI invocation.

    ``broker_id`` names the broker whose view this is: its per-broker dynamic configs
    (``--entity-type brokers --entity-name 0``) then apply to every topic it resolves. A CLI
    editing a stopped broker's directory leaves it None (cluster-wide view).
    """

    def __init__(self, data_dir: Path, broker_id: str | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.broker_id = broker_id
        self._log_listeners: dict[int, tuple[str, TopicListener]] = {}
        self._path = self.data_dir / STORE_FILE_NAME
        self._entities: dict[str, dict[str, dict[str, str]]] = {t: {} for t in ENTITY_TYPES}
        self._listeners: dict[str, list[TopicListener]] = {}
        static_path = self.data_dir / STATIC_FILE_NAME
        self.static: dict[str, str] = read_properties(static_path) if static_path.exists() else {}
        validate_broker_configs(self.static, dynamic=False, per_broker=True)
        if self._path.exists():
            self._load()

    # --- reading -------------------------------------------------------------------------------

    def _load(self) -> None:
        size = self._path.stat().st_size
        if size > STORE_BYTES_MAX:
            raise ConfigError(f"{self._path} is {size} bytes, more than {STORE_BYTES_MAX}")
        try:
            document = json.loads(self._path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise ConfigError(f"{self._path} is not valid JSON: {error}") from None
        if not isinstance(document, dict) or document.get("version") != STORE_VERSION:
            raise ConfigError(f"{self._path}: expected a JSON object with version {STORE_VERSION}")
        for entity_type in ENTITY_TYPES:
            entities = document.get(entity_type, {})
            if not isinstance(entities, dict):
                raise ConfigError(f"{self._path}: {entity_type!r} must be an object")
            for name, configs in entities.items():
                if not isinstance(configs, dict) or not all(isinstance(v, str) for v in configs.values()):
                    raise ConfigError(f"{self._path}: {entity_type}/{name} must map keys to strings")
                self._entities[entity_type][name] = dict(configs)

    def get(self, entity_type: str, name: str) -> dict[str, str]:
        """The dynamic configs set on one entity (``DEFAULT_ENTITY`` for the default)."""
        return dict(self._entities[_check_type(entity_type)].get(name, {}))

    def entity_names(self, entity_type: str) -> list[str]:
        return sorted(self._entities[_check_type(entity_type)])

    def layers(self) -> ConfigLayers:
        """A snapshot of every layer, for :mod:`kafkalab.config.resolve`."""
        brokers = self._entities["brokers"]
        return ConfigLayers(
            static=dict(self.static),
            dynamic_default=dict(brokers.get(DEFAULT_ENTITY, {})),
            dynamic_brokers={n: dict(c) for n, c in brokers.items() if n != DEFAULT_ENTITY},
            topics={n: dict(c) for n, c in self._entities["topics"].items()},
        )

    def topic_properties(self, topic: str, broker_id: str | None = None) -> dict[str, str]:
        """The topic's effective properties: ``LogConfig.from_properties`` input."""
        return topic_properties(self.layers(), topic, broker_id or self.broker_id)

    def log_config(self, topic: str, broker_id: str | None = None) -> LogConfig:
        """The topic's effective ``LogConfig``."""
        return to_log_config(self.topic_properties(topic, broker_id))

    # --- writing -------------------------------------------------------------------------------

    def alter(self, entity_type: str, name: str, add: Mapping[str, str], delete: Iterable[str] = ()) -> None:
        """Set ``add`` and remove ``delete`` on one entity, validate, persist, notify watchers.

        Mirrors ``kafka-configs --alter``: deleting a key that is not set is an error, and the
        whole change is rejected if any part of it is invalid.
        """
        _check_type(entity_type)
        current = self._entities[entity_type].get(name, {})
        delete = list(delete)
        missing = [key for key in delete if key not in current]
        if missing:
            raise ConfigError(f"Invalid config(s): {','.join(missing)} (not set on {entity_type} {name!r}, cannot delete)")
        _validate(entity_type, name, add)
        updated = {k: v for k, v in current.items() if k not in delete}
        updated.update(add)
        before = self._topic_snapshot()
        if updated:
            self._entities[entity_type][name] = updated
        else:
            self._entities[entity_type].pop(name, None)
        self._save()
        self._notify(before)

    def mirror(self, entity_type: str, entities: Mapping[str, Mapping[str, str]]) -> None:
        """Make one entity type's dynamic configs exactly ``entities`` -- a cluster broker
        copying what the controller's ConfigRecords say -- then persist and notify watchers.
        Values are not validated again: the controller accepted them."""
        _check_type(entity_type)
        wanted = {name: dict(configs) for name, configs in entities.items() if configs}
        if wanted == self._entities[entity_type]:
            return
        before = self._topic_snapshot()
        self._entities[entity_type] = wanted
        self._save()
        self._notify(before)

    def _save(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        document = {"version": STORE_VERSION, **{t: self._entities[t] for t in ENTITY_TYPES}}
        write_atomically(self._path, json.dumps(document, indent=2, sort_keys=True) + "\n")

    # --- the live hook -------------------------------------------------------------------------

    def watch_topic(self, topic: str, listener: TopicListener) -> None:
        """Call ``listener(topic, properties)`` whenever an alter changes the topic's properties."""
        self._listeners.setdefault(topic, []).append(listener)

    def attach_log(self, log: _ConfigurableLog) -> None:
        """Keep ``log.config`` equal to its topic's effective config after every alter."""

        def reconfigure(topic: str, properties: dict[str, str]) -> None:
            log.config = to_log_config(properties)

        log.config = self.log_config(log.topic)
        self.watch_topic(log.topic, reconfigure)
        self._log_listeners[id(log)] = (log.topic, reconfigure)

    def detach_log(self, log: _ConfigurableLog) -> None:
        """Stop reconfiguring ``log`` (it was deleted); a no-op for a log never attached."""
        attached = self._log_listeners.pop(id(log), None)
        if attached is None:
            return
        topic, listener = attached
        listeners = self._listeners.get(topic, [])
        if listener in listeners:
            listeners.remove(listener)
        if not listeners:
            self._listeners.pop(topic, None)

    def _topic_snapshot(self) -> dict[str, dict[str, str]]:
        return {topic: self.topic_properties(topic) for topic in self._listeners}

    def _notify(self, before: dict[str, dict[str, str]]) -> None:
        for topic, listeners in self._listeners.items():
            properties = self.topic_properties(topic)
            if properties != before.get(topic):
                for listener in listeners:
                    listener(topic, properties)


class _ConfigurableLog(Protocol):
    topic: str
    config: LogConfig


def to_log_config(properties: Mapping[str, str]) -> LogConfig:
    """``LogConfig.from_properties`` of the keys the storage engine reads (the rest -- e.g.
    ``compression.type`` -- matter to other layers)."""
    # Imported on use: LogConfig takes its defaults from kafkalab.config.definitions, so the
    # storage package imports this one, and a top-level import here would be circular.
    from kafkalab.storage.log_config import LogConfig

    keys = {f.name.replace("_", ".") for f in dataclasses.fields(LogConfig)}
    return LogConfig.from_properties({k: v for k, v in properties.items() if k in keys})


def _check_type(entity_type: str) -> str:
    if entity_type not in ENTITY_TYPES:
        raise ConfigError(f"Invalid entity-type {entity_type!r}, --entity-type must be one of {list(ENTITY_TYPES)}")
    return entity_type


def _validate(entity_type: str, name: str, add: Properties) -> None:
    if entity_type == "topics":
        if name == DEFAULT_ENTITY:
            raise ConfigError("topics have no default entity; set the broker's log.* keys instead")
        validate_topic_configs(add)
    elif entity_type == "brokers":
        if name != DEFAULT_ENTITY and not name.isdigit():
            raise ConfigError(f"Broker id must be an integer, got {name!r}")
        validate_broker_configs(add, dynamic=True, per_broker=name != DEFAULT_ENTITY)
    else:
        validate_quota_configs(add)


__all__ = ["DEFAULT_ENTITY", "DynamicConfigStore", "ENTITY_TYPES", "read_properties", "to_log_config"]
