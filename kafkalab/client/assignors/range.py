"""RangeAssignor: each topic is cut into contiguous ranges, one per subscribed member.

Theory of operation
-------------------
Topics are handled one at a time and independently. For a topic with ``n`` partitions and ``c``
subscribed members, sorted as in :func:`~kafkalab.client.assignors.members.member_sort_key`,
member ``i`` gets ``n // c`` partitions, plus one more if ``i < n % c``, taken in partition order.
Worked example, 10 partitions of ``t`` over consumers C0, C1, C2::

    10 // 3 = 3, 10 % 3 = 1    C0: t-0 t-1 t-2 t-3      (4)
                               C1: t-4 t-5 t-6          (3)
                               C2: t-7 t-8 t-9          (3)

Because every topic restarts from the first member, partition ``k`` of two topics with the same
partition count lands on the same member: topics are *co-partitioned*, which is what a join of
``orders`` and ``payments`` keyed alike needs. The price is imbalance: with 2 topics of 1
partition each and 2 members, C0 gets both and C1 nothing. It is also eager: it looks at no
previous assignment, so one member joining can move almost every partition.

With racks (KIP-881, see :mod:`.racks`), a first pass gives each member, in the same order and
within the same per-member counts, partitions that have a replica in its rack; topics with the
same members and partition count are matched together, partition ``k`` of all of them to one
member, so co-partitioning survives. The ordinary pass then fills in the rest.

Mirrors Kafka's ``RangeAssignor``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence

from kafkalab.client.assignors.members import (
    Assignments, Member, check_input, empty_assignments, member_sort_key,
)
from kafkalab.client.assignors.racks import PartitionRacks, member_racks, use_rack_aware
from kafkalab.storage.checkpoints import TopicPartition

NAME = "range"  # the protocol name members put in JoinGroup


def assign_range(partitions_per_topic: Mapping[str, int], members: Sequence[Member],
                 partition_racks: PartitionRacks | None = None) -> Assignments:
    """Per topic, hand out contiguous ranges over the sorted subscribers."""
    check_input(members, partitions_per_topic)
    assignments = empty_assignments(members)
    subscribers: dict[str, list[str]] = {}
    for member in sorted(members, key=member_sort_key):  # sorted once: each topic keeps the order
        for topic in set(member.subscription.topics):
            subscribers.setdefault(topic, []).append(member.member_id)
    racks = member_racks(members)
    states = [_TopicState(t, partitions_per_topic[t], subscribers[t], racks, partition_racks or {})
              for t in sorted(subscribers) if partitions_per_topic.get(t, 0) > 0]
    rack_aware = any(state.needs_rack for state in states)
    if rack_aware:
        _assign_with_rack_matching(states, assignments)
    for state in states:
        state.assign_ranges(lambda member_id, tp: True, assignments)
    if rack_aware:
        for tps in assignments.values():
            tps.sort()
    return assignments


class _TopicState:
    """One topic's ranges under construction. Not thread-safe; one assignment."""

    def __init__(self, topic: str, count: int, consumers: list[str], racks: Mapping[str, str],
                 replicas: PartitionRacks) -> None:
        self.topic = topic
        self.consumers = consumers
        self.rack_of = {c: racks.get(c) for c in consumers}
        self.unassigned = dict.fromkeys((topic, p) for p in range(count))  # an ordered set
        self.assigned = dict.fromkeys(consumers, 0)
        self.quota, self.extra = divmod(count, len(consumers))
        consumer_racks = {r for r in self.rack_of.values() if r is not None}
        self.partition_racks: dict[TopicPartition, frozenset[str]] = {}
        if consumer_racks:
            self.partition_racks = {tp: frozenset(replicas.get(tp, ())) for tp in self.unassigned}
        seen = frozenset().union(*self.partition_racks.values()) if self.partition_racks else frozenset()
        self.needs_rack = use_rack_aware(consumer_racks, seen, self.partition_racks)

    def group_key(self) -> tuple[frozenset[tuple[str, str | None]], int]:
        """Topics with equal members (and racks) and partition count are matched together."""
        return frozenset(self.rack_of.items()), len(self.partition_racks)

    def racks_match(self, member_id: str, tp: TopicPartition) -> bool:
        rack = self.rack_of[member_id]
        return rack is None or rack in self.partition_racks.get(tp, frozenset())

    def max_assignable(self, member_id: str) -> int:
        return max(0, self.quota + (1 if self.extra > 0 else 0) - self.assigned[member_id])

    def assign(self, member_id: str, tps: list[TopicPartition], assignments: Assignments) -> None:
        assignments[member_id].extend(tps)
        self.assigned[member_id] += len(tps)
        if self.assigned[member_id] > self.quota:
            self.extra -= 1
        for tp in tps:
            del self.unassigned[tp]

    def assign_ranges(self, may_assign: Callable[[str, TopicPartition], bool], assignments: Assignments) -> None:
        for member_id in self.consumers:
            if not self.unassigned:
                return
            limit = self.max_assignable(member_id)
            picks = list(itertools.islice((tp for tp in self.unassigned if may_assign(member_id, tp)), limit))
            if picks:
                self.assign(member_id, picks, assignments)


def _assign_with_rack_matching(states: list[_TopicState], assignments: Assignments) -> None:
    groups: dict[tuple[frozenset[tuple[str, str | None]], int], list[_TopicState]] = {}
    for state in states:
        groups.setdefault(state.group_key(), []).append(state)
    for (_, count), grouped in groups.items():
        if len(grouped) > 1:
            _assign_co_partitioned(grouped, count, assignments)
        elif grouped[0].needs_rack:
            grouped[0].assign_ranges(grouped[0].racks_match, assignments)


def _assign_co_partitioned(states: list[_TopicState], count: int, assignments: Assignments) -> None:
    """Partition ``p`` of every topic in the group goes to the first member matching all of them."""
    remaining = list(states[0].consumers)
    for p in range(count):
        member_id = next((c for c in remaining if all(
            s.racks_match(c, (s.topic, p)) and s.max_assignable(c) > 0 for s in states)), None)
        if member_id is None:
            continue
        for state in states:
            state.assign(member_id, [(state.topic, p)], assignments)
        if all(state.max_assignable(member_id) <= 0 for state in states):
            remaining.remove(member_id)
            if not remaining:
                return
