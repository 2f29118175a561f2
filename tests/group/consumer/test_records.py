"""The KIP-848 record declarations against Kafka 3.9's own specs, and what the dump tool prints.

Kafka's ``group-coordinator/src/main/resources/common/message/ConsumerGroup*.json`` are read from
the Apache Kafka mirror at the 3.9 branch (the release of the Java client the interop tests run);
without the mirror the comparison skips. Field names, types, order, nullability and tags must be
Kafka's; keys have no flexible versions, values are flexible from version 0.
"""

from __future__ import annotations

import json
import re
import subprocess
import uuid

import pytest

from kafkalab.group.consumer import records as r
from kafkalab.group.consumer.member import ConsumerGroupMember, MemberState
from kafkalab.records import Record
from kafkalab.tools.decoders.offsets import parse_offsets
from tests.protocol.kafka_specs import MIRROR, MIRROR_REF
from tests.protocol.test_raft_schemas_vs_kafka_json import _inline_common, _our_fields
from tests.protocol.test_schema_vs_kafka_json import in_versions, kafka_fields

SPEC_DIR = "group-coordinator/src/main/resources/common/message"
CASES = [(t, kind) for t in sorted(r.CONSUMER_GROUP_KEYS) for kind in ("key", "value")]


def _spec(name: str) -> dict:
    if not MIRROR.exists():
        pytest.skip("no Apache Kafka mirror to read the record specs from")
    text = subprocess.run(["git", "-C", str(MIRROR), "show", f"{MIRROR_REF}:{SPEC_DIR}/{name}.json"],
                          check=True, capture_output=True, text=True).stdout
    spec = json.loads(re.sub(r"^\s*//.*$", "", text, flags=re.M))
    _inline_common(spec["fields"], {c["name"]: c["fields"] for c in spec.get("commonStructs", [])})
    return spec


@pytest.mark.parametrize("record_type,kind", CASES, ids=[f"{t}-{k}" for t, k in CASES])
def test_declarations_match_kafka_3_9(record_type, kind):
    ours = (r.CONSUMER_GROUP_KEYS if kind == "key" else r.CONSUMER_GROUP_VALUES)[record_type]
    spec = _spec(ours.name)
    if kind == "key":
        # Kafka numbers a key's version by its record type; kafkalab keeps the type beside it.
        assert spec["validVersions"] == str(record_type) and spec["flexibleVersions"] == "none"
        assert not ours.is_flexible(0)
        version = record_type
    else:
        assert spec["validVersions"] == "0" and in_versions(spec["flexibleVersions"], 0) and ours.is_flexible(0)
        version = 0
    assert _our_fields(ours.struct.fields, 0) == kafka_fields(spec["fields"], version, with_tags=True)


def test_a_current_assignment_prints_as_kafka_dump_log_does():
    topic_id = uuid.UUID(bytes=bytes(range(16)))
    member = ConsumerGroupMember("m-1", state=MemberState.UNREVOKED_PARTITIONS, member_epoch=5,
                                 previous_member_epoch=4, assigned={topic_id: frozenset({2, 0})},
                                 pending_revocation={topic_id: frozenset({1})})
    key, value = r.current_assignment_record("g1", member)
    key_text, payload = parse_offsets(Record(0, 0, key, value))
    assert key_text == '{"type":"8","data":{"groupId":"g1","memberId":"m-1"}}'
    assert payload == (
        '{"version":"0","data":{"memberEpoch":5,"previousMemberEpoch":4,"state":1,'
        '"assignedPartitions":[{"topicId":"AAECAwQFBgcICQoLDA0ODw","partitions":[0,2]}],'
        '"partitionsPendingRevocation":[{"topicId":"AAECAwQFBgcICQoLDA0ODw","partitions":[1]}]}}')


def test_group_epoch_record_bytes():
    key, value = r.group_epoch_record("g", 2)
    assert key == bytes.fromhex("0003 0001 67".replace(" ", ""))
    assert value == bytes.fromhex("0000 00000002 00".replace(" ", ""))
    assert parse_offsets(Record(0, 0, key, None)) == ('{"type":"3","data":{"groupId":"g"}}', "<DELETE>")
