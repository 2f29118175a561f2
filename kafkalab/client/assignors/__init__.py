"""Kafka's client-side partition assignors as pure functions.

The group leader runs one of these after JoinGroup; the coordinator only carries the bytes (see
:mod:`kafkalab.client.consumer_protocol`). Each takes ``partitions_per_topic`` (topic -> count)
and the members (:class:`Member`, in JoinGroup order) and returns ``member id -> partitions``:

==================  =========================================  ==========================
name                module                                     rebalance protocol
==================  =========================================  ==========================
range               :mod:`.range`                              eager
roundrobin          :mod:`.round_robin`                        eager
sticky              :mod:`.sticky`                             eager
cooperative-sticky  :mod:`.sticky`, :mod:`.sticky_general`     cooperative (KIP-429)
==================  =========================================  ==========================

Kafka 3.x's Java consumer lists ``[RangeAssignor, CooperativeStickyAssignor]`` by default.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from kafkalab.client.assignors.members import Assignments, Member
from kafkalab.client.assignors.range import assign_range
from kafkalab.client.assignors.round_robin import assign_round_robin
from kafkalab.client.assignors.sticky import assign_cooperative_sticky, assign_sticky

Assignor = Callable[[Mapping[str, int], Sequence[Member]], Assignments]

ASSIGNORS: dict[str, Assignor] = {
    "range": assign_range,
    "roundrobin": assign_round_robin,
    "sticky": assign_sticky,
    "cooperative-sticky": assign_cooperative_sticky,
}
COOPERATIVE = frozenset({"cooperative-sticky"})  # assignors that revoke only what moves

__all__ = [
    "ASSIGNORS", "COOPERATIVE", "Assignments", "Assignor", "Member", "assign_cooperative_sticky",
    "assign_range", "assign_round_robin", "assign_sticky",
]
