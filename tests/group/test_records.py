"""``__consumer_offsets`` records: the documented bytes, and the dump tool's independent decoder."""

from __future__ import annotations

import json

import pytest

from kafkalab.errors import CorruptRecordError
from kafkalab.group.records import (
    GroupKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitValue,
    OffsetKey,
    decode_group_value,
    decode_key,
    decode_offset_value,
    group_metadata_key,
    group_metadata_value,
    offset_commit_key,
    offset_commit_value,
)
from kafkalab.records import Record
from kafkalab.tools.decoders.offsets import parse_offsets


def test_worked_example_bytes():
    key = offset_commit_key("g", "orders", 0)
    value = offset_commit_value(OffsetCommitValue(offset=42, metadata="", commit_timestamp=1000))
    assert key.hex() == "0001" "0001" "67" "0006" "6f7264657273" "00000000"
    assert value.hex() == "0003" "000000000000002a" "ffffffff" "0000" "00000000000003e8"
    assert decode_key(key) == OffsetKey("g", "orders", 0)
    assert decode_offset_value(value).offset == 42


def test_explicit_expiry_writes_value_version_1():
    value = offset_commit_value(OffsetCommitValue(offset=1, metadata="m", commit_timestamp=5, expire_timestamp=9))
    assert value[:2] == b"\x00\x01"
    decoded = decode_offset_value(value)
    assert (decoded.expire_timestamp, decoded.leader_epoch) == (9, -1)  # v1 has no leader epoch


def test_group_metadata_through_the_dump_decoder():
    member = MemberMetadata(member_id="c-1", group_instance_id="host-a", client_id="c", client_host="/127.0.0.1",
                            rebalance_timeout=300000, session_timeout=45000, subscription=b"\x01", assignment=b"\x02")
    value = GroupMetadataValue(protocol_type="connect", generation=7, protocol="sessioned", leader="c-1",
                               current_state_timestamp=123, members=(member,))
    key_bytes, value_bytes = group_metadata_key("app"), group_metadata_value(value)
    assert decode_key(key_bytes) == GroupKey("app")
    assert decode_group_value(value_bytes) == value
    key_json, value_json = parse_offsets(Record(0, 0, key_bytes, value_bytes))
    assert json.loads(key_json) == {"type": "2", "data": {"group": "app"}}
    data = json.loads(value_json)["data"]
    assert (data["generation"], data["leader"], data["currentStateTimestamp"]) == (7, "c-1", 123)
    assert data["members"][0]["groupInstanceId"] == "host-a"
    assert data["members"][0]["rebalanceTimeout"] == 300000


@pytest.mark.parametrize("data", [b"", b"\x00", b"\x00\x05\x00\x01g"])
def test_bad_keys_are_typed_errors(data):
    with pytest.raises(CorruptRecordError):
        decode_key(data)
