"""HeartbeatMember (KIP-848) fed answer by answer, then run against the real broker in the
simulation: what it sends at each epoch (as Kafka's ConsumerHeartbeatRequestManager does: the
full subscription only when joining or after a failure), how it reconciles, the fencing and
coordinator errors, leaving, and revoke-before-assign with two members."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from kafkalab.client.membership.heartbeat_member import (
    TRANSITIONS,
    HeartbeatEvent,
    HeartbeatMember,
    HeartbeatMemberConfig,
    HeartbeatState,
    IllegalHeartbeatTransition,
)
from kafkalab.errors import ConfigError, ErrorCode
from kafkalab.protocol import SCHEMAS
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.sim.cluster import SimCluster
from kafkalab.sim.heartbeat_members import HeartbeatMembers

S = HeartbeatState
ORDERS = uuid.UUID(int=0x0D)
CONFIG = HeartbeatMemberConfig("g", ("orders",), rebalance_timeout_ms=20_000)
HEARTBEAT_MS = 1_000


def response(api_key: int, **fields: Any) -> Any:
    return SCHEMAS[api_key][1].cls(**fields)


def answer(epoch: int, partitions: list[int] | None, error: ErrorCode = ErrorCode.NONE, member_id: str = "m-1") -> Any:
    cls = SCHEMAS[ApiKey.CONSUMER_GROUP_HEARTBEAT][1].cls
    assignment = None if partitions is None else cls.Assignment(topic_partitions=(
        cls.Assignment.TopicPartitions(topic_id=ORDERS, partitions=tuple(partitions)),))
    return cls(error_code=error, member_id=member_id, member_epoch=epoch, heartbeat_interval_ms=HEARTBEAT_MS,
               assignment=assignment)


def joined(partitions: list[int]) -> tuple[HeartbeatMember, Any]:
    """A member that found coordinator 1 and got ``partitions`` at epoch 1; its acknowledgement."""
    member = HeartbeatMember(CONFIG, {ORDERS: "orders"}.__getitem__)
    [find] = member.poll(0)
    assert find.api_key == ApiKey.FIND_COORDINATOR and find.destination is None
    member.on_response(ApiKey.FIND_COORDINATOR, response(ApiKey.FIND_COORDINATOR, error_code=0, node_id=1,
                                                         host="h", port=9092), 2, find.request_id)
    [join] = member.poll(2)
    assert join.destination == 1
    member.on_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, answer(1, partitions), 4, join.request_id)
    [ack] = member.poll(4)
    return member, ack


def test_join_sends_the_whole_subscription_and_nothing_owned() -> None:
    member = HeartbeatMember(CONFIG)
    member.coordinator, member.state = 1, S.JOINING
    [join] = member.poll(0)
    body = join.body
    assert (body.group_id, body.member_id, body.member_epoch) == ("g", "", 0)
    assert body.subscribed_topic_names == ["orders"] and body.rebalance_timeout_ms == 20_000
    assert body.topic_partitions == () and body.server_assignor is None


def test_an_assignment_is_acknowledged_at_once_with_only_what_changed() -> None:
    member, ack = joined([0, 1, 2])
    assert member.state is S.ACKNOWLEDGING and member.member_id == "m-1" and member.member_epoch == 1
    assert [p for _, p in member.owned_partitions] == [0, 1, 2]
    assert [(n.kind, n.partitions) for n in member.notifications] == [
        ("assigned", (("orders", 0), ("orders", 1), ("orders", 2)))]
    body = ack.body
    assert body.member_epoch == 1 and body.subscribed_topic_names is None and body.rebalance_timeout_ms == -1
    assert [(t.topic_id, t.partitions) for t in body.topic_partitions] == [(ORDERS, (0, 1, 2))]
    member.on_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, answer(1, None), 6, ack.request_id)
    assert member.state is S.STABLE and member.next_deadline_ms() == 6 + HEARTBEAT_MS
    assert member.poll(6 + HEARTBEAT_MS - 1) == []


def test_a_smaller_assignment_revokes_before_the_next_heartbeat_reports_it() -> None:
    member, ack = joined([0, 1, 2, 3])
    member.on_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, answer(1, [0, 1]), 6, ack.request_id)
    assert member.notifications[-1].kind == "revoked"
    assert member.notifications[-1].partitions == (("orders", 2), ("orders", 3))
    [report] = member.poll(6)
    assert [t.partitions for t in report.body.topic_partitions] == [(0, 1)] and report.body.member_epoch == 1
    member.on_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, answer(2, None), 8, report.request_id)
    assert member.member_epoch == 2 and member.epochs == [(4, 1), (8, 2)]


@pytest.mark.parametrize("error", [ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID])
def test_fenced_member_loses_its_partitions_and_rejoins_at_epoch_0(error: ErrorCode) -> None:
    member, ack = joined([0, 1])
    member.on_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, answer(-1, None, error), 6, ack.request_id)
    assert member.state is S.JOINING and member.owned == {} and member.member_epoch == 0
    assert member.notifications[-1].kind == "lost"  # not revoked: another member may own them already
    [rejoin] = member.poll(6)
    assert rejoin.body.member_epoch == 0 and rejoin.body.member_id == "m-1"
    assert rejoin.body.subscribed_topic_names == ["orders"] and rejoin.body.topic_partitions == ()


def test_coordinator_errors_and_timeouts_look_for_the_coordinator_again() -> None:
    member, ack = joined([0])
    member.on_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, answer(-1, None, ErrorCode.NOT_COORDINATOR), 6,
                       ack.request_id)
    assert member.state is S.FINDING_COORDINATOR and member.owned_partitions == [("orders", 0)]
    assert member.poll(6 + CONFIG.retry_backoff_ms - 1) == []
    [find] = member.poll(6 + CONFIG.retry_backoff_ms)
    assert find.api_key == ApiKey.FIND_COORDINATOR
    member.on_failure(ApiKey.FIND_COORDINATOR, 30_000, find.request_id)
    assert member.state is S.FINDING_COORDINATOR and member.next_deadline_ms() == 30_000 + CONFIG.retry_backoff_ms


def test_an_answer_to_an_abandoned_request_is_ignored() -> None:
    member, ack = joined([0])
    member.on_failure(ApiKey.CONSUMER_GROUP_HEARTBEAT, 30_000, ack.request_id)
    member.on_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, answer(7, [5]), 30_001, ack.request_id)
    assert member.member_epoch == 1 and member.state is S.FINDING_COORDINATOR


def test_other_errors_are_fatal_and_named() -> None:
    member, ack = joined([0])
    member.on_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, answer(-1, None, ErrorCode.UNSUPPORTED_ASSIGNOR), 6,
                       ack.request_id)
    assert member.state is S.FATAL and member.error is not None
    assert member.error.error_code == ErrorCode.UNSUPPORTED_ASSIGNOR and member.poll(10_000) == []


def test_leaving_revokes_everything_then_heartbeats_at_epoch_minus_1() -> None:
    member, ack = joined([0, 1])
    member.on_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, answer(1, None), 6, ack.request_id)
    member.leave(7)
    assert member.state is S.LEAVING and member.owned == {} and member.notifications[-1].kind == "revoked"
    [goodbye] = member.poll(7)
    assert goodbye.body.member_epoch == -1 and goodbye.body.topic_partitions is None
    member.on_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, answer(-1, None), 9, goodbye.request_id)
    assert member.state is S.LEFT and member.member_epoch == -1 and member.next_deadline_ms() is None


def test_state_table_refuses_a_missing_arrow_and_config_is_checked() -> None:
    assert (S.LEFT, HeartbeatEvent.ASSIGNMENT_CHANGED) not in TRANSITIONS
    member = HeartbeatMember(CONFIG)
    member.state = S.LEFT
    with pytest.raises(IllegalHeartbeatTransition, match="no transition from left"):
        member.on_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, answer(1, [0]), 0)
    with pytest.raises(ConfigError):
        HeartbeatMemberConfig("g", ())
    with pytest.raises(ConfigError):
        HeartbeatMemberConfig("g", ("t",), rebalance_timeout_ms=0)


# --- against the broker, in the simulation ---------------------------------------------------------


def test_two_members_on_the_broker_hand_partitions_over_revoke_first(tmp_path: Path) -> None:
    sim = SimCluster(tmp_path, nodes=1, seed=3, properties={
        "group.consumer.heartbeat.interval.ms": str(HEARTBEAT_MS), "offsets.topic.num.partitions": "1"})
    try:
        sim.create_topic("orders", 4, 1)
        members = HeartbeatMembers(sim)
        m1 = members.add("m1", HeartbeatMemberConfig("g", ("orders",)))
        sim.run_for(1_500)
        assert [p for _, p in m1.owned_partitions] == [0, 1, 2, 3] and m1.member_epoch == 1
        m2 = members.add("m2", HeartbeatMemberConfig("g", ("orders",)))
        sim.run_for(3_000)
        assert sorted(len(m.owned_partitions) for m in (m1, m2)) == [2, 2]
        assert m1.member_epoch == m2.member_epoch == 2
        revoked = {p: n.at_ms for n in m1.notifications if n.kind == "revoked" for _, p in n.partitions}
        assigned = {p: n.at_ms for n in m2.notifications if n.kind == "assigned" for _, p in n.partitions}
        assert set(revoked) == set(assigned) and all(revoked[p] < assigned[p] for p in assigned)
        first = next(m for m in members.messages if m.member == "m2" and m.kind == "response"
                     and m.api == "ConsumerGroupHeartbeat")
        assert first.member_epoch == 2 and first.partitions == ()  # epoch 2 at once, partitions later
    finally:
        sim.close()


def test_a_killed_member_is_fenced_after_the_session_and_its_partitions_move(tmp_path: Path) -> None:
    sim = SimCluster(tmp_path, nodes=1, seed=3, properties={
        "group.consumer.heartbeat.interval.ms": str(HEARTBEAT_MS), "group.consumer.session.timeout.ms": "5000",
        "offsets.topic.num.partitions": "1"})
    try:
        sim.create_topic("orders", 4, 1)
        members = HeartbeatMembers(sim)
        m1 = members.add("m1", HeartbeatMemberConfig("g", ("orders",)))
        members.add("m2", HeartbeatMemberConfig("g", ("orders",)))
        sim.run_for(3_000)
        members.kill("m2")
        sim.run_for(4_000)
        assert len(m1.owned_partitions) == 2  # the session (5 s) has not run out yet
        sim.run_for(3_000)
        assert len(m1.owned_partitions) == 4 and members.running() == ["m1"]
    finally:
        sim.close()


def test_kafkas_spec_reads_the_members_heartbeats_as_java_sends_them() -> None:
    """kafka-python's codec over Kafka's own ConsumerGroupHeartbeatRequest.json decodes what the
    member encodes: the subscription on joining, null ("unchanged") afterwards, null owned
    partitions when leaving."""
    from tests.protocol.kafka_specs import kafka_python_class_from_mirror

    schema = SCHEMAS[ApiKey.CONSUMER_GROUP_HEARTBEAT][0]
    kp_class = kafka_python_class_from_mirror(schema.name)

    def on_the_wire(body: Any) -> Any:
        return kp_class.decode(schema.encode(body, 0), version=0)

    member = HeartbeatMember(CONFIG)
    member.coordinator, member.state = 1, S.JOINING
    [join] = member.poll(0)
    first = on_the_wire(join.body)
    assert (first.member_epoch, first.subscribed_topic_names, first.rebalance_timeout_ms) == (0, ["orders"], 20_000)
    assert list(first.topic_partitions) == [] and first.server_assignor is None
    member, ack = joined([0, 2])
    later = on_the_wire(ack.body)
    assert (later.member_id, later.member_epoch, later.subscribed_topic_names, later.rebalance_timeout_ms) == (
        "m-1", 1, None, -1)
    assert [(t.topic_id, list(t.partitions)) for t in later.topic_partitions] == [(ORDERS, [0, 2])]
    member.on_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, answer(1, None), 6, ack.request_id)
    member.leave(7)
    [goodbye] = member.poll(7)
    last = on_the_wire(goodbye.body)
    assert (last.member_epoch, last.topic_partitions) == (-1, None)
