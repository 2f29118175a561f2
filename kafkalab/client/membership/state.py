"""The client side of the classic group protocol as a state table.

Theory of operation
-------------------
A consumer in a group (Kafka's ``AbstractCoordinator`` and ``ConsumerCoordinator``) moves
through these states; each arrow is one response (or a timer) and one request::

     start                 FindCoordinator ok               JoinGroup ok (follower)
    UNJOINED ----> FINDING_COORDINATOR ----> JOINING -----------------------------> SYNCING
                        ^   ^                 |  ^  \\ JoinGroup ok (leader)            |
         coordinator    |   |  MEMBER_ID_     |  |   \\                                 | SyncGroup ok
         lost (any      |   |  REQUIRED: ---- +  |    v                                 v
         active state)  |   |  join again        |  AWAITING_METADATA --Metadata--> SYNCING ... STABLE
                        |   |                    |                                      |
                        |   +--- found, still ---+--- REBALANCE_IN_PROGRESS, ------------+ Heartbeat ok:
                        |        a member:           ILLEGAL_GENERATION,                   stay STABLE
                        |        back to STABLE      UNKNOWN_MEMBER_ID: join again

    leave(): any active state --LeaveGroup--> LEAVING --> LEFT;  FENCED_INSTANCE_ID: --> FATAL

:data:`TRANSITIONS` is that picture keyed by ``(state, event)``; a pair missing from it raises
:class:`IllegalMemberTransition`. Which responses fire which event lives in
:mod:`kafkalab.client.membership.member`, next to the requests.

Worked example: a new member starts UNJOINED; ``START`` sends FindCoordinator
(-> FINDING_COORDINATOR); the answer fires ``COORDINATOR_FOUND`` and a JoinGroup with member id
"" (-> JOINING); MEMBER_ID_REQUIRED fires ``MEMBER_ID_ASSIGNED`` and the same JoinGroup again
with the id the coordinator chose (-> JOINING); the answer names this member leader
(``JOINED_AS_LEADER`` -> AWAITING_METADATA), Metadata gives the partition counts
(``METADATA_RECEIVED`` -> SYNCING), and SyncGroup's answer (``SYNCED``) makes it STABLE.
"""

from __future__ import annotations

import enum

from kafkalab.errors import ErrorCode, KafkaError


class MemberState(enum.Enum):
    UNJOINED = "unjoined"
    FINDING_COORDINATOR = "finding coordinator"
    JOINING = "joining"
    AWAITING_METADATA = "awaiting metadata"  # the leader learns partition counts to assign
    SYNCING = "syncing"
    STABLE = "stable"
    LEAVING = "leaving"
    LEFT = "left"
    FATAL = "fatal"


class MemberEvent(enum.Enum):
    START = "start"
    COORDINATOR_FOUND = "coordinator found"  # not a member yet, or told to rejoin: join
    COORDINATOR_FOUND_RESUME = "coordinator found, resume"  # still a member: heartbeat again
    COORDINATOR_LOST = "coordinator lost"  # NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, timeout
    MEMBER_ID_ASSIGNED = "member id assigned"  # MEMBER_ID_REQUIRED (KIP-394)
    JOINED_AS_LEADER = "joined as leader"
    JOINED_AS_FOLLOWER = "joined as follower"
    METADATA_RECEIVED = "metadata received"
    SYNCED = "synced"
    HEARTBEAT_OK = "heartbeat ok"
    REJOIN_NEEDED = "rejoin needed"  # REBALANCE_IN_PROGRESS, or cooperative revocation done
    MEMBER_RESET = "member reset"  # ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID: partitions lost
    RETRY = "retry"  # a retriable error (COORDINATOR_LOAD_IN_PROGRESS): same request after backoff
    LEAVE = "leave"
    LEFT = "left"
    FENCED = "fenced"  # FENCED_INSTANCE_ID or another error no retry can fix


S, E = MemberState, MemberEvent
ACTIVE = (S.FINDING_COORDINATOR, S.JOINING, S.AWAITING_METADATA, S.SYNCING, S.STABLE)

TRANSITIONS: dict[tuple[MemberState, MemberEvent], MemberState] = {
    (S.UNJOINED, E.START): S.FINDING_COORDINATOR,
    (S.FINDING_COORDINATOR, E.COORDINATOR_FOUND): S.JOINING,
    (S.FINDING_COORDINATOR, E.COORDINATOR_FOUND_RESUME): S.STABLE,
    (S.FINDING_COORDINATOR, E.RETRY): S.FINDING_COORDINATOR,
    (S.JOINING, E.MEMBER_ID_ASSIGNED): S.JOINING,
    (S.JOINING, E.JOINED_AS_LEADER): S.AWAITING_METADATA,
    (S.JOINING, E.JOINED_AS_FOLLOWER): S.SYNCING,
    (S.JOINING, E.REJOIN_NEEDED): S.JOINING,
    (S.JOINING, E.MEMBER_RESET): S.JOINING,
    (S.JOINING, E.RETRY): S.JOINING,
    (S.AWAITING_METADATA, E.METADATA_RECEIVED): S.SYNCING,
    (S.AWAITING_METADATA, E.RETRY): S.AWAITING_METADATA,
    (S.SYNCING, E.SYNCED): S.STABLE,
    (S.SYNCING, E.REJOIN_NEEDED): S.JOINING,
    (S.SYNCING, E.MEMBER_RESET): S.JOINING,
    (S.STABLE, E.HEARTBEAT_OK): S.STABLE,
    (S.STABLE, E.REJOIN_NEEDED): S.JOINING,
    (S.STABLE, E.MEMBER_RESET): S.JOINING,
    (S.STABLE, E.RETRY): S.STABLE,
    (S.LEAVING, E.LEFT): S.LEFT,
    (S.UNJOINED, E.LEAVE): S.LEFT,
}
for _state in ACTIVE:
    TRANSITIONS[(_state, E.COORDINATOR_LOST)] = S.FINDING_COORDINATOR
    TRANSITIONS[(_state, E.LEAVE)] = S.LEAVING
    TRANSITIONS[(_state, E.FENCED)] = S.FATAL
TRANSITIONS[(S.LEAVING, E.COORDINATOR_LOST)] = S.LEFT  # nobody to tell: the session timeout will
TRANSITIONS[(S.LEAVING, E.FENCED)] = S.LEFT


class IllegalMemberTransition(KafkaError):
    """An event the member's current state does not accept: a client bug."""

    def __init__(self, group_id: str, state: MemberState, event: MemberEvent) -> None:
        super().__init__(f"member of group {group_id!r} in state {state.value!r} cannot take "
                         f"event {event.value!r}", error_code=ErrorCode.UNKNOWN_SERVER_ERROR)
        self.state = state
        self.event = event


def next_state(group_id: str, state: MemberState, event: MemberEvent) -> MemberState:
    """The state after ``event``, or :class:`IllegalMemberTransition`."""
    target = TRANSITIONS.get((state, event))
    if target is None:
        raise IllegalMemberTransition(group_id, state, event)
    return target
