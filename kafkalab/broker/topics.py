"""The topics a broker serves: names, ids and partitions from the controller's metadata image,
logs and leadership from the replica manager.

The cluster's truth is the metadata image the controller publishes
(:mod:`kafkalab.metadata.image`); this module is the handlers' window onto it. Changes --
CreateTopics, CreatePartitions, DeleteTopics -- go to the controller, which publishes a new
image; the replica manager follows it, creating or deleting logs. So after ``create("orders",
3)`` returns, ``log("orders", 2)`` is a log on disk and this broker leads it (it is the only
broker; a bigger cluster spreads leaders, and ``log`` still returns the local replica).

At start-up the image comes from replaying the node's metadata log
(:mod:`kafkalab.broker.local_metadata`); a ``<topic>-<partition>`` directory the log does not
know (a data directory from before kafkalab kept metadata records) is adopted into the image with
its ``partition.metadata`` topic id. ``__cluster_metadata-0``, KRaft's own log, is not a topic.

Topic names follow Kafka's ``Topic.validate``: ``orders.v2`` is valid; ``orders v2`` and a
250-character name are refused with INVALID_TOPIC_EXCEPTION (17).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

from kafkalab.broker.log_store import LogStore, PartitionLog
from kafkalab.controller.local import (
    PARTITIONS_MAX,
    TOPIC_NAME_CHARS_MAX,
    LocalController,
    TopicError,
    validate_topic_name,
)
from kafkalab.metadata.image import MetadataImage
from kafkalab.replication.replica_manager import HostedPartition, ReplicaManager
from kafkalab.storage.log_manager import KRAFT_METADATA_TOPIC



@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    partition_count: int


class TopicRegistry:
    """The broker's view of topics. Not thread-safe; owned by the broker."""

    def __init__(self, controller: LocalController, replica_manager: ReplicaManager,
                 image: Callable[[], MetadataImage] | None = None) -> None:
        self.controller = controller
        self.replica_manager = replica_manager
        self._image = image if image is not None else (lambda: controller.image)  # the broker's view

    def restore(self, log_store: LogStore) -> None:
        """Adopt the partition directories of a data directory into the controller's image."""
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

    def create(self, name: str, partition_count: int, replication_factor: int = 1) -> TopicInfo:
        topic = self.controller.create_topic(name, partition_count, replication_factor)
        return TopicInfo(name, topic.topic_id, len(topic.partitions))

    def add_partitions(self, name: str, partition_count: int) -> TopicInfo:
        topic = self.controller.create_partitions(name, partition_count)
        return TopicInfo(name, topic.topic_id, len(topic.partitions))

    def delete(self, name: str) -> None:
        self.controller.delete_topic(name)


__all__ = [
    "KRAFT_METADATA_TOPIC", "PARTITIONS_MAX", "TOPIC_NAME_CHARS_MAX", "TopicError", "TopicInfo",
    "TopicRegistry", "validate_topic_name",
]
