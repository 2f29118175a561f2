"""Control records: the markers Kafka writes into a partition for itself, never for consumers.

Theory of operation
-------------------
A control batch has attribute bit 5 set and holds one record whose key names its type::

    key   = version int16 (0) | type int16
    type  0 ABORT   1 COMMIT   2 LEADER_CHANGE   3 SNAPSHOT_HEADER   4 SNAPSHOT_FOOTER
          5 KRAFT_VERSION   6 KRAFT_VOTERS

Transaction markers (ABORT, COMMIT; KIP-98) are written by the transaction coordinator into
every partition a transaction touched. Their batch is transactional, carries the producer's id
and epoch, base sequence -1, and the value ``version int16 (0) | coordinatorEpoch int32``. So a
COMMIT marker record has ``keySize: 4 valueSize: 6`` and the whole batch is 78 bytes
(61 header + 17 record bytes). The KRaft types live in the metadata log; their values are
message-schema structs that this module only names.

Mirrors Kafka's ``ControlRecordType`` and ``EndTransactionMarker``.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

from kafkalab.errors import CorruptRecordError
from kafkalab.records.header import NO_SEQUENCE, Compression
from kafkalab.records.model import Record

CONTROL_KEY_VERSION = 0
END_TXN_MARKER_VERSION = 0
_KEY = struct.Struct(">hh")
_END_TXN_VALUE = struct.Struct(">hi")


class ControlRecordType(enum.IntEnum):
    """Control record types by id; ids Kafka does not know decode as UNKNOWN."""

    UNKNOWN = -1
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


@dataclass(frozen=True, slots=True)
class ControlRecord:
    """A decoded control record: its type id and, for ABORT/COMMIT, the coordinator epoch."""

    type_id: int
    coordinator_epoch: int | None = None

    @property
    def type(self) -> ControlRecordType:
        try:
            return ControlRecordType(self.type_id)
        except ValueError:
            return ControlRecordType.UNKNOWN

    @property
    def is_end_txn_marker(self) -> bool:
        return self.type in (ControlRecordType.ABORT, ControlRecordType.COMMIT)


def control_key(type_id: int) -> bytes:
    return _KEY.pack(CONTROL_KEY_VERSION, type_id)


def end_txn_marker_value(coordinator_epoch: int) -> bytes:
    return _END_TXN_VALUE.pack(END_TXN_MARKER_VERSION, coordinator_epoch)


def parse_control_record(record: Record) -> ControlRecord:
    """Name a control record from its key; read the coordinator epoch of a transaction marker."""
    key = record.key
    if key is None or len(key) < _KEY.size:
        raise CorruptRecordError(
            f"control record key must hold {_KEY.size} bytes, got {record.key_size}", position=0
        )
    _version, type_id = _KEY.unpack_from(key)
    control = ControlRecord(type_id)
    if not control.is_end_txn_marker:
        return control
    value = record.value
    if value is None or len(value) < _END_TXN_VALUE.size:
        raise CorruptRecordError(
            f"transaction marker value must hold {_END_TXN_VALUE.size} bytes, got {record.value_size}",
            position=0,
        )
    _value_version, coordinator_epoch = _END_TXN_VALUE.unpack_from(value)
    return ControlRecord(type_id, coordinator_epoch)


def build_end_txn_marker(
    *, commit: bool, offset: int, timestamp_ms: int, producer_id: int, producer_epoch: int,
    coordinator_epoch: int, partition_leader_epoch: int = -1,
) -> bytes:
    """A COMMIT or ABORT marker batch as the transaction coordinator has the leader write it."""
    from kafkalab.records.v2 import build_v2_batch  # v2 imports nothing from here; avoid a cycle

    type_id = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    record = Record(offset, timestamp_ms, control_key(type_id), end_txn_marker_value(coordinator_epoch))
    return build_v2_batch(
        [record], compression=Compression.NONE, producer_id=producer_id,
        producer_epoch=producer_epoch, base_sequence=NO_SEQUENCE, is_transactional=True,
        is_control=True, partition_leader_epoch=partition_leader_epoch,
    )
