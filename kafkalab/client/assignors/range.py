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

Mirrors Kafka's ``RangeAssignor`` (without the KIP-881 rack matching).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kafkalab.client.assignors.members import (
    Assignments, Member, check_input, empty_assignments, member_sort_key,
)

NAME = "range"  # the protocol name members put in JoinGroup


def assign_range(partitions_per_topic: Mapping[str, int], members: Sequence[Member]) -> Assignments:
    """Per topic, hand out contiguous ranges over the sorted subscribers."""
    check_input(members, partitions_per_topic)
    assignments = empty_assignments(members)
    subscribers: dict[str, list[str]] = {}
    for member in sorted(members, key=member_sort_key):  # sorted once: each topic keeps the order
        for topic in set(member.subscription.topics):
            subscribers.setdefault(topic, []).append(member.member_id)
    for topic in sorted(subscribers):
        count = partitions_per_topic.get(topic, 0)
        ordered = subscribers[topic]
        quota, extra = divmod(count, len(ordered))
        start = 0
        for index, member_id in enumerate(ordered):
            end = start + quota + (1 if index < extra else 0)
            assignments[member_id].extend([(topic, p) for p in range(start, end)])
            start = end
    return assignments
