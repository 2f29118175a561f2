"""The server-side assignors of KIP-848: ``uniform`` (the default) and ``range``.

Theory of operation
-------------------
In a consumer group the coordinator, not a leader member, computes the *target assignment*
whenever the group epoch moves (``group.consumer.assignors``; a member may name one with
``server_assignor``, else the first configured one is used). An assignor is a pure function of
the members (id, static instance id, subscribed topic ids, and their previous target) and the
partition count of each subscribed topic; it returns every member's partitions.

Members are ordered as Kafka's assignors order them: static members first, by instance id, then
the others by member id (Java string order).

* ``range`` -- Kafka's server ``RangeAssignor``: each topic is cut into contiguous ranges over
  its sorted subscribers, member ``i`` getting ``n // c`` partitions plus one if ``i < n % c``.
  It ignores the previous assignment, exactly like the classic client-side RangeAssignor, and
  keeps topics with equal partition counts co-partitioned.
* ``uniform`` -- like Kafka's ``UniformAssignor``: balanced (when all members subscribe to the
  same topics, partition counts differ by at most one) and sticky (a member keeps as much of its
  previous target as its share allows). In three steps: each member keeps its still-valid
  previous partitions up to its quota (``P // M``, or one more while ``P % M`` such slots remain
  -- when members subscribe to different topics it keeps them all); the partitions left over go,
  in (topic id, partition) order, each to the subscribed member holding the fewest; finally, for
  differing subscriptions, a partition moves from a member to a subscribed member holding at
  least two fewer until none can. This is kafkalab's own statement of Kafka's goals, not a
  transcription of its builders: ties may break differently from Kafka's.

Worked example (uniform): 6 partitions of ``t``, m1 owned all 6 as the only member. m2 and m3
join; the quota is 6 // 3 = 2, so m1 keeps ``t-0, t-1``, and ``t-2 .. t-5`` go one at a time to
whoever holds fewest (ties to the first in order): m2 gets 2 and 4, m3 gets 3 and 5. Only the
four partitions that must move, move. ``range`` gives m1 ``0,1``, m2 ``2,3``,
m3 ``4,5`` whatever anyone owned before.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from kafkalab.client.assignors.java_order import java_string_key
from kafkalab.errors import ErrorCode, KafkaError

Assignment = dict[uuid.UUID, frozenset[int]]
GroupAssignment = dict[str, Assignment]
TopicPartition = tuple[uuid.UUID, int]
# A bound on the work of one assignment: Kafka caps a cluster at a few hundred thousand
# partitions in practice; a hostile metadata image must not make the coordinator loop forever.
ASSIGNABLE_PARTITIONS_MAX = 1_000_000


@dataclass(frozen=True, slots=True)
class MemberSpec:
    """What an assignor knows of one member."""

    member_id: str
    instance_id: str | None
    subscribed_topic_ids: frozenset[uuid.UUID]
    previous: Mapping[uuid.UUID, frozenset[int]] = field(default_factory=dict)


class PartitionAssignorError(KafkaError):
    def __init__(self, message: str) -> None:
        super().__init__(message, error_code=ErrorCode.UNKNOWN_SERVER_ERROR)


def sort_key(member: MemberSpec) -> tuple[int, bytes]:
    """Static members by instance id first, then dynamic ones by member id (Java order)."""
    if member.instance_id is not None:
        return (0, java_string_key(member.instance_id))
    return (1, java_string_key(member.member_id))


def _check(members: Sequence[MemberSpec], partitions: Mapping[uuid.UUID, int]) -> None:
    subscribed = set().union(*(m.subscribed_topic_ids for m in members)) if members else set()
    total = sum(partitions.get(t, 0) for t in subscribed)
    if total > ASSIGNABLE_PARTITIONS_MAX:
        raise PartitionAssignorError(f"{total} partitions to assign, over the limit {ASSIGNABLE_PARTITIONS_MAX}")


def _freeze(owned: dict[str, dict[uuid.UUID, set[int]]]) -> GroupAssignment:
    return {m: {t: frozenset(p) for t, p in topics.items() if p} for m, topics in owned.items()}


# --- range -------------------------------------------------------------------------------------


def assign_range(members: Sequence[MemberSpec], partitions: Mapping[uuid.UUID, int]) -> GroupAssignment:
    """Per topic, contiguous ranges over the sorted subscribers (Kafka's server RangeAssignor)."""
    _check(members, partitions)
    ordered = sorted(members, key=sort_key)
    owned: dict[str, dict[uuid.UUID, set[int]]] = {m.member_id: {} for m in ordered}
    for topic_id in sorted({t for m in ordered for t in m.subscribed_topic_ids}):
        count = partitions.get(topic_id, 0)
        subscribers = [m.member_id for m in ordered if topic_id in m.subscribed_topic_ids]
        quota, extra = divmod(count, len(subscribers))
        start = 0
        for index, member_id in enumerate(subscribers):
            end = start + quota + (1 if index < extra else 0)
            owned[member_id][topic_id] = set(range(start, end))
            start = end
    return _freeze(owned)


# --- uniform -----------------------------------------------------------------------------------


def assign_uniform(members: Sequence[MemberSpec], partitions: Mapping[uuid.UUID, int]) -> GroupAssignment:
    """Balanced and sticky (see the module docstring)."""
    _check(members, partitions)
    ordered = sorted(members, key=sort_key)
    if not ordered:
        return {}
    homogeneous = len({m.subscribed_topic_ids for m in ordered}) == 1
    owned = _keep_previous(ordered, partitions, homogeneous)
    taken = {(t, p) for topics in owned.values() for t, parts in topics.items() for p in parts}
    every = sorted((t, p) for t in {t for m in ordered for t in m.subscribed_topic_ids}
                   for p in range(partitions.get(t, 0)))
    count = {m.member_id: sum(map(len, owned[m.member_id].values())) for m in ordered}
    for topic_id, partition in every:
        if (topic_id, partition) in taken:
            continue
        eligible = [m for m in ordered if topic_id in m.subscribed_topic_ids]
        chosen = min(eligible, key=lambda m: count[m.member_id])  # min keeps the first of ties
        owned[chosen.member_id].setdefault(topic_id, set()).add(partition)
        count[chosen.member_id] += 1
    if not homogeneous:
        _balance(ordered, owned, count, len(every))
    return _freeze(owned)


def _keep_previous(ordered: Sequence[MemberSpec], partitions: Mapping[uuid.UUID, int],
                   homogeneous: bool) -> dict[str, dict[uuid.UUID, set[int]]]:
    total = sum(partitions.get(t, 0) for t in ordered[0].subscribed_topic_ids) if homogeneous else 0
    quota, extra = divmod(total, len(ordered))
    owned: dict[str, dict[uuid.UUID, set[int]]] = {m.member_id: {} for m in ordered}
    taken: set[TopicPartition] = set()
    for member in ordered:
        valid = sorted((t, p) for t, parts in member.previous.items() if t in member.subscribed_topic_ids
                       for p in parts if p < partitions.get(t, 0) and (t, p) not in taken)
        if homogeneous:
            share = quota + (1 if extra > 0 and len(valid) > quota else 0)
            extra -= share - quota
            valid = valid[:share]
        for topic_id, partition in valid:
            owned[member.member_id].setdefault(topic_id, set()).add(partition)
            taken.add((topic_id, partition))
    return owned


def _balance(ordered: Sequence[MemberSpec], owned: dict[str, dict[uuid.UUID, set[int]]],
             count: dict[str, int], partition_count: int) -> None:
    """Move partitions from a member to a subscriber holding two or more fewer, until none can.
    Each move lowers the sum of squared counts, so the loop ends; the bound is a bug guard."""
    for _ in range(partition_count * len(ordered) + 1):
        move = _find_move(ordered, owned, count)
        if move is None:
            return
        giver, taker, topic_id, partition = move
        owned[giver][topic_id].discard(partition)
        owned[taker].setdefault(topic_id, set()).add(partition)
        count[giver] -= 1
        count[taker] += 1
    raise PartitionAssignorError("uniform assignor did not converge")


def _find_move(ordered: Sequence[MemberSpec], owned: dict[str, dict[uuid.UUID, set[int]]],
               count: dict[str, int]) -> tuple[str, str, uuid.UUID, int] | None:
    for giver in sorted(ordered, key=lambda m: -count[m.member_id]):
        for topic_id in sorted(owned[giver.member_id]):
            parts = owned[giver.member_id][topic_id]
            takers = [m for m in ordered if topic_id in m.subscribed_topic_ids
                      and count[m.member_id] <= count[giver.member_id] - 2]
            if parts and takers:
                taker = min(takers, key=lambda m: count[m.member_id])
                return giver.member_id, taker.member_id, topic_id, max(parts)
    return None


Assignor = Callable[[Sequence[MemberSpec], Mapping[uuid.UUID, int]], GroupAssignment]
SERVER_ASSIGNORS: dict[str, Assignor] = {"uniform": assign_uniform, "range": assign_range}
DEFAULT_ASSIGNORS = ("uniform", "range")  # group.consumer.assignors: the first is the default

__all__ = ["DEFAULT_ASSIGNORS", "MemberSpec", "SERVER_ASSIGNORS", "assign_range", "assign_uniform"]
