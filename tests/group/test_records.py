"""``__consumer_offsets`` records: bytes packed by hand from Kafka's specs, and the declarations
against Kafka's own JSON specs (``group-coordinator/src/main/resources/common/message/``).

The dump tool prints these same declarations (kafkalab.tools.decoders.offsets imports them), so
its JSON is checked here against literal expectations, not against a second transcription.
"""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
from pathlib import Path

import pytest

from kafkalab.errors import CorruptRecordError
from kafkalab.group.records import (
    CLASSIC_RECORD_TYPES,
    GROUP_METADATA_KEY,
    GROUP_METADATA_VALUE,
    OFFSET_COMMIT_KEY,
    OFFSET_COMMIT_VALUE,
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
    record_type,
)
from kafkalab.protocol.schema import parse_versions
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


def _s(text: str | None) -> bytes:
    """A non-flexible string: int16 length (-1 for null), then UTF-8."""
    return struct.pack(">h", -1) if text is None else struct.pack(">h", len(text)) + text.encode()


def test_group_metadata_bytes_packed_from_kafkas_spec():
    member = MemberMetadata(member_id="c-1", group_instance_id="host-a", client_id="c", client_host="/127.0.0.1",
                            rebalance_timeout=300000, session_timeout=45000, subscription=b"\x01", assignment=b"\x02")
    value = GroupMetadataValue(protocol_type="connect", generation=7, protocol="sessioned", leader="c-1",
                               current_state_timestamp=123, members=(member,))
    key_bytes, value_bytes = group_metadata_key("app"), group_metadata_value(value)
    # GroupMetadataValue v3: protocolType, generation, protocol, leader, currentStateTimestamp,
    # then [memberId, groupInstanceId, clientId, clientHost, rebalanceTimeout, sessionTimeout,
    # subscription, assignment] -- as GroupMetadataValue.json lists them.
    assert key_bytes == struct.pack(">h", 2) + _s("app")
    assert value_bytes == (
        struct.pack(">h", 3) + _s("connect") + struct.pack(">i", 7) + _s("sessioned") + _s("c-1")
        + struct.pack(">qi", 123, 1) + _s("c-1") + _s("host-a") + _s("c") + _s("/127.0.0.1")
        + struct.pack(">ii", 300000, 45000) + struct.pack(">i", 1) + b"\x01" + struct.pack(">i", 1) + b"\x02")
    assert decode_key(key_bytes) == GroupKey("app")
    assert decode_group_value(value_bytes) == value
    key_json, value_json = parse_offsets(Record(0, 0, key_bytes, value_bytes))
    assert json.loads(key_json) == {"type": "2", "data": {"group": "app"}}
    data = json.loads(value_json)["data"]
    assert (data["generation"], data["leader"], data["currentStateTimestamp"]) == (7, "c-1", 123)
    assert data["members"][0]["groupInstanceId"] == "host-a"
    assert data["members"][0]["rebalanceTimeout"] == 300000


def test_legacy_offset_commit_key_type_zero_reads_like_type_one():
    key = struct.pack(">h", 0) + _s("g") + _s("orders") + struct.pack(">i", 4)
    assert decode_key(key) == OffsetKey("g", "orders", 4)
    assert record_type(key) == 0


@pytest.mark.parametrize("data", [b"", b"\x00", b"\x00\x05\x00\x01g"])
def test_bad_keys_are_typed_errors(data):
    with pytest.raises(CorruptRecordError):
        decode_key(data)


# --- the declarations against Kafka's own specs ---------------------------------------------------

KAFKA_GIT = Path(os.environ.get("KAFKA_SOURCE_GIT", "/work/.mirror/apache+kafka/repo"))
SPEC_DIR = "group-coordinator/src/main/resources/common/message"


def _kafka_spec(name: str) -> dict:
    if not KAFKA_GIT.exists():
        pytest.skip(f"no Apache Kafka source at {KAFKA_GIT} (set KAFKA_SOURCE_GIT)")
    text = subprocess.run(["git", "-C", str(KAFKA_GIT), "show", f"HEAD:{SPEC_DIR}/{name}.json"],
                          capture_output=True, text=True, check=True).stdout
    return json.loads("\n".join(line for line in text.splitlines() if not line.strip().startswith("//")))


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def _kafka_fields(spec: dict, fields: list[dict], version: int, prefix: str = "") -> list[tuple]:
    """(path, type, nullable, default) of each field present at ``version``, in wire order."""
    common = {struct["name"]: struct["fields"] for struct in spec.get("commonStructs", [])}
    out = []
    for fld in fields:
        low, high = parse_versions(fld["versions"])
        if not low <= version <= high:
            continue
        nullable = "nullableVersions" in fld and _in(fld["nullableVersions"], version)
        path = prefix + _snake(fld["name"])
        kind = fld["type"]
        inner = fld.get("fields") or common.get(kind.removeprefix("[]"))
        default = fld.get("default")
        default = int(default) if isinstance(default, (int, str)) and str(default).lstrip("-").isdigit() else None
        out.append((path, "struct" if inner else kind, nullable, default))
        out.extend(_kafka_fields(spec, inner or [], version, path + "."))
    return out


def _in(versions: str, version: int) -> bool:
    if versions == "none":
        return False
    low, high = parse_versions(versions)
    return low <= version <= high


def _our_fields(fields, version: int, prefix: str = "") -> list[tuple]:
    out = []
    for fld in fields:
        if not fld.in_version(version):
            continue
        path = prefix + fld.name
        numeric = isinstance(fld.default, int) and not isinstance(fld.default, bool) and fld.default != 0
        out.append((path, "struct" if fld.struct else fld.type, fld.nullable_in(version),
                    fld.default if numeric else None))
        if fld.struct is not None:
            out.extend(_our_fields(fld.struct.fields, version, path + "."))
    return out


@pytest.mark.parametrize("ours", [OFFSET_COMMIT_VALUE, GROUP_METADATA_VALUE], ids=lambda m: m.name)
def test_values_match_kafkas_spec(ours):
    spec = _kafka_spec(ours.name)
    assert ours.valid == parse_versions(spec["validVersions"])
    for version in range(ours.valid[0], ours.valid[1] + 1):
        assert ours.is_flexible(version) == _in(spec["flexibleVersions"], version)
        assert _our_fields(ours.struct.fields, version) == _kafka_fields(spec, spec["fields"], version), version


@pytest.mark.parametrize("ours", [OFFSET_COMMIT_KEY, GROUP_METADATA_KEY], ids=lambda m: m.name)
def test_keys_match_kafkas_spec_at_each_record_type(ours):
    """Kafka's spec numbers a key's versions by the record types it serves; kafkalab reads the
    body at version 0 whatever the type, which is faithful only if the layout never varies."""
    spec = _kafka_spec(ours.name)
    low, high = parse_versions(spec["validVersions"])
    assert spec["flexibleVersions"] == "none" and not ours.is_flexible(0) and ours.valid == (0, 0)
    assert {t for t, (key, _) in CLASSIC_RECORD_TYPES.items() if key is ours} == set(range(low, high + 1))
    for type_ in range(low, high + 1):
        assert _our_fields(ours.struct.fields, 0) == _kafka_fields(spec, spec["fields"], type_), type_
