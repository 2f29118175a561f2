"""The one schema interpreter on messages that have no API key, and its JSON printer.

Internal records (``__consumer_offsets``, ``__transaction_state``, ``__cluster_metadata``) are
declared with the same ``message``/``f`` DSL as requests. The consumer protocol's subscription
and assignment are such messages, and kafka-python ships their specs and a codec generated from
them: the bytes kafkalab writes must be the bytes kafka-python writes, and the JSON kafkalab
prints must carry kafka-python's values under Kafka's camel-case names.
"""

from __future__ import annotations

import base64
import random
import re
import struct
import uuid

import pytest
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment as KpAssignment,
    ConsumerProtocolSubscription as KpSubscription,
)
from kafka.protocol.schemas.load_json import load_json

from kafkalab.protocol.messages.consumer_protocol import CONSUMER_PROTOCOL_ASSIGNMENT, CONSUMER_PROTOCOL_SUBSCRIPTION
from kafkalab.errors import ProtocolError, UnsupportedVersionError
from kafkalab.protocol.schema import f, message, parse_versions
from kafkalab.protocol.schema_json import message_json, read_json, to_json
from kafkalab.protocol.types import Reader
from tests.protocol._protocol_values import random_struct

EMBEDDED = [(CONSUMER_PROTOCOL_SUBSCRIPTION, KpSubscription), (CONSUMER_PROTOCOL_ASSIGNMENT, KpAssignment)]
CASES = [(ours, kp, version) for ours, kp in EMBEDDED for version in range(ours.valid[1] + 1)]


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def _kp_json(fields, version, value):
    """kafka-python's decoded values under the names Kafka's JSON converter prints, walking the
    spec kafka-python ships (not kafkalab's declaration): ``UserData`` -> ``userData``."""
    out = {}
    for fld in fields:
        low, high = parse_versions(fld["versions"])
        if not low <= version <= high:
            continue
        item = getattr(value, _snake(fld["name"]))
        name = fld["name"][:1].lower() + fld["name"][1:]
        if item is None:
            out[name] = None
        elif "fields" in fld:
            out[name] = [_kp_json(fld["fields"], version, element) for element in item]
        elif fld["type"] == "bytes":
            out[name] = base64.b64encode(item).decode("ascii")
        else:
            out[name] = list(item) if fld["type"].startswith("[]") else item
    return out


@pytest.mark.parametrize("ours,kp,version", CASES, ids=[f"{o.name}-v{v}" for o, _, v in CASES])
def test_embedded_messages_agree_with_kafka_python(ours, kp, version):
    spec = load_json(ours.name)
    assert "apiKey" not in spec and ours.api_key is None
    for seed in range(6):
        value = random_struct(ours.struct, version, False, random.Random(seed * 10 + version))
        data = struct.pack(">h", version) + ours.encode(value, version)
        decoded = kp.decode(data, version=version)
        assert bytes(decoded.encode(version=version)) == data
        reader = Reader(data)
        printed = read_json(ours, reader, reader.int16())
        assert reader.remaining_bytes == 0
        assert printed == _kp_json(spec["fields"], version, decoded)


def test_a_message_without_api_key_reads_writes_and_prints():
    value_message = message("ExampleValue", valid="0-1", flexible="1+", fields=[
        f("leader_epoch", "int32"),
        f("topic_id", "uuid"),
        f("payload", "bytes", nullable="0+"),
        f("hint", "int64", "1+", tag=0, default=-1),
    ])
    # the topic id of a real kafka-dump-log.sh line, "_uaYz7wTRr2Ogdc1lPtl8A"
    topic_id = uuid.UUID(bytes=bytes.fromhex("fee698cfbc1346bd8e81d73594fb65f0"))
    value = value_message.cls(leader_epoch=7, topic_id=topic_id, payload=b"\x00\xff", hint=-1)
    data = value_message.encode(value, 1)
    # int32 7 | 16 uuid bytes | compact bytes (2 + 1) 00 ff | no tagged field (hint is default)
    assert data == bytes.fromhex("00000007") + topic_id.bytes + bytes.fromhex("0300ff00")
    assert value_message.decode(data, 1) == value
    assert to_json(message_json(value_message, value, 1)) == (
        '{"leaderEpoch":7,"topicId":"_uaYz7wTRr2Ogdc1lPtl8A","payload":"AP8="}')
    sent = value_message.encode(value_message.cls(7, topic_id, None, 42), 1)
    assert message_json(value_message, value_message.decode(sent, 1), 1)["hint"] == 42
    with pytest.raises(UnsupportedVersionError, match="Can't read version 2 of ExampleValue"):
        value_message.decode(data, 2)


def test_nullable_struct_has_a_presence_byte():
    outer = message("Outer", valid="0", flexible="0+", fields=[
        f("inner", "Inner", nullable="0+", default=None, fields=[f("id", "int16")]),
    ])
    inner = outer.struct.fields[0].struct.cls
    assert outer.encode(outer.cls(inner=None), 0) == bytes.fromhex("ff00")
    assert outer.encode(outer.cls(inner=inner(id=3)), 0) == bytes.fromhex("01000300" "00")
    for value in (outer.cls(inner=None), outer.cls(inner=inner(id=3))):
        assert outer.decode(outer.encode(value, 0), 0) == value


def test_tag_size_mismatch_names_the_field():
    m = message("Tagged", valid="0", flexible="0+", fields=[f("hint", "int64", tag=0, default=-1)])
    # one tagged field, tag 0, declared 4 bytes, but an int64 takes 8
    with pytest.raises(ProtocolError, match="hint .tag 0. declared 4 bytes but its value took 8"):
        m.decode(bytes.fromhex("01 00 04") + bytes(8), 0, allow_trailing=True)
