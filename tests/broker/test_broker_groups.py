"""The group APIs through the sans-I/O broker: parked JoinGroups, FindCoordinator, replay on open."""

from __future__ import annotations

from kafkalab.group.partitioner import OFFSETS_TOPIC, partition_for
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.txn.coordinator import TRANSACTION_STATE_TOPIC
from tests.broker._harness import Harness

FAST = {"group.initial.rebalance.delay.ms": "500"}
JOIN_V5 = 5


def _join(member_id: str = "", instance: str | None = None) -> dict:
    return {"group_id": "g", "session_timeout_ms": 10_000, "rebalance_timeout_ms": 20_000,
            "member_id": member_id, "group_instance_id": instance, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"sub"}]}


def test_find_coordinator_for_groups_and_transactions(tmp_path):
    h = Harness(tmp_path, node_id=3, port=19092)
    old = h.call(ApiKey.FIND_COORDINATOR, 1, {"key": "g", "key_type": 0})
    assert (old.error_code, old.node_id, old.port) == (0, 3, 19092)
    # Kafka's getCoordinator: the request that finds __transaction_state missing creates it and
    # answers COORDINATOR_NOT_AVAILABLE; the client's retry finds the partition's leader.
    first = h.call(ApiKey.FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": ["tx-a", "tx-b"]})
    assert [(c.key, c.node_id, c.error_code) for c in first.coordinators] == [("tx-a", -1, 15), ("tx-b", -1, 15)]
    assert h.broker.topics.get(TRANSACTION_STATE_TOPIC).partition_count == 50
    batched = h.call(ApiKey.FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": ["tx-a", "tx-b"]})
    assert [(c.key, c.node_id, c.error_code) for c in batched.coordinators] == [("tx-a", 3, 0), ("tx-b", 3, 0)]
    empty = h.call(ApiKey.FIND_COORDINATOR, 1, {"key": "", "key_type": 1})
    assert empty.error_code == 42  # INVALID_REQUEST: a transactional id is never empty
    groups = h.call(ApiKey.FIND_COORDINATOR, 6, {"key_type": 0, "coordinator_keys": ["a", "b"]})
    assert [(c.key, c.node_id, c.error_code) for c in groups.coordinators] == [("a", 3, 0), ("b", 3, 0)]


def test_parked_join_does_not_block_other_connections(tmp_path):
    h = Harness(tmp_path, properties=FAST)
    first = h.call(ApiKey.JOIN_GROUP, JOIN_V5, _join())
    assert first.error_code == 79  # MEMBER_ID_REQUIRED
    correlation_id = h.send(ApiKey.JOIN_GROUP, JOIN_V5, _join(first.member_id), connection_id=1)
    assert h.outgoing() == []  # parked
    assert h.call(ApiKey.LIST_GROUPS, 4, {"states_filter": []}, connection_id=2).groups[0].group_state == \
        "PreparingRebalance"
    h.advance(500)
    [out] = h.outgoing()
    assert out.connection_id == 1
    joined = h.decode(out, ApiKey.JOIN_GROUP, JOIN_V5, correlation_id)
    assert (joined.error_code, joined.generation_id, joined.leader) == (0, 1, first.member_id)
    sync = h.call(ApiKey.SYNC_GROUP, 3, {"group_id": "g", "generation_id": 1, "member_id": first.member_id,
                                         "assignments": [{"member_id": first.member_id, "assignment": b"A"}]})
    assert (sync.error_code, sync.assignment) == (0, b"A")
    described = h.call(ApiKey.DESCRIBE_GROUPS, 5, {"groups": ["g", "nope"]}).groups
    assert [(g.group_state, g.protocol_data) for g in described] == [("Stable", "range"), ("Dead", "")]
    assert described[0].members[0].member_assignment == b"A"


def test_commits_are_replayed_when_the_broker_reopens(tmp_path):
    h = Harness(tmp_path)
    commit = {"group_id": "simple", "generation_id_or_member_epoch": -1, "member_id": "",
              "topics": [{"name": "orders", "partitions": [
                  {"partition_index": 0, "committed_offset": 42, "committed_metadata": "m"}]}]}
    assert h.call(ApiKey.OFFSET_COMMIT, 8, commit).topics[0].partitions[0].error_code == 0
    assert h.broker.topics.get(OFFSETS_TOPIC).partition_count == 50
    log = h.broker.topics.log(OFFSETS_TOPIC, partition_for("simple"))
    assert log.log_end_offset == 1
    h.close()
    again = Harness(tmp_path)
    fetched = again.call(ApiKey.OFFSET_FETCH, 8, {"groups": [{"group_id": "simple", "topics": None}]})
    [group] = fetched.groups
    assert [(t.name, p.partition_index, p.committed_offset, p.metadata)
            for t in group.topics for p in t.partitions] == [("orders", 0, 42, "m")]
    old = again.call(ApiKey.OFFSET_FETCH, 1, {"group_id": "simple", "topics": [
        {"name": "orders", "partition_indexes": [0, 1]}]})
    assert [(p.partition_index, p.committed_offset) for p in old.topics[0].partitions] == [(0, 42), (1, -1)]
    assert again.call(ApiKey.DELETE_GROUPS, 2, {"groups_names": ["simple"]}).results[0].error_code == 0
    again.close()


def test_offsets_topic_is_compacted(tmp_path):
    h = Harness(tmp_path)
    h.call(ApiKey.OFFSET_COMMIT, 2, {"group_id": "g", "generation_id_or_member_epoch": -1, "member_id": "",
                                     "retention_time_ms": -1, "topics": []})
    assert h.broker.topics.get(OFFSETS_TOPIC) is None  # nothing to write: no topic yet
    h.call(ApiKey.OFFSET_COMMIT, 2, {"group_id": "g", "generation_id_or_member_epoch": -1, "member_id": "",
                                     "retention_time_ms": -1, "topics": [
                                         {"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 1}]}]})
    properties = h.config_store.topic_properties(OFFSETS_TOPIC)
    assert properties.get("cleanup.policy") == "compact"
