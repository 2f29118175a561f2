"""JoinGroup (11), SyncGroup (14), Heartbeat (12), LeaveGroup (13): the classic group protocol.

A rebalance is two round trips. Every member sends JoinGroup with the protocols it supports
(for consumers: assignor names, each with opaque subscription bytes); the coordinator waits for
all of them, picks one protocol, bumps the generation and answers everyone -- the *leader* gets
the full member list. Every member then sends SyncGroup; the leader's carries the assignment it
computed and the coordinator hands each member its own bytes. Heartbeats keep a member alive
between rebalances and tell it (REBALANCE_IN_PROGRESS) when to rejoin.

Worked example: consumer ``c1`` (kafka-python, JoinGroup v7) joins ``g`` with ``member_id=""``;
the coordinator answers MEMBER_ID_REQUIRED (79) with ``member_id="c1-5f0e..."`` (KIP-394); the
consumer joins again with that id and, alone in the group, gets ``generation_id=1``,
``protocol_name="range"``, ``leader=member_id`` and one member in ``members``.

Versions: v4+ may answer MEMBER_ID_REQUIRED; v5+ carries ``group_instance_id`` (static
membership, KIP-345); v7 (JoinGroup) / v5 (SyncGroup) echo ``protocol_type`` and
``protocol_name``; LeaveGroup v3+ removes a batch of members (KIP-345).
"""

from __future__ import annotations

from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.schema import f, message

JOIN_GROUP_REQUEST = message(
    "JoinGroupRequest", api_key=ApiKey.JOIN_GROUP, valid="0-9", flexible="6+", fields=[
        f("group_id", "string"),
        f("session_timeout_ms", "int32"),
        f("rebalance_timeout_ms", "int32", "1+", default=-1),
        f("member_id", "string"),
        f("group_instance_id", "string", "5+", nullable="5+"),
        f("protocol_type", "string"),
        f("protocols", "[]JoinGroupRequestProtocol", fields=[
            f("name", "string"),
            f("metadata", "bytes"),
        ]),
        f("reason", "string", "8+", nullable="8+"),
    ])

JOIN_GROUP_RESPONSE = message(
    "JoinGroupResponse", api_key=ApiKey.JOIN_GROUP, valid="0-9", flexible="6+", fields=[
        f("throttle_time_ms", "int32", "2+"),
        f("error_code", "int16"),
        f("generation_id", "int32", default=-1),
        f("protocol_type", "string", "7+", nullable="7+"),
        f("protocol_name", "string", nullable="7+"),
        f("leader", "string"),
        f("skip_assignment", "bool", "9+"),
        f("member_id", "string"),
        f("members", "[]JoinGroupResponseMember", fields=[
            f("member_id", "string"),
            f("group_instance_id", "string", "5+", nullable="5+"),
            f("metadata", "bytes"),
        ]),
    ])

SYNC_GROUP_REQUEST = message(
    "SyncGroupRequest", api_key=ApiKey.SYNC_GROUP, valid="0-5", flexible="4+", fields=[
        f("group_id", "string"),
        f("generation_id", "int32"),
        f("member_id", "string"),
        f("group_instance_id", "string", "3+", nullable="3+"),
        f("protocol_type", "string", "5+", nullable="5+"),
        f("protocol_name", "string", "5+", nullable="5+"),
        f("assignments", "[]SyncGroupRequestAssignment", fields=[
            f("member_id", "string"),
            f("assignment", "bytes"),
        ]),
    ])

SYNC_GROUP_RESPONSE = message(
    "SyncGroupResponse", api_key=ApiKey.SYNC_GROUP, valid="0-5", flexible="4+", fields=[
        f("throttle_time_ms", "int32", "1+"),
        f("error_code", "int16"),
        f("protocol_type", "string", "5+", nullable="5+"),
        f("protocol_name", "string", "5+", nullable="5+"),
        f("assignment", "bytes"),
    ])

HEARTBEAT_REQUEST = message(
    "HeartbeatRequest", api_key=ApiKey.HEARTBEAT, valid="0-4", flexible="4+", fields=[
        f("group_id", "string"),
        f("generation_id", "int32"),
        f("member_id", "string"),
        f("group_instance_id", "string", "3+", nullable="3+"),
    ])

HEARTBEAT_RESPONSE = message(
    "HeartbeatResponse", api_key=ApiKey.HEARTBEAT, valid="0-4", flexible="4+", fields=[
        f("throttle_time_ms", "int32", "1+"),
        f("error_code", "int16"),
    ])

LEAVE_GROUP_REQUEST = message(
    "LeaveGroupRequest", api_key=ApiKey.LEAVE_GROUP, valid="0-5", flexible="4+", fields=[
        f("group_id", "string"),
        f("member_id", "string", "0-2"),
        f("members", "[]MemberIdentity", "3+", fields=[
            f("member_id", "string", "3+"),
            f("group_instance_id", "string", "3+", nullable="3+"),
            f("reason", "string", "5+", nullable="5+"),
        ]),
    ])

LEAVE_GROUP_RESPONSE = message(
    "LeaveGroupResponse", api_key=ApiKey.LEAVE_GROUP, valid="0-5", flexible="4+", fields=[
        f("throttle_time_ms", "int32", "1+"),
        f("error_code", "int16"),
        f("members", "[]MemberResponse", "3+", fields=[
            f("member_id", "string", "3+"),
            f("group_instance_id", "string", "3+", nullable="3+"),
            f("error_code", "int16", "3+"),
        ]),
    ])
