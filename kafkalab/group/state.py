"""Kafka's classic group states and the events that move a group between them.

Theory of operation
-------------------
A classic group (Kafka's ``ClassicGroupState``) is always in one of five states::

                    member joins / leaves / times out
       +---------+  ------------------------------->  +--------------------+
       |  Empty  |                                    | PreparingRebalance |<---------+
       +---------+  <-------------------------------  +--------------------+          |
            |        join completes with no members         |                       |
            |                                               | join completes        | member joins,
            | delete / offsets expire                       v                       | leaves, times out
            v                                      +---------------------+          | or changes its
       +---------+                                 | CompletingRebalance |----------+ metadata
       |  Dead   |<-- delete / unload (any state)  +---------------------+          |
       +---------+                                          | leader's SyncGroup    |
                                                            v                       |
                                                       +---------+                  |
                                                       | Stable  |------------------+
                                                       +---------+

:data:`TRANSITIONS` is that picture as a table keyed by ``(state, event)``; every state change
in the coordinator goes through :func:`next_state`, and a pair missing from the table raises
:class:`IllegalGroupTransition` naming both -- the same check as Kafka's ``validPreviousStates``.

Worked example: a new group is Empty; the first JoinGroup fires ``REBALANCE_STARTED`` (Empty ->
PreparingRebalance); when every member has joined, ``JOIN_COMPLETED`` (-> CompletingRebalance)
and generation 1 begins; the leader's SyncGroup fires ``ASSIGNMENT_RECEIVED`` (-> Stable). A
member that stops heartbeating fires ``REBALANCE_STARTED`` again (Stable -> PreparingRebalance).
"""

from __future__ import annotations

import enum

from kafkalab.errors import ErrorCode, KafkaError


class GroupState(enum.Enum):
    """The five states; values are the names Kafka prints (DescribeGroups, ListGroups)."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


class GroupEvent(enum.Enum):
    REBALANCE_STARTED = "rebalance started"  # a member joined, left, timed out or changed
    JOIN_COMPLETED = "join completed"  # every member rejoined (or the rebalance timed out)
    ALL_MEMBERS_LEFT = "all members left"  # the join completed with no members
    ASSIGNMENT_RECEIVED = "assignment received"  # the leader's SyncGroup arrived
    GROUP_REMOVED = "group removed"  # DeleteGroups, offsets expired, or the partition unloaded


S, E = GroupState, GroupEvent

TRANSITIONS: dict[tuple[GroupState, GroupEvent], GroupState] = {
    (S.EMPTY, E.REBALANCE_STARTED): S.PREPARING_REBALANCE,
    (S.STABLE, E.REBALANCE_STARTED): S.PREPARING_REBALANCE,
    (S.COMPLETING_REBALANCE, E.REBALANCE_STARTED): S.PREPARING_REBALANCE,
    (S.PREPARING_REBALANCE, E.JOIN_COMPLETED): S.COMPLETING_REBALANCE,
    (S.PREPARING_REBALANCE, E.ALL_MEMBERS_LEFT): S.EMPTY,
    (S.COMPLETING_REBALANCE, E.ASSIGNMENT_RECEIVED): S.STABLE,
    (S.EMPTY, E.GROUP_REMOVED): S.DEAD,
    (S.PREPARING_REBALANCE, E.GROUP_REMOVED): S.DEAD,
    (S.COMPLETING_REBALANCE, E.GROUP_REMOVED): S.DEAD,
    (S.STABLE, E.GROUP_REMOVED): S.DEAD,
    (S.DEAD, E.GROUP_REMOVED): S.DEAD,
}


class IllegalGroupTransition(KafkaError):
    """An event the group's current state does not accept: a coordinator bug, reported with
    Kafka's code for an unexpected server-side failure."""

    def __init__(self, group_id: str, state: GroupState, event: GroupEvent) -> None:
        super().__init__(
            f"group {group_id!r} in state {state.value} cannot take event {event.value!r}",
            error_code=ErrorCode.UNKNOWN_SERVER_ERROR,
        )
        self.state = state
        self.event = event


def next_state(group_id: str, state: GroupState, event: GroupEvent) -> GroupState:
    """The state after ``event``, or :class:`IllegalGroupTransition`."""
    target = TRANSITIONS.get((state, event))
    if target is None:
        raise IllegalGroupTransition(group_id, state, event)
    return target
