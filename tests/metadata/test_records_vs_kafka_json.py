"""kafkalab's metadata record declarations against Kafka's own specs, read from the Kafka mirror.

Kafka's ``metadata/src/main/resources/common/metadata/*.json`` define every record of
``__cluster_metadata``: api key, valid and flexible versions, and each field's name, type,
versions, nullability, tag and default. kafkalab declares them once
(:mod:`kafkalab.metadata.records`); these tests walk both, version by version. Without the mirror
they skip.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from kafkalab.metadata.records import RECORD_TYPES
from kafkalab.protocol.schema import Field, parse_versions
from tests.protocol.test_schema_vs_kafka_json import in_versions, kafka_fields

MIRROR = Path("/work/.mirror/apache+kafka/repo")
SPEC_DIR = "metadata/src/main/resources/common/metadata"
FILE_NAMES = {"ZkMigrationStateRecord": "ZkMigrationRecord"}  # the one spec named unlike its record


def load_spec(name: str) -> dict:
    if not MIRROR.exists():
        pytest.skip("no Apache Kafka mirror to read the JSON specs from")
    text = subprocess.run(["git", "-C", str(MIRROR), "show", f"HEAD:{SPEC_DIR}/{FILE_NAMES.get(name, name)}.json"],
                          check=True, capture_output=True, text=True).stdout
    return json.loads(re.sub(r"^\s*//.*$", "", text, flags=re.M))


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


def _kafka_with_int_tags(spec: dict, version: int) -> list[tuple]:
    # Kafka's specs spell some tags as strings ("tag": "2").
    return [(path, kind, nullable, None if tag is None else int(tag))
            for path, kind, nullable, tag in kafka_fields(spec["fields"], version, with_tags=True)]


CASES = [(kind, version) for kind in RECORD_TYPES.values()
         for version in range(kind.message.valid[0], kind.message.valid[1] + 1)]


@pytest.mark.parametrize("kind,version", CASES, ids=[f"{k.message.name}-v{v}" for k, v in CASES])
def test_fields_match_kafka_json(kind, version):
    spec = load_spec(kind.message.name)
    assert spec["apiKey"] == kind.api_key and spec["type"] == "metadata"
    assert in_versions(spec["flexibleVersions"], version) == kind.message.is_flexible(version)
    assert _our_fields(kind.message.struct.fields, version) == _kafka_with_int_tags(spec, version)


@pytest.mark.parametrize("kind", RECORD_TYPES.values(), ids=lambda k: k.message.name)
def test_versions_and_type_names_are_kafkas(kind):
    spec = load_spec(kind.message.name)
    assert parse_versions(spec["validVersions"]) == kind.message.valid
    assert kind.message.valid[0] <= kind.write_version <= kind.message.valid[1]
    # MetadataRecordType's constant: the record name in upper snake case.
    assert kind.name == re.sub(r"(?<=[a-z])([A-Z])", r"_\1", spec["name"]).upper()


def _defaults(fields: list[dict], ours: tuple[Field, ...]) -> list[tuple]:
    out = []
    by_name = {f.name.replace("_", ""): f for f in ours}
    for fld in fields:
        mine = by_name[fld["name"].lower()]
        if "default" in fld and fld["type"] in ("int8", "int16", "int32", "int64"):
            out.append((fld["name"], int(fld["default"]), mine.default))
        elif "default" in fld and fld["type"] == "bool":
            out.append((fld["name"], fld["default"] == "true", mine.default))
        elif fld.get("default") == "null":
            out.append((fld["name"], None, mine.default))
    return out


@pytest.mark.parametrize("kind", RECORD_TYPES.values(), ids=lambda k: k.message.name)
def test_defaults_are_kafkas(kind):
    """Tagged fields are sent only when they differ from their default, so the defaults are part
    of the format: PartitionChangeRecord's Leader -2 means "no change"."""
    spec = load_spec(kind.message.name)
    for name, kafkas, ours in _defaults(spec["fields"], kind.message.struct.fields):
        assert ours == kafkas, name


def test_every_record_the_issue_names_is_declared():
    names = {k.message.name for k in RECORD_TYPES.values()}
    assert {"RegisterBrokerRecord", "TopicRecord", "PartitionRecord", "PartitionChangeRecord",
            "BrokerRegistrationChangeRecord", "FenceBrokerRecord", "UnfenceBrokerRecord",
            "RemoveTopicRecord", "ConfigRecord", "FeatureLevelRecord", "ProducerIdsRecord",
            "NoOpRecord"} <= names
