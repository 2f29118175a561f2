"""Rack awareness (KIP-881): prefer giving a consumer partitions with a replica in its own rack.

Theory of operation
-------------------
A consumer may fetch from a follower in its own rack (``client.rack``, KIP-392) and so avoid
cross-rack (often cross-zone, billed) traffic. KIP-881 lets assignors use that: each member
sends its ``rack_id`` in the subscription (v3), metadata tells the leader which racks hold
replicas of each partition, and Range and the sticky assignors then *prefer* same-rack pairs, but
never at the price of balance.

Rack awareness is switched on only when it can help. It stays off when no member has a rack,
when no member's rack holds any replica, or when every partition has replicas on exactly the
same set of racks (then every choice is as good as any other). Kafka's
``AbstractPartitionAssignor.useRackAwareAssignment`` applies the same test.

Worked example: partitions ``t-0`` (replicas in racks r0, r1) and ``t-1`` (r1, r2); members C0
in r0 and C1 in r2. The partitions' rack sets differ, so rack awareness is on: ``t-0`` matches
only C0 and ``t-1`` only C1. Range without racks would give the same here; with ``t-0`` on
(r1, r2) and ``t-1`` on (r0, r1) Range gives ``t-0`` to C1 and ``t-1`` to C0, where plain
Range would have crossed racks twice.

:class:`RackInfo` is the sticky assignors' view (Kafka's ``AbstractStickyAssignor.RackInfo``);
Range keeps its own per-topic view.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from kafkalab.client.assignors.members import Member
from kafkalab.storage.checkpoints import TopicPartition

PartitionRacks = Mapping[TopicPartition, Collection[str]]  # replica racks of each partition


def use_rack_aware(consumer_racks: Collection[str], partition_racks: Collection[str],
                   racks_per_partition: Mapping[TopicPartition, frozenset[str]]) -> bool:
    """On when some member rack holds replicas and the partitions' rack sets are not all equal."""
    if not consumer_racks or not set(consumer_racks) & set(partition_racks):
        return False
    everywhere = frozenset(partition_racks)
    return any(racks != everywhere for racks in racks_per_partition.values())


def member_racks(members: Sequence[Member]) -> dict[str, str]:
    """Member id -> rack, for members that sent a non-empty rack id."""
    return {m.member_id: m.subscription.rack_id for m in members if m.subscription.rack_id}


@dataclass(slots=True)
class RackInfo:
    """Racks of members and partitions for one sticky assignment; empty when rack awareness is off.

    ``consumers_per_partition`` (how many members share a rack with each partition) is kept even
    when rack awareness is off, as in Kafka, to order unassigned partitions scarcest-first.
    Not thread-safe; lives for one assignment."""

    consumer_racks: dict[str, str] = field(default_factory=dict)
    partition_racks: dict[TopicPartition, frozenset[str]] = field(default_factory=dict)
    consumers_per_partition: dict[TopicPartition, int] = field(default_factory=dict)

    @staticmethod
    def build(counts: Mapping[str, int], members: Sequence[Member], replicas: PartitionRacks | None) -> RackInfo:
        racks = member_racks(members)
        if not racks:
            return RackInfo()
        by_rack: dict[str, int] = {}
        for rack in racks.values():
            by_rack[rack] = by_rack.get(rack, 0) + 1
        partition_racks = {(t, p): frozenset((replicas or {}).get((t, p), ()))
                           for t in counts for p in range(counts[t])}
        seen = frozenset().union(*partition_racks.values()) if partition_racks else frozenset()
        per_partition = {tp: sum(by_rack.get(r, 0) for r in rs) for tp, rs in partition_racks.items()}
        if use_rack_aware(set(racks.values()), seen, partition_racks):
            return RackInfo(racks, partition_racks, per_partition)
        return RackInfo({}, {}, per_partition)

    def mismatch(self, member_id: str, tp: TopicPartition) -> bool:
        """The member has a rack and the partition has no replica there."""
        rack = self.consumer_racks.get(member_id)
        return rack is not None and rack not in self.partition_racks.get(tp, frozenset())

    def scarcest_first(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        """Partitions that few members can read locally go first (a stable sort)."""
        if not self.consumers_per_partition:
            return partitions
        return sorted(partitions, key=lambda tp: self.consumers_per_partition.get(tp, 0))

    def next_rack_member(self, tp: TopicPartition, candidates: Sequence[str], first: int) -> int:
        """Index of the first candidate from ``first`` on (circularly) sharing a rack with ``tp``."""
        racks = self.partition_racks.get(tp)
        if not racks:
            return -1
        for i in range(len(candidates)):
            index = (first + i) % len(candidates)
            if self.consumer_racks.get(candidates[index]) in racks:
                return index
        return -1
