"""A rolling upgrade on a ManualClock: a classic group becomes a consumer group when its first
consumer-protocol member joins, and its classic members go on with JoinGroup, SyncGroup and
Heartbeat. Subscriptions are written and assignments read by kafka-python's ConsumerProtocol."""

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
    assert [ConsumerGroupSettings(migration_policy=p).upgrade_enabled
            for p in ("disabled", "upgrade", "downgrade", "bidirectional")] == [False, True, False, True]
    with pytest.raises(ConfigError, match="group.consumer.migration.policy"):
        ConsumerGroupSettings(migration_policy="sideways")
