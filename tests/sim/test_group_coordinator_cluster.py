"""The group coordinator in a three-broker simulated cluster: the leader of the group's
``__consumer_offsets`` partition coordinates it, commits are answered only once the ISR has
them (acks=all), and when the coordinator's broker dies the new partition leader loads the
group from its replica of the log, so members carry on and committed offsets survive."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkalab.client.membership import MemberConfig, MemberState
from kafkalab.errors import ErrorCode
from kafkalab.group.partitioner import OFFSETS_TOPIC, partition_for
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.sim.cluster import CLIENT, SimCluster

GROUP = "g"


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[SimCluster]:
    cluster = SimCluster(tmp_path, nodes=3, seed=5, properties={"group.initial.rebalance.delay.ms": "0"})
    cluster.create_topic("orders", 6, 3)
    cluster.run_for(100)
    yield cluster
    cluster.close()


def call(sim: SimCluster, node: int, api_key: int, version: int, body: dict, wait_ms: int = 60_000) -> Any:
    answers: list[Any] = []
    sim._send(CLIENT, node, api_key, version, body, answers.append)
    sim.run_until(lambda: bool(answers), wait_ms)
    return answers[0] if answers else None


def commit(sim: SimCluster, node: int, offset: int) -> int:
    body = {"group_id": GROUP, "generation_id_or_member_epoch": -1, "member_id": "", "topics": [
        {"name": "orders", "partitions": [{"partition_index": 0, "committed_offset": offset}]}]}
    return call(sim, node, ApiKey.OFFSET_COMMIT, 8, body).topics[0].partitions[0].error_code


def fetched(sim: SimCluster, node: int) -> tuple[int, int]:
    body = {"group_id": GROUP, "topics": [{"name": "orders", "partition_indexes": [0]}]}
    answer = call(sim, node, ApiKey.OFFSET_FETCH, 5, body)
    return answer.error_code, answer.topics[0].partitions[0].committed_offset if answer.topics else -1


def find(sim: SimCluster, node: int) -> Any:
    return call(sim, node, ApiKey.FIND_COORDINATOR, 3, {"key": GROUP, "key_type": 0})


def test_find_coordinator_names_the_offsets_partition_leader_everywhere(sim: SimCluster) -> None:
    # The first FindCoordinator creates __consumer_offsets; the broker learns of it by fetching
    # the metadata log, so (as in Kafka) its first answer may be COORDINATOR_NOT_AVAILABLE.
    first = find(sim, 1)
    assert first.error_code in (0, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    sim.await_metadata()
    answers = [find(sim, node) for node in sim.nodes]
    leader = sim.leader(OFFSETS_TOPIC, partition_for(GROUP))
    assert {(a.error_code, a.node_id, a.port) for a in answers} == {(0, leader, 9090 + leader)}
    registration = sim.controller.image.partition(OFFSETS_TOPIC, partition_for(GROUP))
    assert len(registration.replicas) == 3  # offsets.topic.replication.factor
    other = next(n for n in sim.nodes if n != leader)
    assert commit(sim, other, 42) == ErrorCode.NOT_COORDINATOR
    assert fetched(sim, other)[0] == ErrorCode.NOT_COORDINATOR
    assert commit(sim, leader, 42) == 0
    assert fetched(sim, leader) == (0, 42)


def test_too_few_brokers_for_the_replication_factor_means_no_coordinator(tmp_path: Path) -> None:
    sim = SimCluster(tmp_path, nodes=2, seed=1, properties={"offsets.topic.replication.factor": "3"})
    assert find(sim, 1).error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert sim.controller.image.topics.get(OFFSETS_TOPIC) is None
    sim.close()


def test_a_commit_is_answered_only_once_the_isr_has_it(sim: SimCluster) -> None:
    find(sim, 1)
    partition = partition_for(GROUP)
    leader = sim.leader(OFFSETS_TOPIC, partition)
    assert commit(sim, leader, 7) == 0
    for node in sim.nodes.values():  # answered after both followers fetched the batch
        assert node.broker.topics.log(OFFSETS_TOPIC, partition).log_end_offset == 1
    sim.network.isolate(leader, [n for n in sim.nodes if n != leader])  # the client still reaches it
    start = sim.clock.milliseconds()
    assert commit(sim, leader, 8) == ErrorCode.COORDINATOR_NOT_AVAILABLE  # offsets.commit.timeout.ms
    assert sim.clock.milliseconds() - start >= 5_000
    assert fetched(sim, leader) == (0, 7)  # an unacknowledged commit is not served


def test_members_follow_the_coordinator_to_the_new_leader_and_commits_survive(sim: SimCluster) -> None:
    config = MemberConfig(GROUP, ("orders",), session_timeout_ms=10_000, heartbeat_interval_ms=1_000,
                          rebalance_timeout_ms=10_000)
    for name in ("c1", "c2", "c3"):
        sim.add_member(name, config)
    assert sim.run_until(lambda: all(m.state is MemberState.STABLE for m in sim.members.values())
                         and sum(len(m.owned) for m in sim.members.values()) == 6, 60_000)
    coordinator = sim.leader(OFFSETS_TOPIC, partition_for(GROUP))
    generation = sim.nodes[coordinator].broker.group_coordinator.groups[GROUP].generation_id
    assert commit(sim, coordinator, 99) == ErrorCode.UNKNOWN_MEMBER_ID  # a live group refuses outsiders
    body = {"group_id": GROUP, "generation_id_or_member_epoch": generation,
            "member_id": sim.members["c1"].member_id, "topics": [
                {"name": "orders", "partitions": [{"partition_index": 0, "committed_offset": 42}]}]}
    assert call(sim, coordinator, ApiKey.OFFSET_COMMIT, 8, body).topics[0].partitions[0].error_code == 0
    sim.crash(coordinator)
    sim.run_for(20_000)  # the controller fences the broker and elects a new leader
    new = sim.leader(OFFSETS_TOPIC, partition_for(GROUP))
    assert new not in (coordinator, -1)
    assert sim.run_until(lambda: all(m.state is MemberState.STABLE and m.coordinator is not None
                                     and m.coordinator.node_id == new for m in sim.members.values()), 60_000)
    assert fetched(sim, new) == (0, 42)
    group = sim.nodes[new].broker.group_coordinator.groups[GROUP]
    assert group.generation_id >= generation and len(group.members) == 3
    assert sorted(tp for m in sim.members.values() for tp in m.owned) == [("orders", p) for p in range(6)]


def test_sync_group_is_answered_only_once_the_isr_has_the_assignment(sim: SimCluster) -> None:
    find(sim, 1)
    leader = sim.leader(OFFSETS_TOPIC, partition_for(GROUP))
    join = {"group_id": GROUP, "session_timeout_ms": 60_000, "rebalance_timeout_ms": 60_000, "member_id": "",
            "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b""}]}
    member_id = call(sim, leader, ApiKey.JOIN_GROUP, 5, join).member_id  # MEMBER_ID_REQUIRED
    joined = call(sim, leader, ApiKey.JOIN_GROUP, 5, {**join, "member_id": member_id})
    assert (joined.error_code, joined.generation_id) == (0, 1)
    sim.network.isolate(leader, [n for n in sim.nodes if n != leader])
    sync = {"group_id": GROUP, "generation_id": 1, "member_id": member_id,
            "assignments": [{"member_id": member_id, "assignment": b"A"}]}
    start = sim.clock.milliseconds()
    answer = call(sim, leader, ApiKey.SYNC_GROUP, 3, sync)
    assert answer.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE and sim.clock.milliseconds() - start >= 5_000
    assert sim.nodes[leader].broker.group_coordinator.groups[GROUP].state.value == "PreparingRebalance"
    sim.network.heal()
    sim.run_for(31_000)  # the followers' lost fetches time out (30 s) and they fetch again
    rejoined = call(sim, leader, ApiKey.JOIN_GROUP, 5, {**join, "member_id": member_id})
    assert (rejoined.error_code, rejoined.generation_id) == (0, 2)
    answer = call(sim, leader, ApiKey.SYNC_GROUP, 3, {**sync, "generation_id": 2})
    assert (answer.error_code, answer.assignment) == (0, b"A")


def test_a_fenced_static_member_stays_fenced_on_the_new_coordinator(sim: SimCluster) -> None:
    config = MemberConfig(GROUP, ("orders",), session_timeout_ms=30_000, heartbeat_interval_ms=1_000,
                          rebalance_timeout_ms=10_000)
    static = MemberConfig(GROUP, ("orders",), session_timeout_ms=30_000, heartbeat_interval_ms=1_000,
                          rebalance_timeout_ms=10_000, group_instance_id="s")
    sim.add_member("leader", config)
    sim.run_for(2_000)
    sim.add_member("s1", static)
    assert sim.run_until(lambda: all(m.state is MemberState.STABLE and m.owned for m in sim.members.values()), 60_000)
    old = sim.members["s1"]
    old_id, generation = old.member_id, old.generation_id
    sim.stop_member("s1", leave=False)
    sim.add_member("s2", static)  # same instance id, empty member id: takes s1's place at once
    assert sim.run_until(lambda: sim.members["s2"].state is MemberState.STABLE, 60_000)
    assert sim.members["s2"].generation_id == generation  # no rebalance: the old id was replaced
    coordinator = sim.leader(OFFSETS_TOPIC, partition_for(GROUP))
    sim.crash(coordinator)
    assert sim.run_until(lambda: sim.leader(OFFSETS_TOPIC, partition_for(GROUP)) not in (coordinator, -1), 30_000)
    new = sim.leader(OFFSETS_TOPIC, partition_for(GROUP))
    body = {"group_id": GROUP, "generation_id_or_member_epoch": generation, "member_id": old_id,
            "group_instance_id": "s", "topics": [
                {"name": "orders", "partitions": [{"partition_index": 0, "committed_offset": 1}]}]}
    answer = call(sim, new, ApiKey.OFFSET_COMMIT, 8, body)
    assert answer.topics[0].partitions[0].error_code == ErrorCode.FENCED_INSTANCE_ID
