"""The records of the KRaft metadata log (``__cluster_metadata``), declared once, in Kafka's formats.

Theory of operation
-------------------
Every decision of a KRaft controller is written to the metadata log as records; brokers and
controllers rebuild the cluster by replaying them (:mod:`kafkalab.metadata.delta`). A record has
no key. Its value is framed by Kafka's ``AbstractApiMessageSerde``::

    frame version uvarint (1) | api key uvarint | version uvarint | body (flexible: compact
                                                                    strings and arrays, tags)

The bodies follow ``metadata/src/main/resources/common/metadata/*.json`` field by field; the
declarations below are those specs in kafkalab's schema language (snake_case names, which Kafka's
JSON converter camel-cases back: ``partition_epoch`` prints as ``partitionEpoch``).

Which version a controller writes depends on the cluster's ``metadata.version``
(``MetadataVersion.partitionRecordVersion()`` and friends). kafkalab writes what a controller at
``3.6-IV2`` (feature level 14, the last level before log-directory ids) writes: PartitionRecord
and PartitionChangeRecord v0, RegisterBrokerRecord v2, every other record v0 (a fencing change
is BrokerRegistrationChangeRecord v0; Kafka writes v1 only to mark a controlled shutdown). It reads every version Kafka defines.

Worked example: a TopicRecord for ``"foo"`` is 24 bytes::

    01 02 00 | 04 66 6f 6f | <16 topic id bytes> | 00
    frame  key ver  name (compact: 3 + 1)          no tagged fields

A PartitionChangeRecord carries only what changed: a null ISR means "unchanged", leader -2
means "no leader change", and both sit in the tag section, so an ISR shrink of one partition is
frame (3) + partition id (4) + topic id (16) + one tag section holding the ISR.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.protocol.schema import Field, Message, f, message
from kafkalab.protocol.types import Reader, Writer

FRAME_VERSION = 1  # AbstractApiMessageSerde.DEFAULT_FRAME_VERSION
INT16_MAX = 32767
NO_LEADER_CHANGE = -2  # PartitionChangeRecord.Leader's default: the leader stays
METADATA_VERSION = "3.6-IV2"  # the metadata.version whose record versions kafkalab writes
METADATA_VERSION_LEVEL = 14  # MetadataVersion.IBP_3_6_IV2.featureLevel()

# FeatureLevelRecord / ConfigRecord constants.
METADATA_VERSION_FEATURE = "metadata.version"
CONFIG_RESOURCE_TOPIC = 2  # ConfigResource.Type.TOPIC
CONFIG_RESOURCE_BROKER = 4  # ConfigResource.Type.BROKER

# BrokerRegistrationChangeRecord's int8 codes (BrokerRegistrationFencingChange and
# BrokerRegistrationInControlledShutdownChange).
FENCE, NO_CHANGE, UNFENCE = 1, 0, -1
IN_CONTROLLED_SHUTDOWN = 1

_ENDPOINT = (f("name", "string"), f("host", "string"), f("port", "uint16"), f("security_protocol", "int16"))
_FEATURE = (f("name", "string"), f("min_supported_version", "int16"), f("max_supported_version", "int16"))


def _null_array(name: str, type_: str, tag: int, versions: str = "0+") -> Field:
    """A nullable tagged array whose default is null (sent only when it holds a value)."""
    return f(name, type_, versions, nullable=versions, tag=tag, default=None)


def _record(name: str, valid: str, *fields: Field) -> Message:
    """A metadata record: flexible in every version."""
    return message(name, valid=valid, flexible="0+", fields=fields)


REGISTER_BROKER_RECORD = _record(
    "RegisterBrokerRecord", "0-3",
    f("broker_id", "int32"),
    f("is_migrating_zk_broker", "bool", "2+"),
    f("incarnation_id", "uuid"),
    f("broker_epoch", "int64"),
    f("end_points", "[]BrokerEndpoint", fields=_ENDPOINT),
    f("features", "[]BrokerFeature", fields=_FEATURE),
    f("rack", "string", nullable="0+"),
    f("fenced", "bool", default=True),
    f("in_controlled_shutdown", "bool", "1+"),
    f("log_dirs", "[]uuid", "3+", tag=0, default=()))
UNREGISTER_BROKER_RECORD = _record(
    "UnregisterBrokerRecord", "0", f("broker_id", "int32"), f("broker_epoch", "int64"))
TOPIC_RECORD = _record("TopicRecord", "0", f("name", "string"), f("topic_id", "uuid"))
PARTITION_RECORD = _record(
    "PartitionRecord", "0-2",
    f("partition_id", "int32", default=-1),
    f("topic_id", "uuid"),
    f("replicas", "[]int32"),
    f("isr", "[]int32"),
    f("removing_replicas", "[]int32"),
    f("adding_replicas", "[]int32"),
    f("leader", "int32", default=-1),
    f("leader_recovery_state", "int8", tag=0, default=0),
    f("leader_epoch", "int32", default=-1),
    f("partition_epoch", "int32", default=-1),
    f("directories", "[]uuid", "1+"),
    _null_array("eligible_leader_replicas", "[]int32", 1, "2+"),
    _null_array("last_known_elr", "[]int32", 2, "2+"))
CONFIG_RECORD = _record(
    "ConfigRecord", "0", f("resource_type", "int8"), f("resource_name", "string"),
    f("name", "string"), f("value", "string", nullable="0+"))
PARTITION_CHANGE_RECORD = _record(
    "PartitionChangeRecord", "0-2",
    f("partition_id", "int32", default=-1),
    f("topic_id", "uuid"),
    _null_array("isr", "[]int32", 0),
    f("leader", "int32", tag=1, default=NO_LEADER_CHANGE),
    _null_array("replicas", "[]int32", 2),
    _null_array("removing_replicas", "[]int32", 3),
    _null_array("adding_replicas", "[]int32", 4),
    f("leader_recovery_state", "int8", tag=5, default=-1),
    _null_array("directories", "[]uuid", 8, "1+"),  # Kafka numbers it after the ELR fields
    _null_array("eligible_leader_replicas", "[]int32", 6, "2+"),
    _null_array("last_known_elr", "[]int32", 7, "2+"))
FENCE_BROKER_RECORD = _record("FenceBrokerRecord", "0", f("id", "int32"), f("epoch", "int64"))
UNFENCE_BROKER_RECORD = _record("UnfenceBrokerRecord", "0", f("id", "int32"), f("epoch", "int64"))
REMOVE_TOPIC_RECORD = _record("RemoveTopicRecord", "0", f("topic_id", "uuid"))
FEATURE_LEVEL_RECORD = _record(
    "FeatureLevelRecord", "0", f("name", "string"), f("feature_level", "int16"))
PRODUCER_IDS_RECORD = _record(
    "ProducerIdsRecord", "0", f("broker_id", "int32"), f("broker_epoch", "int64", default=-1),
    f("next_producer_id", "int64"))
BROKER_REGISTRATION_CHANGE_RECORD = _record(
    "BrokerRegistrationChangeRecord", "0-2",
    f("broker_id", "int32"),
    f("broker_epoch", "int64"),
    f("fenced", "int8", tag=0, default=0),
    f("in_controlled_shutdown", "int8", "1+", tag=1, default=0),
    f("log_dirs", "[]uuid", "2+", tag=2, default=()))
NO_OP_RECORD = _record("NoOpRecord", "0")
ZK_MIGRATION_STATE_RECORD = _record("ZkMigrationStateRecord", "0", f("zk_migration_state", "int8"))
BEGIN_TRANSACTION_RECORD = _record(
    "BeginTransactionRecord", "0", f("name", "string", nullable="0+", tag=0))
END_TRANSACTION_RECORD = _record("EndTransactionRecord", "0")
ABORT_TRANSACTION_RECORD = _record(
    "AbortTransactionRecord", "0", f("reason", "string", nullable="0+", tag=0))
REGISTER_CONTROLLER_RECORD = _record(
    "RegisterControllerRecord", "0",
    f("controller_id", "int32"),
    f("incarnation_id", "uuid"),
    f("zk_migration_ready", "bool"),
    f("end_points", "[]ControllerEndpoint", fields=_ENDPOINT),
    f("features", "[]ControllerFeature", fields=_FEATURE))


class MetadataRecordError(KafkaError):
    """A metadata record value that does not decode (Kafka's ``MetadataParseException``)."""

    error_code = ErrorCode.CORRUPT_MESSAGE


@dataclass(frozen=True, slots=True)
class RecordType:
    """One metadata record type: its api key, Kafka's ``MetadataRecordType`` name, its schema
    and the version kafkalab writes."""

    api_key: int
    name: str
    message: Message
    write_version: int = 0


# api key -> record type (Kafka's MetadataRecordType).
RECORD_TYPES: dict[int, RecordType] = {t.api_key: t for t in (
    RecordType(0, "REGISTER_BROKER_RECORD", REGISTER_BROKER_RECORD, 2),
    RecordType(1, "UNREGISTER_BROKER_RECORD", UNREGISTER_BROKER_RECORD),
    RecordType(2, "TOPIC_RECORD", TOPIC_RECORD),
    RecordType(3, "PARTITION_RECORD", PARTITION_RECORD),
    RecordType(4, "CONFIG_RECORD", CONFIG_RECORD),
    RecordType(5, "PARTITION_CHANGE_RECORD", PARTITION_CHANGE_RECORD),
    RecordType(7, "FENCE_BROKER_RECORD", FENCE_BROKER_RECORD),
    RecordType(8, "UNFENCE_BROKER_RECORD", UNFENCE_BROKER_RECORD),
    RecordType(9, "REMOVE_TOPIC_RECORD", REMOVE_TOPIC_RECORD),
    RecordType(12, "FEATURE_LEVEL_RECORD", FEATURE_LEVEL_RECORD),
    RecordType(15, "PRODUCER_IDS_RECORD", PRODUCER_IDS_RECORD),
    RecordType(17, "BROKER_REGISTRATION_CHANGE_RECORD", BROKER_REGISTRATION_CHANGE_RECORD),
    RecordType(20, "NO_OP_RECORD", NO_OP_RECORD),
    RecordType(21, "ZK_MIGRATION_STATE_RECORD", ZK_MIGRATION_STATE_RECORD),
    RecordType(23, "BEGIN_TRANSACTION_RECORD", BEGIN_TRANSACTION_RECORD),
    RecordType(24, "END_TRANSACTION_RECORD", END_TRANSACTION_RECORD),
    RecordType(25, "ABORT_TRANSACTION_RECORD", ABORT_TRANSACTION_RECORD),
    RecordType(27, "REGISTER_CONTROLLER_RECORD", REGISTER_CONTROLLER_RECORD),
)}
_BY_CLASS: dict[type, RecordType] = {t.message.cls: t for t in RECORD_TYPES.values()}


def record_type_of(record: Any) -> RecordType:
    """The record type of a record value (an instance of one of the messages' classes)."""
    known = _BY_CLASS.get(type(record))
    assert known is not None, f"{type(record).__name__} is not a metadata record"
    return known


def encode_record(record: Any, version: int | None = None) -> bytes:
    """One framed record value; at the type's write version unless ``version`` says otherwise."""
    kind = record_type_of(record)
    version = kind.write_version if version is None else version
    writer = Writer()
    writer.uvarint(FRAME_VERSION)
    writer.uvarint(kind.api_key)
    writer.uvarint(version)
    kind.message.encode_into(writer, record, version)
    return writer.to_bytes()


def _uvarint_short(reader: Reader, what: str) -> int:
    """A uvarint that must fit an int16, as ``AbstractApiMessageSerde.unsignedIntToShort``."""
    try:
        value = reader.uvarint()
    except KafkaError as exc:
        raise MetadataRecordError(f"Error while reading {what}: {exc}") from None
    if value > INT16_MAX:
        raise MetadataRecordError(f"Value for {what} was too large.")
    return value


def read_frame(reader: Reader) -> tuple[RecordType, int]:
    """Read a record's frame: (its type, its version). Raises MetadataRecordError with Kafka's
    wording (``MetadataRecordSerde``) for frame version 0, unknown frames and unknown types."""
    frame_version = _uvarint_short(reader, "frame version")
    if frame_version == 0:
        raise MetadataRecordError(
            "Could not deserialize metadata record with frame version 0. Note that upgrades from "
            "the preview release of KRaft in 2.8 to newer versions are not supported.")
    if frame_version != FRAME_VERSION:
        raise MetadataRecordError(
            f"Could not deserialize metadata record due to unknown frame version "
            f"{frame_version}(only frame version {FRAME_VERSION} is supported)")
    api_key = _uvarint_short(reader, "type")
    version = _uvarint_short(reader, "version")
    known = RECORD_TYPES.get(api_key)
    if known is None:
        raise MetadataRecordError(f"Unknown metadata id {api_key}")
    return known, version


def decode_record(value: bytes | bytearray | memoryview) -> Any:
    """A framed record value back to its record. Raises MetadataRecordError."""
    reader = Reader(value)
    kind, version = read_frame(reader)
    try:
        record = kind.message.read(reader, version)
    except KafkaError as exc:
        raise MetadataRecordError(f"Failed to deserialize record with type {kind.api_key}: {exc}") from None
    if reader.remaining_bytes > 0:
        raise MetadataRecordError(f"Found {reader.remaining_bytes} byte(s) of garbage after {kind.api_key}")
    return record


__all__ = [
    "BROKER_REGISTRATION_CHANGE_RECORD", "CONFIG_RECORD", "CONFIG_RESOURCE_BROKER", "CONFIG_RESOURCE_TOPIC",
    "FEATURE_LEVEL_RECORD", "FENCE", "FENCE_BROKER_RECORD", "FRAME_VERSION", "IN_CONTROLLED_SHUTDOWN",
    "METADATA_VERSION", "METADATA_VERSION_FEATURE", "METADATA_VERSION_LEVEL", "NO_CHANGE",
    "NO_LEADER_CHANGE", "NO_OP_RECORD", "PARTITION_CHANGE_RECORD", "PARTITION_RECORD",
    "PRODUCER_IDS_RECORD", "RECORD_TYPES", "REGISTER_BROKER_RECORD", "REMOVE_TOPIC_RECORD",
    "MetadataRecordError", "RecordType", "TOPIC_RECORD", "UNFENCE", "UNFENCE_BROKER_RECORD", "decode_record",
    "encode_record", "read_frame", "record_type_of",
]
