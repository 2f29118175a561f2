"""Broker request handling over real storage, cross-checked with kafka-python's record codec."""

from __future__ import annotations

import crc32c
import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkalab.errors import ConfigError, ErrorCode
from kafkalab.broker.settings import BrokerSettings
from kafkalab.protocol.framing import size_prefix
from kafkalab.protocol.header import decode_response
from kafkalab.protocol.versions import ADVERTISED
from tests.broker._harness import Harness, batch, decode_records, records_of


@pytest.fixture
def harness(tmp_path):
    h = Harness(tmp_path)
    yield h


def test_api_versions_lists_every_advertised_api(harness):
    body = harness.call(18, 3, {"client_software_name": "t", "client_software_version": "1"})
    assert body.error_code == 0
    assert {k.api_key: (k.min_version, k.max_version) for k in body.api_keys} == ADVERTISED
    assert ADVERTISED[0][0] == 0  # Produce min 0 for librdkafka's compression check


def test_api_versions_too_new_gets_the_kip_511_fallback(harness):
    frame = (b"\x00\x12\x00\x09" + (5).to_bytes(4, "big") + b"\x00\x01x" + b"\x00")
    harness.broker.handle(1, frame, 0)
    [out] = harness.outgoing()
    data = b"".join(out.parts)
    _, body = decode_response(18, 0, data[4:])
    assert body.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert [(k.api_key, k.min_version, k.max_version) for k in body.api_keys] == [(18, *ADVERTISED[18])]


def test_unknown_api_key_and_unimplemented_version_close_the_connection(harness):
    harness.broker.handle(1, b"\x00\x63\x00\x00\x00\x00\x00\x01\xff\xff", 0)
    harness.broker.handle(2, b"\x00\x00\x00\x02\x00\x00\x00\x01\xff\xff", 0)  # Produce v2
    outs = harness.outgoing()
    assert [(o.connection_id, o.parts, o.close) for o in outs] == [(1, None, True), (2, None, True)]


def test_malformed_body_closes_only_that_connection(harness):
    harness.broker.handle(3, b"\x00\x03\x00\x04\x00\x00\x00\x01\xff\xff\x00\x00\x00\x05", 0)
    [out] = harness.outgoing()
    assert out.close and out.connection_id == 3 and "malformed" in out.reason
    assert harness.call(3, 4, {"topics": None}).brokers[0].node_id == 0


def test_metadata_auto_creates_with_num_partitions(tmp_path):
    h = Harness(tmp_path, num_partitions=3)
    body = h.call(3, 12, {"topics": [{"name": "orders"}], "allow_auto_topic_creation": True})
    [topic] = body.topics
    assert topic.error_code == 0 and len(topic.partitions) == 3
    assert [p.leader_id for p in topic.partitions] == [0, 0, 0]
    assert (tmp_path / "orders-2" / "partition.metadata").exists()
    assert h.call(3, 4, {"topics": None}).topics[0].name == "orders"


def test_metadata_respects_auto_create_disabled(tmp_path):
    h = Harness(tmp_path, auto_create_topics_enable=False)
    body = h.call(3, 4, {"topics": [{"name": "nope"}], "allow_auto_topic_creation": True})
    assert body.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    body = h.call(3, 1, {"topics": [{"name": "bad name"}]})
    assert body.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_invalid_topic_name_on_auto_create(harness):
    body = harness.call(3, 4, {"topics": [{"name": "bad name!"}], "allow_auto_topic_creation": True})
    assert body.topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


def test_advertised_listener_refuses_any_address():
    with pytest.raises(ConfigError, match="0.0.0.0"):
        BrokerSettings.from_properties({"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"},
                                       bound_host="127.0.0.1", bound_port=1)
    settings = BrokerSettings.from_properties(
        {"advertised.listeners": "PLAINTEXT://example.test:19092", "broker.id": "4"},
        bound_host="127.0.0.1", bound_port=1)
    assert (settings.host, settings.port, settings.node_id) == ("example.test", 19092, 4)


def test_produce_then_fetch_round_trip_with_keys_and_headers(harness):
    harness.create_topic("orders", 2)
    first = harness.produce("orders", 1, batch([b"a", b"b", b"c"], headers=[("h", b"1")]))
    assert (first.error_code, first.base_offset, first.log_start_offset) == (0, 0, 0)
    second = harness.produce("orders", 1, batch([b"d"]), version=9)
    assert second.base_offset == 3
    for version in (4, 11, 12):
        response = harness.call(1, version, harness.fetch_body("orders", 1, 0))
        data = response.responses[0].partitions[0]
        assert data.high_watermark == 4 and data.error_code == 0
        got = decode_records(records_of(data))
        assert [(o, v) for o, _, v, _ in got] == [(0, b"a"), (1, b"b"), (2, b"c"), (3, b"d")]
        assert got[0][1] == b"k" and got[0][3] == [("h", b"1")]


def test_a_fetch_at_the_log_end_reports_the_offsets_of_now(harness):
    """Answers without records are shared between fetches: each still carries the partition's
    high watermark, last stable offset and log start offset as they are when it is read."""
    harness.create_topic("t")
    empty = [harness.call(1, 11, harness.fetch_body("t", 0, 0)).responses[0].partitions[0]]
    harness.produce("t", 0, batch([b"0", b"1", b"2"]))
    empty.append(harness.call(1, 11, harness.fetch_body("t", 0, 3)).responses[0].partitions[0])
    harness.produce("t", 0, batch([b"3"]))
    empty.append(harness.call(1, 11, harness.fetch_body("t", 0, 4)).responses[0].partitions[0])
    assert [(d.error_code, d.high_watermark, d.last_stable_offset, d.log_start_offset, records_of(d))
            for d in empty] == [(0, 0, 0, 0, b""), (0, 3, 3, 0, b""), (0, 4, 4, 0, b"")]


def test_fetch_from_the_middle_returns_whole_batches(harness):
    harness.create_topic("t")
    harness.produce("t", 0, batch([b"0", b"1", b"2"]))
    harness.produce("t", 0, batch([b"3", b"4"]))
    data = harness.call(1, 11, harness.fetch_body("t", 0, 4)).responses[0].partitions[0]
    assert [o for o, *_ in decode_records(records_of(data))] == [3, 4]  # the batch holding 4


def test_first_batch_is_returned_whole_even_over_the_limits(harness):
    harness.create_topic("t")
    harness.produce("t", 0, batch([b"x" * 500]))
    harness.produce("t", 0, batch([b"y" * 500]))
    body = harness.fetch_body("t", 0, 0, partition_max_bytes=10, max_bytes=10)
    data = harness.call(1, 11, body).responses[0].partitions[0]
    assert [o for o, *_ in decode_records(records_of(data))] == [0]


@pytest.mark.parametrize("version", [4, 11, 12])
def test_partition_max_bytes_takes_as_many_whole_batches_as_fit(harness, version):
    """librdkafka asks for max.partition.fetch.bytes = 1 MiB and fetch.max.bytes = 50 MiB: the
    answer is every whole batch that fits the smaller bound, never a partial batch."""
    harness.create_topic("t")
    one = batch([b"x" * 300])
    for _ in range(5):
        harness.produce("t", 0, one)
    for partition_max, max_bytes, expected in [
        (3 * len(one), 50 << 20, 3), (4 * len(one) - 1, 50 << 20, 3), (5 * len(one), 50 << 20, 5),
        (1 << 20, 2 * len(one) + 5, 2),
    ]:
        body = harness.fetch_body("t", 0, 0, partition_max_bytes=partition_max, max_bytes=max_bytes)
        data = harness.call(1, version, body).responses[0].partitions[0]
        assert len(records_of(data)) == expected * len(one), (partition_max, max_bytes)
        assert [o for o, *_ in decode_records(records_of(data))] == list(range(expected))


def test_max_bytes_bounds_the_second_partition(harness):
    harness.create_topic("t", 2)
    one = batch([b"x" * 300])
    harness.produce("t", 0, one)
    harness.produce("t", 1, one)
    body = harness.fetch_body("t", 0, 0, max_bytes=len(one) + 10)
    body["topics"][0]["partitions"].append({"partition": 1, "fetch_offset": 0, "partition_max_bytes": 1 << 20})
    parts = harness.call(1, 11, body).responses[0].partitions
    assert len(decode_records(records_of(parts[0]))) == 1
    assert records_of(parts[1]) == b""


def test_fetch_errors(harness):
    harness.create_topic("t")
    harness.produce("t", 0, batch([b"a"]))
    body = harness.fetch_body("t", 0, 5)
    body["topics"].append({"topic": "missing", "partitions": [{"partition": 0, "fetch_offset": 0,
                                                              "partition_max_bytes": 100}]})
    topics = harness.call(1, 11, body).responses
    assert topics[0].partitions[0].error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert topics[1].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_produce_errors(harness):
    harness.create_topic("t")
    bad_acks = harness.call(0, 7, {"acks": 2, "timeout_ms": 1, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": batch([b"a"])}]}]})
    assert bad_acks.responses[0].partition_responses[0].error_code == ErrorCode.INVALID_REQUIRED_ACKS
    assert harness.produce("t", 5, batch([b"a"])).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    corrupt = bytearray(batch([b"abc"]))
    corrupt[-1] ^= 0xFF
    assert harness.produce("t", 0, bytes(corrupt)).error_code == ErrorCode.CORRUPT_MESSAGE
    assert harness.produce("t", 0, b"").error_code == ErrorCode.INVALID_RECORD
    zstd = batch([b"z" * 100], compression=4)
    assert harness.produce("t", 0, zstd, version=3).error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    assert harness.produce("t", 0, zstd, version=7).error_code == 0


def test_message_too_large(tmp_path):
    h = Harness(tmp_path)
    h.create_topic("t", configs={"max.message.bytes": "200"})
    assert h.produce("t", 0, batch([b"x" * 400])).error_code == ErrorCode.MESSAGE_TOO_LARGE


def test_acks_zero_sends_nothing_and_closes_on_error(harness):
    harness.create_topic("t")
    [out] = harness.produce("t", 0, batch([b"a"]), acks=0)
    assert out.parts is None and not out.close
    [out] = harness.produce("t", 9, batch([b"a"]), acks=0)
    assert out.close
    data = harness.call(1, 11, harness.fetch_body("t", 0, 0)).responses[0].partitions[0]
    assert len(decode_records(records_of(data))) == 1


def test_produce_to_an_unknown_topic_never_creates_it(harness):
    """Regression: a Produce naming a missing topic (say, a bit-flipped name) used to create it on
    disk. Kafka creates topics only for Metadata requests; Produce answers UNKNOWN_TOPIC_OR_PARTITION."""
    assert harness.broker.settings.auto_create_topics_enable
    answer = harness.produce("fresh", 0, batch([b"a"]))
    assert answer.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert harness.broker.topics.get("fresh") is None
    assert not any(harness.broker.topics.names())
    assert not (harness.data_dir / "fresh-0").exists()


def test_metadata_then_produce_creates_the_topic_as_real_producers_do(harness):
    body = harness.call(3, 12, {"topics": [{"name": "fresh"}], "allow_auto_topic_creation": True})
    assert body.topics[0].error_code == 0
    assert harness.produce("fresh", 0, batch([b"a"])).error_code == 0


def test_fetch_response_carries_file_slices_for_sendfile(harness):
    from kafkalab.storage.positions import FileSlice

    harness.create_topic("t")
    harness.produce("t", 0, batch([b"a"]))
    harness.send(1, 11, harness.fetch_body("t", 0, 0))
    [out] = harness.outgoing()
    slices = [p for p in out.parts if isinstance(p, FileSlice)]
    assert len(slices) == 1 and slices[0].path.name.endswith(".log")
    assert int.from_bytes(out.parts[0], "big") == sum(
        len(p) if isinstance(p, bytes) else p.size_bytes for p in out.parts[1:])


def test_trailing_bytes_after_a_request_body_are_ignored_as_kafka_does(harness):
    """Regression: librdkafka sends Metadata v12 "all topics" as a 4-byte null count (00 00 00 00)
    where a 1-byte varint belongs (librdkafka issue 5049); Kafka reads the first byte as null
    topics and ignores the rest. kafkalab used to close the connection."""
    harness.create_topic("t")
    frame = bytes.fromhex("0003000c00000003000772646b61666b610000000000010000")  # captured from librdkafka
    harness.broker.handle(1, frame, harness.clock.milliseconds())
    [out] = harness.outgoing()
    assert not out.close, out.reason
    body = harness.decode(out, 3, 12, correlation_id=3)
    assert [t.name for t in body.topics] == ["t"]


def test_describe_configs_with_an_empty_key_list_answers_every_key(harness):
    """Regression: kafka-python sends configuration_keys=[]; Kafka treats empty like null."""
    harness.create_topic("t", 1, {"cleanup.policy": "compact"})
    describe = {"resources": [{"resource_type": 2, "resource_name": "t", "configuration_keys": []}],
                "include_synonyms": False}
    configs = {c.name: c for c in harness.call(32, 1, describe).results[0].configs}
    assert configs["cleanup.policy"].value == "compact" and configs["retention.ms"].config_source == 5


def test_produce_applies_kafkas_client_only_batch_rules(harness):
    """Kafka's validator refuses these from a client (not from replication or a coordinator).
    Produce v8+ carries the reason in ``error_message``."""
    harness.create_topic("t")
    two_batches = batch([b"a"]) + batch([b"b"])
    refused = harness.produce("t", 0, two_batches, version=9)
    assert refused.error_code == ErrorCode.INVALID_RECORD and "only one record batch" in refused.error_message
    control = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=True, producer_id=7, producer_epoch=0,
        base_sequence=-1, batch_size=1 << 10,
    )
    control.append(0, timestamp=1_000, key=b"\x00\x00\x00\x00", value=b"\x00\x00\x00\x00\x00\x00", headers=[])
    marker = bytearray(control.build())
    marker[22] |= 0x20  # attributes bit 5: control batch
    marker[17:21] = crc32c.crc32c(bytes(marker[21:])).to_bytes(4, "big")
    refused = harness.produce("t", 0, bytes(marker), version=9)
    assert refused.error_code == ErrorCode.INVALID_RECORD and "control records" in refused.error_message
    no_sequence = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=False, producer_id=7, producer_epoch=0,
        base_sequence=-1, batch_size=1 << 10,
    )
    no_sequence.append(0, timestamp=1_000, key=b"k", value=b"v", headers=[])
    refused = harness.produce("t", 0, bytes(no_sequence.build()), version=9)
    assert refused.error_code == ErrorCode.INVALID_RECORD and "Invalid sequence number -1" in refused.error_message
    data = harness.call(1, 11, harness.fetch_body("t", 0, 0)).responses[0].partitions[0]
    assert records_of(data) == b""  # nothing refused was written
    assert harness.produce("t", 0, batch([b"ok"])).error_code == 0
