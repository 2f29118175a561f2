"""kafkalab's hand-written schemas against Kafka's own JSON message specs.

kafka-python 3.0 ships Apache Kafka's ``common/message/*.json`` files. For every API and every
version kafkalab implements, the fields it puts on the wire -- names, types, order, nullability --
must be exactly Kafka's. Tagged fields kafkalab declares must carry Kafka's tag numbers.
"""

from __future__ import annotations

import re

import pytest

from kafkalab.protocol.messages import SCHEMAS
from kafkalab.protocol.schema import Field, parse_versions
from tests.protocol.kafka_specs import kafka_spec as load_json


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def kafka_fields(fields: list[dict], version: int, prefix: str = "", *, with_tags: bool = False) -> list[tuple]:
    """(path, kind, nullable) of every field of a Kafka JSON spec at ``version``, depth first;
    ``with_tags`` keeps tagged fields too and adds each one's tag as a fourth element."""
    out = []
    for fld in fields:
        if not in_versions(fld["versions"], version) or ("tag" in fld and not with_tags):
            continue
        nullable = "nullableVersions" in fld and in_versions(fld["nullableVersions"], version)
        path = prefix + _snake(fld["name"])
        kind = fld["type"]
        kind = "[]struct" if kind.startswith("[]") and kind[2].isupper() else kind
        kind = "struct" if kind[0].isupper() else kind
        out.append((path, kind, nullable, fld.get("tag")) if with_tags else (path, kind, nullable))
        out.extend(kafka_fields(fld.get("fields", []), version, path + ".", with_tags=with_tags))
    return out


def in_versions(versions: str, version: int) -> bool:
    if versions == "none":  # OffsetDelete: no flexible versions at all
        return False
    low, high = parse_versions(versions)
    return low <= version <= high


def _our_fields(fields: tuple[Field, ...], version: int, prefix: str = "") -> list[tuple]:
    out = []
    for fld in fields:
        if not fld.in_version(version) or fld.tag is not None:
            continue
        path = prefix + fld.name
        kind = fld.type
        if fld.struct is not None:
            kind = "[]struct" if fld.is_array else "struct"
        out.append((path, kind, fld.nullable_in(version)))
        if fld.struct is not None:
            out.extend(_our_fields(fld.struct.fields, version, path + "."))
    return out


CASES = [
    (schema, version)
    for pair in SCHEMAS.values()
    for schema in pair
    for version in range(schema.valid[0], schema.valid[1] + 1)
]


@pytest.mark.parametrize("schema,version", CASES, ids=[f"{s.name}-v{v}" for s, v in CASES])
def test_wire_fields_match_kafka_json(schema, version):
    spec = load_json(schema.name)
    assert spec["apiKey"] == schema.api_key
    assert in_versions(spec["validVersions"], version), f"{schema.name} v{version} is not a version Kafka defines"
    assert in_versions(spec["flexibleVersions"], version) == schema.is_flexible(version)
    ours = _our_fields(schema.struct.fields, version)
    kafkas = kafka_fields(spec["fields"], version)
    assert ours == kafkas


def _tags(fields: list[dict], prefix: str = "") -> dict[str, int]:
    out = {}
    for fld in fields:
        path = prefix + _snake(fld["name"])
        if "tag" in fld:
            out[path] = fld["tag"]
        out.update(_tags(fld.get("fields", []), path + "."))
    return out


def _our_tags(fields: tuple[Field, ...], prefix: str = "") -> dict[str, int]:
    out = {}
    for fld in fields:
        if fld.tag is not None:
            out[prefix + fld.name] = fld.tag
        if fld.struct is not None:
            out.update(_our_tags(fld.struct.fields, prefix + fld.name + "."))
    return out


@pytest.mark.parametrize("schema", [s for pair in SCHEMAS.values() for s in pair], ids=lambda s: s.name)
def test_tagged_fields_carry_kafkas_tags(schema):
    kafkas = _tags(load_json(schema.name)["fields"])
    for path, tag in _our_tags(schema.struct.fields).items():
        assert kafkas.get(path) == tag, path
