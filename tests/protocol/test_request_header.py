"""Request/response headers, ApiVersions' special cases, and malformed input."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest

from kafkalab.errors import KafkaError, ProtocolError
from kafkalab.protocol.header import (
    decode_request_header,
    decode_response,
    encode_request,
    encode_response,
    unsupported_api_versions_response,
)
from kafkalab.protocol.messages import SCHEMAS
from kafkalab.protocol.messages.api_versions import API_VERSIONS_RESPONSE


def _kafka_python_request(request, version: int, correlation_id: int, client_id: str) -> bytes:
    request.API_VERSION = version
    request.with_header(correlation_id=correlation_id, client_id=client_id)
    return bytes(request.encode(header=True))


def test_flexible_header_v2_from_kafka_python():
    frame = _kafka_python_request(
        ApiVersionsRequest(client_software_name="kp", client_software_version="3.0"), 4, 7, "me"
    )
    header = decode_request_header(frame)
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (
        18, 4, 7, "me")
    body = SCHEMAS[18][0].decode(memoryview(frame)[header.body_offset:], 4)
    assert body.client_software_name == "kp"


def test_non_flexible_header_v1_from_kafka_python():
    frame = _kafka_python_request(MetadataRequest(topics=None), 4, 99, "c")
    header = decode_request_header(frame)
    assert (header.api_key, header.api_version, header.correlation_id) == (3, 4, 99)
    body = SCHEMAS[3][0].decode(memoryview(frame)[header.body_offset:], 4)
    assert body.topics is None and body.allow_auto_topic_creation is True


def test_encode_request_round_trips():
    framed = encode_request(3, 12, 5, None, {"topics": None})
    header = decode_request_header(framed[4:])
    assert header.client_id is None and header.api_version == 12


def test_api_versions_response_always_uses_header_v0():
    body = API_VERSIONS_RESPONSE.cls(api_keys=(API_VERSIONS_RESPONSE.cls.ApiVersion(18, 0, 4),))
    frame = b"".join(encode_response(18, 3, 42, body))[4:]
    # v0 header: the correlation id and then the body straight away, no tag byte.
    assert frame[:4] == (42).to_bytes(4, "big")
    decoded = ApiVersionsResponse.decode(frame[4:], version=3)
    assert decoded.api_keys[0].max_version == 4


def test_flexible_response_has_header_v1():
    body = SCHEMAS[3][1].cls()
    frame = b"".join(encode_response(3, 9, 1, body))[4:]
    assert frame[4] == 0  # the empty tag section of response header v1
    assert decode_response(3, 9, frame)[0] == 1


def test_unsupported_api_versions_fallback_is_a_v0_body_kafka_python_understands():
    frame = b"".join(unsupported_api_versions_response(3, (0, 4)))[4:]
    decoded = ApiVersionsResponse.decode(frame[4:], version=0)
    assert decoded.error_code == 35
    assert [(k.api_key, k.min_version, k.max_version) for k in decoded.api_keys] == [(18, 0, 4)]


def test_truncated_header_is_a_protocol_error():
    with pytest.raises(ProtocolError, match="truncated"):
        decode_request_header(b"\x00\x03\x00")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_garbage_headers_and_bodies_raise_only_typed_errors(data):
    try:
        header = decode_request_header(data)
        if header.api_key in SCHEMAS:
            SCHEMAS[header.api_key][0].decode(memoryview(data)[header.body_offset:], header.api_version)
    except KafkaError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(SCHEMAS)), st.data())
def test_mutated_valid_requests_raise_only_typed_errors(api_key, data):
    schema = SCHEMAS[api_key][0]
    version = data.draw(st.integers(schema.valid[0], schema.valid[1]))
    from tests.protocol._protocol_values import random_struct
    import random

    value = random_struct(schema.struct, version, schema.is_flexible(version),
                          random.Random(data.draw(st.integers(0, 10**6))))
    encoded = bytearray(schema.encode(value, version))
    for _ in range(data.draw(st.integers(1, 4))):
        if encoded:
            position = data.draw(st.integers(0, len(encoded) - 1))
            encoded[position] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(encoded)))
    try:
        schema.decode(bytes(encoded[:cut]), version)
    except KafkaError:
        pass
