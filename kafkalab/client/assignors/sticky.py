"""StickyAssignor and CooperativeStickyAssignor: balance first, then move as little as possible.

Theory of operation
-------------------
Range and RoundRobin forget the previous assignment; the sticky assignors start from it. Each
member's subscription carries the partitions it owned and the generation it owned them in
(KIP-429 owned partitions, KIP-792 generation). The plan is:

1. **Resolve claims** (:mod:`.claims`). A partition claimed by two members goes to the one
   with the higher generation; if both claim it in the *same* generation the claim is invalid
   and neither keeps it. Claims on topics no member subscribes to, or on partitions that do not
   exist, are dropped.
2. **Keep what fits, fill the rest.** With identical subscriptions (the common case) there is a
   quota: ``total // members`` (min) and ``ceil(total / members)`` (max), with exactly
   ``total % members`` members at max. Each member keeps up to its quota of owned partitions,
   lowest partition numbers first; the unowned partitions are dealt round-robin to members below
   min, then to members at min until enough have max. With unequal subscriptions a general,
   slower algorithm (:mod:`kafkalab.client.assignors.sticky_general`) assigns greedily to the
   least-loaded eligible member and then moves partitions one at a time until no move improves
   balance, preferring to return a partition to its owner of the previous generation.

Worked example: 10 partitions of ``t`` owned 4/3/3 by C0, C1, C2 (min 3, max 4, one member at
4). C3 joins: min 2, max 3, two members at 3. C0 keeps ``t-0..t-2`` (3), C1 keeps ``t-4 t-5 t-6``
(3), C2 keeps ``t-7 t-8`` (2), and the released ``t-3`` and ``t-9`` go to C3. Only two
partitions move; Range would have moved four.

**Eager against cooperative.** The StickyAssignor hands that result out at once, but under the
eager protocol every member first gave up *all* its partitions before rejoining. The
CooperativeStickyAssignor (KIP-429) lets members keep their partitions during the rebalance; so
that no partition is ever consumed by two members at once, a partition that changes owner is
*left out* of the new owner's assignment. The old owner sees it missing and revokes it, then
rejoins at once, and in that second rebalance nobody owns it any more and it is assigned to its
new owner. In the example above, the first cooperative rebalance gives C3 nothing; C0 and C2
revoke ``t-3`` and ``t-9``; the second rebalance gives them to C3.

Which member keeps its extra partition when every member owns too many follows the order Kafka's
Java leader meets members in (its ``HashMap``; see :mod:`kafkalab.client.assignors.java_order`).
With racks (KIP-881, :mod:`.racks`) a member keeps only owned partitions with a replica in its
rack, and the deal first offers each partition (scarcest first) to members sharing its rack.

Mirrors Kafka's ``AbstractStickyAssignor`` ``ConstrainedAssignmentBuilder``, ``StickyAssignor``
and ``CooperativeStickyAssignor``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kafkalab.client.assignors.claims import (
    OwnedState, all_partitions, resolve_claims, subscribed_partition_counts,
)
from kafkalab.client.assignors.java_order import java_string_key
from kafkalab.client.assignors.members import Assignments, Member, check_input
from kafkalab.client.assignors.racks import PartitionRacks, RackInfo
from kafkalab.client.assignors.sticky_general import assign_general
from kafkalab.client.consumer_protocol import NO_GENERATION
from kafkalab.errors import InvalidRequestError
from kafkalab.storage.checkpoints import TopicPartition

STICKY_NAME = "sticky"
COOPERATIVE_STICKY_NAME = "cooperative-sticky"


@dataclass(slots=True)
class _Quota:
    """Step 2's bookkeeping for identical subscriptions. Not thread-safe; one assignment."""

    min_quota: int
    max_quota: int
    expected_over: int
    current_over: int = 0
    under: list[str] = field(default_factory=list)
    at_min: list[str] = field(default_factory=list)
    maybe_revoked: dict[TopicPartition, str] = field(default_factory=dict)
    transferring: dict[TopicPartition, str] = field(default_factory=dict)

    def reach_over(self) -> None:
        self.current_over += 1
        if self.current_over == self.expected_over:
            self.at_min.clear()  # no one else may grow past min


def _keep_owned(state: OwnedState, quota: _Quota, racks: RackInfo, assignment: Assignments) -> set[TopicPartition]:
    """Each member keeps up to its quota of owned partitions, lowest partition numbers first;
    with rack awareness, only those with a replica in its rack."""
    kept: set[TopicPartition] = set()
    for member_id in state.order:
        owned = state.owned[member_id]
        if racks.consumer_racks:
            for tp in owned:
                if racks.mismatch(member_id, tp):
                    quota.maybe_revoked[tp] = member_id
            owned = [tp for tp in owned if not racks.mismatch(member_id, tp)]
        owned = sorted(owned, key=lambda tp: (tp[1], tp[0]))
        owned = [tp for tp in owned if tp not in state.doubly_claimed]
        if len(owned) < quota.min_quota:
            keep = len(owned)
            quota.under.append(member_id)
        elif len(owned) >= quota.max_quota and quota.current_over < quota.expected_over:
            keep = quota.max_quota
            quota.reach_over()
        else:
            keep = quota.min_quota
            if quota.current_over < quota.expected_over:
                quota.at_min.append(member_id)
        assignment[member_id].extend(owned[:keep])
        kept.update(owned[:keep])
        for tp in owned[keep:]:
            quota.maybe_revoked[tp] = member_id
    return kept


def _deal(unassigned: list[TopicPartition], state: OwnedState, quota: _Quota,
          assignment: Assignments) -> None:
    """Round-robin the unowned partitions: members under min first, then members at min."""
    under, index = quota.under, 0
    for tp in unassigned:
        from_under = True
        if index < len(under):
            member_id = under[index]
            index += 1
        elif not under and not quota.at_min:
            raise InvalidRequestError(f"no member left to take {tp}: the quotas do not add up")
        elif not under:
            member_id, from_under = quota.at_min.pop(0), False
        else:
            member_id, index = under[0], 1
        count = _give(tp, member_id, state, quota, assignment)
        if count == quota.min_quota and from_under:
            del under[index - 1]
            index -= 1
            quota.at_min.append(member_id)
        elif count == quota.max_quota:
            quota.current_over += 1


def _give(tp: TopicPartition, member_id: str, state: OwnedState, quota: _Quota,
          assignment: Assignments) -> int:
    """Assign a partition nobody kept; note it as changing owner if someone else gave it up."""
    assignment[member_id].append(tp)
    previous = quota.maybe_revoked.get(tp)
    if (previous is not None and previous != member_id) or tp in state.doubly_claimed:
        quota.transferring[tp] = member_id
    return len(assignment[member_id])


def _deal_in_racks(unassigned: list[TopicPartition], state: OwnedState, quota: _Quota, racks: RackInfo,
                   assignment: Assignments) -> list[TopicPartition]:
    """The same round-robin, but each partition only to a member sharing a rack with it; the
    partitions no such member could take are returned for the ordinary deal."""
    left: list[TopicPartition] = []
    under, at_min, cursor = quota.under, quota.at_min, 0
    for tp in unassigned:
        member_id = None
        index = racks.next_rack_member(tp, under, cursor)
        if index >= 0:
            member_id = under[index]
            count = len(assignment[member_id]) + 1
            if count >= quota.min_quota:
                under.remove(member_id)
                if count < quota.max_quota and quota.current_over < quota.expected_over:
                    at_min.append(member_id)
            else:
                index += 1
            cursor = index % len(under) if under else 0
        elif at_min and (index := racks.next_rack_member(tp, at_min, 0)) >= 0:
            member_id = at_min[index]
            if len(assignment[member_id]) + 1 == quota.max_quota:
                del at_min[index]
                quota.reach_over()
        if member_id is None:
            left.append(tp)
        else:
            _give(tp, member_id, state, quota, assignment)
    return left


def assign_constrained(counts: Mapping[str, int], state: OwnedState, racks: RackInfo
                       ) -> tuple[Assignments, dict[TopicPartition, str]]:
    """Identical subscriptions: keep owned partitions up to quota, deal the rest.

    Returns the assignment and the partitions changing owner (partition -> new owner)."""
    total = sum(counts.values())
    members = len(state.order)
    quota = _Quota(total // members, -(-total // members), total % members)
    assignment: Assignments = {m: [] for m in state.order}
    kept = _keep_owned(state, quota, racks, assignment)
    unassigned = [tp for tp in all_partitions(counts) if tp not in kept]
    quota.under.sort(key=java_string_key)
    quota.at_min.sort(key=java_string_key)
    unassigned = racks.scarcest_first(unassigned)
    if racks.consumer_racks:
        unassigned = _deal_in_racks(unassigned, state, quota, racks, assignment)
    _deal(unassigned, state, quota, assignment)
    return assignment, quota.transferring


def _assign(partitions_per_topic: Mapping[str, int], members: Sequence[Member],
            partition_racks: PartitionRacks | None
            ) -> tuple[Assignments, dict[TopicPartition, str] | None, OwnedState]:
    check_input(members, partitions_per_topic)
    if not members:
        return {}, {}, OwnedState([], {}, {}, NO_GENERATION)
    counts = subscribed_partition_counts(partitions_per_topic, members)
    state = resolve_claims(counts, members)
    racks = RackInfo.build(counts, members, partition_racks)
    if state.all_equal:
        assignment, transferring = assign_constrained(counts, state, racks)
        return assignment, transferring, state
    return assign_general(counts, members, state, racks), None, state


def assign_sticky(partitions_per_topic: Mapping[str, int], members: Sequence[Member],
                  partition_racks: PartitionRacks | None = None) -> Assignments:
    """The StickyAssignor (eager): the balanced, sticky plan, handed out at once."""
    return _assign(partitions_per_topic, members, partition_racks)[0]


def assign_cooperative_sticky(partitions_per_topic: Mapping[str, int], members: Sequence[Member],
                              partition_racks: PartitionRacks | None = None) -> Assignments:
    """The CooperativeStickyAssignor: the same plan minus partitions that still have another owner."""
    assignment, transferring, _ = _assign(partitions_per_topic, members, partition_racks)
    if transferring is None:
        transferring = changing_owner(members, assignment)
    for tp, member_id in transferring.items():
        assignment[member_id].remove(tp)
    return assignment


def changing_owner(members: Sequence[Member], assignment: Assignments) -> dict[TopicPartition, str]:
    """Partitions that one member owned and the plan gives to another: partition -> new owner."""
    added: dict[TopicPartition, str] = {}
    revoked: set[TopicPartition] = set()
    for member in members:
        owned = set(member.subscription.owned_partitions)
        assigned = assignment.get(member.member_id, [])
        added.update((tp, member.member_id) for tp in assigned if tp not in owned)
        revoked.update(owned.difference(assigned))
    return {tp: m for tp, m in added.items() if tp in revoked}
