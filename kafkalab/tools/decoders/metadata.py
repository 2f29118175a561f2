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
from kafkalab.protocol.types import Reader
from kafkalab.records import Record
from kafkalab.tools.decoders.schema import Field, Spec, field, read_message, spec, to_json

FRAME_VERSION = 1  # AbstractApiMessageSerde.DEFAULT_FRAME_VERSION
INT16_MAX = 32767

_ENDPOINT = (field("Name", "string"), field("Host", "string"), field("Port", "uint16"),
             field("SecurityProtocol", "int16"))
_FEATURE = (field("Name", "string"), field("MinSupportedVersion", "int16"),
            field("MaxSupportedVersion", "int16"))


def _null_array(name: str, type_: str, tag: int, versions: str = "0+") -> Field:
    """A nullable tagged array whose default is null (printed only when sent)."""
    return field(name, type_, versions, nullable=versions, tag=tag, default=None)


# api key -> (MetadataRecordType name, message), from metadata/src/main/resources/common/metadata.
METADATA_RECORDS: dict[int, tuple[str, Spec]] = {
    0: ("REGISTER_BROKER_RECORD", spec(
        "RegisterBrokerRecord", "0-3", "0+",
        field("BrokerId", "int32"),
        field("IsMigratingZkBroker", "bool", "2+"),
        field("IncarnationId", "uuid"),
        field("BrokerEpoch", "int64"),
        field("EndPoints", "[]BrokerEndpoint", fields=_ENDPOINT),
        field("Features", "[]BrokerFeature", fields=_FEATURE),
        field("Rack", "string", nullable="0+"),
        field("Fenced", "bool"),
        field("InControlledShutdown", "bool", "1+"),
        field("LogDirs", "[]uuid", "3+", tag=0, default=[]))),
    1: ("UNREGISTER_BROKER_RECORD", spec(
        "UnregisterBrokerRecord", "0", "0+", field("BrokerId", "int32"), field("BrokerEpoch", "int64"))),
    2: ("TOPIC_RECORD", spec("TopicRecord", "0", "0+", field("Name", "string"), field("TopicId", "uuid"))),
    3: ("PARTITION_RECORD", spec(
        "PartitionRecord", "0-2", "0+",
        field("PartitionId", "int32"),
        field("TopicId", "uuid"),
        field("Replicas", "[]int32"),
        field("Isr", "[]int32"),
        field("RemovingReplicas", "[]int32"),
        field("AddingReplicas", "[]int32"),
        field("Leader", "int32"),
        field("LeaderRecoveryState", "int8", tag=0, default=0),
        field("LeaderEpoch", "int32"),
        field("PartitionEpoch", "int32"),
        field("Directories", "[]uuid", "1+"),
        _null_array("EligibleLeaderReplicas", "[]int32", 1, "2+"),
        _null_array("LastKnownElr", "[]int32", 2, "2+"))),
    4: ("CONFIG_RECORD", spec(
        "ConfigRecord", "0", "0+", field("ResourceType", "int8"), field("ResourceName", "string"),
        field("Name", "string"), field("Value", "string", nullable="0+"))),
    5: ("PARTITION_CHANGE_RECORD", spec(
        "PartitionChangeRecord", "0-2", "0+",
        field("PartitionId", "int32"),
        field("TopicId", "uuid"),
        _null_array("Isr", "[]int32", 0),
        field("Leader", "int32", tag=1, default=-2),
        _null_array("Replicas", "[]int32", 2),
        _null_array("RemovingReplicas", "[]int32", 3),
        _null_array("AddingReplicas", "[]int32", 4),
        field("LeaderRecoveryState", "int8", tag=5, default=-1),
        _null_array("Directories", "[]uuid", 6, "1+"),
        _null_array("EligibleLeaderReplicas", "[]int32", 7, "2+"),
        _null_array("LastKnownElr", "[]int32", 8, "2+"))),
    7: ("FENCE_BROKER_RECORD", spec(
        "FenceBrokerRecord", "0", "0+", field("Id", "int32"), field("Epoch", "int64"))),
    8: ("UNFENCE_BROKER_RECORD", spec(
        "UnfenceBrokerRecord", "0", "0+", field("Id", "int32"), field("Epoch", "int64"))),
    9: ("REMOVE_TOPIC_RECORD", spec("RemoveTopicRecord", "0", "0+", field("TopicId", "uuid"))),
    12: ("FEATURE_LEVEL_RECORD", spec(
        "FeatureLevelRecord", "0", "0+", field("Name", "string"), field("FeatureLevel", "int16"))),
    15: ("PRODUCER_IDS_RECORD", spec(
        "ProducerIdsRecord", "0", "0+", field("BrokerId", "int32"), field("BrokerEpoch", "int64"),
        field("NextProducerId", "int64"))),
    17: ("BROKER_REGISTRATION_CHANGE_RECORD", spec(
        "BrokerRegistrationChangeRecord", "0-2", "0+",
        field("BrokerId", "int32"),
        field("BrokerEpoch", "int64"),
        field("Fenced", "int8", tag=0, default=0),
        field("InControlledShutdown", "int8", "1+", tag=1, default=0),
        field("LogDirs", "[]uuid", "2+", tag=2, default=[]))),
    20: ("NO_OP_RECORD", spec("NoOpRecord", "0", "0+")),
    21: ("ZK_MIGRATION_STATE_RECORD", spec(
        "ZkMigrationStateRecord", "0", "0+", field("ZkMigrationState", "int8"))),
    22: ("BEGIN_TRANSACTION_RECORD", spec(
        "BeginTransactionRecord", "0", "0+", field("Name", "string", nullable="0+", tag=0))),
    24: ("END_TRANSACTION_RECORD", spec("EndTransactionRecord", "0", "0+")),
    25: ("ABORT_TRANSACTION_RECORD", spec(
        "AbortTransactionRecord", "0", "0+", field("Reason", "string", nullable="0+", tag=0))),
    26: ("REGISTER_CONTROLLER_RECORD", spec(
        "RegisterControllerRecord", "0", "0+",
        field("ControllerId", "int32"),
        field("IncarnationId", "uuid"),
        field("ZkMigrationReady", "bool"),
        field("EndPoints", "[]ControllerEndpoint", fields=_ENDPOINT),
        field("Features", "[]ControllerFeature", fields=_FEATURE))),
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
    type_name, message = known
    try:
        data = read_message(message, reader, version)
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

_VOTER = (field("VoterId", "int32"),)
# control type id -> (label printed before the JSON, message); clients/src/main/resources/common/message.
CONTROL_MESSAGES: dict[int, tuple[str, Spec]] = {
    2: ("LeaderChange:", spec(
        "LeaderChangeMessage", "0", "0+", field("Version", "int16"), field("LeaderId", "int32"),
        field("Voters", "[]Voter", fields=_VOTER), field("GrantingVoters", "[]Voter", fields=_VOTER))),
    3: ("SnapshotHeader", spec(
        "SnapshotHeaderRecord", "0", "0+", field("Version", "int16"),
        field("LastContainedLogTimestamp", "int64"))),
    4: ("SnapshotFooter", spec("SnapshotFooterRecord", "0", "0+", field("Version", "int16"))),
    5: ("KRaftVersion", spec(
        "KRaftVersionRecord", "0", "0+", field("Version", "int16"), field("KRaftVersion", "int16"))),
    6: ("KRaftVoters", spec(
        "VotersRecord", "0", "0+", field("Version", "int16"),
        field("Voters", "[]Voter", fields=(
            field("VoterId", "int32"),
            field("VoterDirectoryId", "uuid"),
            field("Endpoints", "[]Endpoint", fields=(
                field("Name", "string"), field("Host", "string"), field("Port", "uint16"))),
            field("KRaftVersionFeature", "KRaftVersionFeature", fields=(
                field("MinSupportedVersion", "int16"), field("MaxSupportedVersion", "int16"))))))),
}


def control_record_text(type_id: int, value: bytes | None) -> str | None:
    """`` SnapshotHeader {...}`` for a KRaft control record, None for types without a message.

    Raises KafkaError when the value does not decode.
    """
    known = CONTROL_MESSAGES.get(type_id)
    if known is None:
        return None
    label, message = known
    if value is None:
        raise KafkaError(f"{message.name} has no value")
    reader = Reader(value)
    data = read_message(message, reader, 0)
    return f" {label} {to_json(data)}"


__all__ = ["CONTROL_MESSAGES", "METADATA_RECORDS", "control_record_text",
           "decode_metadata_record", "parse_cluster_metadata"]
