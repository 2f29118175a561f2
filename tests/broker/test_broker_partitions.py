"""The broker acting through its partitions: leader epochs and leadership on fetch, follower
fetches from replicas it does not know, min.insync.replicas on produce, and metadata drawn from
the controller's image. Responses are decoded with kafkalab's codec, batches built and records
decoded by kafka-python."""

from __future__ import annotations

import pytest

from kafkalab.errors import ErrorCode
from tests.broker._harness import Harness, batch, decode_records, records_of


@pytest.fixture
def harness(tmp_path):  # type: ignore[no-untyped-def]
    return Harness(tmp_path)


def _fetch(harness, body, version=12):  # type: ignore[no-untyped-def]
    return harness.call(1, version, body).responses[0].partitions[0]


def _with(body: dict, **partition_fields: int) -> dict:
    body["topics"][0]["partitions"][0].update(partition_fields)
    return body


def test_consumer_fetch_fences_other_leader_epochs(harness) -> None:  # type: ignore[no-untyped-def]
    harness.create_topic("t")
    harness.produce("t", 0, batch([b"a"]))
    leader_epoch = harness.broker.topics.partition("t", 0).partition.leader_epoch
    assert _fetch(harness, _with(harness.fetch_body("t", 0, 0), current_leader_epoch=leader_epoch)).error_code == 0
    newer = _fetch(harness, _with(harness.fetch_body("t", 0, 0), current_leader_epoch=leader_epoch + 1))
    assert newer.error_code == ErrorCode.UNKNOWN_LEADER_EPOCH and newer.records is None
    harness.broker.topics.partition("t", 0).partition.leader_epoch = leader_epoch + 2  # as after two elections
    older = _fetch(harness, _with(harness.fetch_body("t", 0, 0), current_leader_epoch=leader_epoch + 1))
    assert older.error_code == ErrorCode.FENCED_LEADER_EPOCH


def test_fetch_from_a_replica_this_leader_does_not_have_is_refused(harness) -> None:  # type: ignore[no-untyped-def]
    harness.create_topic("t")
    harness.produce("t", 0, batch([b"a"]))
    body = harness.fetch_body("t", 0, 0)
    body["replica_id"] = 7
    assert _fetch(harness, body).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert _fetch(harness, _with(body, current_leader_epoch=0)).error_code == ErrorCode.UNKNOWN_LEADER_EPOCH


def test_acks_all_below_min_insync_replicas_writes_nothing(harness) -> None:  # type: ignore[no-untyped-def]
    harness.create_topic("t", configs={"min.insync.replicas": "2"})
    refused = harness.produce("t", 0, batch([b"a"]), acks=-1)
    assert refused.error_code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert harness.produce("t", 0, batch([b"b"]), acks=1).error_code == 0  # acks=1 waits for nobody
    log = harness.broker.topics.log("t", 0)
    # The acks=1 record is in the log, but under min.insync.replicas the HW does not move
    # (Kafka's maybeIncrementLeaderHW), so no consumer sees it yet.
    assert (log.log_end_offset, log.high_watermark) == (1, 0)
    data = _fetch(harness, harness.fetch_body("t", 0, 0))
    assert data.error_code == 0 and decode_records(records_of(data)) == []
    harness.call(44, 1, {"resources": [{"resource_type": 2, "resource_name": "t", "configs": [
        {"name": "min.insync.replicas", "config_operation": 0, "value": "1"}]}], "validate_only": False})
    harness.produce("t", 0, batch([b"c"]), acks=1)
    data = _fetch(harness, harness.fetch_body("t", 0, 0))
    assert [value for _, _, value, _ in decode_records(records_of(data))] == [b"b", b"c"]


def test_acks_all_on_a_lone_broker_commits_at_once(harness) -> None:  # type: ignore[no-untyped-def]
    harness.create_topic("t")
    answer = harness.produce("t", 0, batch([b"a", b"b"]), acks=-1)
    assert answer.error_code == 0 and answer.base_offset == 0
    assert harness.broker.topics.log("t", 0).high_watermark == 2


def test_metadata_reports_the_images_leader_epoch_replicas_and_isr(harness) -> None:  # type: ignore[no-untyped-def]
    harness.create_topic("t", partitions=2)
    node = harness.broker.settings.node_id
    metadata = harness.call(3, 12, {"topics": [{"name": "t"}], "allow_auto_topic_creation": False})
    partitions = metadata.topics[0].partitions
    assert [(p.partition_index, p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes) for p in partitions] == \
        [(0, node, 0, (node,), (node,)), (1, node, 0, (node,), (node,))]
    assert [b.node_id for b in metadata.brokers] == [node]


def test_deleting_a_topic_stops_its_replicas_and_removes_the_logs(harness) -> None:  # type: ignore[no-untyped-def]
    harness.create_topic("gone", partitions=2)
    assert harness.broker.topics.partition("gone", 1) is not None
    answer = harness.call(20, 4, {"topic_names": ["gone"], "timeout_ms": 1000})
    assert answer.responses[0].error_code == 0
    assert harness.broker.topics.partition("gone", 0) is None
    assert harness.broker.topics.get("gone") is None


def test_offset_for_leader_epoch_answers_from_the_epoch_cache(harness) -> None:  # type: ignore[no-untyped-def]
    harness.create_topic("t")
    harness.produce("t", 0, batch([b"a", b"b", b"c"]))
    log = harness.broker.topics.log("t", 0)
    log.assign_epoch_start_offset(4, 3)  # as if leadership moved to epoch 4 at offset 3
    harness.broker.topics.partition("t", 0).partition.leader_epoch = 4
    harness.produce("t", 0, batch([b"d"]))

    def ask(epoch: int, current: int = -1) -> tuple[int, int, int]:
        body = {"replica_id": -1, "topics": [{"topic": "t", "partitions": [
            {"partition": 0, "current_leader_epoch": current, "leader_epoch": epoch}]}]}
        answer = harness.call(23, 4, body).topics[0].partitions[0]
        return answer.error_code, answer.leader_epoch, answer.end_offset

    assert ask(0) == (0, 0, 3)          # epoch 0 ended where epoch 4 began
    assert ask(2) == (0, 0, 3)          # never seen: the largest epoch below it
    assert ask(4) == (0, 4, 4)          # the current epoch ends at the LEO
    assert ask(9) == (0, -1, -1)        # above every epoch: undefined
    assert ask(0, current=3)[0] == ErrorCode.FENCED_LEADER_EPOCH
    missing = harness.call(23, 2, {"topics": [{"topic": "nope", "partitions": [
        {"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}]}]}).topics[0].partitions[0]
    assert missing.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
