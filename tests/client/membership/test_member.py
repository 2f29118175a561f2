"""GroupMember fed response by response: every error path Kafka's AbstractCoordinator has.

Responses are built from the protocol's schema classes, exactly what a decoder hands the member;
the assignment bytes a follower receives are encoded by kafka-python's ConsumerProtocol (an
independent codec), so the member reads what a Java or Python leader would send.
"""

from __future__ import annotations

from typing import Any

import pytest
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment as KpAssignment
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription as KpSubscription

from kafkalab.client.consumer_protocol import decode_subscription
from kafkalab.client.membership import GroupMember, MemberConfig, MemberEvent, MemberState, Notification
from kafkalab.client.membership.state import TRANSITIONS, IllegalMemberTransition, next_state
from kafkalab.errors import ConfigError, ErrorCode
from kafkalab.protocol import SCHEMAS
from kafkalab.protocol.api_keys import ApiKey

S = MemberState
CONFIG = MemberConfig("g", ("orders",), assignors=("range",), session_timeout_ms=10_000,
                      heartbeat_interval_ms=1_000, rebalance_timeout_ms=20_000)


def response(api_key: int, **fields: Any) -> Any:
    return SCHEMAS[api_key][1].cls(**fields)


def kp_assignment(partitions: list[int], topic: str = "orders") -> bytes:
    return KpAssignment(version=0, user_data=None, assigned_partitions=[
        KpAssignment.TopicPartition(topic=topic, partitions=partitions)]).encode()


def kp_subscription(topics: list[str]) -> bytes:
    return KpSubscription(version=0, topics=topics, user_data=None).encode()


def kp_shares(assignment: bytes) -> list[tuple[str, list[int]]]:
    return [(tp.topic, list(tp.partitions)) for tp in KpAssignment.decode(assignment).assigned_partitions]


def exchange(member: GroupMember, now_ms: int, api_key: int, **fields: Any) -> Any:
    """Take the member's next request (it must be ``api_key``) and answer it."""
    (out,) = member.poll(now_ms)
    assert out.api_key == api_key, (ApiKey(out.api_key).name, ApiKey(api_key).name)
    member.on_response(api_key, response(api_key, **fields), now_ms)
    return out


def join_as_follower(member: GroupMember, now_ms: int = 0, partitions: tuple[int, ...] = (0, 1),
                     generation: int = 1) -> None:
    if member.state is S.UNJOINED:
        member.start(now_ms)
    if member.coordinator is None:
        exchange(member, now_ms, ApiKey.FIND_COORDINATOR, error_code=0, node_id=2, host="h", port=9092)
    exchange(member, now_ms, ApiKey.JOIN_GROUP, error_code=0, generation_id=generation, protocol_name="range",
             leader="other", member_id=member.member_id or "me", members=())
    exchange(member, now_ms, ApiKey.SYNC_GROUP, error_code=0, assignment=kp_assignment(list(partitions)))


def test_first_join_retries_with_the_member_id_the_coordinator_chose() -> None:
    member = GroupMember(CONFIG)
    member.start(0)
    out = exchange(member, 0, ApiKey.FIND_COORDINATOR, error_code=0, node_id=2, host="h", port=9092)
    assert out.destination is None and member.coordinator is not None
    out = exchange(member, 0, ApiKey.JOIN_GROUP, error_code=ErrorCode.MEMBER_ID_REQUIRED, member_id="me-1", members=())
    assert out.body.member_id == "" and out.destination == 2
    assert out.timeout_ms == 30_000  # max(request.timeout.ms, rebalance timeout + 5 s)
    # The subscription a Kafka leader reads, decoded by kafka-python's codec.
    assert list(KpSubscription.decode(out.body.protocols[0].metadata).topics) == ["orders"]
    (again,) = member.poll(0)
    assert again.api_key == ApiKey.JOIN_GROUP and again.body.member_id == "me-1"
    assert member.state is S.JOINING


def test_follower_gets_its_assignment_and_heartbeats_on_the_interval() -> None:
    member = GroupMember(CONFIG)
    join_as_follower(member)
    assert member.state is S.STABLE and member.owned == (("orders", 0), ("orders", 1))
    assert member.notifications == [Notification(0, "assigned", (("orders", 0), ("orders", 1)))]
    assert member.poll(999) == [] and member.next_deadline_ms() == 1_000
    out = exchange(member, 1_000, ApiKey.HEARTBEAT, error_code=0)
    assert (out.body.generation_id, out.body.member_id) == (1, "me")


def test_leader_assigns_with_metadata_and_sends_every_share() -> None:
    member = GroupMember(CONFIG)
    member.start(0)
    exchange(member, 0, ApiKey.FIND_COORDINATOR, error_code=0, node_id=1, host="h", port=1)
    join_members = tuple(
        SCHEMAS[ApiKey.JOIN_GROUP][1].cls.JoinGroupResponseMember(
            member_id=m, group_instance_id=None, metadata=kp_subscription(["orders"]))
        for m in ("me", "you"))
    exchange(member, 0, ApiKey.JOIN_GROUP, error_code=0, generation_id=4, protocol_name="range", leader="me",
             member_id="me", members=join_members)
    assert member.state is S.AWAITING_METADATA
    metadata_cls = SCHEMAS[ApiKey.METADATA][1].cls
    topic = metadata_cls.MetadataResponseTopic(error_code=0, name="orders", partitions=tuple(
        metadata_cls.MetadataResponseTopic.MetadataResponsePartition(partition_index=p) for p in range(5)))
    out = exchange(member, 0, ApiKey.METADATA, topics=(topic,))
    assert [t.name for t in out.body.topics] == ["orders"]
    (sync,) = member.poll(0)
    shares = {a.member_id: kp_shares(a.assignment) for a in sync.body.assignments}
    assert shares == {"me": [("orders", [0, 1, 2])], "you": [("orders", [3, 4])]}  # range: 5 over 2 is 3/2


@pytest.mark.parametrize("cooperative", [False, True])
def test_rebalance_in_progress_rejoins_eager_revokes_cooperative_keeps(cooperative: bool) -> None:
    config = MemberConfig("g", ("orders",), assignors=("cooperative-sticky",) if cooperative else ("range",),
                          session_timeout_ms=10_000, heartbeat_interval_ms=1_000)
    member = GroupMember(config)
    join_as_follower(member)
    exchange(member, 1_000, ApiKey.HEARTBEAT, error_code=ErrorCode.REBALANCE_IN_PROGRESS)
    assert member.state is S.JOINING
    (join,) = member.poll(1_000)
    owned = decode_subscription(join.body.protocols[0].metadata).owned_partitions
    if cooperative:
        assert member.owned == owned == (("orders", 0), ("orders", 1))
    else:
        assert member.owned == owned == ()
        assert member.notifications[-1] == Notification(1_000, "revoked", (("orders", 0), ("orders", 1)))


def test_cooperative_member_rejoins_after_giving_partitions_up() -> None:
    config = MemberConfig("g", ("orders",), assignors=("cooperative-sticky",), session_timeout_ms=10_000,
                          heartbeat_interval_ms=1_000)
    member = GroupMember(config)
    join_as_follower(member, partitions=(0, 1, 2))
    exchange(member, 1_000, ApiKey.HEARTBEAT, error_code=ErrorCode.REBALANCE_IN_PROGRESS)
    join_as_follower(member, 1_000, partitions=(0, 1), generation=2)
    assert member.owned == (("orders", 0), ("orders", 1))
    assert member.notifications[-1] == Notification(1_000, "revoked", (("orders", 2),))
    assert member.state is S.JOINING  # KIP-429: a second rebalance hands partition 2 on


@pytest.mark.parametrize("error, member_id_after", [(ErrorCode.ILLEGAL_GENERATION, "me"),
                                                    (ErrorCode.UNKNOWN_MEMBER_ID, "")])
def test_stale_member_loses_its_partitions_and_joins_again(error: ErrorCode, member_id_after: str) -> None:
    member = GroupMember(CONFIG)
    join_as_follower(member)
    exchange(member, 1_000, ApiKey.HEARTBEAT, error_code=error)
    assert (member.state, member.generation_id, member.member_id, member.owned) == (S.JOINING, -1, member_id_after, ())
    assert member.notifications[-1].kind == "lost"


def test_lost_coordinator_is_found_again_and_heartbeats_resume_without_a_rebalance() -> None:
    member = GroupMember(CONFIG)
    join_as_follower(member)
    exchange(member, 1_000, ApiKey.HEARTBEAT, error_code=ErrorCode.NOT_COORDINATOR)
    assert member.state is S.FINDING_COORDINATOR and member.poll(1_050) == []  # retry.backoff.ms
    exchange(member, 1_100, ApiKey.FIND_COORDINATOR, error_code=0, node_id=3, host="h3", port=1)
    assert member.state is S.STABLE and member.owned == (("orders", 0), ("orders", 1))
    (out,) = member.poll(2_000)
    assert out.api_key == ApiKey.HEARTBEAT and out.destination == 3


def test_a_join_that_times_out_sends_the_member_to_find_the_coordinator() -> None:
    member = GroupMember(CONFIG)
    member.start(0)
    exchange(member, 0, ApiKey.FIND_COORDINATOR, error_code=0, node_id=2, host="h", port=9092)
    member.poll(0)
    member.on_failure(ApiKey.JOIN_GROUP, 25_000)
    assert member.state is S.FINDING_COORDINATOR and member.coordinator is None


def test_no_heartbeat_answer_for_a_session_means_the_coordinator_is_gone() -> None:
    member = GroupMember(CONFIG)
    join_as_follower(member)
    for now_ms in range(1_000, 10_000, 1_000):
        exchange(member, now_ms, ApiKey.HEARTBEAT, error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    assert member.state is S.STABLE
    assert member.poll(10_000) == [] and member.state is S.FINDING_COORDINATOR
    (out,) = member.poll(10_100)  # after retry.backoff.ms
    assert out.api_key == ApiKey.FIND_COORDINATOR


def test_a_heartbeat_unanswered_for_a_session_is_abandoned_and_its_late_answer_ignored() -> None:
    member = GroupMember(CONFIG)
    join_as_follower(member)
    (heartbeat,) = member.poll(1_000)
    assert member.next_deadline_ms() == 10_000  # the last good answer (at 0) + session.timeout.ms
    assert member.poll(9_999) == []
    assert member.poll(10_000) == [] and member.state is S.FINDING_COORDINATOR
    (find,) = member.poll(10_100)
    member.on_response(ApiKey.HEARTBEAT, response(ApiKey.HEARTBEAT, error_code=0), 10_150, heartbeat.request_id)
    assert member.state is S.FINDING_COORDINATOR  # the late answer changed nothing
    member.on_response(ApiKey.FIND_COORDINATOR, response(ApiKey.FIND_COORDINATOR, error_code=0, node_id=2,
                                                         host="h", port=1), 10_200, find.request_id)
    assert member.state is S.STABLE
    (again,) = member.poll(10_200)  # the session clock restarted: heartbeat, not another search
    assert again.api_key == ApiKey.HEARTBEAT


def test_fenced_static_member_stops_for_good() -> None:
    member = GroupMember(MemberConfig("g", ("orders",), group_instance_id="i-1", session_timeout_ms=10_000,
                                     heartbeat_interval_ms=1_000))
    join_as_follower(member)
    exchange(member, 1_000, ApiKey.HEARTBEAT, error_code=ErrorCode.FENCED_INSTANCE_ID)
    assert member.state is S.FATAL and member.error is not None
    assert member.error.error_code == ErrorCode.FENCED_INSTANCE_ID
    assert member.poll(2_000) == [] and member.next_deadline_ms() is None


def test_leave_sends_leave_group_but_a_static_member_does_not() -> None:
    member = GroupMember(CONFIG)
    join_as_follower(member)
    member.leave(500)
    out = exchange(member, 500, ApiKey.LEAVE_GROUP, error_code=0, members=())
    assert [m.member_id for m in out.body.members] == ["me"] and member.state is S.LEFT
    static = GroupMember(MemberConfig("g", ("orders",), group_instance_id="i-1", session_timeout_ms=10_000,
                                      heartbeat_interval_ms=1_000))
    join_as_follower(static)
    static.leave(500)
    assert static.poll(500) == [] and static.state is S.LEFT


def test_leave_while_joining_waits_for_the_answer_then_leaves_with_the_member_id() -> None:
    member = GroupMember(CONFIG)
    member.start(0)
    exchange(member, 0, ApiKey.FIND_COORDINATOR, error_code=0, node_id=2, host="h", port=9092)
    member.poll(0)
    member.leave(10)
    member.on_response(ApiKey.JOIN_GROUP, response(ApiKey.JOIN_GROUP, error_code=0, generation_id=1,
                                                   protocol_name="range", leader="x", member_id="me-9", members=()), 20)
    out = exchange(member, 20, ApiKey.LEAVE_GROUP, error_code=0, members=())
    assert out.body.members[0].member_id == "me-9" and member.state is S.LEFT


def test_transition_table_rejects_events_a_state_cannot_take() -> None:
    assert next_state("g", S.JOINING, MemberEvent.JOINED_AS_LEADER) is S.AWAITING_METADATA
    with pytest.raises(IllegalMemberTransition, match="'stable' cannot take event 'synced'"):
        next_state("g", S.STABLE, MemberEvent.SYNCED)
    assert all(before is not S.LEFT for before, _ in TRANSITIONS)  # LEFT is final


def test_config_refuses_unknown_assignors_and_bad_timeouts() -> None:
    with pytest.raises(ConfigError, match="unknown"):
        MemberConfig("g", ("t",), assignors=("uniform",))
    with pytest.raises(ConfigError, match="heartbeat.interval.ms"):
        MemberConfig("g", ("t",), session_timeout_ms=3_000, heartbeat_interval_ms=3_000)
    assert MemberConfig("g", ("t",)).cooperative is False  # [range, cooperative-sticky] stays eager
    assert MemberConfig("g", ("t",), assignors=("cooperative-sticky",)).cooperative is True
