"""The consumer group coordinator on a ManualClock: joins, reconciliation, timeouts, fencing,
static members, offsets, and the boundary with classic groups."""

from __future__ import annotations

import dataclasses
import random

import pytest

from kafkalab.errors import ErrorCode as E
from kafkalab.group.consumer.group import ConsumerGroupState
from kafkalab.group.consumer.member import MemberState
from kafkalab.group.coordinator import GroupCoordinator, JoinRequest
from kafkalab.group.offsets import OffsetCommit
from kafkalab.group.records import record_type
from tests.group.consumer._harness import REBALANCE_MS, SESSION_MS, Cluster, T, U, parts

ALL = set(range(6))


def owned(*partitions: int) -> dict:
    return {T: frozenset(partitions)}


def test_first_member_gets_every_partition():
    c = Cluster()
    first = c.join()
    assert len(first.member_id) == 22  # a Kafka Uuid's base64 form
    assert (first.member_epoch, first.heartbeat_interval_ms, parts(first.assignment)) == (1, 5000, ALL)
    group = c.consumer.groups["g"]
    assert (group.group_epoch, group.assignment_epoch, group.state) == (1, 1, ConsumerGroupState.STABLE)
    # Kafka's order for a first join: member, subscription metadata, group epoch, target, its epoch, current.
    assert [record_type(k) for k, _ in c.log.partitions[c.coordinator.partition_of("g")]] == [5, 4, 3, 7, 6, 8]


def test_a_partition_is_assigned_only_after_its_owner_revoked_it():
    c = Cluster()
    m1 = c.join().member_id
    m2 = c.join().member_id
    group = c.consumer.groups["g"]
    assert group.group_epoch == 2 and group.state is ConsumerGroupState.RECONCILING
    target1, target2 = parts(group.target[m1]), parts(group.target[m2])
    assert target1 | target2 == ALL and len(target1) == len(target2) == 3
    assert parts(c.heartbeat(member_id=m2, epoch=2, owned={}).assignment) == set()  # still m1's
    told = c.heartbeat(member_id=m1, epoch=1, owned=owned(*ALL))
    assert (told.member_epoch, parts(told.assignment)) == (1, target1)  # keep these, revoke the rest
    assert group.members[m1].state is MemberState.UNREVOKED_PARTITIONS
    assert c.heartbeat(member_id=m2, epoch=2, owned={}).assignment is None  # nothing new yet
    done = c.heartbeat(member_id=m1, epoch=1, owned=owned(*target1))
    assert done.member_epoch == 2
    got = c.heartbeat(member_id=m2, epoch=2, owned={})
    assert (got.member_epoch, parts(got.assignment)) == (2, target2)
    assert group.state is ConsumerGroupState.STABLE
    assert {p for (_, p) in group.partition_epochs} == ALL


def _stable_pair(c: Cluster) -> tuple[str, str]:
    m1 = c.join().member_id
    m2 = c.join().member_id
    c.heartbeat(member_id=m1, epoch=1, owned=owned(*ALL))
    kept = parts(c.consumer.groups["g"].members[m1].assigned)
    c.heartbeat(member_id=m1, epoch=1, owned=owned(*kept))
    c.heartbeat(member_id=m2, epoch=2, owned={})
    assert c.consumer.groups["g"].state is ConsumerGroupState.STABLE
    return m1, m2


def test_session_timeout_fences_a_silent_member_and_frees_its_partitions():
    c = Cluster()
    m1, m2 = _stable_pair(c)
    for _ in range(8):  # m1 heartbeats every 5 s; m2 is silent
        c.advance(5000)
        c.heartbeat(member_id=m1, epoch=c.consumer.groups["g"].members[m1].member_epoch)
    c.advance(SESSION_MS - 40_000 - 100)
    assert m2 in c.consumer.groups["g"].members  # 45 s have not passed since m2's last heartbeat
    c.advance(100)
    group = c.consumer.groups["g"]
    assert m2 not in group.members and group.group_epoch == 3
    back = c.heartbeat(member_id=m1, epoch=2)
    assert (back.member_epoch, parts(back.assignment)) == (3, ALL)
    assert c.heartbeat(member_id=m2, epoch=2).error_code == E.UNKNOWN_MEMBER_ID


def test_rebalance_timeout_fences_a_member_that_never_revokes():
    c = Cluster()
    m1 = c.join().member_id
    m2 = c.join().member_id
    c.heartbeat(member_id=m1, epoch=1, owned=owned(*ALL))  # told to revoke half
    for _ in range(REBALANCE_MS // 5000 - 1):
        c.advance(5000)
        c.heartbeat(member_id=m1, epoch=1, owned=owned(*ALL))  # but never does
        c.heartbeat(member_id=m2, epoch=2, owned={})
    assert m1 in c.consumer.groups["g"].members
    c.advance(5000)
    assert m1 not in c.consumer.groups["g"].members
    got = c.heartbeat(member_id=m2, epoch=2, owned={})
    assert (got.member_epoch, parts(got.assignment)) == (3, ALL)


def test_member_epoch_checks():
    c = Cluster()
    m1, _ = _stable_pair(c)  # m1 at epoch 2, previous epoch 1
    assert c.heartbeat(member_id=m1, epoch=3).error_code == E.FENCED_MEMBER_EPOCH  # ahead
    kept = parts(c.consumer.groups["g"].members[m1].assigned)
    assert c.heartbeat(member_id=m1, epoch=1, owned=owned(*kept)).error_code == E.NONE  # a lost response
    assert c.heartbeat(member_id=m1, epoch=1, owned=owned(*ALL)).error_code == E.FENCED_MEMBER_EPOCH
    assert c.heartbeat(member_id=m1, epoch=1).error_code == E.FENCED_MEMBER_EPOCH  # owned not reported
    assert c.heartbeat(member_id="nobody", epoch=2).error_code == E.UNKNOWN_MEMBER_ID
    assert c.heartbeat(group="none", member_id="x", epoch=1).error_code == E.GROUP_ID_NOT_FOUND


@pytest.mark.parametrize("fields,error", [
    ({"epoch": 0, "rebalance_timeout_ms": -1}, E.INVALID_REQUEST),
    ({"epoch": 0, "subscribed_topic_names": ()}, E.INVALID_REQUEST),
    ({"epoch": 0, "owned": None}, E.INVALID_REQUEST),
    ({"epoch": 0, "owned": {T: frozenset({1})}}, E.INVALID_REQUEST),
    ({"epoch": 0, "instance_id": ""}, E.INVALID_REQUEST),
    ({"epoch": 0, "rack_id": ""}, E.INVALID_REQUEST),
    ({"epoch": 3, "member_id": ""}, E.INVALID_REQUEST),
    ({"epoch": -2, "member_id": "m"}, E.INVALID_REQUEST),  # -2 is for static members only
    ({"epoch": -3, "member_id": "m"}, E.INVALID_REQUEST),
    ({"epoch": 0, "server_assignor": "sticky"}, E.UNSUPPORTED_ASSIGNOR),
])
def test_invalid_heartbeats(fields, error):
    c = Cluster()
    fields = dict(fields)
    result = c.heartbeat(member_id=fields.pop("member_id", ""), epoch=fields.pop("epoch"), **fields)
    assert result.error_code == error
    assert "g" not in c.consumer.groups


def test_leaving_bumps_the_epoch_and_the_others_take_over():
    c = Cluster()
    m1, m2 = _stable_pair(c)
    left = c.heartbeat(member_id=m2, epoch=-1)
    assert (left.error_code, left.member_epoch) == (0, -1)
    assert c.consumer.groups["g"].group_epoch == 3
    assert parts(c.heartbeat(member_id=m1, epoch=2).assignment) == ALL


def test_subscription_and_partition_changes_bump_the_group_epoch():
    c = Cluster()
    m1 = c.join().member_id
    more = c.heartbeat(member_id=m1, epoch=1, subscribed_topic_names=("t", "u"))
    assert (more.member_epoch, parts(more.assignment, U)) == (2, {0, 1})
    c.topics["u"] = (U, 4)  # CreatePartitions on u
    grown = c.heartbeat(member_id=m1, epoch=2)
    assert (grown.member_epoch, parts(grown.assignment, U)) == (3, {0, 1, 2, 3})
    assert c.heartbeat(member_id=m1, epoch=3).member_epoch == 3  # nothing changed: no bump


def test_members_choose_the_range_assignor():
    c = Cluster()
    results = [c.join(server_assignor="range") for _ in range(3)]
    group = c.consumer.groups["g"]
    ranges = sorted(sorted(parts(group.target[r.member_id])) for r in results)
    assert ranges == [[0, 1], [2, 3], [4, 5]]
    assert c.consumer.preferred_assignor(group.members.values()) == "range"


def test_static_member_leaves_for_a_while_and_comes_back_under_a_new_id():
    c = Cluster()
    s1 = c.join(instance_id="i1").member_id
    m2 = c.join().member_id
    c.heartbeat(member_id=s1, epoch=1, instance_id="i1", owned=owned(*ALL))
    kept = parts(c.consumer.groups["g"].members[s1].assigned)
    c.heartbeat(member_id=s1, epoch=1, owned=owned(*kept))
    c.heartbeat(member_id=m2, epoch=2, owned={})
    assert c.heartbeat(member_id=s1, epoch=-2, instance_id="i1").error_code == 0
    group = c.consumer.groups["g"]
    assert group.group_epoch == 2 and group.members[s1].member_epoch == -2  # no rebalance
    assert c.join(instance_id="i2").member_epoch == 3  # another instance is a new member
    back = c.join(instance_id="i1")
    assert back.member_id != s1 and s1 not in group.members
    assert parts(group.members[back.member_id].assigned) <= kept


def test_an_instance_id_in_use_cannot_join_again():
    c = Cluster()
    s1 = c.join(instance_id="i1").member_id
    assert c.heartbeat(instance_id="i1").error_code == E.UNRELEASED_INSTANCE_ID
    assert c.heartbeat(member_id="other", epoch=1, instance_id="i1").error_code == E.FENCED_INSTANCE_ID
    assert c.heartbeat(member_id="other", epoch=-1, instance_id="i1").error_code == E.FENCED_INSTANCE_ID
    assert c.heartbeat(member_id=s1, epoch=1, instance_id="i1").error_code == E.NONE


def test_a_static_member_that_never_returns_is_fenced_by_its_session():
    c = Cluster()
    s1 = c.join(instance_id="i1").member_id
    c.heartbeat(member_id=s1, epoch=-2, instance_id="i1")
    c.advance(SESSION_MS + 100)
    assert c.consumer.groups["g"].members == {}


def _commit(c: Cluster, member_id: str, epoch: int, version: int = 9) -> int:
    [error] = c.coordinator.offsets.commit("g", epoch, member_id, None, [OffsetCommit("t", 0, 42, -1, "")], -1,
                                           version, c.now_ms)
    return error


def test_offset_commits_check_the_member_epoch():
    c = Cluster()
    m1, _ = _stable_pair(c)
    assert _commit(c, m1, 2) == E.NONE
    assert _commit(c, m1, 1) == E.STALE_MEMBER_EPOCH
    assert _commit(c, m1, 2, version=8) == E.UNSUPPORTED_VERSION
    assert _commit(c, "nobody", 2) == E.UNKNOWN_MEMBER_ID
    assert _commit(c, "", -1) == E.UNKNOWN_MEMBER_ID  # the admin may commit only for an empty group
    assert c.consumer.validate_offset_fetch("g", m1, 1) == E.STALE_MEMBER_EPOCH
    assert c.consumer.validate_offset_fetch("g", m1, 2) == E.NONE
    assert c.consumer.validate_offset_fetch("g", None, -1) == E.NONE
    assert c.coordinator.offsets.fetch("g", [("t", 0)])[0][1].offset == 42


def _classic_join(c: Cluster, group: str) -> object:
    # JoinGroup v3: no MEMBER_ID_REQUIRED round trip, the member is in the group at once
    request = JoinRequest(group, "", None, "c", "/127.0.0.1", 10_000, 10_000, "consumer", (("range", b""),), 3)
    return c.coordinator.join_group(request, c.now_ms, lambda result: None)


def test_without_migration_classic_and_consumer_groups_do_not_share_an_id():
    c = Cluster(migration_policy="disabled")
    _classic_join(c, "classic")  # parked in PreparingRebalance, one member
    assert c.heartbeat(group="classic").error_code == E.GROUP_ID_NOT_FOUND
    modern = c.join(group="modern").member_id
    # A classic member may join a consumer group (test_classic_members), but b"" is no subscription.
    assert _classic_join(c, "modern").error_code == E.INCONSISTENT_GROUP_PROTOCOL
    c.heartbeat(group="modern", member_id=modern, epoch=-1)  # now Empty: it gives way to a classic group
    assert _classic_join(c, "modern") is None and "modern" not in c.consumer.groups


def test_an_empty_classic_group_gives_way_and_keeps_its_offsets():
    c = Cluster()
    c.coordinator.offsets.commit("g", -1, "", None, [OffsetCommit("t", 0, 7, -1, "")], -1, 9, c.now_ms)
    assert "g" in c.coordinator.groups  # a "simple" group holding offsets only
    c.join()
    assert "g" not in c.coordinator.groups and "g" in c.consumer.groups
    assert c.coordinator.offsets.fetch("g", [("t", 0)])[0][1].offset == 7


def test_list_and_delete():
    c = Cluster()
    m1 = c.join().member_id
    assert c.consumer.list_groups([], []) == [("g", "consumer", "Stable")]
    assert c.consumer.list_groups([], ["classic"]) == []
    assert c.consumer.list_groups(["empty"], []) == []
    assert c.coordinator.delete_group("g", c.now_ms) == E.NON_EMPTY_GROUP
    c.heartbeat(member_id=m1, epoch=-1)
    assert c.consumer.list_groups([], ["Consumer"]) == [("g", "consumer", "Empty")]
    assert c.coordinator.delete_group("g", c.now_ms) == E.NONE
    assert "g" not in c.consumer.groups
    fresh = GroupCoordinator(c.coordinator.settings, c.log, c.timer, random.Random(2), topics=c.topics.get)
    fresh.load(c.now_ms)
    assert "g" not in fresh.consumer.groups


def _snapshot(coordinator: GroupCoordinator) -> dict:
    return {gid: dataclasses.asdict(group) for gid, group in coordinator.consumer.groups.items()}


def test_replaying_the_log_rebuilds_the_same_groups():
    c = Cluster()
    m1 = c.join().member_id
    s2 = c.join(instance_id="i2").member_id
    c.heartbeat(member_id=m1, epoch=1, owned=owned(*ALL))  # m1 revoking: UNREVOKED_PARTITIONS
    c.join(group="other", subscribed_topic_names=("u",))
    c.heartbeat(member_id=s2, epoch=-2, instance_id="i2")
    fresh = GroupCoordinator(c.coordinator.settings, c.log, c.timer, random.Random(3), topics=c.topics.get,
                             consumer_settings=c.settings)
    assert fresh.load(c.now_ms) == sum(len(records) for records in c.log.partitions.values())
    assert _snapshot(fresh) == _snapshot(c.coordinator)
    assert fresh.consumer.groups["g"].members[m1].state is MemberState.UNREVOKED_PARTITIONS
    c.clock.advance_ms(REBALANCE_MS + 1)  # loaded members get their timers back: m1 never revoked
    fresh.advance_clock(c.timer.now_ms())
    assert m1 not in fresh.consumer.groups["g"].members


def test_a_tombstone_for_a_group_already_gone_creates_nothing():
    c = Cluster()
    m1 = c.join().member_id
    c.heartbeat(member_id=m1, epoch=-1)
    c.coordinator.delete_group("g", c.now_ms)
    partition = c.log.partitions[c.coordinator.partition_of("g")]
    tombstones = [(k, v) for k, v in partition if v is None]
    del partition[:]
    partition.extend(tombstones)  # what compaction leaves for a while: tombstones only
    fresh = GroupCoordinator(c.coordinator.settings, c.log, c.timer, random.Random(4), topics=c.topics.get)
    fresh.load(c.now_ms)
    assert fresh.consumer.groups == {}


def test_unknown_assignors_are_a_config_error():
    from kafkalab.errors import ConfigError
    from kafkalab.group.consumer.coordinator import ConsumerGroupSettings

    with pytest.raises(ConfigError, match="group.consumer.assignors"):
        ConsumerGroupSettings(assignors=("sticky",))


def test_offset_delete_refuses_subscribed_topics():
    c = Cluster()
    m1, _ = _stable_pair(c)
    commits = [OffsetCommit("t", 0, 1, -1, ""), OffsetCommit("gone", 0, 1, -1, "")]
    c.coordinator.offsets.commit("g", 2, m1, None, commits, -1, 9, c.now_ms)
    error, results = c.coordinator.offsets.delete("g", [("t", 0), ("gone", 0)], c.now_ms)
    assert (error, results) == (E.NONE, [E.GROUP_SUBSCRIBED_TO_TOPIC, E.NONE])
    assert [tp for tp, _ in c.coordinator.offsets.fetch("g", None)] == [("t", 0)]


def test_offsets_of_a_live_group_stay_and_an_empty_group_expires_with_them():
    c = Cluster()
    m1 = c.join().member_id
    c.coordinator.offsets.commit("g", 1, m1, None, [OffsetCommit("t", 0, 5, -1, "")], -1, 9, c.now_ms)
    retention_ms = c.coordinator.settings.offsets_retention_ms
    c.clock.advance_ms(retention_ms + 1)
    assert c.coordinator.expire_offsets(c.now_ms) == 0  # a member is still in the group
    assert c.coordinator.offsets.fetch("g", [("t", 0)])[0][1].offset == 5
    c.consumer.fence(c.consumer.groups["g"], c.consumer.groups["g"].members[m1])
    assert c.coordinator.expire_offsets(c.now_ms) == 1  # Empty: by commit time, long past
    assert "g" not in c.consumer.groups
