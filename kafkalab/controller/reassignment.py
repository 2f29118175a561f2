"""Partition reassignment: moving a partition's replicas to other brokers without losing a record.

Theory of operation
-------------------
Mirrors Kafka's ``PartitionReassignmentReplicas`` and ``PartitionReassignmentRevert`` (KIP-455).
A reassignment never drops a replica before its replacements hold the data. It runs in three
steps, each one PartitionChangeRecord in the metadata log:

1. **Start** (AlterPartitionReassignments): the partition's replica list becomes the *target*
   followed by the replicas being removed, and the record names ``addingReplicas`` (in the
   target, not yet assigned) and ``removingReplicas`` (assigned, not in the target). The new
   replicas are now followers: they create the log and fetch from the leader like any follower.
2. **Catch up**: each new replica joins the ISR the usual way, when the leader sees its fetches
   reach the high watermark and proposes it (AlterPartition).
3. **Complete**: the first partition change whose target ISR holds every target replica (after
   the removed ones are taken out of it) also drops the removed replicas from the replica list
   and the ISR and clears both lists. A removed leader is replaced by the first target replica in
   the ISR, and a replica list that lost members bumps the leader epoch, so the removed replicas
   stop, and delete their logs, on the image that no longer names them.

A reassignment in progress can be cancelled (a null target): the replicas being added are dropped
and the original list returns. If only added replicas were in sync, reverting would need an
unclean election (the original replicas are behind), which is allowed only with
``unclean.leader.election.enable``.

Worked example: ``orders-0`` on replicas [1, 2, 3] (ISR [1, 2, 3], leader 1) is moved to
[4, 2, 3]. Start: replicas [4, 2, 3, 1], adding [4], removing [1]. Broker 4 catches up and leader
1 proposes ISR [1, 2, 3, 4]: taking 1 out leaves [2, 3, 4], which holds all of [4, 2, 3], so the
same change completes the move: replicas [4, 2, 3], ISR [2, 3, 4], leader 4 (the first target
replica in the ISR), leader epoch + 1, adding and removing empty. Broker 1 deletes its log.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.metadata.image import BrokerRegistration, PartitionRegistration


class ReassignmentError(KafkaError):
    """A reassignment refused with a Kafka error code (INVALID_REPLICA_ASSIGNMENT, ...)."""


@dataclass(frozen=True, slots=True)
class Assignment:
    """A partition's replica list and the replicas a reassignment is adding and removing (both
    within the list). Not validated: one read from a metadata log is taken as Kafka takes it."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @classmethod
    def of(cls, registration: PartitionRegistration) -> Assignment:
        return cls(registration.replicas, registration.adding_replicas, registration.removing_replicas)

    @property
    def in_progress(self) -> bool:
        return bool(self.adding or self.removing)

    @property
    def original(self) -> tuple[int, ...]:
        """The replicas before the reassignment started (Kafka's ``originalReplicas``)."""
        return tuple(r for r in self.replicas if r not in self.adding)


def is_reassigning(registration: PartitionRegistration) -> bool:
    return bool(registration.adding_replicas or registration.removing_replicas)


def plan(current_replicas: Sequence[int], target: Sequence[int]) -> Assignment:
    """Step 1's assignment: the target, then the replicas leaving (both difference sets sorted,
    as Kafka's ``PartitionReassignmentReplicas``). A target that only reorders the current
    replicas adds and removes nothing."""
    removing = tuple(sorted(set(current_replicas) - set(target)))
    adding = tuple(sorted(set(target) - set(current_replicas)))
    assert not set(adding) & set(removing)
    return Assignment(tuple(target) + removing, adding, removing)


def complete(assignment: Assignment, target_isr: Sequence[int]) -> tuple[Assignment, tuple[int, ...]] | None:
    """Step 3, if ``target_isr`` allows it: (the final assignment, the ISR without the removed
    replicas); None while a target replica is still out of sync, or nothing is in progress."""
    if not assignment.in_progress:
        return None
    isr = tuple(r for r in target_isr if r not in assignment.removing)
    replicas = tuple(r for r in assignment.replicas if r not in assignment.removing)
    if not isr or not replicas or not set(replicas) <= set(isr):
        return None
    return Assignment(replicas), isr


@dataclass(frozen=True, slots=True)
class Revert:
    """What cancelling a reassignment returns to: the original replicas and the ISR without the
    added ones; ``unclean`` when that ISR would be empty and the first original replica must
    lead out of sync."""

    assignment: Assignment
    isr: tuple[int, ...]
    unclean: bool


def revert(registration: PartitionRegistration) -> Revert:
    ongoing = Assignment.of(registration)
    replicas = ongoing.original
    isr = tuple(r for r in registration.isr if r not in ongoing.adding)
    if isr:
        return Revert(Assignment(replicas), isr, unclean=False)
    if not replicas:  # a partition that began with no replicas: cannot happen through the API
        raise ReassignmentError("Invalid replica assignment: addingReplicas contains all replicas.",
                                error_code=ErrorCode.INVALID_REPLICA_ASSIGNMENT)
    return Revert(Assignment(replicas), (replicas[0],), unclean=True)


def validate_target(target: Sequence[int], brokers: Mapping[int, BrokerRegistration]) -> None:
    """Kafka's ``validateManualPartitionAssignment``: a non-empty list of registered brokers,
    none twice. Registered is enough -- a fenced broker may be a target and catches up later."""
    if not target:
        raise ReassignmentError("The manual partition assignment includes an empty replica list.",
                                error_code=ErrorCode.INVALID_REPLICA_ASSIGNMENT)
    previous = None
    for broker_id in sorted(target):
        if broker_id not in brokers:
            raise ReassignmentError(f"The manual partition assignment includes broker {broker_id}, but no "
                                    f"such broker is registered.", error_code=ErrorCode.INVALID_REPLICA_ASSIGNMENT)
        if broker_id == previous:
            raise ReassignmentError(f"The manual partition assignment includes the broker {broker_id} more "
                                    f"than once.", error_code=ErrorCode.INVALID_REPLICA_ASSIGNMENT)
        previous = broker_id


__all__ = ["Assignment", "ReassignmentError", "Revert", "complete", "is_reassigning", "plan", "revert",
           "validate_target"]
