"""kafkalab's encoder writes the bytes laid out by hand from Kafka's JSON specs, of the sizes
``kafka-dump-log.sh`` printed for the same records on real clusters."""

from __future__ import annotations

import base64
import uuid

import pytest

from kafkalab.metadata import records as r
from kafkalab.metadata.records import MetadataRecordError, decode_record, encode_record
from kafkalab.protocol.types import Writer


def _uuid(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


TOPIC_ID = _uuid("xOxBrcYuSRWgtFuZIBiXIA")  # from a real kafka-dump-log.sh line


def _frame(api_key: int, version: int) -> Writer:
    w = Writer()
    for v in (1, api_key, version):
        w.uvarint(v)
    return w


def _int32s(w: Writer, values: list[int]) -> None:
    w.length(len(values), compact=True)
    for v in values:
        w.int32(v)


def test_topic_record_is_kafkas_29_bytes() -> None:
    w = _frame(2, 0)
    w.string("my-topic", compact=True)
    w.uuid(TOPIC_ID)
    w.uvarint(0)
    ours = encode_record(r.TOPIC_RECORD.cls(name="my-topic", topic_id=TOPIC_ID))
    assert ours == w.to_bytes() and len(ours) == 29  # Kafka printed valueSize: 29


def test_partition_record_v1_is_kafkas_113_bytes() -> None:
    dirs = [_uuid(d) for d in ("SaZDxfHKu3NMZ7OnFP7YnA", "uHY7hO6-42Q7O4k0zLMmtg", "p2UpbSD99eygD2ZToiSMzg")]
    record = r.PARTITION_RECORD.cls(partition_id=0, topic_id=TOPIC_ID, replicas=(5, 3, 4), isr=(5, 3, 4),
                                    leader=5, leader_epoch=0, partition_epoch=0, directories=tuple(dirs))
    assert len(encode_record(record, version=1)) == 113  # Kafka printed valueSize: 113


def test_partition_record_v0_as_kafkalab_writes_it() -> None:
    w = _frame(3, 0)
    w.int32(2)
    w.uuid(TOPIC_ID)
    for values in ([1, 2, 3], [1, 2], [], []):
        _int32s(w, values)
    w.int32(1)  # leader
    w.int32(4)  # leader epoch
    w.int32(9)  # partition epoch
    w.uvarint(1)  # tagged: LeaderRecoveryState (tag 0) = 1, RECOVERING: it differs from 0
    w.uvarint(0)
    w.uvarint(1)
    w.int8(1)
    record = r.PARTITION_RECORD.cls(partition_id=2, topic_id=TOPIC_ID, replicas=(1, 2, 3), isr=(1, 2),
                                    leader=1, leader_epoch=4, partition_epoch=9, leader_recovery_state=1)
    assert encode_record(record) == w.to_bytes()
    assert decode_record(w.to_bytes()) == record


def test_partition_change_record_sends_only_what_changed() -> None:
    w = _frame(5, 0)
    w.int32(2)
    w.uuid(TOPIC_ID)
    isr = Writer()
    _int32s(isr, [1, 2])
    w.uvarint(2)
    w.uvarint(0)  # tag 0: Isr
    w.uvarint(len(isr.to_bytes()))
    w.raw(isr.to_bytes())
    w.uvarint(1)  # tag 1: Leader
    w.uvarint(4)
    w.int32(2)
    record = r.PARTITION_CHANGE_RECORD.cls(partition_id=2, topic_id=TOPIC_ID, isr=(1, 2), leader=2)
    assert encode_record(record) == w.to_bytes()
    # An unchanged leader (-2) and ISR (null) are not sent at all.
    bare = encode_record(r.PARTITION_CHANGE_RECORD.cls(partition_id=2, topic_id=TOPIC_ID))
    assert bare == bytes([1, 5, 0]) + (2).to_bytes(4, "big") + TOPIC_ID.bytes + b"\x00"


def test_feature_level_record_is_kafkas_23_bytes() -> None:
    value = encode_record(r.FEATURE_LEVEL_RECORD.cls(name="metadata.version", feature_level=27))
    assert len(value) == 23  # Kafka printed valueSize: 23


def test_broker_registration_change_fence_is_version_0_with_one_tag() -> None:
    value = encode_record(r.BROKER_REGISTRATION_CHANGE_RECORD.cls(broker_id=2, broker_epoch=9, fenced=r.FENCE))
    assert value == bytes([1, 17, 0]) + (2).to_bytes(4, "big") + (9).to_bytes(8, "big") + bytes([1, 0, 1, 1])


@pytest.mark.parametrize("value, reason", [
    (b"\x00\x02\x00", "frame version 0"),
    (b"\x01\x63\x00", "Unknown metadata id 99"),
    (b"\x01\x02\x00\x09ab", "Failed to deserialize record with type 2"),
    (bytes([1, 20, 0, 0, 7]), "1 byte\\(s\\) of garbage after 20"),
])
def test_bad_values_are_typed_errors(value: bytes, reason: str) -> None:
    with pytest.raises(MetadataRecordError, match=reason):
        decode_record(value)
