"""A rolling upgrade on a ManualClock: a classic group becomes a consumer group when its first
consumer-protocol member joins, and its classic members go on with JoinGroup, SyncGroup and
Heartbeat; a rolling downgrade takes it back when its last consumer-protocol member leaves.
Subscriptions are written and assignments read by kafka-python's ConsumerProtocol."""

from __future__ import annotations

import random
from typing import Any

import pytest
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment as KpAssignment
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription as KpSubscription

from kafkalab.errors import ConfigError
from kafkalab.errors import ErrorCode as E
from kafkalab.group.consumer.coordinator import ConsumerGroupSettings
from kafkalab.group.coordinator import GroupCoordinator, JoinRequest
from kafkalab.group.offsets import OffsetCommit
from kafkalab.group.state import GroupState
from tests.group.consumer._harness import Cluster, T, parts

ALL = set(range(6))
CLASSIC_SESSION_MS = 10_000


def subscription(*owned: int) -> bytes:
    tp = KpSubscription.TopicPartition
    return KpSubscription(version=1, topics=["t"], user_data=None,
                          owned_partitions=[tp(topic="t", partitions=list(owned))] if owned else []).encode(version=1)


def assignment(*partitions: int) -> bytes:
    return KpAssignment(version=0, user_data=None, assigned_partitions=[
        KpAssignment.TopicPartition(topic="t", partitions=list(partitions))]).encode()


def assigned(data: bytes) -> set[int]:
    return {p for tp in KpAssignment.decode(data).assigned_partitions for p in tp.partitions}


def classic_join(c: Cluster, member_id: str = "", *owned: int) -> Any:
    """JoinGroup v3 (no MEMBER_ID_REQUIRED round trip); the answer, now or once the join completes."""
    answers: list[Any] = []
    request = JoinRequest("g", member_id, None, "kp", "/127.0.0.1", CLASSIC_SESSION_MS, 30_000, "consumer",
                          (("range", subscription(*owned)),), 3)
    now = c.coordinator.join_group(request, c.now_ms, answers.append)
    return now if now is not None else answers


def stable_classic_group(c: Cluster) -> tuple[str, str]:
    """Two classic members, generation 1: c1 has 0-2, c2 has 3-5."""
    first, second = classic_join(c), classic_join(c)
    c.advance(6_500)  # group.initial.rebalance.delay.ms, twice: the second member extended it
    c1, c2 = first[0].member_id, second[0].member_id
    leader = first[0].leader_id
    follower = c2 if leader == c1 else c1
    done: list[Any] = []
    c.coordinator.sync_group("g", 1, leader, None, "consumer", "range",
                             [(leader, assignment(0, 1, 2)), (follower, assignment(3, 4, 5))], c.now_ms, done.append)
    c.coordinator.sync_group("g", 1, follower, None, "consumer", "range", [], c.now_ms, done.append)
    assert c.coordinator.groups["g"].is_in(GroupState.STABLE)
    return leader, follower


def test_the_first_consumer_protocol_member_upgrades_the_group_and_partitions_move_once_released():
    c = Cluster()
    leader, follower = stable_classic_group(c)
    java = c.join()  # ConsumerGroupHeartbeat at epoch 0
    assert "g" not in c.coordinator.groups and "g" in c.consumer.groups
    group = c.consumer.groups["g"]
    converted = group.members[leader]
    assert (converted.member_epoch, parts(converted.assigned), converted.classic.session_timeout_ms) == (
        1, {0, 1, 2}, CLASSIC_SESSION_MS)
    assert group.group_epoch == 2 and java.member_epoch == 2 and parts(java.assignment) == set()  # all held
    # The classic members are told to rejoin; eager ones come back owning nothing.
    assert c.coordinator.heartbeat("g", 1, leader, None, c.now_ms) == E.REBALANCE_IN_PROGRESS
    for member_id in (leader, follower):
        rejoined = classic_join(c, member_id)
        assert (rejoined.error_code, rejoined.generation_id, rejoined.protocol_name) == (E.NONE, 2, "range")
        assert rejoined.members == () and rejoined.leader_id != member_id  # no client-side assignor runs
    syncs = {m: c.coordinator.sync_group("g", 2, m, None, "consumer", "range", [], c.now_ms, lambda result: None)
             for m in (leader, follower)}
    got = c.heartbeat(member_id=java.member_id, epoch=2, owned={})
    shares = [assigned(syncs[leader].assignment), assigned(syncs[follower].assignment), parts(got.assignment)]
    assert sorted(len(s) for s in shares) == [2, 2, 2] and set().union(*shares) == ALL
    assert c.coordinator.heartbeat("g", 2, leader, None, c.now_ms) == E.NONE
    assert c.coordinator.heartbeat("g", 1, leader, None, c.now_ms) == E.ILLEGAL_GENERATION


def test_a_classic_member_commits_with_its_member_epoch_as_generation():
    c = Cluster()
    leader, _ = stable_classic_group(c)
    c.join()
    commit = [OffsetCommit("t", 0, 5, -1, "")]
    assert c.coordinator.offsets.commit("g", 1, leader, None, commit, -1, 7, c.now_ms) == [E.NONE]
    classic_join(c, leader)  # it rejoins and moves to the group's epoch 2
    assert c.coordinator.offsets.commit("g", 1, leader, None, commit, -1, 7, c.now_ms) == [E.ILLEGAL_GENERATION]
    assert c.coordinator.offsets.commit("g", 2, leader, None, commit, -1, 2, c.now_ms) == [E.NONE]


@pytest.mark.parametrize("policy", ["disabled", "downgrade"])
def test_without_upgrade_in_the_policy_the_classic_group_keeps_its_id(policy: str):
    c = Cluster(migration_policy=policy)
    stable_classic_group(c)
    assert c.heartbeat().error_code == E.GROUP_ID_NOT_FOUND
    assert c.coordinator.groups["g"].is_in(GroupState.STABLE) and "g" not in c.consumer.groups


def test_waiting_joins_answer_rebalance_in_progress_when_the_group_is_upgraded():
    c = Cluster()
    leader, _ = stable_classic_group(c)
    waiting = classic_join(c, leader, 0, 1, 2)  # a rebalance starts; the JoinGroup waits for the follower
    assert waiting == [] and c.coordinator.groups["g"].is_in(GroupState.PREPARING_REBALANCE)
    c.join()
    assert [a.error_code for a in waiting] == [E.REBALANCE_IN_PROGRESS]
    assert c.consumer.groups["g"].members[leader].member_epoch == 1  # it rejoins from its last generation


def test_a_classic_member_keeps_its_own_session_timeout_and_leaving_frees_its_partitions():
    c = Cluster()
    leader, follower = stable_classic_group(c)
    java = c.join().member_id
    for member_id in (leader, follower):
        classic_join(c, member_id)
    assert c.coordinator.leave_group("g", [(follower, None)], c.now_ms) == [E.NONE]
    c.heartbeat(member_id=java, epoch=2, owned={})
    c.advance(CLASSIC_SESSION_MS + 100, step_ms=500)  # the classic leader stops heartbeating
    group = c.consumer.groups["g"]
    assert set(group.members) == {java}
    got = c.heartbeat(member_id=java, epoch=group.members[java].member_epoch, owned={})
    assert parts(got.assignment) == ALL


def test_classic_members_survive_a_coordinator_load():
    c = Cluster()
    leader, _ = stable_classic_group(c)
    c.join()
    fresh = GroupCoordinator(c.coordinator.settings, c.log, c.timer, random.Random(2), topics=c.topics.get,
                             consumer_settings=c.settings)
    fresh.load(c.now_ms)
    assert fresh.consumer.groups["g"].members[leader] == c.consumer.groups["g"].members[leader]
    assert "g" not in fresh.groups  # the classic group's tombstone is in the log
    assert T in c.consumer.groups["g"].members[leader].assigned


def test_the_migration_policy_takes_kafkas_four_values():
    policies = ("disabled", "upgrade", "downgrade", "bidirectional")
    assert [ConsumerGroupSettings(migration_policy=p).upgrade_enabled for p in policies] == [False, True, False, True]
    assert [ConsumerGroupSettings(migration_policy=p).downgrade_enabled for p in policies] == [False, False, True, True]
    with pytest.raises(ConfigError, match="group.consumer.migration.policy"):
        ConsumerGroupSettings(migration_policy="sideways")


# --- the downgrade -----------------------------------------------------------------------------


def mixed_group(c: Cluster) -> tuple[str, str, str]:
    """The upgraded group of the first test, settled: classic leader and follower and a Java
    member with two partitions each, in group epoch 2."""
    leader, follower = stable_classic_group(c)
    java = c.join().member_id
    for member_id in (leader, follower):
        classic_join(c, member_id)
        c.coordinator.sync_group("g", 2, member_id, None, "consumer", "range", [], c.now_ms, lambda result: None)
    got = c.heartbeat(member_id=java, epoch=2, owned={})
    assert len(parts(got.assignment)) == 2
    return leader, follower, java


def record_types(c: Cluster, since: int) -> list[int]:
    (records,) = c.log.partitions.values()
    return [int.from_bytes(key[:2], "big") for key, _value in records[since:]]


def test_the_last_consumer_protocol_member_leaving_downgrades_the_group_to_classic():
    c = Cluster()
    leader, follower, java = mixed_group(c)
    targets = {m: parts(c.consumer.groups["g"].target[m]) for m in (leader, follower)}
    (log_records,) = c.log.partitions.values()
    written = len(log_records)
    assert c.heartbeat(member_id=java, epoch=-1).error_code == E.NONE  # it leaves
    assert "g" not in c.consumer.groups
    group = c.coordinator.groups["g"]
    assert (group.state, group.generation_id, group.protocol_type, group.protocol_name) == (
        GroupState.PREPARING_REBALANCE, 2, "consumer", "range")
    assert set(group.members) == {leader, follower}
    for member_id in (leader, follower):  # each keeps its target, in its own protocol version (1)
        member = group.members[member_id]
        assert member.session_timeout_ms == CLASSIC_SESSION_MS
        decoded = KpAssignment.decode(member.assignment)
        assert decoded.version == 1 and assigned(member.assignment) == targets[member_id]
    # One batch: the consumer group's tombstones in Kafka's order, then GroupMetadata (type 2).
    assert record_types(c, written) == [8, 8, 8, 7, 7, 7, 6, 5, 5, 5, 4, 3, 2]
    # The classic members are told to rejoin, and the leader's assignor decides again.
    assert c.coordinator.heartbeat("g", 2, leader, None, c.now_ms) == E.REBALANCE_IN_PROGRESS
    first, second = classic_join(c, leader), classic_join(c, follower)
    assert first and second, "the join completes once both members are back"
    assert {first[0].generation_id, second[0].generation_id} == {3}
    answers = {a.member_id: a for a in (first[0], second[0])}
    assert {len(a.members) for a in answers.values()} == {0, 2}  # only the leader gets the member list


@pytest.mark.parametrize("policy", ["disabled", "upgrade"])
def test_without_downgrade_in_the_policy_the_group_stays_a_consumer_group(policy: str):
    c = Cluster(migration_policy="bidirectional")
    leader, follower, java = mixed_group(c)
    c.consumer.settings = ConsumerGroupSettings(migration_policy=policy)
    c.heartbeat(member_id=java, epoch=-1)
    assert "g" not in c.coordinator.groups and set(c.consumer.groups["g"].members) == {leader, follower}


def test_a_classic_members_leave_group_never_downgrades():
    c = Cluster()
    leader, follower, java = mixed_group(c)
    assert c.coordinator.leave_group("g", [(follower, None)], c.now_ms) == [E.NONE]
    assert set(c.consumer.groups["g"].members) == {leader, java} and "g" not in c.coordinator.groups


def test_a_consumer_protocol_members_session_timeout_downgrades_and_a_load_finds_the_classic_group():
    c = Cluster()
    leader, follower, java = mixed_group(c)
    for _ in range(8):  # the classic members heartbeat; the Java member falls silent
        c.advance(5_000)
        for member_id in (leader, follower):
            assert c.coordinator.heartbeat("g", 2, member_id, None, c.now_ms) == E.NONE
    assert "g" in c.consumer.groups  # 40 s: within group.consumer.session.timeout.ms (45 s)
    c.advance(5_100)
    assert "g" not in c.consumer.groups and c.coordinator.groups["g"].is_in(GroupState.PREPARING_REBALANCE)
    fresh = GroupCoordinator(c.coordinator.settings, c.log, c.timer, random.Random(2), topics=c.topics.get,
                             consumer_settings=c.settings)
    fresh.load(c.now_ms)
    assert "g" not in fresh.consumer.groups
    loaded = fresh.groups["g"]
    assert (loaded.generation_id, set(loaded.members)) == (2, {leader, follower})
    assert {m: assigned(loaded.members[m].assignment) for m in loaded.members} == {
        m: assigned(c.coordinator.groups["g"].members[m].assignment) for m in (leader, follower)}
