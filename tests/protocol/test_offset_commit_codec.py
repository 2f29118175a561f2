"""OffsetCommit's dedicated reader and writer agree with the generic schema codec, with
kafka-python's generated classes and with the bytes librdkafka sends."""

from __future__ import annotations

import random

import pytest

from kafkalab.errors import ProtocolError
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.header import decode_request_body, decode_request_header, encode_response
from kafkalab.protocol.messages.offsets import OFFSET_COMMIT_REQUEST, OFFSET_COMMIT_RESPONSE
from kafkalab.protocol.offset_commit_codec import (
    FLEXIBLE_FROM,
    decode_offset_commit_request,
    encode_offset_commit_response,
)
from kafkalab.protocol.types import Writer
from tests.protocol._protocol_values import random_struct
from tests.protocol.test_roundtrip_and_kafka_python import _kafka_python_class

VERSIONS = range(OFFSET_COMMIT_REQUEST.valid[0], OFFSET_COMMIT_REQUEST.valid[1] + 1)
SEEDS = range(40)
# confluent-kafka 2.16 (librdkafka) committing offset 1 of commits-0 for group bench-commits,
# outside any generation: the frame as it arrived at the broker, size prefix removed.
LIBRDKAFKA_V9 = bytes.fromhex(
    "0008000900000002000772646b61666b61000e62656e63682d636f6d6d697473ffffffff0100020863"
    "6f6d6d69747302000000000000000000000001ffffffff01000000")
_REQ = OFFSET_COMMIT_REQUEST.cls
_RESP = OFFSET_COMMIT_RESPONSE.cls


@pytest.mark.parametrize("version", VERSIONS)
def test_requests_decode_exactly_as_the_schema_does(version):
    flexible = OFFSET_COMMIT_REQUEST.is_flexible(version)
    for seed in SEEDS:
        rng = random.Random(seed * 100 + version)
        value = random_struct(OFFSET_COMMIT_REQUEST.struct, version, flexible, rng)
        data = OFFSET_COMMIT_REQUEST.encode(value, version)
        assert decode_offset_commit_request(data, version) == OFFSET_COMMIT_REQUEST.decode(data, version), seed
        assert decode_offset_commit_request(data + b"\x00\x01", version) == value  # trailing bytes ignored


def test_librdkafkas_commit_decodes_to_what_it_says():
    header = decode_request_header(LIBRDKAFKA_V9)
    assert (header.api_key, header.api_version, header.client_id) == (ApiKey.OFFSET_COMMIT, 9, "rdkafka")
    body = memoryview(LIBRDKAFKA_V9)[header.body_offset:]
    assert decode_offset_commit_request(body, 9) == OFFSET_COMMIT_REQUEST.decode(body, 9) == _REQ(
        group_id="bench-commits", generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
        retention_time_ms=-1, topics=(_REQ.OffsetCommitRequestTopic(name="commits", partitions=(
            _REQ.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                partition_index=0, committed_offset=1, committed_leader_epoch=-1, committed_metadata=""),)),))
    assert decode_request_body(ApiKey.OFFSET_COMMIT, 9, body) == decode_offset_commit_request(body, 9)


class _NoGeneric:
    """Stands in for the schema: the dedicated road must not need it."""

    flexible_from = OFFSET_COMMIT_REQUEST.flexible_from

    def decode(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("fell back to the generic decoder")


def test_librdkafkas_commit_takes_the_dedicated_road(monkeypatch):
    from kafkalab.protocol import offset_commit_codec

    monkeypatch.setattr(offset_commit_codec, "OFFSET_COMMIT_REQUEST", _NoGeneric())
    body = memoryview(LIBRDKAFKA_V9)[decode_request_header(LIBRDKAFKA_V9).body_offset:]
    assert decode_offset_commit_request(body, 9).topics[0].name == "commits"


@pytest.mark.parametrize("version", range(FLEXIBLE_FROM, OFFSET_COMMIT_REQUEST.valid[1] + 1))
def test_requests_kafka_python_encodes_decode_as_it_meant_them(version):
    request_class = _kafka_python_class("OffsetCommitRequest")
    for seed in SEEDS:
        rng = random.Random(seed * 7 + version)
        value = random_struct(OFFSET_COMMIT_REQUEST.struct, version, True, rng)
        theirs = request_class.decode(OFFSET_COMMIT_REQUEST.encode(value, version), version=version)
        theirs.with_header(correlation_id=0)
        assert decode_offset_commit_request(bytes(theirs.encode()), version) == value, seed


@pytest.mark.parametrize("version", range(FLEXIBLE_FROM, OFFSET_COMMIT_REQUEST.valid[1] + 1))
def test_a_request_cut_anywhere_fails_as_the_schema_fails(version):
    body = memoryview(LIBRDKAFKA_V9)[decode_request_header(LIBRDKAFKA_V9).body_offset:]
    data = bytes(body)
    for end in range(len(data)):
        with pytest.raises(ProtocolError) as generic:
            OFFSET_COMMIT_REQUEST.decode(data[:end], version, allow_trailing=True)
        with pytest.raises(ProtocolError) as dedicated:
            decode_offset_commit_request(data[:end], version)
        assert str(dedicated.value) == str(generic.value)


def test_bad_utf8_and_long_varints_fail_as_the_schema_fails():
    body = bytearray(memoryview(LIBRDKAFKA_V9)[decode_request_header(LIBRDKAFKA_V9).body_offset:])
    body[1] = 0xFF  # the group id's first byte
    with pytest.raises(ProtocolError) as generic:
        OFFSET_COMMIT_REQUEST.decode(bytes(body), 9, allow_trailing=True)
    with pytest.raises(ProtocolError) as dedicated:
        decode_offset_commit_request(bytes(body), 9)
    assert str(dedicated.value) == str(generic.value)
    overlong = b"\x8e\x80\x80\x80\x80\x00" + bytes(body[1:])  # the group id's length in six bytes
    with pytest.raises(ProtocolError, match="varint longer"):
        decode_offset_commit_request(overlong, 9)


def test_a_tagged_field_goes_to_the_schema():
    body = bytes(memoryview(LIBRDKAFKA_V9)[decode_request_header(LIBRDKAFKA_V9).body_offset:])
    assert body.endswith(b"\x00\x00\x00")
    for cut in (1, 2, 3):  # the partition's, the topic's or the request's tag section
        tagged = body[:-cut] + b"\x01\x05\x01\xaa" + body[len(body) - cut + 1:]
        assert decode_offset_commit_request(tagged, 9) == OFFSET_COMMIT_REQUEST.decode(tagged, 9, allow_trailing=True)


def _generic(correlation_id: int, version: int, body) -> bytes:  # type: ignore[no-untyped-def]
    writer = Writer()
    writer.int32(correlation_id)
    if OFFSET_COMMIT_RESPONSE.is_flexible(version):
        writer.uvarint(0)
    OFFSET_COMMIT_RESPONSE.encode_into(writer, body, version)
    data = b"".join(writer.parts())  # type: ignore[arg-type]
    return len(data).to_bytes(4, "big") + data


@pytest.mark.parametrize("version", VERSIONS)
def test_responses_encode_exactly_as_the_schema_does(version):
    flexible = OFFSET_COMMIT_RESPONSE.is_flexible(version)
    for seed in SEEDS:
        rng = random.Random(seed * 100 + version)
        body = random_struct(OFFSET_COMMIT_RESPONSE.struct, version, flexible, rng)
        dedicated = encode_offset_commit_response(seed, version, body)
        assert (dedicated is None) == (version < FLEXIBLE_FROM)
        whole = b"".join(encode_response(ApiKey.OFFSET_COMMIT, version, seed, body))  # type: ignore[arg-type]
        assert whole == _generic(seed, version, body), seed
        if dedicated is not None:
            assert b"".join(dedicated) == whole  # type: ignore[arg-type]


def test_the_worked_example_answer():
    body = _RESP(throttle_time_ms=0, topics=(_RESP.OffsetCommitResponseTopic(name="commits", partitions=(
        _RESP.OffsetCommitResponseTopic.OffsetCommitResponsePartition(partition_index=0, error_code=0),)),))
    assert b"".join(encode_offset_commit_response(7, 9, body) or []) == bytes.fromhex(
        "0000001c" "00000007" "00" "00000000" "02" "08" + b"commits".hex() + "02" "00000000" "0000" "00" "00" "00")
