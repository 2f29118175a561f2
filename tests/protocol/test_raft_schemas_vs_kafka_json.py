"""The KRaft RPC schemas against Kafka's own JSON specs, read from the Apache Kafka checkout.

kafka-python does not ship Vote/BeginQuorumEpoch/EndQuorumEpoch/DescribeQuorum, so the specs
come from clients/src/main/resources/common/message/ in the Kafka mirror; without the mirror the
comparison is skipped. Field names, types, order, nullability, flexible versions and tags must
be Kafka's for every version kafkalab declares.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
from pathlib import Path

import pytest

from kafkalab.controller.raft import messages as raft_messages
from kafkalab.protocol.messages.raft import RAFT_SCHEMAS
from kafkalab.protocol.schema import Field, parse_versions
from tests.protocol.test_schema_vs_kafka_json import in_versions, kafka_fields

MIRROR = Path("/work/.mirror/apache+kafka/repo")
SPEC_DIR = "clients/src/main/resources/common/message"


def load_spec(name: str) -> dict:
    if not MIRROR.exists():
        pytest.skip("no Apache Kafka mirror to read the JSON specs from")
    text = subprocess.run(["git", "-C", str(MIRROR), "show", f"HEAD:{SPEC_DIR}/{name}.json"],
                          check=True, capture_output=True, text=True).stdout
    spec = json.loads(re.sub(r"^\s*//.*$", "", text, flags=re.M))
    commons = {c["name"]: c["fields"] for c in spec.get("commonStructs", [])}
    _inline_common(spec["fields"], commons)
    return spec


def _inline_common(fields: list[dict], commons: dict[str, list[dict]]) -> None:
    for fld in fields:
        element = fld["type"].removeprefix("[]")
        if "fields" not in fld and element in commons:
            fld["fields"] = commons[element]
        _inline_common(fld.get("fields", []), commons)


def _our_fields(fields: tuple[Field, ...], version: int, prefix: str = "") -> list[tuple]:
    out = []
    for fld in fields:
        if not fld.in_version(version):
            continue
        path = prefix + fld.name
        kind = fld.type if fld.struct is None else ("[]struct" if fld.is_array else "struct")
        out.append((path, kind, fld.nullable_in(version), fld.tag))
        if fld.struct is not None:
            out.extend(_our_fields(fld.struct.fields, version, path + "."))
    return out


CASES = [(schema, version) for pair in RAFT_SCHEMAS.values() for schema in pair
         for version in range(schema.valid[0], schema.valid[1] + 1)]


@pytest.mark.parametrize("schema,version", CASES, ids=[f"{s.name}-v{v}" for s, v in CASES])
def test_fields_match_kafka_json(schema, version):
    spec = load_spec(schema.name)
    assert spec["apiKey"] == schema.api_key
    assert in_versions(spec["validVersions"], version)
    assert in_versions(spec["flexibleVersions"], version) == schema.is_flexible(version)
    assert _our_fields(schema.struct.fields, version) == kafka_fields(spec["fields"], version, with_tags=True)


@pytest.mark.parametrize("api_key", sorted(RAFT_SCHEMAS))
def test_declared_versions_are_all_kafka_defines(api_key):
    for schema in RAFT_SCHEMAS[api_key]:
        assert parse_versions(load_spec(schema.name)["validVersions"]) == schema.valid


def test_vote_request_round_trip():
    request, _ = RAFT_SCHEMAS[52]
    cls = request.cls
    value = cls(cluster_id="c", topics=(cls.TopicData("__cluster_metadata", (
        cls.TopicData.PartitionData(partition_index=0, candidate_epoch=5, candidate_id=2,
                                    last_offset_epoch=4, last_offset=40),)),))
    for version in (0, 1):
        assert request.decode(request.encode(value, version), version).topics[0].partitions[0].last_offset == 40


# The sans-I/O messages carry one partition's fields; each must name a real wire field.
SANS_IO = {
    raft_messages.VoteRequest: 52, raft_messages.VoteResponse: 52,
    raft_messages.BeginQuorumEpochRequest: 53, raft_messages.BeginQuorumEpochResponse: 53,
    raft_messages.EndQuorumEpochRequest: 54, raft_messages.EndQuorumEpochResponse: 54,
    raft_messages.FetchSnapshotRequest: 59, raft_messages.FetchSnapshotResponse: 59,
}


@pytest.mark.parametrize("cls", list(SANS_IO), ids=lambda c: c.__name__)
def test_sans_io_messages_name_wire_fields(cls):
    schema = RAFT_SCHEMAS[SANS_IO[cls]][0 if cls.__name__.endswith("Request") else 1]
    wire = {path.split(".")[-1] for path, *_ in _our_fields(schema.struct.fields, 0)}
    for fld in dataclasses.fields(cls):
        name = "error_code" if fld.name == "partition_error_code" else fld.name
        assert name in wire, f"{cls.__name__}.{fld.name} is not a field of {schema.name} v0"
