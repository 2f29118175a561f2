"""ListOffsets, topic admin, DeleteRecords, configs and delayed fetches, with a ManualClock."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalab.errors import ErrorCode
from tests.broker._harness import Harness, batch, decode_records, records_of


@pytest.fixture
def harness(tmp_path):
    return Harness(tmp_path)


def _list_offsets(h: Harness, topic: str, timestamp: int, version: int = 2) -> tuple[int, int, int]:
    body = {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "timestamp": timestamp}]}]}
    p = h.call(2, version, body).topics[0].partitions[0]
    return p.error_code, p.offset, p.timestamp


def test_list_offsets_earliest_latest_and_by_timestamp(harness):
    harness.create_topic("t")
    harness.produce("t", 0, batch([b"a", b"b"], timestamp_ms=1000))  # offsets 0-1, ts 1000-1001
    harness.produce("t", 0, batch([b"c", b"d"], timestamp_ms=2000))  # offsets 2-3, ts 2000-2001
    assert _list_offsets(harness, "t", -2) == (0, 0, -1)
    assert _list_offsets(harness, "t", -1, version=7) == (0, 4, -1)
    assert _list_offsets(harness, "t", 1500) == (0, 2, 2000)  # the first record at or after 1500, as Kafka
    assert _list_offsets(harness, "t", 9999) == (0, -1, -1)
    assert _list_offsets(harness, "nope", -1)[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_create_topics_errors(harness):
    assert harness.create_topic("t", 2).error_code == 0
    assert harness.create_topic("t").error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    assert harness.create_topic("bad/name").error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert harness.create_topic("z", 0).error_code == ErrorCode.INVALID_PARTITIONS
    three = {"name": "r3", "num_partitions": 1, "replication_factor": 3}
    result = harness.call(19, 3, {"topics": [three], "timeout_ms": 1}).topics[0]
    assert result.error_code == ErrorCode.INVALID_REPLICATION_FACTOR
    bad_config = harness.create_topic("c", 1, {"retention.ms": "soon"})
    assert bad_config.error_code == ErrorCode.INVALID_CONFIG
    assert harness.broker.topics.get("c") is None


def test_create_topics_defaults_validate_only_and_v5_configs(tmp_path):
    h = Harness(tmp_path, num_partitions=4)
    defaults = {"name": "d", "num_partitions": -1, "replication_factor": -1}
    dry = h.call(19, 7, {"topics": [defaults], "validate_only": True}).topics[0]
    assert (dry.error_code, dry.num_partitions) == (0, 4) and h.broker.topics.get("d") is None
    made = h.call(19, 7, {"topics": [defaults]}).topics[0]
    assert made.num_partitions == 4 and made.topic_id.int != 0
    assert {c.name for c in made.configs} >= {"retention.ms", "segment.bytes"}


def test_delete_topics_and_create_partitions(harness, tmp_path):
    harness.create_topic("t", 1, {"retention.ms": "1000"})
    grown = harness.call(37, 1, {"topics": [{"name": "t", "count": 3, "assignments": None}],
                                 "timeout_ms": 1, "validate_only": False}).results[0]
    assert grown.error_code == 0 and harness.broker.topics.get("t").partition_count == 3
    shrink = harness.call(37, 1, {"topics": [{"name": "t", "count": 2, "assignments": None}],
                                  "timeout_ms": 1, "validate_only": False}).results[0]
    assert shrink.error_code == ErrorCode.INVALID_PARTITIONS
    deleted = harness.call(20, 4, {"topic_names": ["t", "ghost"], "timeout_ms": 1}).responses
    assert [(r.name, r.error_code) for r in deleted] == [
        ("t", 0), ("ghost", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    assert not (tmp_path / "t-0").exists() and harness.config_store.get("topics", "t") == {}


def test_delete_records_moves_the_log_start_offset(harness):
    harness.create_topic("t")
    for i in range(5):
        harness.produce("t", 0, batch([b"%d" % i]))

    def delete(offset: int) -> tuple[int, int]:
        body = {"topics": [{"name": "t", "partitions": [{"partition_index": 0, "offset": offset}]}],
                "timeout_ms": 1}
        p = harness.call(21, 1, body).topics[0].partitions[0]
        return p.error_code, p.low_watermark

    assert delete(3) == (0, 3)
    assert delete(99) == (ErrorCode.OFFSET_OUT_OF_RANGE, -1)
    data = harness.call(1, 11, harness.fetch_body("t", 0, 1)).responses[0].partitions[0]
    assert data.error_code == ErrorCode.OFFSET_OUT_OF_RANGE and data.log_start_offset == 3
    assert delete(-1) == (0, 5)


def test_describe_and_alter_configs(harness):
    harness.create_topic("t")
    alter = {"resources": [{"resource_type": 2, "resource_name": "t", "configs": [
        {"name": "retention.ms", "config_operation": 0, "value": "60000"},
        {"name": "cleanup.policy", "config_operation": 2, "value": "compact"}]}], "validate_only": False}
    result = harness.call(44, 1, alter).responses[0]
    assert result.error_code == 0, result.error_message
    describe = {"resources": [{"resource_type": 2, "resource_name": "t",
                               "configuration_keys": ["retention.ms", "cleanup.policy"]}],
                "include_synonyms": True}
    configs = {c.name: c for c in harness.call(32, 4, describe).results[0].configs}
    assert configs["retention.ms"].value == "60000" and configs["retention.ms"].config_source == 1
    assert configs["cleanup.policy"].value == "compact"
    assert harness.broker.topics.log("t", 0).config.retention_ms == 60000
    replace = {"resources": [{"resource_type": 2, "resource_name": "t", "configs": [
        {"name": "retention.ms", "value": "5000"}]}], "validate_only": False}
    assert harness.call(33, 1, replace).responses[0].error_code == 0
    assert harness.config_store.get("topics", "t") == {"retention.ms": "5000"}
    bad = {"resources": [{"resource_type": 2, "resource_name": "t", "configs": [
        {"name": "retention.ms", "value": "x"}]}], "validate_only": False}
    assert harness.call(33, 1, bad).responses[0].error_code == ErrorCode.INVALID_CONFIG
    missing = {"resources": [{"resource_type": 2, "resource_name": "nope", "configuration_keys": None}]}
    assert harness.call(32, 1, missing).results[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    brokers = {"resources": [{"resource_type": 4, "resource_name": "0", "configuration_keys": None}]}
    assert harness.call(32, 1, brokers).results[0].configs


def test_delayed_fetch_expires_on_the_manual_clock(harness):
    harness.create_topic("t")
    harness.send(1, 11, harness.fetch_body("t", 0, 0, max_wait_ms=500))
    [parked] = harness.broker.parked_fetches.values()
    # The wheel may wake the adapter earlier (a coarser bucket cascading), never later.
    assert harness.outgoing() == [] and harness.broker.next_deadline_ms() <= harness.clock.milliseconds() + 500
    harness.advance(499)
    assert harness.outgoing() == [] and not parked.is_completed
    harness.advance(1)
    [out] = harness.outgoing()
    assert records_of(harness.decode(out, 1, 11).responses[0].partitions[0]) == b""
    assert parked.expired and harness.broker.parked_fetches == {}


def test_delayed_fetch_completes_when_min_bytes_arrive(harness):
    harness.create_topic("t")
    harness.send(1, 11, harness.fetch_body("t", 0, 0, max_wait_ms=10_000, min_bytes=150), connection_id=5)
    harness.produce("t", 0, batch([b"x"]))  # ~70 bytes: not enough yet
    assert [o.connection_id for o in harness.outgoing()] == []
    harness.send(0, 7, {"acks": 1, "timeout_ms": 1, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": batch([b"y" * 100])}]}]})
    outs = harness.outgoing()
    assert [o.connection_id for o in outs] == [5, 1]  # the fetch completes within the produce
    assert len(decode_records(records_of(harness.decode(outs[0], 1, 11).responses[0].partitions[0]))) == 2


def test_closed_connection_drops_its_parked_fetch(harness):
    harness.create_topic("t")
    harness.send(1, 11, harness.fetch_body("t", 0, 0, max_wait_ms=500), connection_id=8)
    [parked] = harness.broker.parked_fetches.values()
    harness.broker.connection_closed(8)
    harness.advance(1000)
    harness.send(0, 7, {"acks": 1, "timeout_ms": 1, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": batch([b"late"])}]}]})
    assert [o.connection_id for o in harness.outgoing()] == [1]  # no answer for connection 8
    assert parked.abandoned and not parked.expired


def test_init_producer_id_hands_out_distinct_ids(harness):
    first = harness.call(22, 0, {"transactional_id": None, "transaction_timeout_ms": 1000})
    second = harness.call(22, 4, {"transactional_id": None, "transaction_timeout_ms": 1000})
    assert first.error_code == second.error_code == 0 and second.producer_id == first.producer_id + 1
    txn = harness.call(22, 1, {"transactional_id": "tx", "transaction_timeout_ms": 1000})
    assert txn.error_code == 0 and txn.producer_id == second.producer_id + 1 and txn.producer_epoch == 0


def test_restart_keeps_topics_ids_and_records(tmp_path):
    first = Harness(tmp_path)
    topic_id = first.create_topic("t", 2, {"retention.ms": "123456"}).topic_id
    first.produce("t", 1, batch([b"a", b"b"]))
    first.close()
    second = Harness(tmp_path, seed=99)
    info = second.broker.topics.get("t")
    assert (info.topic_id, info.partition_count) == (topic_id, 2)
    assert second.broker.topics.log("t", 0).config.retention_ms == 123456
    data = second.call(1, 11, second.fetch_body("t", 1, 0)).responses[0].partitions[0]
    assert [v for _, _, v, _ in decode_records(records_of(data))] == [b"a", b"b"]


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=120))
def test_any_frame_gets_exactly_one_outgoing(tmp_path_factory, frame):
    h = _shared_harness(tmp_path_factory)
    h.broker.handle(1, frame, h.clock.milliseconds())
    outs = h.outgoing()
    parked = len(h.broker.parked_fetches)
    assert len(outs) + parked == 1
    h.broker.connection_closed(1)


_HARNESS: list[Harness] = []


def _shared_harness(factory) -> Harness:
    if not _HARNESS or _HARNESS[0].closed:  # the autouse fixture closes it after its test
        _HARNESS[:] = [Harness(factory.mktemp("fuzz"), seed=random.Random(1).randrange(100))]
    return _HARNESS[0]
