"""Where the controller keeps dynamic configs: a lone node's config file, or the metadata log.

Theory of operation
-------------------
The controller's config rules (:mod:`kafkalab.controller.controller_apis`: which keys exist,
which values parse, what a DELETE or an APPEND means) exist once; what differs is where an
accepted change lands. :class:`ConfigHome` is that seam, with two homes:

* :class:`MetadataConfigs` -- a cluster's controller, as Kafka's KRaft controller: every change is
  ConfigRecords in ``__cluster_metadata`` (a null value removes a key), and a new topic's configs
  go in the same batch as its TopicRecord. Brokers learn them by replaying the log
  (``MetadataImage.configs``) and copy them into their own store
  (:meth:`kafkalab.config.store.DynamicConfigStore.mirror`), so a config set through any broker
  applies on every broker.
* :class:`StoreConfigs` -- a lone node (its own controller): the node's
  ``dynamic-configs.json`` (:class:`~kafkalab.config.store.DynamicConfigStore`), the file
  ``kafkalab configs --data-dir`` also edits while the node is stopped.

Entities are named as the store names them: ``("topics", "orders")``, ``("brokers", "2")``,
``("brokers", "<default>")`` for the cluster default, which a ConfigRecord names ``""``.

Worked example: IncrementalAlterConfigs ``SET min.insync.replicas=2`` on topic ``orders`` in a
cluster appends ``ConfigRecord(resource_type=2, resource_name="orders",
name="min.insync.replicas", value="2")``; ``get("topics", "orders")`` then answers
``{"min.insync.replicas": "2"}`` from the controller's image.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from kafkalab.config.resolve import ConfigLayers
from kafkalab.config.store import DEFAULT_ENTITY, DynamicConfigStore
from kafkalab.controller.local import LocalController
from kafkalab.errors import ConfigError, KafkaError
from kafkalab.metadata.image import MetadataImage, TopicImage
from kafkalab.metadata.records import CONFIG_RESOURCE_BROKER, CONFIG_RESOURCE_TOPIC

RESOURCE_OF_ENTITY = {"topics": CONFIG_RESOURCE_TOPIC, "brokers": CONFIG_RESOURCE_BROKER}


class ConfigHome(Protocol):
    """Dynamic configs as the controller reads and changes them."""

    def get(self, entity_type: str, name: str) -> dict[str, str]: ...

    def alter(self, entity_type: str, name: str, add: Mapping[str, str], delete: Iterable[str] = ()) -> None: ...

    def layers(self) -> ConfigLayers: ...

    def create_topic(self, controller: LocalController, name: str, partition_count: int, replication_factor: int,
                     assignment: Sequence[Sequence[int]] | None, configs: Mapping[str, str]) -> TopicImage: ...

    def topic_deleted(self, name: str) -> None: ...


class StoreConfigs:
    """A lone node's configs: its DynamicConfigStore. Not thread-safe; owned by the broker."""

    def __init__(self, store: DynamicConfigStore) -> None:
        self.store = store

    def get(self, entity_type: str, name: str) -> dict[str, str]:
        return self.store.get(entity_type, name)

    def alter(self, entity_type: str, name: str, add: Mapping[str, str], delete: Iterable[str] = ()) -> None:
        self.store.alter(entity_type, name, add=add, delete=delete)

    def layers(self) -> ConfigLayers:
        return self.store.layers()

    def create_topic(self, controller: LocalController, name: str, partition_count: int, replication_factor: int,
                     assignment: Sequence[Sequence[int]] | None, configs: Mapping[str, str]) -> TopicImage:
        """The configs are stored first, so the new logs open with them; undone if the
        controller refuses the topic."""
        if configs:
            self.store.alter("topics", name, add=configs)
        try:
            return controller.create_topic(name, partition_count, replication_factor, assignment=assignment)
        except KafkaError:
            if configs:
                self.store.alter("topics", name, add={}, delete=list(configs))
            raise

    def topic_deleted(self, name: str) -> None:
        existing = self.store.get("topics", name)
        if existing:
            self.store.alter("topics", name, add={}, delete=list(existing))


class MetadataConfigs:
    """A cluster controller's configs: ConfigRecords in its metadata log. ``static`` is the
    controller's own server.properties (the layer under every dynamic config). Not
    thread-safe; owned by the controller."""

    def __init__(self, controller: LocalController, static: Mapping[str, str] | None = None) -> None:
        self.controller = controller
        self.static = dict(static or {})

    def get(self, entity_type: str, name: str) -> dict[str, str]:
        key = (_resource_type(entity_type), _resource_name(name))
        return dict(self.controller.image.configs.get(key, {}))

    def alter(self, entity_type: str, name: str, add: Mapping[str, str], delete: Iterable[str] = ()) -> None:
        current = self.get(entity_type, name)
        delete = list(delete)
        missing = [key for key in delete if key not in current]
        if missing:
            raise ConfigError(f"Invalid config(s): {','.join(missing)} (not set on {entity_type} {name!r}, cannot delete)")
        self.controller.alter_configs(_resource_type(entity_type), _resource_name(name), add, delete)

    def layers(self) -> ConfigLayers:
        return layers_of_image(self.controller.image, self.static)

    def create_topic(self, controller: LocalController, name: str, partition_count: int, replication_factor: int,
                     assignment: Sequence[Sequence[int]] | None, configs: Mapping[str, str]) -> TopicImage:
        return controller.create_topic(name, partition_count, replication_factor, assignment=assignment,
                                       configs=configs)

    def topic_deleted(self, name: str) -> None:
        """Nothing to do: replaying RemoveTopicRecord drops the topic's configs."""


def layers_of_image(image: MetadataImage, static: Mapping[str, str]) -> ConfigLayers:
    """The dynamic configs an image holds, over ``static``, as :mod:`kafkalab.config.resolve`
    layers them."""
    topics = {name: dict(values) for (kind, name), values in image.configs.items() if kind == CONFIG_RESOURCE_TOPIC}
    brokers = {name: dict(values) for (kind, name), values in image.configs.items() if kind == CONFIG_RESOURCE_BROKER}
    return ConfigLayers(static=dict(static), dynamic_default=brokers.pop("", {}), dynamic_brokers=brokers,
                        topics=topics)


def store_entities(image: MetadataImage, entity_type: str) -> dict[str, dict[str, str]]:
    """The image's configs of one entity type, named as a DynamicConfigStore names them."""
    resource_type = _resource_type(entity_type)
    return {(DEFAULT_ENTITY if name == "" and entity_type == "brokers" else name): dict(values)
            for (kind, name), values in image.configs.items() if kind == resource_type and values}


def _resource_type(entity_type: str) -> int:
    resource_type = RESOURCE_OF_ENTITY.get(entity_type)
    if resource_type is None:
        raise ConfigError(f"the controller keeps configs of topics and brokers, not {entity_type!r}")
    return resource_type


def _resource_name(name: str) -> str:
    return "" if name == DEFAULT_ENTITY else name


__all__ = ["ConfigHome", "MetadataConfigs", "RESOURCE_OF_ENTITY", "StoreConfigs", "layers_of_image",
           "store_entities"]
