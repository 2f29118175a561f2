"""RoundRobinAssignor: every partition of every subscribed topic dealt over the sorted members.

Theory of operation
-------------------
All partitions of all subscribed topics are listed sorted by topic name, then partition number.
They are dealt one at a time to the members in sorted order (see
:func:`~kafkalab.client.assignors.members.member_sort_key`), round and round; a member not
subscribed to a partition's topic is skipped and the deal moves on to the next one, so the
cursor keeps its place in the circle between partitions. Worked example, topics ``a`` (3
partitions) and ``b`` (2) over C0, C1 subscribed to both::

    a-0 -> C0   a-1 -> C1   a-2 -> C0   b-0 -> C1   b-1 -> C0      C0: 3, C1: 2

With identical subscriptions the counts differ by at most one. With unequal ones they need
not: if C0 takes ``a`` and ``b`` but C1 only ``b``, the partitions of ``a`` all go to C0 and
``b`` is still shared. Like Range it ignores previous ownership (eager).

Mirrors Kafka's ``RoundRobinAssignor``; the ordering is the sort described above, not the order
members joined in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kafkalab.client.assignors.members import (
    Assignments, Member, check_input, empty_assignments, member_sort_key,
)
from kafkalab.client.assignors.racks import PartitionRacks

NAME = "roundrobin"  # the protocol name members put in JoinGroup


def assign_round_robin(partitions_per_topic: Mapping[str, int], members: Sequence[Member],
                       partition_racks: PartitionRacks | None = None) -> Assignments:
    """Deal the sorted partitions over the sorted members, skipping members not subscribed.

    ``partition_racks`` is accepted for a common signature and ignored: Kafka's RoundRobin is
    not rack-aware."""
    check_input(members, partitions_per_topic)
    assignments = empty_assignments(members)
    ordered = sorted(members, key=member_sort_key)
    subscribed = [frozenset(m.subscription.topics) for m in ordered]
    topics = sorted(set().union(*subscribed)) if subscribed else []
    cursor = 0
    for topic in topics:
        for partition in range(partitions_per_topic.get(topic, 0)):
            # Some member subscribes to every listed topic, so this scan always ends.
            while topic not in subscribed[cursor]:
                cursor = (cursor + 1) % len(ordered)
            assignments[ordered[cursor].member_id].append((topic, partition))
            cursor = (cursor + 1) % len(ordered)
    return assignments
