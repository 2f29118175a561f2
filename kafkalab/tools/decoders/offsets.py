"""``--offsets-decoder``: the group coordinator's records in ``__consumer_offsets``.

Theory of operation
-------------------
Each record's key starts with a record type (Kafka's ``CoordinatorRecordType``) that picks
the key and value messages of Kafka's ``group-coordinator/src/main/resources/common/message/``
specs. Types 0-2 are the classic group protocol's records, declared once in
:mod:`kafkalab.group.records`; types 3-8 are the KIP-848 consumer group's records, declared once
in :mod:`kafkalab.group.consumer.records`. kafkalab's coordinator writes and replays both, and
this decoder imports both declarations:

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
int16 version; both declared once, in :mod:`kafkalab.protocol.messages.consumer_protocol`),
and keeps the base64 bytes when they do not decode. For example a member
subscribed to ``orders`` prints ``"subscription":{"topics":["orders"],"userData":null,
"ownedPartitions":[],"generationId":5,"rackId":null}`` at subscription version 3.
"""

from __future__ import annotations

import base64
import binascii

from kafkalab.errors import KafkaError
from kafkalab.group.consumer.records import CONSUMER_GROUP_KEYS, CONSUMER_GROUP_VALUES
from kafkalab.group.records import CLASSIC_RECORD_TYPES, GROUP_METADATA_TYPE
from kafkalab.protocol.messages.consumer_protocol import (
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    PROTOCOL_TYPE as CONSUMER_PROTOCOL_TYPE,
)
from kafkalab.protocol.schema import Message
from kafkalab.protocol.schema_json import JsonValue, read_json
from kafkalab.protocol.types import Reader
from kafkalab.records import Record
from kafkalab.tools.decoders.coordinator import CoordinatorDecoder, ParseResult, RecordType

GROUP_RECORD_TYPES: dict[int, RecordType] = {
    **{t: RecordType(key, value) for t, (key, value) in CLASSIC_RECORD_TYPES.items()},
    **{t: RecordType(CONSUMER_GROUP_KEYS[t], CONSUMER_GROUP_VALUES[t]) for t in CONSUMER_GROUP_KEYS},
}

def _expand(encoded: JsonValue, embedded: Message) -> JsonValue:
    """Decode base64 consumer-protocol bytes into JSON; on any failure keep the bytes."""
    if not isinstance(encoded, str):
        return encoded
    try:
        reader = Reader(base64.b64decode(encoded, validate=True))
        return read_json(embedded, reader, reader.int16())
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
