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
from kafkalab.metadata.records import RECORD_TYPES, read_frame
from kafkalab.protocol.schema_json import read_json, to_json
from kafkalab.protocol.types import Reader
from kafkalab.records import Record
from kafkalab.records.kraft_control import CONTROL_MESSAGE_VERSION, CONTROL_MESSAGES


def decode_metadata_record(value: bytes) -> str:
    """One metadata record value as Kafka's JSON; raises KafkaError with Kafka's reason. The
    schemas are the metadata layer's (:mod:`kafkalab.metadata.records`), which the controller
    writes with."""
    reader = Reader(value)
    kind, version = read_frame(reader)
    try:
        data = read_json(kind.message, reader, version)
    except KafkaError as exc:
        raise KafkaError(f"Failed to deserialize record with type {kind.api_key}: {exc}") from None
    if reader.remaining_bytes > 0:
        raise KafkaError(f"Found {reader.remaining_bytes} byte(s) of garbage after {kind.api_key}")
    return to_json({"type": kind.name, "version": version, "data": data})


def parse_cluster_metadata(record: Record) -> tuple[str | None, str | None]:
    """``(None, payload)``: metadata records have no key."""
    try:
        if record.value is None:
            raise KafkaError("the record has no value")
        return None, decode_metadata_record(record.value)
    except KafkaError as exc:
        return None, f"Error at {record.offset}, skipping. {exc}"


# ----------------------------------------------------------------------------- control records

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
    data = read_json(control, reader, CONTROL_MESSAGE_VERSION)
    return f" {label} {to_json(data)}"


__all__ = ["CONTROL_MESSAGES", "RECORD_TYPES", "control_record_text",
           "decode_metadata_record", "parse_cluster_metadata"]
