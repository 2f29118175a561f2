"""Kafka's client-side partition assignors as pure functions.

The group leader runs one of these after JoinGroup; the coordinator only carries the bytes (see
:mod:`kafkalab.client.consumer_protocol`). Each takes ``partitions_per_topic`` (topic -> count)
and the members (:class:`Member`, in JoinGroup order) and returns ``member id -> partitions``:

==================  =========================================  ==========================
name                module                                     rebalance protocol
==================  =========================================  ==========================
range               :mod:`.range`                              eager
roundrobin          :mod:`.round_robin`                        eager
sticky              :mod:`.sticky`, :mod:`.sticky_general`     eager
cooperative-sticky  :mod:`.sticky`, :mod:`.sticky_general`     cooperative (KIP-429)
==================  =========================================  ==========================

Members that keep their ownership in ``user_data`` (Kafka's StickyAssignor, and
CooperativeSticky under older subscription versions) are read through
:func:`.user_data.member_view` first. Where Kafka's Java leader lets the iteration order of a
``HashMap`` decide, :mod:`.java_order` reproduces it, so the results equal Kafka's exactly.

Each also takes ``partition_racks`` (partition -> racks holding a replica): with members' rack
ids it turns on KIP-881's rack matching in Range and the sticky assignors (:mod:`.racks`).

Kafka 3.x's Java consumer lists ``[RangeAssignor, CooperativeStickyAssignor]`` by default.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from kafkalab.client.assignors.members import Assignments, Member
from kafkalab.client.assignors.racks import PartitionRacks
from kafkalab.client.assignors import range as range_
from kafkalab.client.assignors import round_robin, sticky
from kafkalab.client.assignors.range import assign_range
from kafkalab.client.assignors.round_robin import assign_round_robin
from kafkalab.client.assignors.sticky import assign_cooperative_sticky, assign_sticky



class Assignor(Protocol):
    """The shape every assignor function has."""

    def __call__(self, partitions_per_topic: Mapping[str, int], members: Sequence[Member],
                 partition_racks: PartitionRacks | None = None) -> Assignments: ...


ASSIGNORS: dict[str, Assignor] = {  # by the protocol name members put in JoinGroup
    range_.NAME: assign_range,
    round_robin.NAME: assign_round_robin,
    sticky.STICKY_NAME: assign_sticky,
    sticky.COOPERATIVE_STICKY_NAME: assign_cooperative_sticky,
}
COOPERATIVE = frozenset({sticky.COOPERATIVE_STICKY_NAME})  # assignors that revoke only what moves

__all__ = [
    "ASSIGNORS", "COOPERATIVE", "Assignments", "Assignor", "Member", "PartitionRacks", "assign_cooperative_sticky",
    "assign_range", "assign_round_robin", "assign_sticky",
]
