"""Records of a coordinator's log: a typed key, a versioned value, printed as Kafka's JSON.

Theory of operation
-------------------
The group coordinator (``__consumer_offsets``) and the transaction coordinator
(``__transaction_state``) store their state as compacted records framed the same way
(Kafka's ``CoordinatorRecordSerde``)::

    key   = record type int16 | key message   (the type picks the key and value messages)
    value = version int16     | value message (absent: a tombstone)

``kafka-dump-log.sh`` prints the pair as ``key: {"type":"<type>","data":{...}} payload:
{"version":"<version>","data":{...}}`` and a tombstone's payload as ``<DELETE>``. When the bytes
do not decode it prints one line instead, and carries on with the next record:

* ``Unknown record type 9 at offset 12, skipping.`` -- a type this decoder does not know;
* ``Error at offset 12, skipping. <reason>`` -- a truncated or out-of-range key or value.

Worked example: a commit of offset 42 for ``orders-3`` by group ``g1`` has the key
``00 01 | 00 02 "g1" | 00 06 "orders" | 00 00 00 03`` (type 1, ``OffsetCommitKey``) and, at
value version 3, ``00 03 | offset 42 (8 bytes) | leader epoch 7 | 00 00 "" | commit time``.
It prints as ``{"type":"1","data":{"group":"g1","topic":"orders","partition":3}}`` and
``{"version":"3","data":{"offset":42,"leaderEpoch":7,"metadata":"","commitTimestamp":...}}``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kafkalab.errors import KafkaError
from kafkalab.protocol.schema import Message
from kafkalab.protocol.schema_json import JsonValue, read_json, to_json
from kafkalab.protocol.types import Reader
from kafkalab.records import Record

ParseResult = tuple[str | None, str | None]


@dataclass(frozen=True, slots=True)
class RecordType:
    """The key and value messages a record type selects."""

    key: Message
    value: Message


class UnknownRecordType(Exception):
    """A record type outside a coordinator's table (mirrors ``UnknownRecordTypeException``)."""

    def __init__(self, record_type: int) -> None:
        super().__init__(f"unknown record type {record_type}")
        self.record_type = record_type


def _read_version(data: bytes, what: str) -> tuple[Reader, int]:
    reader = Reader(data)
    if reader.remaining_bytes < 2:
        raise KafkaError(f"Could not read version from {what}'s buffer.")
    return reader, reader.int16()


def _read_body(message: Message, reader: Reader, version: int, what: str) -> dict[str, JsonValue]:
    try:
        return read_json(message, reader, version)
    except KafkaError as exc:
        raise KafkaError(f"Could not read record with version {version} from {what}'s buffer "
                         f"due to: {exc}.") from None


@dataclass(frozen=True, slots=True)
class CoordinatorDecoder:
    """Decodes one coordinator's records. Stateless; safe to share.

    ``value_hook`` may rewrite a decoded value (the group coordinator uses it to expand the
    consumer protocol bytes inside ``GroupMetadataValue``).
    """

    types: dict[int, RecordType]
    value_hook: Callable[[int, dict[str, JsonValue]], dict[str, JsonValue]] | None = None

    def parse(self, record: Record) -> ParseResult:
        """``(key text, payload text)`` for one record, as ``DumpLogSegments`` prints them."""
        if record.key is None:
            return (f"Error at offset {record.offset}, skipping. Failed to decode message at offset "
                    f"{record.offset} using the specified decoder (message had a missing key)", None)
        try:
            key_text, value_text = self._decode(record.key, record.value)
        except UnknownRecordType as exc:
            return f"Unknown record type {exc.record_type} at offset {record.offset}, skipping.", None
        except KafkaError as exc:
            return f"Error at offset {record.offset}, skipping. {exc}", None
        return key_text, value_text

    def _decode(self, key: bytes, value: bytes | None) -> tuple[str, str]:
        reader, record_type = _read_version(key, "key")
        selected = self.types.get(record_type)
        if selected is None:
            raise UnknownRecordType(record_type)
        key_data = _read_body(selected.key, reader, 0, "key")
        key_text = to_json({"type": str(record_type), "data": key_data})
        if value is None:
            return key_text, "<DELETE>"
        reader, version = _read_version(value, "value")
        value_data = _read_body(selected.value, reader, version, "value")
        if self.value_hook is not None:
            value_data = self.value_hook(record_type, value_data)
        return key_text, to_json({"version": str(version), "data": value_data})


__all__ = ["CoordinatorDecoder", "RecordType", "UnknownRecordType"]
