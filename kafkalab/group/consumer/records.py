"""The records a KIP-848 consumer group keeps in ``__consumer_offsets``, in Kafka's schemas.

Theory of operation
-------------------
A consumer group is stored as six kinds of compacted records, each key starting with its int16
record type (Kafka's ``CoordinatorRecordType``) and each value with its int16 version, framed as
the classic records are (:mod:`kafkalab.group.records`). Keys are not flexible; values are::

    type  key (group id, [member id])            value (version 0, flexible)
    3     ConsumerGroupMetadataKey               ConsumerGroupMetadataValue: group epoch
    4     ConsumerGroupPartitionMetadataKey      ...PartitionMetadataValue: subscribed topics,
                                                 their ids and partition counts
    5     ConsumerGroupMemberMetadataKey (+m)    ...MemberMetadataValue: subscription, client
    6     ConsumerGroupTargetAssignmentMetadataKey  ...TargetAssignmentMetadataValue: assignment epoch
    7     ConsumerGroupTargetAssignmentMemberKey (+m) ...TargetAssignmentMemberValue: its target
    8     ConsumerGroupCurrentMemberAssignmentKey (+m) ...CurrentMemberAssignmentValue: member
                                                 epoch, state, owned and revoking partitions

A tombstone (no value) removes what its key names. Kafka writes a member's removal as
tombstones of types 8, 7 and 5, in that order, then a new group epoch; a group's removal as
every member's tombstones, then 6, 4 and 3. Replaying the records in log order rebuilds the
group (:mod:`kafkalab.group.consumer.replay`).

The declarations are Kafka 3.9's ``group-coordinator/src/main/resources/common/message/`` specs
(what the 3.9 broker writes), in kafkalab's snake_case; the JSON printer camel-cases them back
(``member_epoch`` -> ``memberEpoch``). ``kafkalab dump-log --offsets-decoder`` uses these same
declarations.

Worked example: group ``g`` moving to epoch 2 appends key ``0003 0001 67`` (type 3, string
``"g"``) with value ``0000 00000002 00`` (version 0, epoch 2, no tagged fields).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafkalab.errors import CorruptRecordError
from kafkalab.group.consumer.member import ClassicMemberMetadata, ConsumerGroupMember
from kafkalab.group.records import framed, record_type as record_type_of
from kafkalab.protocol.schema import Field, Message, f, message

CONSUMER_GROUP_METADATA_TYPE = 3
CONSUMER_GROUP_PARTITION_METADATA_TYPE = 4
CONSUMER_GROUP_MEMBER_METADATA_TYPE = 5
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_TYPE = 6
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_TYPE = 7
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_TYPE = 8
VALUE_VERSION = 0
KEY_VERSION = 0

_GROUP_ID = f("group_id", "string")
_MEMBER_ID = f("member_id", "string")


def _key(name: str, *extra: Field) -> Message:
    # Kafka's key specs say ``flexibleVersions: none``: int16-length strings, no tag section.
    return message(name, valid="0", flexible="none", fields=[_GROUP_ID, *extra])


def _value(name: str, *fields: Field) -> Message:
    return message(name, valid="0", flexible="0+", fields=fields)


def _topic_partitions(name: str, struct_name: str) -> Field:
    return f(name, f"[]{struct_name}", fields=(f("topic_id", "uuid"), f("partitions", "[]int32")))


CONSUMER_GROUP_KEYS: dict[int, Message] = {
    3: _key("ConsumerGroupMetadataKey"),
    4: _key("ConsumerGroupPartitionMetadataKey"),
    5: _key("ConsumerGroupMemberMetadataKey", _MEMBER_ID),
    6: _key("ConsumerGroupTargetAssignmentMetadataKey"),
    7: _key("ConsumerGroupTargetAssignmentMemberKey", _MEMBER_ID),
    8: _key("ConsumerGroupCurrentMemberAssignmentKey", _MEMBER_ID),
}

CONSUMER_GROUP_VALUES: dict[int, Message] = {
    3: _value("ConsumerGroupMetadataValue", f("epoch", "int32")),
    4: _value("ConsumerGroupPartitionMetadataValue",
              f("topics", "[]TopicMetadata", fields=(
                  f("topic_id", "uuid"),
                  f("topic_name", "string"),
                  f("num_partitions", "int32"),
                  f("partition_metadata", "[]PartitionMetadata", fields=(
                      f("partition", "int32"), f("racks", "[]string")))))),
    5: _value("ConsumerGroupMemberMetadataValue",
              f("instance_id", "string", nullable="0+"),
              f("rack_id", "string", nullable="0+"),
              f("client_id", "string"),
              f("client_host", "string"),
              f("subscribed_topic_names", "[]string"),
              f("subscribed_topic_regex", "string", nullable="0+"),
              f("rebalance_timeout_ms", "int32", default=-1),
              f("server_assignor", "string", nullable="0+"),
              f("classic_member_metadata", "ClassicMemberMetadata", nullable="0+", tag=0, default=None,
                fields=(f("session_timeout_ms", "int32"),
                        f("supported_protocols", "[]ClassicProtocol", fields=(
                            f("name", "string"), f("metadata", "bytes")))))),
    6: _value("ConsumerGroupTargetAssignmentMetadataValue", f("assignment_epoch", "int32")),
    7: _value("ConsumerGroupTargetAssignmentMemberValue", _topic_partitions("topic_partitions", "TopicPartition")),
    8: _value("ConsumerGroupCurrentMemberAssignmentValue",
              f("member_epoch", "int32"),
              f("previous_member_epoch", "int32"),
              f("state", "int8"),
              _topic_partitions("assigned_partitions", "TopicPartitions"),
              _topic_partitions("partitions_pending_revocation", "TopicPartitions")),
}

Assignment = Mapping[uuid.UUID, frozenset[int]]  # topic id -> partitions
KeyValue = tuple[bytes, bytes | None]


def key(record_type: int, group_id: str, member_id: str | None = None) -> bytes:
    schema = CONSUMER_GROUP_KEYS[record_type]
    body = schema.cls(group_id=group_id) if member_id is None else schema.cls(group_id=group_id, member_id=member_id)
    return framed(record_type, schema, body, KEY_VERSION)


def value(record_type: int, **fields: Any) -> bytes:
    schema = CONSUMER_GROUP_VALUES[record_type]
    return framed(VALUE_VERSION, schema, schema.cls(**fields), VALUE_VERSION)


def topic_partitions(struct_cls: Any, assignment: Assignment) -> tuple[Any, ...]:
    """An assignment as the records' sorted list of (topic id, partitions)."""
    return tuple(struct_cls(topic_id=topic_id, partitions=tuple(sorted(parts)))
                 for topic_id, parts in sorted(assignment.items()) if parts)


def from_topic_partitions(entries: Any) -> dict[uuid.UUID, frozenset[int]]:
    return {entry.topic_id: frozenset(entry.partitions) for entry in entries or ()}


def group_epoch_record(group_id: str, epoch: int) -> KeyValue:
    return key(3, group_id), value(3, epoch=epoch)


def partition_metadata_record(group_id: str, topics: Mapping[str, tuple[uuid.UUID, int]]) -> KeyValue:
    cls = CONSUMER_GROUP_VALUES[4].cls.TopicMetadata
    entries = tuple(cls(topic_id=topic_id, topic_name=name, num_partitions=count, partition_metadata=())
                    for name, (topic_id, count) in sorted(topics.items()))
    return key(4, group_id), value(4, topics=entries)


def target_assignment_epoch_record(group_id: str, epoch: int) -> KeyValue:
    return key(6, group_id), value(6, assignment_epoch=epoch)


def target_assignment_member_record(group_id: str, member_id: str, assignment: Assignment) -> KeyValue:
    cls = CONSUMER_GROUP_VALUES[7].cls.TopicPartition
    return key(7, group_id, member_id), value(7, topic_partitions=topic_partitions(cls, assignment))


def member_metadata_record(group_id: str, member: ConsumerGroupMember) -> KeyValue:
    return key(5, group_id, member.member_id), value(
        5, instance_id=member.instance_id, rack_id=member.rack_id, client_id=member.client_id,
        client_host=member.client_host, subscribed_topic_names=member.subscribed_topic_names,
        subscribed_topic_regex=None, rebalance_timeout_ms=member.rebalance_timeout_ms,
        server_assignor=member.server_assignor, classic_member_metadata=_classic_metadata(member.classic))


def _classic_metadata(classic: ClassicMemberMetadata | None) -> Any:
    if classic is None:
        return None
    cls = CONSUMER_GROUP_VALUES[5].cls.ClassicMemberMetadata
    return cls(session_timeout_ms=classic.session_timeout_ms, supported_protocols=tuple(
        cls.ClassicProtocol(name=name, metadata=metadata) for name, metadata in classic.protocols))


def current_assignment_record(group_id: str, member: ConsumerGroupMember) -> KeyValue:
    cls = CONSUMER_GROUP_VALUES[8].cls.TopicPartitions
    return key(8, group_id, member.member_id), value(
        8, member_epoch=member.member_epoch, previous_member_epoch=member.previous_member_epoch,
        state=member.state.value, assigned_partitions=topic_partitions(cls, member.assigned),
        partitions_pending_revocation=topic_partitions(cls, member.pending_revocation))


def tombstone(record_type: int, group_id: str, member_id: str | None = None) -> KeyValue:
    return key(record_type, group_id, member_id), None


@dataclass(frozen=True, slots=True)
class DecodedRecord:
    """One consumer group record read back: its type, whom it names, and its value (None for
    a tombstone)."""

    record_type: int
    group_id: str
    member_id: str | None
    value: Any


def decode(key_bytes: bytes, value_bytes: bytes | None) -> DecodedRecord:
    """A consumer group record, by the record type its key starts with."""
    record_type = record_type_of(key_bytes)
    key_schema = CONSUMER_GROUP_KEYS.get(record_type)
    if key_schema is None:
        raise CorruptRecordError(f"__consumer_offsets record type {record_type} is not a consumer group record",
                                 position=0)
    body = key_schema.decode(memoryview(key_bytes)[2:], KEY_VERSION)
    decoded = None
    if value_bytes is not None:
        version = record_type_of(value_bytes)
        decoded = CONSUMER_GROUP_VALUES[record_type].decode(memoryview(value_bytes)[2:], version)
    return DecodedRecord(record_type, body.group_id, getattr(body, "member_id", None), decoded)


__all__ = [
    "CONSUMER_GROUP_KEYS", "CONSUMER_GROUP_VALUES", "DecodedRecord", "current_assignment_record", "decode",
    "group_epoch_record", "key", "member_metadata_record", "partition_metadata_record",
    "target_assignment_epoch_record", "target_assignment_member_record", "tombstone", "value",
]
