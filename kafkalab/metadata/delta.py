"""Replaying metadata records: records in, a new :class:`MetadataImage` out.

Theory of operation
-------------------
Mirrors Kafka's ``MetadataDelta``: start from an image, :meth:`MetadataDelta.replay` records one
by one, then :meth:`MetadataDelta.apply` builds the next image. The delta keeps only what the
records changed -- the brokers map copied on first change, and per topic the partitions that
changed -- so replaying a batch costs the batch, and :meth:`apply` copies the unchanged rest of
the image by reference. A broker at start-up replays its whole log (and newest snapshot) through
one delta; the active controller replays each decision's records through a fresh one, so the
image it publishes is, by construction, the image any replica of the log would build.

What each record does (``ClusterControlManager``, ``ReplicationControlManager``,
``FeatureControlManager``, ``ConfigurationControlManager``, ``ProducerIdControlManager``):

===============================  ==========================================================
RegisterBrokerRecord             a broker registration replaces any earlier one of its id
Fence/UnfenceBrokerRecord,       fenced / in-controlled-shutdown flags change; the record's
BrokerRegistrationChangeRecord   broker epoch must be the registration's
TopicRecord, RemoveTopicRecord   a topic id appears (no partitions yet) or goes, with its configs
PartitionRecord                  a partition's whole registration
PartitionChangeRecord            merged field by field: null / -2 / -1 mean "unchanged"; a new
                                 leader bumps the leader epoch; every change bumps the
                                 partition epoch (Kafka's ``PartitionRegistration.merge``)
FeatureLevelRecord, ConfigRecord finalized feature levels; config keys (a null value deletes)
ProducerIdsRecord                the next producer id block starts at NextProducerId
NoOpRecord and the rest          nothing in the image
===============================  ==========================================================

Worked example: from an empty image, ``TopicRecord(orders, id X)``, ``PartitionRecord(0, X,
replicas [1, 2], isr [1, 2], leader 1, epochs 0/0)`` and ``PartitionChangeRecord(0, X, isr
[1])`` give ``orders-0`` with ISR (1,), leader 1, leader epoch 0, partition epoch 1.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from kafkalab.metadata import records as r
from kafkalab.metadata.image import BrokerRegistration, MetadataImage, PartitionRegistration, TopicImage
from kafkalab.metadata.records import MetadataRecordError


class MetadataDelta:
    """The changes of a run of records on top of one image. Not thread-safe; used once."""

    def __init__(self, image: MetadataImage) -> None:
        self.image = image
        self._brokers: dict[int, BrokerRegistration] | None = None
        self._names_by_id: dict[uuid.UUID, str] | None = None
        self._topics: dict[str, TopicImage | None] = {}  # created (fresh) or removed (None)
        self._partitions: dict[str, dict[int, PartitionRegistration]] = {}
        self._features: dict[str, int] | None = None
        self._configs: dict[tuple[int, str], dict[str, str]] | None = None
        self._next_producer_id = image.next_producer_id
        self._offset = image.offset

    def replay(self, record: Any, offset: int | None = None) -> None:
        """Apply one record (at ``offset`` in the log, if known). Raises MetadataRecordError
        when the record contradicts the image (a partition of an unknown topic, a stale epoch)."""
        handler = _REPLAY.get(type(record))
        if handler is not None:
            try:
                handler(self, record)
            except ValueError as exc:  # a registration that breaks PartitionRegistration's rules
                raise MetadataRecordError(f"Unable to replay {type(record).__name__}: {exc}") from None
        if offset is not None:
            self._offset = offset

    def mark_offset(self, offset: int) -> None:
        """The log offset of the last record replayed, when the records came without one each."""
        self._offset = offset

    def replay_all(self, records: Iterable[Any]) -> None:
        for record in records:
            self.replay(record)

    def apply(self) -> MetadataImage:
        """The image with every replayed record applied."""
        image = self.image
        topics = image.topics
        if self._topics or self._partitions:
            topics = dict(image.topics)
            for name, created in self._topics.items():
                if created is None:
                    topics.pop(name, None)
                else:
                    topics[name] = created
            for name, changed in self._partitions.items():
                topic = topics[name]
                topics[name] = replace(topic, partitions={**topic.partitions, **changed})
        return replace(
            image, offset=self._offset, topics=topics,
            brokers=image.brokers if self._brokers is None else self._brokers,
            features=image.features if self._features is None else self._features,
            configs=image.configs if self._configs is None else self._configs,
            next_producer_id=self._next_producer_id)

    # --- lookups through the delta -----------------------------------------------------------

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        brokers = self.image.brokers if self._brokers is None else self._brokers
        return brokers.get(broker_id)

    def topic_name(self, topic_id: uuid.UUID, what: str) -> str:
        if self._names_by_id is None:
            self._names_by_id = {t.topic_id: t.name for t in self.image.topics.values()}
        name = self._names_by_id.get(topic_id)
        if name is None:
            raise MetadataRecordError(f"Unable to replay {what}: no topic with id {topic_id}")
        return name

    def partition(self, name: str, index: int) -> PartitionRegistration | None:
        changed = self._partitions.get(name, {}).get(index)
        if changed is not None:
            return changed
        if name in self._topics:  # created in this delta: only its own partitions exist
            return None
        return self.image.partition(name, index)

    # --- the replay methods --------------------------------------------------------------------

    def _put_broker(self, broker: BrokerRegistration) -> None:
        if self._brokers is None:
            self._brokers = dict(self.image.brokers)
        self._brokers[broker.broker_id] = broker

    def _change_broker(self, what: str, broker_id: int, epoch: int, fenced: bool | None,
                       in_controlled_shutdown: bool | None) -> None:
        current = self.broker(broker_id)
        if current is None or current.broker_epoch != epoch:
            raise MetadataRecordError(
                f"Unable to replay {what}: no broker {broker_id} registered with epoch {epoch}")
        self._put_broker(replace(
            current, fenced=current.fenced if fenced is None else fenced,
            in_controlled_shutdown=(current.in_controlled_shutdown if in_controlled_shutdown is None
                                    else in_controlled_shutdown)))

    def register_broker(self, record: Any) -> None:
        endpoint = record.end_points[0] if record.end_points else None
        self._put_broker(BrokerRegistration(
            record.broker_id, record.broker_epoch, endpoint.host if endpoint else "",
            endpoint.port if endpoint else 0, record.rack, record.fenced, record.in_controlled_shutdown,
            record.incarnation_id))

    def unregister_broker(self, record: Any) -> None:
        current = self.broker(record.broker_id)
        if current is None or current.broker_epoch != record.broker_epoch:
            raise MetadataRecordError(f"Unable to replay UnregisterBrokerRecord: no broker "
                                      f"{record.broker_id} registered with epoch {record.broker_epoch}")
        if self._brokers is None:
            self._brokers = dict(self.image.brokers)
        del self._brokers[record.broker_id]

    def fence_broker(self, record: Any) -> None:
        self._change_broker("FenceBrokerRecord", record.id, record.epoch, True, None)

    def unfence_broker(self, record: Any) -> None:
        self._change_broker("UnfenceBrokerRecord", record.id, record.epoch, False, None)

    def change_broker_registration(self, record: Any) -> None:
        fenced = _FENCING.get(record.fenced, _BAD)
        shutdown = _IN_CONTROLLED_SHUTDOWN.get(record.in_controlled_shutdown, _BAD)
        if fenced is _BAD or shutdown is _BAD:
            raise MetadataRecordError(
                f"Unable to replay BrokerRegistrationChangeRecord: unknown fenced "
                f"{record.fenced} or inControlledShutdown {record.in_controlled_shutdown}")
        self._change_broker("BrokerRegistrationChangeRecord", record.broker_id, record.broker_epoch,
                            fenced, shutdown)

    def create_topic(self, record: Any) -> None:
        if self._names_by_id is None:
            self._names_by_id = {t.topic_id: t.name for t in self.image.topics.values()}
        self._names_by_id[record.topic_id] = record.name
        self._topics[record.name] = TopicImage(record.name, record.topic_id, {})
        self._partitions[record.name] = {}

    def remove_topic(self, record: Any) -> None:
        name = self.topic_name(record.topic_id, "RemoveTopicRecord")
        assert self._names_by_id is not None
        del self._names_by_id[record.topic_id]
        self._topics[name] = None
        self._partitions.pop(name, None)
        key = (r.CONFIG_RESOURCE_TOPIC, name)
        if key in (self.image.configs if self._configs is None else self._configs):
            self._own_configs().pop(key)

    def put_partition(self, record: Any) -> None:
        name = self.topic_name(record.topic_id, "PartitionRecord")
        self._partitions.setdefault(name, {})[record.partition_id] = PartitionRegistration(
            tuple(record.replicas), tuple(record.isr), record.leader, record.leader_epoch,
            record.partition_epoch, tuple(record.adding_replicas), tuple(record.removing_replicas),
            record.leader_recovery_state)

    def change_partition(self, record: Any) -> None:
        name = self.topic_name(record.topic_id, "PartitionChangeRecord")
        current = self.partition(name, record.partition_id)
        if current is None:
            raise MetadataRecordError(f"Unable to replay PartitionChangeRecord: no partition "
                                      f"{name}-{record.partition_id}")
        self._partitions.setdefault(name, {})[record.partition_id] = merge_partition_change(current, record)

    def set_feature(self, record: Any) -> None:
        if self._features is None:
            self._features = dict(self.image.features)
        if record.feature_level == 0:  # level 0 removes a feature
            self._features.pop(record.name, None)
        else:
            self._features[record.name] = record.feature_level

    def _own_configs(self) -> dict[tuple[int, str], dict[str, str]]:
        if self._configs is None:
            self._configs = {key: dict(values) for key, values in self.image.configs.items()}
        return self._configs

    def set_config(self, record: Any) -> None:
        values = self._own_configs().setdefault((record.resource_type, record.resource_name), {})
        if record.value is None:
            values.pop(record.name, None)
        else:
            values[record.name] = record.value

    def set_producer_ids(self, record: Any) -> None:
        if record.next_producer_id <= self._next_producer_id and self._next_producer_id > 0:
            raise MetadataRecordError(
                f"Next producer id from replayed record ({record.next_producer_id}) is not greater "
                f"than the current next producer id ({self._next_producer_id})")
        self._next_producer_id = record.next_producer_id


def merge_partition_change(current: PartitionRegistration, record: Any) -> PartitionRegistration:
    """Kafka's ``PartitionRegistration.merge``: every field the record carries replaces the
    current one; a leader (any, even -1) bumps the leader epoch; the partition epoch always grows."""
    def pick(value: Any, old: tuple[int, ...]) -> tuple[int, ...]:
        return old if value is None else tuple(value)

    leader_changed = record.leader != r.NO_LEADER_CHANGE
    return PartitionRegistration(
        pick(record.replicas, current.replicas), pick(record.isr, current.isr),
        record.leader if leader_changed else current.leader,
        current.leader_epoch + (1 if leader_changed else 0), current.partition_epoch + 1,
        pick(record.adding_replicas, current.adding_replicas),
        pick(record.removing_replicas, current.removing_replicas),
        current.leader_recovery_state if record.leader_recovery_state == -1 else record.leader_recovery_state)


_BAD: Any = object()
_FENCING: dict[int, bool | None] = {r.FENCE: True, r.NO_CHANGE: None, r.UNFENCE: False}
_IN_CONTROLLED_SHUTDOWN: dict[int, bool | None] = {r.NO_CHANGE: None, r.IN_CONTROLLED_SHUTDOWN: True}

_REPLAY: dict[type, Callable[[MetadataDelta, Any], None]] = {
    r.REGISTER_BROKER_RECORD.cls: MetadataDelta.register_broker,
    r.UNREGISTER_BROKER_RECORD.cls: MetadataDelta.unregister_broker,
    r.FENCE_BROKER_RECORD.cls: MetadataDelta.fence_broker,
    r.UNFENCE_BROKER_RECORD.cls: MetadataDelta.unfence_broker,
    r.BROKER_REGISTRATION_CHANGE_RECORD.cls: MetadataDelta.change_broker_registration,
    r.TOPIC_RECORD.cls: MetadataDelta.create_topic,
    r.REMOVE_TOPIC_RECORD.cls: MetadataDelta.remove_topic,
    r.PARTITION_RECORD.cls: MetadataDelta.put_partition,
    r.PARTITION_CHANGE_RECORD.cls: MetadataDelta.change_partition,
    r.FEATURE_LEVEL_RECORD.cls: MetadataDelta.set_feature,
    r.CONFIG_RECORD.cls: MetadataDelta.set_config,
    r.PRODUCER_IDS_RECORD.cls: MetadataDelta.set_producer_ids,
}


def replay(image: MetadataImage, records: Iterable[Any], offset: int | None = None) -> MetadataImage:
    """``image`` with ``records`` applied; the new image's offset is ``offset`` if given."""
    delta = MetadataDelta(image)
    delta.replay_all(records)
    if offset is not None:
        delta.mark_offset(offset)
    return delta.apply()


__all__ = ["MetadataDelta", "merge_partition_change", "replay"]
