"""A consumer group member and its reconciliation: revoke first, then assign (KIP-848).

Theory of operation
-------------------
The coordinator keeps, per member, a *target assignment* (what the assignor wants it to own at
the group's assignment epoch) and a *current assignment* (what it may own now, at its member
epoch). Reconciliation walks the current towards the target one heartbeat at a time, under one
rule: **a partition is given to a member only once its previous owner has let it go.** Each
partition records the epoch of the member that holds it (:meth:`ConsumerGroup.partition_epoch`,
-1 when free); a partition still held elsewhere is *unreleased* and is not handed out.

Kafka's ``CurrentAssignmentBuilder`` computes, topic by topic::

    keep     = current & target                 (stays assigned)
    revoke   = current - keep                   (the member must give these up)
    assign   = target - keep - unreleased       (free to hand over now)

and the outcome picks the member's next state from :data:`TRANSITIONS`:

* ``MUST_REVOKE`` (something to revoke that the member still reports owning): it keeps its
  epoch and only ``keep`` -- it must confirm the revocation, by no longer listing those
  partitions in a heartbeat, before it moves on (UNREVOKED_PARTITIONS);
* ``WAIT_FOR_RELEASE``: it takes the target epoch and ``keep + assign``, and waits for others
  to free the rest (UNRELEASED_PARTITIONS);
* ``RECONCILED``: it takes the target epoch and the whole target (STABLE).

Drawn from :data:`TRANSITIONS` and :data:`ON_HEARTBEAT`::

                  target moved, something to revoke
       +--------+ ---------------------------------> +----------------------+
       | STABLE |                                    | UNREVOKED_PARTITIONS |  (same epoch;
       +--------+ <--------------------------------- +----------------------+   holds until the
         |    ^      revoked, all targets free                 |                 member confirms)
         |    |                                                | revoked, but a target
         |    | the last target partition is free              | partition is still held
         |    |                                                v
         |  +-----------------------+  <------------------------+
         +->| UNRELEASED_PARTITIONS |   (target epoch; takes what is free, waits for the rest)
            +-----------------------+
       target moved, nothing to revoke, a target partition held elsewhere

What a heartbeat lets the member try depends on its state (:data:`ON_HEARTBEAT`): a STABLE
member behind the target epoch reconciles at its own epoch; an UNREVOKED member that still owns
a revoked partition holds, and once it owns none reconciles at epoch + 1; an UNRELEASED member
reconciles again (a partition may have been freed meanwhile).

Worked example (one topic, 4 partitions): m1 alone owns 0-3 at epoch 1. m2 joins: group epoch
2, target m1 {0,1}, m2 {2,3}. m2's heartbeat: 2 and 3 are still held by m1, so m2 goes to epoch
2 with nothing (UNRELEASED_PARTITIONS). m1's heartbeat: it keeps {0,1} and must revoke {2,3}
at epoch 1 (UNREVOKED_PARTITIONS). m1 heartbeats again owning {0,1}: epoch 2, STABLE; 2 and 3
are free. m2's next heartbeat gets {2,3}: STABLE at epoch 2. At no time did two members hold
the same partition.
"""

from __future__ import annotations

import dataclasses
import enum
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kafkalab.errors import ErrorCode, KafkaError

Assignment = Mapping[uuid.UUID, frozenset[int]]  # topic id -> partitions
EMPTY: Assignment = {}
PartitionEpoch = Callable[[uuid.UUID, int], int]  # -1 when no member holds the partition


class MemberState(enum.Enum):
    """Kafka's ``MemberState``; the value is the int8 stored in the current-assignment record."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


class Outcome(enum.Enum):
    MUST_REVOKE = "must revoke"
    WAIT_FOR_RELEASE = "wait for release"
    RECONCILED = "reconciled"


M, O = MemberState, Outcome

# The state a member moves to after reconciliation produced an outcome. Every live state may
# reach every outcome: the target can move again while a member is revoking or waiting.
TRANSITIONS: dict[tuple[MemberState, Outcome], MemberState] = {
    (from_state, outcome): to_state
    for from_state in (M.STABLE, M.UNREVOKED_PARTITIONS, M.UNRELEASED_PARTITIONS, M.UNKNOWN)
    for outcome, to_state in ((O.MUST_REVOKE, M.UNREVOKED_PARTITIONS),
                              (O.WAIT_FOR_RELEASE, M.UNRELEASED_PARTITIONS),
                              (O.RECONCILED, M.STABLE))
}


class FencedMemberEpoch(KafkaError):
    def __init__(self, message: str) -> None:
        super().__init__(message, error_code=ErrorCode.FENCED_MEMBER_EPOCH)


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """What a member speaking the classic protocol (JoinGroup, SyncGroup, Heartbeat) inside a
    consumer group brought: its session timeout and its (protocol name, metadata) list."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupMember:
    """One member, as Kafka's immutable ``ConsumerGroupMember``: updates make a new value."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    state: MemberState = MemberState.STABLE
    member_epoch: int = 0
    previous_member_epoch: int = -1
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    classic: ClassicMemberMetadata | None = None  # set for a classic-protocol member

    def is_reconciled_to(self, target_epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == target_epoch

    def with_epoch(self, epoch: int) -> ConsumerGroupMember:
        return dataclasses.replace(self, previous_member_epoch=self.member_epoch, member_epoch=epoch)


def _owns_any(owned: Assignment | None, partitions: Assignment) -> bool:
    """Does the member still report owning any of ``partitions``? Not reporting counts as yes."""
    if owned is None:
        return True
    return any(owned.get(topic_id, frozenset()) & parts for topic_id, parts in partitions.items())


def _hold(member: ConsumerGroupMember, *_: object) -> ConsumerGroupMember | None:
    return None


def _on_stable(member: ConsumerGroupMember, target_epoch: int, target: Assignment,
               partition_epoch: PartitionEpoch, owned: Assignment | None) -> ConsumerGroupMember | None:
    if member.member_epoch == target_epoch:
        return None
    return next_assignment(member, member.member_epoch, target_epoch, target, partition_epoch, owned)


def _on_unrevoked(member: ConsumerGroupMember, target_epoch: int, target: Assignment,
                  partition_epoch: PartitionEpoch, owned: Assignment | None) -> ConsumerGroupMember | None:
    if _owns_any(owned, member.pending_revocation):
        return None
    return next_assignment(member, member.member_epoch + 1, target_epoch, target, partition_epoch, owned)


def _on_unreleased(member: ConsumerGroupMember, target_epoch: int, target: Assignment,
                   partition_epoch: PartitionEpoch, owned: Assignment | None) -> ConsumerGroupMember | None:
    return next_assignment(member, member.member_epoch, target_epoch, target, partition_epoch, owned)


def _on_unknown(member: ConsumerGroupMember, target_epoch: int, target: Assignment,
                partition_epoch: PartitionEpoch, owned: Assignment | None) -> ConsumerGroupMember | None:
    # A state written by a newer coordinator: start the member over, without partitions.
    if owned is None or any(owned.values()):
        raise FencedMemberEpoch(f"member {member.member_id} is in an unknown state; it must rejoin")
    return next_assignment(member, target_epoch, target_epoch, target, partition_epoch, owned)


# What one heartbeat lets a member in each state try (Kafka's ``CurrentAssignmentBuilder.build``).
ON_HEARTBEAT: dict[MemberState, Callable[..., ConsumerGroupMember | None]] = {
    M.STABLE: _on_stable,
    M.UNREVOKED_PARTITIONS: _on_unrevoked,
    M.UNRELEASED_PARTITIONS: _on_unreleased,
    M.UNKNOWN: _on_unknown,
}


def reconcile(member: ConsumerGroupMember, target_epoch: int, target: Assignment,
              partition_epoch: PartitionEpoch, owned: Assignment | None) -> ConsumerGroupMember:
    """The member after one heartbeat reporting ``owned`` (None: not reported)."""
    if member.is_reconciled_to(target_epoch):
        return member
    updated = ON_HEARTBEAT[member.state](member, target_epoch, target, partition_epoch, owned)
    return member if updated is None else updated


def next_assignment(member: ConsumerGroupMember, epoch: int, target_epoch: int, target: Assignment,
                    partition_epoch: PartitionEpoch, owned: Assignment | None) -> ConsumerGroupMember:
    """Kafka's ``computeNextAssignment``: keep, revoke and assign, then pick the state."""
    keep: dict[uuid.UUID, frozenset[int]] = {}
    revoke: dict[uuid.UUID, frozenset[int]] = {}
    assign: dict[uuid.UUID, frozenset[int]] = {}
    unreleased = False
    for topic_id in set(target) | set(member.assigned):
        wanted = target.get(topic_id, frozenset())
        current = member.assigned.get(topic_id, frozenset())
        kept = current & wanted
        free = {p for p in wanted - kept if partition_epoch(topic_id, p) == -1}
        unreleased = unreleased or len(free) < len(wanted - kept)
        for bucket, parts in ((keep, kept), (revoke, current - kept), (assign, frozenset(free))):
            if parts:
                bucket[topic_id] = frozenset(parts)
    if revoke and _owns_any(owned, revoke):
        outcome, new_epoch, assigned, pending = Outcome.MUST_REVOKE, epoch, keep, revoke
    else:
        outcome = Outcome.WAIT_FOR_RELEASE if unreleased else Outcome.RECONCILED
        new_epoch, pending = target_epoch, {}
        assigned = {t: keep.get(t, frozenset()) | assign.get(t, frozenset()) for t in set(keep) | set(assign)}
    state = TRANSITIONS[(member.state, outcome)]
    return dataclasses.replace(member.with_epoch(new_epoch), state=state, assigned=assigned,
                               pending_revocation=pending)


__all__ = ["ClassicMemberMetadata", "ConsumerGroupMember", "FencedMemberEpoch", "MemberState", "ON_HEARTBEAT", "Outcome",
           "TRANSITIONS", "next_assignment", "reconcile"]
