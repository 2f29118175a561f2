"""The metadata records that spell out each controller decision.

Theory of operation
-------------------
The controller decides with images (:mod:`.partition_change` computes the next
:class:`PartitionRegistration`); this module writes the decision down as the records Kafka's
controller appends for it, so that replaying them (:mod:`kafkalab.metadata.delta`) rebuilds
exactly the decided state:

* a new topic: one TopicRecord, then one PartitionRecord per partition
  (``ReplicationControlManager.createTopic``);
* a topic's or a broker's configs: one ConfigRecord per key set or removed (a null value);
* a changed partition: one PartitionChangeRecord holding only the fields that moved -- the ISR
  when it changed, the leader when the leader epoch must grow (else -2, which keeps it: a leader
  field, even the same leader, bumps the epoch on replay), the leader recovery state when it
  changed, and the replica lists when a reassignment moved them (``PartitionChangeBuilder.build``);
* a broker joining: RegisterBrokerRecord, fenced as Kafka registers every broker, then
  BrokerRegistrationChangeRecord (fenced -1) once it may serve (``handleBrokerUnfenced``).

Worked example: leader 1 of ``orders-0`` (replicas [1, 2, 3], ISR [1, 2, 3]) is fenced and 2 is
elected: ``PartitionChangeRecord(partitionId=0, topicId=X, isr=[2, 3], leader=2)``; replayed, it
bumps the leader epoch (a leader is present) and the partition epoch.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from kafkalab.metadata import records as r
from kafkalab.metadata.image import BrokerRegistration, MetadataImage, PartitionRegistration, TopicImage
from kafkalab.metadata.snapshot import partition_record, register_broker_record

Change = tuple[str, int, PartitionRegistration]  # (topic, partition, its next registration)


def register_broker(broker: BrokerRegistration) -> list[Any]:
    records: list[Any] = [register_broker_record(broker, fenced=True)]
    if not broker.fenced:
        records.append(r.BROKER_REGISTRATION_CHANGE_RECORD.cls(
            broker_id=broker.broker_id, broker_epoch=broker.broker_epoch, fenced=r.UNFENCE))
    return records


def new_topic(topic: TopicImage) -> list[Any]:
    records: list[Any] = [r.TOPIC_RECORD.cls(name=topic.name, topic_id=topic.topic_id)]
    records += [partition_record(topic.topic_id, index, p) for index, p in sorted(topic.partitions.items())]
    return records


def config_changes(resource_type: int, resource_name: str, changes: Mapping[str, str | None]) -> list[Any]:
    """One ConfigRecord per key, in key order; a None value removes the key
    (``ConfigurationControlManager.incrementalAlterConfig``)."""
    return [r.CONFIG_RECORD.cls(resource_type=resource_type, resource_name=resource_name, name=key, value=value)
            for key, value in sorted(changes.items())]


def partition_change(topic_id: uuid.UUID, index: int, old: PartitionRegistration,
                     new: PartitionRegistration) -> Any:
    """The PartitionChangeRecord turning ``old`` into ``new``: only the fields that differ."""
    assert new.partition_epoch == old.partition_epoch + 1, "a change bumps the partition epoch once"
    assert new.leader_epoch - old.leader_epoch in (0, 1), "a change bumps the leader epoch at most once"
    assert new.leader == old.leader or new.leader_epoch > old.leader_epoch, "a new leader gets a new epoch"

    def changed(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
        return None if a == b else b

    return r.PARTITION_CHANGE_RECORD.cls(
        partition_id=index, topic_id=topic_id, isr=changed(old.isr, new.isr),
        leader=r.NO_LEADER_CHANGE if new.leader_epoch == old.leader_epoch else new.leader,
        replicas=changed(old.replicas, new.replicas),
        removing_replicas=changed(old.removing_replicas, new.removing_replicas),
        adding_replicas=changed(old.adding_replicas, new.adding_replicas),
        leader_recovery_state=(-1 if new.leader_recovery_state == old.leader_recovery_state
                               else new.leader_recovery_state))


def partition_changes(image: MetadataImage, changes: Sequence[Change]) -> list[Any]:
    records = []
    for name, index, registration in changes:
        topic = image.topics[name]
        records.append(partition_change(topic.topic_id, index, topic.partitions[index], registration))
    return records


__all__ = ["Change", "config_changes", "new_topic", "partition_change", "partition_changes", "partition_record", "register_broker"]
