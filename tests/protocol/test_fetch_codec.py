"""Fetch's dedicated reader and writer agree with the generic schema codec at every version."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest

from kafkalab.errors import ProtocolError
from kafkalab.protocol.fetch_codec import decode_fetch_request, decode_fetch_response, encode_fetch_response
from kafkalab.protocol.framing import size_prefix
from kafkalab.protocol.messages.fetch import FETCH_REQUEST, FETCH_RESPONSE
from kafkalab.protocol.types import RecordsParts, Writer
from kafkalab.storage.segment import FileSlice
from kafkalab.server.connection import coalesce
from tests.protocol._protocol_values import random_struct

VERSIONS = range(FETCH_REQUEST.valid[0], FETCH_REQUEST.valid[1] + 1)
SEEDS = range(40)


def _consumer_like(value, rng):  # type: ignore[no-untyped-def]
    """A random request without the rare parts (tagged cluster_id, forgotten topics), so most
    seeds take the dedicated road; the others test the hand-over."""
    if rng.random() < 0.7:
        value = dataclasses.replace(value, cluster_id=None, forgotten_topics_data=())
    return value


@pytest.mark.parametrize("version", VERSIONS)
def test_requests_decode_exactly_as_the_schema_does(version):
    flexible = FETCH_REQUEST.is_flexible(version)
    for seed in SEEDS:
        rng = random.Random(seed * 100 + version)
        value = _consumer_like(random_struct(FETCH_REQUEST.struct, version, flexible, rng), rng)
        if value.topics is None:  # a null array cannot be encoded at this version
            continue
        data = FETCH_REQUEST.encode(value, version)
        assert decode_fetch_request(data, version) == FETCH_REQUEST.decode(data, version), f"seed {seed}"
        assert decode_fetch_request(data + b"\x00\x01", version) == value  # trailing bytes ignored


@pytest.mark.parametrize("version", VERSIONS)
def test_a_request_cut_anywhere_fails_as_the_schema_fails(version):
    rng = random.Random(version)
    value = random_struct(FETCH_REQUEST.struct, version, FETCH_REQUEST.is_flexible(version), rng)
    value = dataclasses.replace(value, cluster_id=None, forgotten_topics_data=(), topics=(
        FETCH_REQUEST.cls.FetchTopic(topic="orders", partitions=(FETCH_REQUEST.cls.FetchTopic.FetchPartition(
            partition=1, fetch_offset=41, partition_max_bytes=1 << 20),)),))
    data = FETCH_REQUEST.encode(value, version)
    for end in range(len(data)):
        with pytest.raises(ProtocolError) as generic:
            FETCH_REQUEST.decode(data[:end], version, allow_trailing=True)
        with pytest.raises(ProtocolError) as dedicated:
            decode_fetch_request(data[:end], version)
        assert str(dedicated.value) == str(generic.value)


def _generic_parts(correlation_id: int, version: int, body) -> list:  # type: ignore[no-untyped-def]
    writer = Writer()
    writer.int32(correlation_id)
    if FETCH_RESPONSE.is_flexible(version):
        writer.uvarint(0)
    FETCH_RESPONSE.encode_into(writer, body, version)
    parts = writer.parts()
    return [size_prefix(sum(len(p) if isinstance(p, bytes) else p.size_bytes for p in parts)), *parts]


@pytest.mark.parametrize("version", VERSIONS)
def test_responses_encode_exactly_as_the_schema_does(version, tmp_path: Path):
    flexible = FETCH_RESPONSE.is_flexible(version)
    piece = FileSlice(tmp_path / "00000000000000000000.log", 100, 999_875)
    handled = 0
    for seed in SEEDS:
        rng = random.Random(seed * 100 + version)
        body = random_struct(FETCH_RESPONSE.struct, version, flexible, rng)
        topics = []
        for topic in body.responses:
            partitions = []
            for data in topic.partitions:
                records = rng.choice([data.records, None, RecordsParts((piece,)),
                                      RecordsParts((b"ab", piece, b"cd", piece))])
                aborted = rng.choice([(), None, data.aborted_transactions])
                diverging = rng.choice([None, None, None, data.diverging_epoch])
                partitions.append(dataclasses.replace(data, records=records, aborted_transactions=aborted,
                                                      diverging_epoch=diverging))
            topics.append(dataclasses.replace(topic, partitions=tuple(partitions)))
        body = dataclasses.replace(body, responses=tuple(topics))
        parts = encode_fetch_response(77, version, body)
        if parts is None:  # a diverging epoch: the schema's road
            assert any(p.diverging_epoch is not None for t in body.responses for p in t.partitions)
            continue
        handled += 1
        assert coalesce(parts) == coalesce(_generic_parts(77, version, body)), f"seed {seed}"
    assert handled >= len(SEEDS) // 4


def test_the_broker_uses_the_dedicated_codec_for_fetch(monkeypatch):
    from kafkalab.protocol import header

    calls: list[str] = []
    monkeypatch.setattr(header, "decode_fetch_request", lambda data, version: calls.append("decode"))
    header.decode_request_body(1, 12, b"")
    assert calls == ["decode"]


class _NoGeneric:
    """Stands in for the schema: the dedicated road must not need it."""

    flexible_from = FETCH_REQUEST.flexible_from

    def decode(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("fell back to the generic decoder")


@pytest.mark.parametrize("version", VERSIONS)
def test_a_consumers_request_takes_the_dedicated_road(version, monkeypatch):
    """What librdkafka, the Java consumer and kafka-python send: no tags, no forgotten topics,
    several topics and partitions, a rack id from v11."""
    request = FETCH_REQUEST.cls
    partition = request.FetchTopic.FetchPartition
    value = request(replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=52_428_800, isolation_level=1,
                    session_id=0, session_epoch=-1, rack_id="rack-é" if version >= 11 else "", topics=(
                        request.FetchTopic(topic="orders", partitions=(
                            partition(partition=0, fetch_offset=41, partition_max_bytes=1 << 20,
                                      current_leader_epoch=3 if version >= 9 else -1),
                            partition(partition=5, fetch_offset=2**40, partition_max_bytes=1 << 20))),
                        request.FetchTopic(topic="p" * 200, partitions=())))
    data = FETCH_REQUEST.encode(value, version)
    expected = FETCH_REQUEST.decode(data, version)
    from kafkalab.protocol import fetch_codec

    monkeypatch.setattr(fetch_codec, "FETCH_REQUEST", _NoGeneric())
    assert decode_fetch_request(data, version) == expected == value


@pytest.mark.parametrize("version", VERSIONS)
def test_responses_decode_exactly_as_the_schema_does(version):
    flexible = FETCH_RESPONSE.is_flexible(version)
    for seed in SEEDS:
        rng = random.Random(seed * 100 + version)
        body = random_struct(FETCH_RESPONSE.struct, version, flexible, rng)
        if body.responses is None:  # a null array cannot be encoded at this version
            continue
        data = FETCH_RESPONSE.encode(body, version)
        assert decode_fetch_response(data, version) == FETCH_RESPONSE.decode(data, version), f"seed {seed}"
        assert decode_fetch_response(data + b"\x00", version, allow_trailing=True) == \
            FETCH_RESPONSE.decode(data, version), f"seed {seed}"
        with pytest.raises(ProtocolError):
            decode_fetch_response(data + b"\x00", version)


@pytest.mark.parametrize("version", VERSIONS)
def test_a_response_cut_anywhere_fails_as_the_schema_fails(version):
    response = FETCH_RESPONSE.cls
    data_cls = response.FetchableTopicResponse.PartitionData
    body = response(throttle_time_ms=5, responses=(response.FetchableTopicResponse(topic="orders", partitions=(
        data_cls(partition_index=1, high_watermark=7, last_stable_offset=7, log_start_offset=0,
                 aborted_transactions=(data_cls.AbortedTransaction(producer_id=9, first_offset=3),),
                 records=b"r" * 300),)),))
    data = FETCH_RESPONSE.encode(body, version)
    assert decode_fetch_response(data, version) == FETCH_RESPONSE.decode(data, version)
    for end in range(len(data)):
        with pytest.raises(ProtocolError) as generic:
            FETCH_RESPONSE.decode(data[:end], version)
        with pytest.raises(ProtocolError) as dedicated:
            decode_fetch_response(data[:end], version)
        assert str(dedicated.value) == str(generic.value)


@pytest.mark.parametrize("version", VERSIONS)
def test_a_leaders_response_takes_the_dedicated_road(version, monkeypatch):
    """What a broker answers a follower or a consumer: several partitions, empty and null
    records, a large records field (a three-byte length), aborted transactions."""
    response = FETCH_RESPONSE.cls
    data_cls = response.FetchableTopicResponse.PartitionData
    body = response(throttle_time_ms=0, error_code=0, session_id=0, responses=(
        response.FetchableTopicResponse(topic="orders", partitions=(
            data_cls(partition_index=0, high_watermark=41, last_stable_offset=40, log_start_offset=2,
                     aborted_transactions=None, records=b"x" * 70_000),
            data_cls(partition_index=3, error_code=1, high_watermark=-1, records=None),
            data_cls(partition_index=4, high_watermark=9, last_stable_offset=9, log_start_offset=0,
                     aborted_transactions=(data_cls.AbortedTransaction(producer_id=7, first_offset=0),),
                     records=b""))),
        response.FetchableTopicResponse(topic="é" * 100, partitions=())))
    body = dataclasses.replace(body, error_code=0 if version < 7 else 3, session_id=0 if version < 7 else 12)
    data = FETCH_RESPONSE.encode(body, version)
    expected = FETCH_RESPONSE.decode(data, version)
    from kafkalab.protocol import fetch_codec

    monkeypatch.setattr(fetch_codec, "FETCH_RESPONSE", _NoGeneric())
    assert decode_fetch_response(data, version) == expected


def test_clients_use_the_dedicated_decoder_for_fetch_responses(monkeypatch):
    from kafkalab.protocol import header

    calls: list[int] = []
    monkeypatch.setattr(header, "decode_fetch_response",
                        lambda data, version, allow_trailing=False: calls.append(version))
    header.decode_response(1, 12, b"\x00\x00\x00\x07\x00")
    assert calls == [12]


def test_a_kraft_observers_request_takes_the_dedicated_road(monkeypatch):
    """A broker fetching __cluster_metadata sends the tagged cluster_id (KIP-595)."""
    from kafkalab.broker.metadata_follower import METADATA_FETCH_VERSION, MetadataFollower
    from kafkalab.protocol import fetch_codec

    value = MetadataFollower(2, "cluster-é").next_fetch()
    data = FETCH_REQUEST.encode(value, METADATA_FETCH_VERSION)
    expected = FETCH_REQUEST.decode(data, METADATA_FETCH_VERSION)
    for end in range(len(data)):  # cut anywhere: the same error as the generic decoder's
        with pytest.raises(ProtocolError) as generic:
            FETCH_REQUEST.decode(data[:end], METADATA_FETCH_VERSION, allow_trailing=True)
        with pytest.raises(ProtocolError) as dedicated:
            decode_fetch_request(data[:end], METADATA_FETCH_VERSION)
        assert str(dedicated.value) == str(generic.value)
    monkeypatch.setattr(fetch_codec, "FETCH_REQUEST", _NoGeneric())
    assert decode_fetch_request(data, METADATA_FETCH_VERSION) == expected == value
    assert expected.cluster_id == "cluster-é"
