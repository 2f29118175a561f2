"""``--offsets-decoder``: the group coordinator's records in ``__consumer_offsets``.

Theory of operation
-------------------
Each record's key starts with a record type (Kafka's ``CoordinatorRecordType``) that picks
the key and value messages, transcribed here from the specs in Kafka's
``group-coordinator/src/main/resources/common/message/``:

====  =========================================  ================================================
type  key                                        value
====  =========================================  ================================================
0, 1  OffsetCommitKey (group, topic, partition)  OffsetCommitValue v0-4 (v4 flexible)
2     GroupMetadataKey (group)                   GroupMetadataValue v0-4 (classic protocol)
3     ConsumerGroupMetadataKey                   ConsumerGroupMetadataValue (KIP-848 group epoch)
4     ConsumerGroupPartitionMetadataKey          ConsumerGroupPartitionMetadataValue
5     ConsumerGroupMemberMetadataKey             ConsumerGroupMemberMetadataValue
6     ConsumerGroupTargetAssignmentMetadataKey   ConsumerGroupTargetAssignmentMetadataValue
7     ConsumerGroupTargetAssignmentMemberKey     ConsumerGroupTargetAssignmentMemberValue
8     ConsumerGroupCurrentMemberAssignmentKey    ConsumerGroupCurrentMemberAssignmentValue
====  =========================================  ================================================

Type 0 is the pre-0.10 offset commit key; its layout is the same as type 1's. Share-group and
streams-group records (types 9 and up) print as ``Unknown record type``.

A classic group of protocol type ``consumer`` keeps each member's subscription and assignment
as opaque bytes; like Kafka's ``OffsetsMessageParser`` the decoder expands them into
``ConsumerProtocolSubscription`` / ``ConsumerProtocolAssignment`` JSON (each starts with its own
int16 version), and keeps the base64 bytes when they do not decode. For example a member
subscribed to ``orders`` prints ``"subscription":{"topics":["orders"],"userData":null,
"ownedPartitions":[],"generationId":5,"rackId":null}`` at subscription version 3.
"""

from __future__ import annotations

import base64
import binascii

from kafkalab.errors import KafkaError
from kafkalab.protocol.types import Reader
from kafkalab.records import Record
from kafkalab.tools.decoders.coordinator import CoordinatorDecoder, ParseResult, RecordType
from kafkalab.tools.decoders.schema import JsonValue, Spec, field, read_message, spec

CONSUMER_PROTOCOL_TYPE = "consumer"  # ConsumerProtocol.PROTOCOL_TYPE
GROUP_METADATA_TYPE = 2

_GROUP_ID = field("GroupId", "string")
_MEMBER_ID = field("MemberId", "string")

OFFSET_COMMIT_KEY = spec("OffsetCommitKey", "0", None,
                         field("group", "string"), field("topic", "string"),
                         field("partition", "int32"))
OFFSET_COMMIT_VALUE = spec(
    "OffsetCommitValue", "0-4", "4+",
    field("offset", "int64"),
    field("leaderEpoch", "int32", "3+"),
    field("metadata", "string"),
    field("commitTimestamp", "int64"),
    field("expireTimestamp", "int64", "1"),
)
GROUP_METADATA_KEY = spec("GroupMetadataKey", "0", None, field("group", "string"))
_MEMBER_METADATA = (
    field("memberId", "string"),
    field("groupInstanceId", "string", "3+", nullable="3+"),
    field("clientId", "string"),
    field("clientHost", "string"),
    field("rebalanceTimeout", "int32", "1+"),
    field("sessionTimeout", "int32"),
    field("subscription", "bytes"),
    field("assignment", "bytes"),
)
GROUP_METADATA_VALUE = spec(
    "GroupMetadataValue", "0-4", "4+",
    field("protocolType", "string"),
    field("generation", "int32"),
    field("protocol", "string", nullable="0+"),
    field("leader", "string", nullable="0+"),
    field("currentStateTimestamp", "int64", "2+"),
    field("members", "[]MemberMetadata", fields=_MEMBER_METADATA),
)


def _group_key(name: str, *extra) -> Spec:
    return spec(name, "0", "0+", _GROUP_ID, *extra)


_TOPIC_PARTITIONS = (
    field("TopicId", "uuid"),
    field("Partitions", "[]int32"),
    field("AssignmentEpochs", "[]int32", nullable="0+", tag=0, default=None),
)
CONSUMER_GROUP_VALUES = {
    3: spec("ConsumerGroupMetadataValue", "0", "0+",
            field("Epoch", "int32"),
            field("MetadataHash", "int64", tag=0, default=0),
            field("CreationTimeMs", "int64", tag=1, default=-1)),
    4: spec("ConsumerGroupPartitionMetadataValue", "0", "0+",
            field("Epoch", "int32"),
            field("Topics", "[]TopicMetadata", fields=(
                field("TopicId", "uuid"),
                field("TopicName", "string"),
                field("NumPartitions", "int32"),
                field("PartitionRacks", "[]PartitionMetadata", fields=(
                    field("Partition", "int32"), field("Racks", "[]string")))))),
    5: spec("ConsumerGroupMemberMetadataValue", "0", "0+",
            field("InstanceId", "string", nullable="0+"),
            field("RackId", "string", nullable="0+"),
            field("ClientId", "string"),
            field("ClientHost", "string"),
            field("SubscribedTopicNames", "[]string"),
            field("SubscribedTopicRegex", "string", nullable="0+"),
            field("RebalanceTimeoutMs", "int32"),
            field("ServerAssignor", "string", nullable="0+"),
            field("ClassicMemberMetadata", "ClassicMemberMetadata", nullable="0+", tag=0,
                  default=None, fields=(
                      field("SupportedProtocols", "[]ClassicProtocol", fields=(
                          field("Name", "string"), field("Metadata", "bytes"))),))),
    6: spec("ConsumerGroupTargetAssignmentMetadataValue", "0", "0+",
            field("AssignmentEpoch", "int32"),
            field("AssignmentTimestamp", "int64", tag=0, default=0)),
    7: spec("ConsumerGroupTargetAssignmentMemberValue", "0", "0+",
            field("TopicPartitions", "[]TopicPartition", fields=(
                field("TopicId", "uuid"), field("Partitions", "[]int32")))),
    8: spec("ConsumerGroupCurrentMemberAssignmentValue", "0", "0+",
            field("MemberEpoch", "int32"),
            field("PreviousMemberEpoch", "int32"),
            field("State", "int8"),
            field("AssignedPartitions", "[]TopicPartitions", fields=_TOPIC_PARTITIONS),
            field("PartitionsPendingRevocation", "[]TopicPartitions", fields=_TOPIC_PARTITIONS)),
}
_CONSUMER_GROUP_KEYS = {
    3: _group_key("ConsumerGroupMetadataKey"),
    4: _group_key("ConsumerGroupPartitionMetadataKey"),
    5: _group_key("ConsumerGroupMemberMetadataKey", _MEMBER_ID),
    6: _group_key("ConsumerGroupTargetAssignmentMetadataKey"),
    7: _group_key("ConsumerGroupTargetAssignmentMemberKey", _MEMBER_ID),
    8: _group_key("ConsumerGroupCurrentMemberAssignmentKey", _MEMBER_ID),
}

GROUP_RECORD_TYPES: dict[int, RecordType] = {
    0: RecordType(OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    1: RecordType(OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    GROUP_METADATA_TYPE: RecordType(GROUP_METADATA_KEY, GROUP_METADATA_VALUE),
    **{t: RecordType(_CONSUMER_GROUP_KEYS[t], CONSUMER_GROUP_VALUES[t]) for t in _CONSUMER_GROUP_KEYS},
}

# The embedded consumer protocol (clients' ConsumerProtocolSubscription/Assignment.json).
_TOPIC_PARTITION = (field("Topic", "string"), field("Partitions", "[]int32"))
CONSUMER_PROTOCOL_SUBSCRIPTION = spec(
    "ConsumerProtocolSubscription", "0-3", None,
    field("Topics", "[]string"),
    field("UserData", "bytes", nullable="0+"),
    field("OwnedPartitions", "[]TopicPartition", "1+", fields=_TOPIC_PARTITION),
    field("GenerationId", "int32", "2+"),
    field("RackId", "string", "3+", nullable="3+"),
)
CONSUMER_PROTOCOL_ASSIGNMENT = spec(
    "ConsumerProtocolAssignment", "0-3", None,
    field("AssignedPartitions", "[]TopicPartition", fields=_TOPIC_PARTITION),
    field("UserData", "bytes", nullable="0+"),
)


def _expand(encoded: JsonValue, message: Spec) -> JsonValue:
    """Decode base64 consumer-protocol bytes into JSON; on any failure keep the bytes."""
    if not isinstance(encoded, str):
        return encoded
    try:
        reader = Reader(base64.b64decode(encoded, validate=True))
        return read_message(message, reader, reader.int16())
    except (KafkaError, binascii.Error):
        return encoded


def expand_consumer_protocol(record_type: int, value: dict[str, JsonValue]) -> dict[str, JsonValue]:
    """For a ``consumer`` classic group, show each member's subscription and assignment."""
    if record_type != GROUP_METADATA_TYPE or value.get("protocolType") != CONSUMER_PROTOCOL_TYPE:
        return value
    for member in value.get("members") or ():
        member["subscription"] = _expand(member.get("subscription"), CONSUMER_PROTOCOL_SUBSCRIPTION)
        member["assignment"] = _expand(member.get("assignment"), CONSUMER_PROTOCOL_ASSIGNMENT)
    return value


OFFSETS_DECODER = CoordinatorDecoder(GROUP_RECORD_TYPES, expand_consumer_protocol)


def parse_offsets(record: Record) -> ParseResult:
    """``(key, payload)`` text of one ``__consumer_offsets`` record."""
    return OFFSETS_DECODER.parse(record)


__all__ = ["GROUP_RECORD_TYPES", "OFFSETS_DECODER", "expand_consumer_protocol", "parse_offsets"]
