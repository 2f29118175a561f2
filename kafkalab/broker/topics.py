"""The topics a broker serves: names, ids and partitions from the controller's metadata image,
logs and leadership from the replica manager.

The cluster's truth is the metadata image the controller publishes
(:mod:`kafkalab.metadata.image`); this module is the handlers' window onto it. Changes --
CreateTopics, CreatePartitions, DeleteTopics -- are the controller's
(:mod:`kafkalab.controller.controller_apis`), which publishes a new image; the replica manager
follows it, creating or deleting logs. Topics the broker creates on its own (auto-creation,
``__consumer_offsets``) go through :meth:`TopicRegistry.create`: in process on a lone broker, as
a CreateTopics request to the controller in a cluster (:mod:`kafkalab.broker.forwarding`). So
on a lone broker, after ``create("orders", 3)`` returns, ``log("orders", 2)`` is a log on disk
and this broker leads it.

At start-up the image comes from replaying the node's metadata log
(:mod:`kafkalab.broker.local_metadata`); a ``<topic>-<partition>`` directory the log does not
know (a data directory from before kafkalab kept metadata records) is adopted into the image with
its ``partition.metadata`` topic id. ``__cluster_metadata-0``, KRaft's own log, is not a topic.

Topic names follow Kafka's ``Topic.validate``: ``orders.v2`` is valid; ``orders v2`` and a
250-character name are refused with INVALID_TOPIC_EXCEPTION (17).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from kafkalab.broker.log_store import LogStore, PartitionLog
from kafkalab.controller.config_home import ConfigHome
from kafkalab.controller.local import (
    PARTITIONS_MAX,
    TOPIC_NAME_CHARS_MAX,
    LocalController,
    TopicError,
    validate_topic_name,
)
from kafkalab.errors import ErrorCode
from kafkalab.metadata.image import MetadataImage
from kafkalab.replication.replica_manager import HostedPartition, ReplicaManager
from kafkalab.storage.log_manager import KRAFT_METADATA_TOPIC



@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    partition_count: int


class TopicCreator(Protocol):
    """Who creates the topics a broker creates on its own (auto-creation, internal topics)."""

    def create(self, name: str, partitions: int, replication_factor: int, configs: Mapping[str, str]) -> None: ...


class TopicRegistry:
    """The broker's view of topics. Not thread-safe; owned by the broker."""

    def __init__(self, replica_manager: ReplicaManager, image: Callable[[], MetadataImage], *,
                 controller: LocalController | None = None, configs: ConfigHome | None = None,
                 creator: TopicCreator | None = None) -> None:
        assert (controller is None) == (configs is None) != (creator is None), "lone or in a cluster"
        self.controller = controller
        self.replica_manager = replica_manager
        self._image = image  # the broker's view
        self._configs = configs
        self._creator = creator

    @classmethod
    def lone(cls, controller: LocalController, configs: ConfigHome, replica_manager: ReplicaManager,
             image: Callable[[], MetadataImage]) -> TopicRegistry:
        """A lone broker's topics: it creates them with its own controller, in process."""
        return cls(replica_manager, image, controller=controller, configs=configs)

    @classmethod
    def in_cluster(cls, creator: TopicCreator, replica_manager: ReplicaManager,
                   image: Callable[[], MetadataImage]) -> TopicRegistry:
        """A cluster broker's topics: it asks the controller for new ones (CreateTopics)."""
        return cls(replica_manager, image, creator=creator)

    def restore(self, log_store: LogStore) -> None:
        """Adopt the partition directories of a data directory into the controller's image."""
        assert self.controller is not None, "a lone broker adopts its directories"
        counts: dict[str, int] = {}
        for topic, partition in log_store.partitions():
            if topic != KRAFT_METADATA_TOPIC:
                counts[topic] = max(counts.get(topic, 0), partition + 1)
        for topic, count in sorted(counts.items()):
            topic_id = log_store.topic_id(topic, 0) or self.controller.new_topic_id()
            self.controller.restore_topic(topic, topic_id, count, self.replica_manager.broker_id)

    def names(self) -> list[str]:
        return sorted(self._image().topics)

    def get(self, name: str) -> TopicInfo | None:
        topic = self._image().topics.get(name)
        return None if topic is None else TopicInfo(name, topic.topic_id, len(topic.partitions))

    def partition(self, topic: str, partition: int) -> HostedPartition | None:
        """This broker's replica of ``topic-partition`` with its replication state, if hosted."""
        return self.replica_manager.partition(topic, partition)

    def log(self, topic: str, partition: int) -> PartitionLog | None:
        hosted = self.replica_manager.partition(topic, partition)
        return None if hosted is None else hosted.log

    def create(self, name: str, partition_count: int, replication_factor: int = 1,
               configs: Mapping[str, str] | None = None) -> TopicInfo:
        """Create a topic this broker needs (auto-creation, an internal topic). A lone broker
        creates it at once; a cluster's broker asks the controller and raises
        LEADER_NOT_AVAILABLE until the topic reaches its image (the caller's client retries)."""
        if self._creator is not None:
            self._creator.create(name, partition_count, replication_factor, configs or {})
            raise TopicError(f"Topic {name} is being created by the controller.",
                             error_code=ErrorCode.LEADER_NOT_AVAILABLE)
        assert self.controller is not None and self._configs is not None
        topic = self._configs.create_topic(self.controller, name, partition_count, replication_factor, None,
                                           configs or {})
        return TopicInfo(name, topic.topic_id, len(topic.partitions))


__all__ = [
    "KRAFT_METADATA_TOPIC", "PARTITIONS_MAX", "TOPIC_NAME_CHARS_MAX", "TopicError", "TopicInfo",
    "TopicRegistry", "validate_topic_name",
]
