"""Envelope and AllocateProducerIds beyond the generic spec checks of
``test_broker_lifecycle_schemas`` (which compares their fields with Kafka's JSON and their bytes
with kafka-python's codec built over it): the serialized principal, written out by hand from
Kafka's ``DefaultPrincipalData.json`` and ``MessageUtil.toVersionPrefixedBytes``."""

from __future__ import annotations

from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.header import decode_request_body, decode_request_header, encode_request
from kafkalab.protocol.messages.forwarding import (
    ANONYMOUS_PRINCIPAL,
    ENVELOPE_REQUEST,
    ENVELOPE_VERSION,
    serialize_principal,
)
from tests.protocol.kafka_specs import kafka_spec


def test_anonymous_principal_bytes():
    # int16 version 0, compact string "User" (length + 1), compact string "ANONYMOUS", bool
    # false, empty tagged-field section.
    assert ANONYMOUS_PRINCIPAL == b"\x00\x00" + b"\x05User" + b"\x0aANONYMOUS" + b"\x00" + b"\x00"
    assert serialize_principal("User", "alice") == b"\x00\x00\x05User\x06alice\x00\x00"


def test_principal_fields_are_kafkas():
    spec = kafka_spec("DefaultPrincipalData")
    assert [(fld["name"], fld["type"]) for fld in spec["fields"]] == [
        ("Type", "string"), ("Name", "string"), ("TokenAuthenticated", "bool")]
    assert spec["validVersions"] == "0" and spec["flexibleVersions"] == "0+"


def test_envelope_frame_carries_the_client_frame_unchanged():
    inner = encode_request(ApiKey.DELETE_TOPICS, 4, 77, "client-a", _delete_topics_body())[4:]
    envelope = ENVELOPE_REQUEST.cls(request_data=inner, request_principal=ANONYMOUS_PRINCIPAL,
                                    client_host_address=bytes([127, 0, 0, 1]))
    frame = encode_request(ApiKey.ENVELOPE, ENVELOPE_VERSION, 3, "broker-2", envelope)[4:]
    header = decode_request_header(frame)
    assert (header.api_key, header.api_version, header.correlation_id) == (58, 0, 3)
    body = decode_request_body(58, 0, memoryview(frame)[header.body_offset:])
    assert bytes(body.request_data) == inner
    # the request data is a compact bytes field: uvarint(len + 1), then the bytes
    start = header.body_offset
    assert frame[start] == len(inner) + 1 and frame[start + 1:start + 1 + len(inner)] == inner


def _delete_topics_body():
    from kafkalab.protocol.messages.topics import DELETE_TOPICS_REQUEST
    return DELETE_TOPICS_REQUEST.cls(topic_names=("orders",), timeout_ms=1000)
