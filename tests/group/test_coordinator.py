"""The classic group coordinator on a ManualClock: rebalances, sessions, static members."""

from __future__ import annotations

from kafkalab.errors import ErrorCode as E
from kafkalab.group.records import GroupKey, decode_group_value, decode_key
from kafkalab.group.state import GroupState as S
from tests.group._harness import SESSION_MS, Answers, Cluster


def _stable_pair(c: Cluster) -> tuple[str, str, Answers, Answers]:
    a, a_answers = c.join_with_id("g", client="a")
    b, b_answers = c.join_with_id("g", client="b")
    c.advance(6000)  # b joined during the initial delay, which therefore ran twice
    c.sync("g", 1, a, {a: b"A", b: b"B"})
    return a, b, a_answers, b_answers


def test_member_id_required_then_generation_one_after_the_initial_delay():
    c = Cluster()
    first, _ = c.join("g", client="consumer-1")
    assert first.error_code == E.MEMBER_ID_REQUIRED
    assert first.member_id.startswith("consumer-1-") and len(first.member_id) == len("consumer-1-") + 36
    result, answers = c.join("g", first.member_id)
    assert result is None and c.coordinator.groups["g"].state is S.PREPARING_REBALANCE
    c.advance(2999)
    assert answers.got == []
    c.advance(1)
    joined = answers.last
    assert (joined.error_code, joined.generation_id, joined.protocol_name) == (0, 1, "range")
    assert joined.leader_id == first.member_id
    assert joined.members == ((first.member_id, None, b"sub"),)
    assert c.coordinator.groups["g"].state is S.COMPLETING_REBALANCE


def test_member_ids_come_from_the_injected_random():
    ids = []
    for _ in range(2):
        c = Cluster(seed=42)
        ids.append(c.join("g")[0].member_id)
    assert ids[0] == ids[1]


def test_old_join_versions_get_a_member_id_without_the_extra_round_trip():
    c = Cluster()
    result, answers = c.join("g", version=3)
    assert result is None
    c.advance(3000)
    assert answers.last.error_code == 0 and answers.last.member_id.startswith("c-")


def test_initial_delay_waits_again_when_a_member_arrives():
    c = Cluster()
    a, a_answers = c.join_with_id("g")
    c.advance(2000)
    b, b_answers = c.join_with_id("g")
    c.advance(1000)  # t=3000: a member was added during the delay, so wait another 3000
    assert a_answers.got == []
    c.advance(3000)
    assert a_answers.last.generation_id == b_answers.last.generation_id == 1
    assert len(a_answers.last.members) == 2 and b_answers.last.members == ()


def test_sync_parks_followers_until_the_leader_assigns():
    c = Cluster()
    a, a_answers = c.join_with_id("g")
    b, b_answers = c.join_with_id("g")
    c.advance(6000)
    follower, follower_answers = c.sync("g", 1, b)
    assert follower is None and follower_answers.got == []
    leader, _ = c.sync("g", 1, a, {a: b"A", b: b"B"})
    assert leader is None
    assert follower_answers.last.assignment == b"B"
    assert c.coordinator.groups["g"].state is S.STABLE
    records = c.log.partitions[c.coordinator.partition_of("g")]
    assert decode_key(records[-1][0]) == GroupKey("g")
    stored = decode_group_value(records[-1][1])
    assert stored.generation == 1 and {m.assignment for m in stored.members} == {b"A", b"B"}


def test_session_timeout_moves_partitions_to_the_survivor():
    c = Cluster()
    a, b, a_answers, _ = _stable_pair(c)
    for _ in range(3):  # a heartbeats, b is silent
        c.advance(SESSION_MS // 3)
        assert c.coordinator.heartbeat("g", 1, a, None, c.now_ms) == E.NONE
    c.advance(SESSION_MS // 3)
    assert c.coordinator.groups["g"].state is S.PREPARING_REBALANCE
    assert b not in c.coordinator.groups["g"].members
    assert c.coordinator.heartbeat("g", 1, a, None, c.now_ms) == E.REBALANCE_IN_PROGRESS
    result, answers = c.join("g", a)
    assert result is None  # a was the last member missing: the join completes at once
    assert answers.last.generation_id == 2 and answers.last.members == ((a, None, b"sub"),)


def test_heartbeat_errors():
    c = Cluster()
    a, b, _, _ = _stable_pair(c)
    assert c.coordinator.heartbeat("g", 0, a, None, c.now_ms) == E.ILLEGAL_GENERATION
    assert c.coordinator.heartbeat("g", 1, "nobody", None, c.now_ms) == E.UNKNOWN_MEMBER_ID
    assert c.coordinator.heartbeat("other", 1, a, None, c.now_ms) == E.UNKNOWN_MEMBER_ID
    assert c.sync("g", 0, a)[0].error_code == E.ILLEGAL_GENERATION
    assert c.sync("g", 1, "nobody")[0].error_code == E.UNKNOWN_MEMBER_ID


def test_session_timeout_bounds():
    c = Cluster(min_session_timeout_ms=6000, max_session_timeout_ms=30000)
    assert c.join("g", session_ms=5999)[0].error_code == E.INVALID_SESSION_TIMEOUT
    assert c.join("g", session_ms=30001)[0].error_code == E.INVALID_SESSION_TIMEOUT
    assert c.join("g", session_ms=6000)[0].error_code == E.MEMBER_ID_REQUIRED


def test_unknown_member_joining_a_missing_group():
    assert Cluster().join("g", "ghost")[0].error_code == E.UNKNOWN_MEMBER_ID


def test_protocol_selection_and_inconsistent_protocols():
    c = Cluster()
    a, a_answers = c.join_with_id("g", protocols=(("range", b"1"), ("roundrobin", b"2")))
    b, _ = c.join_with_id("g", protocols=(("roundrobin", b"3"), ("cooperative-sticky", b"4")))
    assert c.join("g", protocols=(("sticky", b"5"),))[0].error_code == E.INCONSISTENT_GROUP_PROTOCOL
    c.advance(6000)
    assert a_answers.last.protocol_name == "roundrobin"  # the only protocol both support
    assert dict((m, d) for m, _, d in a_answers.last.members) == {a: b"2", b: b"3"}


def test_rejoin_while_stable_with_new_metadata_starts_a_rebalance():
    c = Cluster()
    a, b, _, _ = _stable_pair(c)
    same, _ = c.join("g", b)
    assert same.error_code == 0 and same.generation_id == 1  # unchanged follower: current generation
    changed, b_answers = c.join("g", b, protocols=(("range", b"owned partitions changed"),))
    assert changed is None and c.coordinator.groups["g"].state is S.PREPARING_REBALANCE
    _, a_answers = c.join("g", a)
    assert a_answers.last.generation_id == b_answers.last.generation_id == 2
    assert dict((m, d) for m, _, d in a_answers.last.members)[b] == b"owned partitions changed"


def test_leave_group_rebalances_and_completes_when_the_rest_rejoin():
    c = Cluster()
    a, b, _, _ = _stable_pair(c)
    assert c.coordinator.leave_group("g", [(b, None), ("ghost", None)], c.now_ms) == [E.NONE, E.UNKNOWN_MEMBER_ID]
    assert c.coordinator.groups["g"].state is S.PREPARING_REBALANCE
    _, answers = c.join("g", a)
    assert answers.last.generation_id == 2 and len(answers.last.members) == 1


def test_last_member_leaving_empties_the_group():
    c = Cluster()
    a, answers = c.join_with_id("g")
    c.advance(3000)
    c.sync("g", 1, a, {a: b"A"})
    c.coordinator.leave_group("g", [(a, None)], c.now_ms)
    group = c.coordinator.groups["g"]
    assert group.state is S.EMPTY and group.generation_id == 2 and group.protocol_name is None


def test_static_member_rejoins_under_a_new_id_and_the_old_id_is_fenced():
    c = Cluster()
    leader, _ = c.join("g", instance="leader-host")
    assert leader is None  # static members skip MEMBER_ID_REQUIRED
    _, follower_answers = c.join("g", instance="follower-host")
    c.advance(6000)
    group = c.coordinator.groups["g"]
    leader_id, follower_id = group.static_members["leader-host"], group.static_members["follower-host"]
    c.sync("g", 1, leader_id, {leader_id: b"L", follower_id: b"F"}, instance="leader-host")
    again, _ = c.join("g", instance="follower-host")  # restarted: no member id
    assert again.error_code == 0 and again.generation_id == 1 and again.member_id != follower_id
    assert group.state is S.STABLE  # no rebalance for a static follower coming back
    assert c.coordinator.heartbeat("g", 1, follower_id, "follower-host", c.now_ms) == E.FENCED_INSTANCE_ID
    assert c.coordinator.heartbeat("g", 1, again.member_id, "follower-host", c.now_ms) == E.NONE
    synced, _ = c.sync("g", 1, again.member_id, instance="follower-host")
    assert synced.assignment == b"F"


def test_static_member_survives_a_rebalance_it_misses():
    c = Cluster()
    c.join("g", instance="i1")
    a, a_answers = c.join_with_id("g")
    c.advance(6000)
    group = c.coordinator.groups["g"]
    static_id = group.static_members["i1"]
    c.sync("g", 1, group.leader_id, {})
    c.coordinator.leave_group("g", [(a, None)], c.now_ms)  # rebalance; the static member does not rejoin
    for _ in range(5):  # it heartbeats but never rejoins, until the rebalance timeout (30 s)
        c.advance(5000)
        assert c.coordinator.heartbeat("g", 1, static_id, "i1", c.now_ms) == E.REBALANCE_IN_PROGRESS
    c.advance(5000)
    assert static_id in group.members and group.generation_id == 2


def test_member_that_never_syncs_is_removed_after_the_rebalance_timeout():
    c = Cluster()
    a, b, _, _ = _stable_pair(c)  # the leader a synced; b never does, but keeps heartbeating
    group = c.coordinator.groups["g"]
    assert group.state is S.STABLE and group.pending_sync == {b}
    for _ in range(5):
        c.advance(5000)
        assert c.coordinator.heartbeat("g", 1, b, None, c.now_ms) == E.NONE
        c.coordinator.heartbeat("g", 1, a, None, c.now_ms)
    c.advance(5000)  # 30 s, the rebalance timeout, since the join completed
    assert b not in group.members and group.state is S.PREPARING_REBALANCE
    assert "did not sync" in group.rebalance_reason


def test_members_that_all_sync_end_the_sync_deadline():
    c = Cluster()
    a, b, _, _ = _stable_pair(c)
    c.sync("g", 1, b)
    group = c.coordinator.groups["g"]
    assert group.pending_sync == set() and group.sync_operation is None


def test_completed_heartbeats_are_purged_from_the_watch_lists():
    c = Cluster()
    a, b, _, _ = _stable_pair(c)
    purgatory = c.coordinator.heartbeat_purgatory
    for _ in range(1500):  # more than the purge interval (1000) of completed heartbeats
        c.coordinator.heartbeat("g", 1, a, None, c.now_ms)
        c.coordinator.heartbeat("g", 1, b, None, c.now_ms)
    c.advance(1)
    assert purgatory.purge_count >= 1 and purgatory.watched() <= 2 + purgatory.purge_interval


def test_a_timeout_stamps_the_group_with_the_clock_not_the_last_request():
    c = Cluster()
    a, answers = c.join_with_id("g")
    c.advance(3000)
    c.sync("g", 1, a, {a: b"A"})
    synced_ms = c.now_ms
    c.advance(SESSION_MS + 200)  # silence: the session ends, the group empties
    group = c.coordinator.groups["g"]
    assert group.state is S.EMPTY
    assert synced_ms + SESSION_MS <= group.state_timestamp_ms <= synced_ms + SESSION_MS + 200
