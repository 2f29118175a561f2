"""How the controller changes a partition: leader election and ISR updates, as Kafka's rules say.

Theory of operation
-------------------
Mirrors Kafka's ``PartitionChangeBuilder`` (KRaft, metadata version 3.6+, eligible leader
replicas off). Every change to a partition -- a broker fenced, a leader's ISR proposal, a
preferred-leader election -- starts from the current :class:`PartitionRegistration` and a
*target ISR*, and produces either nothing (a no-op writes no record) or the next registration,
which the controller appends to the metadata log as a ``PartitionChangeRecord``.

Electing a leader, in order (``Election.ONLINE``, the default):

1. the current leader, if it is still in the target ISR and acceptable (alive, unfenced);
2. else the first replica *in assignment order* that is in the target ISR and acceptable;
3. else, only with ``unclean.leader.election.enable=true`` (``Election.UNCLEAN``), the first
   acceptable replica even though it is out of sync: the ISR becomes just that replica and the
   partition is marked RECOVERING. Whatever the old ISR had beyond its log is lost -- the price
   of availability the book shows;
4. else no leader (-1): the partition is offline until an ISR member comes back.

``Election.PREFERRED`` tries the first assigned replica before the current leader
(``kafkalab leader-election --election-type PREFERRED``).

A change may also carry a new assignment (a reassignment starting or being cancelled, see
:mod:`.reassignment`), and every change first checks whether its target ISR completes a
reassignment in progress; "assignment order" is then the order of the new replica list. A
replica list that loses a member bumps the leader epoch even when the leader stays, so every
replica learns of the change (Kafka's ``triggerLeaderEpochBumpForReplicaReassignmentIfNeeded``).

The ISR never becomes empty: when the last ISR member is fenced, it stays the ISR while the
partition has no leader, so that it -- the one replica known to hold every committed record --
leads again when it returns. Epochs: a leader change (to -1 too) bumps the leader epoch; any
change bumps the partition epoch.

Worked example: replicas [1, 2, 3], ISR [1, 2, 3], leader 1 at epochs (leader 4, partition 9).
Broker 1 is fenced: target ISR [2, 3]; 1 is not acceptable, 2 is the first acceptable ISR
replica in assignment order, so the result is leader 2, ISR [2, 3], leader epoch 5, partition
epoch 10.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace

from kafkalab.controller.reassignment import Assignment, complete
from kafkalab.errors import ErrorCode
from kafkalab.metadata.image import (
    LEADER_RECOVERED, LEADER_RECOVERING, NO_BROKER_EPOCH, NO_LEADER, BrokerRegistration, PartitionRegistration,
)

RECOVERED, RECOVERING = LEADER_RECOVERED, LEADER_RECOVERING


class Election(enum.Enum):
    ONLINE = "online"
    PREFERRED = "preferred"
    UNCLEAN = "unclean"


def elect_leader(
    registration: PartitionRegistration, target_isr: Sequence[int], acceptable: Callable[[int], bool],
    election: Election = Election.ONLINE, replicas: Sequence[int] | None = None,
) -> tuple[int, bool]:
    """(leader, unclean) under Kafka's rules; (-1, False) when nobody may lead. ``replicas``
    is the assignment being moved to (default: the current one)."""
    def valid(replica: int) -> bool:
        return replica in target_isr and acceptable(replica)

    replicas = registration.replicas if replicas is None else replicas
    if election is Election.PREFERRED and replicas and valid(replicas[0]):
        return replicas[0], False
    if registration.leader != NO_LEADER and valid(registration.leader):
        return registration.leader, False
    for replica in replicas:
        if valid(replica):
            return replica, False
    if election is Election.UNCLEAN:
        for replica in replicas:
            if acceptable(replica):
                return replica, True
    return NO_LEADER, False


def change_partition(
    registration: PartitionRegistration, target_isr: Sequence[int], acceptable: Callable[[int], bool],
    election: Election = Election.ONLINE, assignment: Assignment | None = None,
    target_recovery: int | None = None,
) -> PartitionRegistration | None:
    """The next registration for ``target_isr`` and ``assignment`` (default: unchanged),
    completing a reassignment the ISR allows and electing a leader if needed; None if nothing
    changes. ``target_recovery`` is the leader recovery state a leader's AlterPartition asks
    for (KIP-704: RECOVERED once the leader elected uncleanly has taken over)."""
    assignment = Assignment.of(registration) if assignment is None else assignment
    completed = complete(assignment, target_isr)
    if completed is not None:
        assignment, target_isr = completed
    leader, unclean = elect_leader(registration, target_isr, acceptable, election, assignment.replicas)
    isr = tuple(registration.isr)
    recovery = registration.leader_recovery_state
    if leader != registration.leader and unclean:
        isr, recovery = (leader,), RECOVERING
    else:
        if target_isr and tuple(target_isr) != isr:
            isr = tuple(target_isr)
        if target_recovery is not None:
            recovery = target_recovery
    if (leader == registration.leader and isr == tuple(registration.isr)
            and recovery == registration.leader_recovery_state and assignment == Assignment.of(registration)):
        return None
    bump = leader != registration.leader or not set(registration.replicas) <= set(assignment.replicas)
    return replace(registration, replicas=assignment.replicas, isr=isr, leader=leader,
                   leader_epoch=registration.leader_epoch + (1 if bump else 0),
                   partition_epoch=registration.partition_epoch + 1, leader_recovery_state=recovery,
                   adding_replicas=assignment.adding, removing_replicas=assignment.removing)


def fence_broker(
    partitions: Iterable[tuple[str, int, PartitionRegistration]], broker_id: int,
    is_active: Callable[[int], bool], unclean_enabled: Callable[[str], bool],
) -> list[tuple[str, int, PartitionRegistration]]:
    """The partition changes when ``broker_id`` is fenced (Kafka's ``handleBrokerFenced``):
    it leaves every ISR, and partitions it led elect another leader."""
    def acceptable(replica: int) -> bool:
        return replica != broker_id and is_active(replica)

    changes = []
    for topic, index, registration in partitions:
        if broker_id not in registration.isr:
            continue
        target = [r for r in registration.isr if r != broker_id]
        election = Election.UNCLEAN if unclean_enabled(topic) else Election.ONLINE
        changed = change_partition(registration, target, acceptable, election)
        if changed is not None:
            changes.append((topic, index, changed))
    return changes


def validate_alter_partition(
    registration: PartitionRegistration | None, broker_id: int, leader_epoch: int, partition_epoch: int,
    new_isr: Sequence[tuple[int, int]], brokers: Mapping[int, BrokerRegistration], request_version: int = 3,
    leader_recovery_state: int = RECOVERED,
) -> ErrorCode:
    """Kafka's checks of one AlterPartition partition, in Kafka's order; NONE if it may apply.
    ``new_isr`` holds (broker id, broker epoch) pairs; epoch -1 skips the epoch check. A
    partition still RECOVERING may not grow its ISR, and a RECOVERED one cannot go back."""
    if registration is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if leader_epoch > registration.leader_epoch or partition_epoch > registration.partition_epoch:
        return ErrorCode.NOT_CONTROLLER  # the sender knows a newer state than we do
    if leader_epoch < registration.leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if broker_id != registration.leader:
        return ErrorCode.INVALID_REQUEST
    if partition_epoch < registration.partition_epoch:
        return ErrorCode.INVALID_UPDATE_VERSION
    ids = [broker for broker, _ in new_isr]
    if len(set(ids)) != len(ids) or not set(ids) <= set(registration.replicas) or registration.leader not in ids:
        return ErrorCode.INVALID_REQUEST
    if any(not _eligible(brokers.get(b), epoch) for b, epoch in new_isr):
        return ErrorCode.INELIGIBLE_REPLICA if request_version > 1 else ErrorCode.OPERATION_NOT_ATTEMPTED
    if leader_recovery_state == RECOVERING and len(ids) > 1:
        return ErrorCode.INVALID_REQUEST
    if registration.leader_recovery_state == RECOVERED and leader_recovery_state == RECOVERING:
        return ErrorCode.INVALID_REQUEST
    return ErrorCode.NONE


def _eligible(broker: BrokerRegistration | None, epoch: int) -> bool:
    if broker is None or broker.in_controlled_shutdown or broker.fenced:
        return False
    return epoch == NO_BROKER_EPOCH or epoch == broker.broker_epoch


__all__ = [
    "RECOVERED", "RECOVERING", "Election", "change_partition", "elect_leader", "fence_broker",
    "validate_alter_partition",
]
