"""``--cluster-metadata-decoder``: KRaft's ``__cluster_metadata`` records and control records.

Theory of operation
-------------------
In KRaft mode (KIP-500, KIP-631) the controller quorum keeps the cluster's state as a log of
metadata records. A record has no key; its value is framed by Kafka's
``AbstractApiMessageSerde``::

    frame version uvarint (1) | api key uvarint | version uvarint | record body (flexible)

and the dump prints it as ``{"type":"TOPIC_RECORD","version":0,"data":{...}}`` -- the record
type's name in upper snake case, the version as a number. Frame version 0 (the 2.8 preview),
an unknown frame version or api key, a body that does not decode, or bytes left after the body
all print ``Error at <offset>, skipping. <reason>`` (note: no word "offset", as in Kafka).

Worked example (a real ``kafka-dump-log.sh`` line): the 29-byte value
``01 02 00 | 09 "my-topic" | <16-byte topic id> | 00`` prints
``{"type":"TOPIC_RECORD","version":0,"data":{"name":"my-topic","topicId":"xOxBrcYuSRWgtFuZIBiXIA"}}``.

The same log holds KRaft's control batches; their values are messages too (each starts with
its own int16 ``Version`` field) and the dump prints them in the record line, e.g.
`` SnapshotHeader {"version":0,"lastContainedLogTimestamp":1700000000000}`` -- see
:data:`CONTROL_MESSAGES`.
"""

from __future__ import annotations

from kafkalab.errors import KafkaError
from kafkalab.protocol.schema import Field, Message, f, message
from kafkalab.protocol.schema_json import read_json, to_json
from kafkalab.protocol.types import Reader
from kafkalab.records import Record

FRAME_VERSION = 1  # AbstractApiMessageSerde.DEFAULT_FRAME_VERSION
INT16_MAX = 32767

_ENDPOINT = (f("Name", "string"), f("Host", "string"), f("Port", "uint16"),
             f("SecurityProtocol", "int16"))
_FEATURE = (f("Name", "string"), f("MinSupportedVersion", "int16"),
            f("MaxSupportedVersion", "int16"))


def _null_array(name: str, type_: str, tag: int, versions: str = "0+") -> Field:
    """A nullable tagged array whose default is null (printed only when sent)."""
    return f(name, type_, versions, nullable=versions, tag=tag, default=None)


def _record(name: str, valid: str, *fields: Field) -> Message:
    """A metadata or KRaft control record: flexible in every version."""
    return message(name, valid=valid, flexible="0+", fields=fields)


# api key -> (MetadataRecordType name, message), from metadata/src/main/resources/common/metadata.
METADATA_RECORDS: dict[int, tuple[str, Message]] = {
    0: ("REGISTER_BROKER_RECORD", _record("RegisterBrokerRecord", "0-3",
        f("BrokerId", "int32"),
        f("IsMigratingZkBroker", "bool", "2+"),
        f("IncarnationId", "uuid"),
        f("BrokerEpoch", "int64"),
        f("EndPoints", "[]BrokerEndpoint", fields=_ENDPOINT),
        f("Features", "[]BrokerFeature", fields=_FEATURE),
        f("Rack", "string", nullable="0+"),
        f("Fenced", "bool"),
        f("InControlledShutdown", "bool", "1+"),
        f("LogDirs", "[]uuid", "3+", tag=0, default=()))),
    1: ("UNREGISTER_BROKER_RECORD", _record(
        "UnregisterBrokerRecord", "0", f("BrokerId", "int32"), f("BrokerEpoch", "int64"))),
    2: ("TOPIC_RECORD", _record("TopicRecord", "0", f("Name", "string"), f("TopicId", "uuid"))),
    3: ("PARTITION_RECORD", _record("PartitionRecord", "0-2",
        f("PartitionId", "int32"),
        f("TopicId", "uuid"),
        f("Replicas", "[]int32"),
        f("Isr", "[]int32"),
        f("RemovingReplicas", "[]int32"),
        f("AddingReplicas", "[]int32"),
        f("Leader", "int32"),
        f("LeaderRecoveryState", "int8", tag=0, default=0),
        f("LeaderEpoch", "int32"),
        f("PartitionEpoch", "int32"),
        f("Directories", "[]uuid", "1+"),
        _null_array("EligibleLeaderReplicas", "[]int32", 1, "2+"),
        _null_array("LastKnownElr", "[]int32", 2, "2+"))),
    4: ("CONFIG_RECORD", _record(
        "ConfigRecord", "0", f("ResourceType", "int8"), f("ResourceName", "string"),
        f("Name", "string"), f("Value", "string", nullable="0+"))),
    5: ("PARTITION_CHANGE_RECORD", _record("PartitionChangeRecord", "0-2",
        f("PartitionId", "int32"),
        f("TopicId", "uuid"),
        _null_array("Isr", "[]int32", 0),
        f("Leader", "int32", tag=1, default=-2),
        _null_array("Replicas", "[]int32", 2),
        _null_array("RemovingReplicas", "[]int32", 3),
        _null_array("AddingReplicas", "[]int32", 4),
        f("LeaderRecoveryState", "int8", tag=5, default=-1),
        _null_array("Directories", "[]uuid", 6, "1+"),
        _null_array("EligibleLeaderReplicas", "[]int32", 7, "2+"),
        _null_array("LastKnownElr", "[]int32", 8, "2+"))),
    7: ("FENCE_BROKER_RECORD", _record(
        "FenceBrokerRecord", "0", f("Id", "int32"), f("Epoch", "int64"))),
    8: ("UNFENCE_BROKER_RECORD", _record(
        "UnfenceBrokerRecord", "0", f("Id", "int32"), f("Epoch", "int64"))),
    9: ("REMOVE_TOPIC_RECORD", _record("RemoveTopicRecord", "0", f("TopicId", "uuid"))),
    12: ("FEATURE_LEVEL_RECORD", _record(
        "FeatureLevelRecord", "0", f("Name", "string"), f("FeatureLevel", "int16"))),
    15: ("PRODUCER_IDS_RECORD", _record(
        "ProducerIdsRecord", "0", f("BrokerId", "int32"), f("BrokerEpoch", "int64"),
        f("NextProducerId", "int64"))),
    17: ("BROKER_REGISTRATION_CHANGE_RECORD", _record("BrokerRegistrationChangeRecord", "0-2",
        f("BrokerId", "int32"),
        f("BrokerEpoch", "int64"),
        f("Fenced", "int8", tag=0, default=0),
        f("InControlledShutdown", "int8", "1+", tag=1, default=0),
        f("LogDirs", "[]uuid", "2+", tag=2, default=()))),
    20: ("NO_OP_RECORD", _record("NoOpRecord", "0")),
    21: ("ZK_MIGRATION_STATE_RECORD", _record(
        "ZkMigrationStateRecord", "0", f("ZkMigrationState", "int8"))),
    22: ("BEGIN_TRANSACTION_RECORD", _record(
        "BeginTransactionRecord", "0", f("Name", "string", nullable="0+", tag=0))),
    24: ("END_TRANSACTION_RECORD", _record("EndTransactionRecord", "0")),
    25: ("ABORT_TRANSACTION_RECORD", _record(
        "AbortTransactionRecord", "0", f("Reason", "string", nullable="0+", tag=0))),
    26: ("REGISTER_CONTROLLER_RECORD", _record("RegisterControllerRecord", "0",
        f("ControllerId", "int32"),
        f("IncarnationId", "uuid"),
        f("ZkMigrationReady", "bool"),
        f("EndPoints", "[]ControllerEndpoint", fields=_ENDPOINT),
        f("Features", "[]ControllerFeature", fields=_FEATURE))),
}


def _uvarint_short(reader: Reader, what: str) -> int:
    """A uvarint that must fit an int16, as ``AbstractApiMessageSerde.unsignedIntToShort``."""
    try:
        value = reader.uvarint()
    except KafkaError as exc:
        raise KafkaError(f"Error while reading {what}: {exc}") from None
    if value > INT16_MAX:
        raise KafkaError(f"Value for {what} was too large.")
    return value


def decode_metadata_record(value: bytes) -> str:
    """One metadata record value as Kafka's JSON; raises KafkaError with Kafka's reason."""
    reader = Reader(value)
    frame_version = _uvarint_short(reader, "frame version")
    if frame_version == 0:
        raise KafkaError("Could not deserialize metadata record with frame version 0. Note that "
                         "upgrades from the preview release of KRaft in 2.8 to newer versions are "
                         "not supported.")
    if frame_version != FRAME_VERSION:
        raise KafkaError(f"Could not deserialize metadata record due to unknown frame version "
                         f"{frame_version}(only frame version {FRAME_VERSION} is supported)")
    api_key = _uvarint_short(reader, "type")
    version = _uvarint_short(reader, "version")
    known = METADATA_RECORDS.get(api_key)
    if known is None:
        raise KafkaError(f"Unknown metadata id {api_key}")
    type_name, record = known
    try:
        data = read_json(record, reader, version)
    except KafkaError as exc:
        raise KafkaError(f"Failed to deserialize record with type {api_key}: {exc}") from None
    if reader.remaining_bytes > 0:
        raise KafkaError(f"Found {reader.remaining_bytes} byte(s) of garbage after {api_key}")
    return to_json({"type": type_name, "version": version, "data": data})


def parse_cluster_metadata(record: Record) -> tuple[str | None, str | None]:
    """``(None, payload)``: metadata records have no key."""
    try:
        if record.value is None:
            raise KafkaError("the record has no value")
        return None, decode_metadata_record(record.value)
    except KafkaError as exc:
        return None, f"Error at {record.offset}, skipping. {exc}"


# ----------------------------------------------------------------------------- control records

_VOTER = (f("VoterId", "int32"),)
# control type id -> (label printed before the JSON, message); clients/src/main/resources/common/message.
CONTROL_MESSAGES: dict[int, tuple[str, Message]] = {
    2: ("LeaderChange:", _record(
        "LeaderChangeMessage", "0", f("Version", "int16"), f("LeaderId", "int32"),
        f("Voters", "[]Voter", fields=_VOTER), f("GrantingVoters", "[]Voter", fields=_VOTER))),
    3: ("SnapshotHeader", _record("SnapshotHeaderRecord", "0", f("Version", "int16"),
        f("LastContainedLogTimestamp", "int64"))),
    4: ("SnapshotFooter", _record("SnapshotFooterRecord", "0", f("Version", "int16"))),
    5: ("KRaftVersion", _record(
        "KRaftVersionRecord", "0", f("Version", "int16"), f("KRaftVersion", "int16"))),
    6: ("KRaftVoters", _record("VotersRecord", "0", f("Version", "int16"),
        f("Voters", "[]Voter", fields=(
            f("VoterId", "int32"),
            f("VoterDirectoryId", "uuid"),
            f("Endpoints", "[]Endpoint", fields=(
                f("Name", "string"), f("Host", "string"), f("Port", "uint16"))),
            f("KRaftVersionFeature", "KRaftVersionFeature", fields=(
                f("MinSupportedVersion", "int16"), f("MaxSupportedVersion", "int16"))))))),
}


def control_record_text(type_id: int, value: bytes | None) -> str | None:
    """`` SnapshotHeader {...}`` for a KRaft control record, None for types without a message.

    Raises KafkaError when the value does not decode.
    """
    known = CONTROL_MESSAGES.get(type_id)
    if known is None:
        return None
    label, control = known
    if value is None:
        raise KafkaError(f"{control.name} has no value")
    reader = Reader(value)
    data = read_json(control, reader, 0)
    return f" {label} {to_json(data)}"


__all__ = ["CONTROL_MESSAGES", "METADATA_RECORDS", "control_record_text",
           "decode_metadata_record", "parse_cluster_metadata"]
