"""The sticky assignors' general case: members subscribe to different topics.

Theory of operation
-------------------
Without one shared topic list there is no simple quota, so the assignment is found by search,
as in Kafka's ``AbstractStickyAssignor.GeneralAssignmentBuilder``:

1. Members keep the owned partitions of topics they still subscribe to.
2. Every unowned partition goes to the least-loaded member subscribed to its topic (members are
   kept sorted by load, then member id).
3. Topics with a single subscriber, and members who cannot give or take anything, are set aside.
4. Partitions are visited in a fixed order (topics with the fewest subscribers first) and moved
   one at a time from a member to the least-loaded eligible one while that member has at least
   two more partitions. A partition whose owner of an older generation is now two or more behind
   goes back to that owner first. Moves stop once the assignment is *balanced*: no member could
   take a partition from another member that holds two or more partitions more than it.
5. If the moves did not improve the balance score (the sum of load differences over all member
   pairs) the pre-move assignment is kept, so stickiness wins over a change that buys nothing.

Worked example: C0 subscribes to ``a`` and ``b`` (2 partitions each), C1 only to ``b``. Topic
``a`` has one subscriber, so ``a-0`` and ``a-1`` are fixed to C0; ``b-0`` and ``b-1`` start on the
least-loaded member, C1 (C0 already has two). Result: C0 ``a-0 a-1``, C1 ``b-0 b-1``.

A movement log remembers which partitions moved between which pair of members, so that a later
move in the opposite direction sends back the same partition instead of a new one (keeping each
topic's movements free of two-member cycles). Which partition of such a set comes first follows
Java's ``HashSet`` iteration order (:class:`JavaHashSet`).

Two of Kafka's quirks are kept, so that the result is the one Kafka's Java leader would send:
the return-to-previous-owner move does not check that the previous owner still subscribes to the
topic (the Java consumer then finds a topic it did not ask for and rejoins), and when that
previous owner has been set aside in step 3, Kafka's builder fails with a
``NullPointerException``; kafkalab skips the move instead and carries on.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from kafkalab.client.assignors.java_order import java_string_key, spread, topic_partition_hash
from kafkalab.client.assignors.members import Assignments, Member
from kafkalab.client.assignors.racks import RackInfo
from kafkalab.client.assignors.claims import OwnedState
from kafkalab.storage.checkpoints import TopicPartition

Pair = tuple[str, str]  # (source member, destination member) of a partition movement


class JavaHashSet:
    """The iteration order of a ``java.util.HashSet<TopicPartition>``. Not thread-safe."""

    def __init__(self) -> None:
        self._seq: dict[TopicPartition, int] = {}
        self._next_seq = 0
        self._table_size = 16  # HashMap's default, doubled past a 0.75 load

    def add(self, tp: TopicPartition) -> None:
        if tp in self._seq:
            return
        self._seq[tp] = self._next_seq
        self._next_seq += 1
        if len(self._seq) > self._table_size * 3 // 4:
            self._table_size *= 2

    def discard(self, tp: TopicPartition) -> None:
        self._seq.pop(tp, None)

    def __len__(self) -> int:
        return len(self._seq)

    def first(self) -> TopicPartition:
        mask = self._table_size - 1
        return min(self._seq, key=lambda tp: (spread(topic_partition_hash(*tp)) & mask, self._seq[tp]))


class PartitionMovements:
    """Which partitions moved between which members, per topic. Not thread-safe."""

    def __init__(self) -> None:
        self.by_topic: dict[str, dict[Pair, JavaHashSet]] = {}
        self.moves: dict[TopicPartition, Pair] = {}

    def _drop(self, tp: TopicPartition) -> Pair:
        pair = self.moves.pop(tp)
        pairs = self.by_topic[tp[0]]
        pairs[pair].discard(tp)
        if not pairs[pair]:
            del pairs[pair]
        if not pairs:
            del self.by_topic[tp[0]]
        return pair

    def _record(self, tp: TopicPartition, pair: Pair) -> None:
        self.moves[tp] = pair
        self.by_topic.setdefault(tp[0], {}).setdefault(pair, JavaHashSet()).add(tp)

    def move(self, tp: TopicPartition, old: str, new: str) -> None:
        if tp in self.moves:
            source, _ = self._drop(tp)
            if source != new:  # not simply going home
                self._record(tp, (source, new))
        else:
            self._record(tp, (old, new))

    def partition_to_move(self, tp: TopicPartition, old: str, new: str) -> TopicPartition:
        """Prefer a partition that earlier moved ``new -> old``: send that one back instead."""
        pairs = self.by_topic.get(tp[0])
        if pairs is None:
            return tp
        if tp in self.moves:
            old = self.moves[tp][0]
        reverse = pairs.get((new, old))
        return tp if reverse is None else reverse.first()


class LoadOrder:
    """Members sorted by (partition count, member id), like Kafka's ``TreeSet`` with its
    ``SubscriptionComparator``. A member's key is fixed while it is in the set. Not thread-safe."""

    def __init__(self, assignment: Assignments) -> None:
        self.assignment = assignment
        self.entries: list[tuple[int, bytes, str]] = []
        self.keys: dict[str, tuple[int, bytes, str]] = {}

    def add(self, member_id: str) -> None:
        entry = (len(self.assignment[member_id]), java_string_key(member_id), member_id)
        self.keys[member_id] = entry
        bisect.insort(self.entries, entry)

    def remove(self, member_id: str) -> None:
        entry = self.keys.pop(member_id)
        del self.entries[bisect.bisect_left(self.entries, entry)]

    def __iter__(self) -> Iterator[str]:
        return (entry[2] for entry in list(self.entries))


@dataclass(slots=True)
class _Group:
    """The fixed facts of one general assignment. Not thread-safe."""

    counts: Mapping[str, int]
    topic_members: dict[str, list[str]]
    member_topics: dict[str, list[str]]
    total: int

    def max_size(self, member_id: str) -> int:
        topics = self.member_topics[member_id]
        if len(topics) == len(self.counts):
            return self.total
        return sum(self.counts[t] for t in topics)


def assign_general(counts: Mapping[str, int], members: Sequence[Member], state: OwnedState,
                   racks: RackInfo) -> Assignments:
    """Balance greedily, then move partitions one at a time until balanced (see module docs)."""
    by_id = {m.member_id: m for m in members}
    topic_members: dict[str, list[str]] = {t: [] for t in counts}
    member_topics: dict[str, list[str]] = {}
    for member_id in state.order:
        topics = [t for t in by_id[member_id].subscription.topics if t in counts]
        member_topics[member_id] = topics
        for topic in topics:
            topic_members[topic].append(member_id)
    group = _Group(counts, topic_members, member_topics, sum(counts.values()))
    return _Builder(group, state, by_id, racks).build()


class _Builder:
    """One run of the general algorithm. Not thread-safe; used once."""

    def __init__(self, group: _Group, state: OwnedState, by_id: Mapping[str, Member], racks: RackInfo) -> None:
        self.group = group
        self.racks = racks
        self.assignment: Assignments = {m: list(state.owned[m]) for m in state.order}
        self.owner: dict[TopicPartition, str] = {
            tp: m for m, tps in self.assignment.items() for tp in tps}
        topics = sorted(group.counts, key=lambda t: (len(group.topic_members[t]), t))
        self.sorted_partitions = [(t, p) for t in topics for p in range(group.counts[t])]
        self.order = LoadOrder(self.assignment)
        self.movements = PartitionMovements()
        self.previous = _previous_owners(state, by_id)
        self.revocation_required = False

    def build(self) -> Assignments:
        kept: set[TopicPartition] = set()
        for member_id, tps in self.assignment.items():
            subscribed = set(self.group.member_topics[member_id])
            for tp in [tp for tp in tps if tp[0] not in subscribed or self.racks.mismatch(member_id, tp)]:
                tps.remove(tp)  # unsubscribed, or no replica in the owner's rack: given up
                self.revocation_required = True
            kept.update(tps)
        unassigned = [tp for tp in self.sorted_partitions if tp not in kept]
        for member_id in self.assignment:
            self.order.add(member_id)
        self._balance(unassigned)
        return self.assignment

    def _balance(self, unassigned: list[TopicPartition]) -> None:
        initializing = not self.assignment[self.order.entries[-1][2]]
        to_assign = unassigned
        if self.racks.consumer_racks:  # same-rack members first, where there is one
            to_assign = [tp for tp in unassigned
                         if not (self.group.topic_members[tp[0]] and self._give_to_least_loaded(tp, True))]
        for tp in to_assign:
            if self.group.topic_members[tp[0]]:
                self._give_to_least_loaded(tp, False)
        fixed_topics = {t for t, ms in self.group.topic_members.items() if len(ms) < 2}
        self.sorted_partitions = [tp for tp in self.sorted_partitions if tp[0] not in fixed_topics]
        unassigned = [tp for tp in unassigned if tp[0] not in fixed_topics]
        fixed: dict[str, list[TopicPartition]] = {}
        for member_id in self.group.member_topics:
            if not self._can_take_part(member_id):
                self.order.remove(member_id)
                fixed[member_id] = self.assignment.pop(member_id)
        before = {m: list(tps) for m, tps in self.assignment.items()}
        owner_before = dict(self.owner)
        if not self.revocation_required:
            self._reassign(unassigned)
        moved = self._reassign(self.sorted_partitions)
        if not initializing and moved and _balance_score(self.assignment) >= _balance_score(before):
            self.assignment.clear()
            self.assignment.update(before)
            self.owner = owner_before
        self.assignment.update(fixed)

    def _give_to_least_loaded(self, tp: TopicPartition, same_rack: bool) -> bool:
        for member_id in self.order:
            if tp[0] in self.group.member_topics[member_id] and \
                    not (same_rack and self.racks.mismatch(member_id, tp)):
                self.order.remove(member_id)
                self.assignment[member_id].append(tp)
                self.owner[tp] = member_id
                self.order.add(member_id)
                return True
        return False

    def _can_take_part(self, member_id: str) -> bool:
        if len(self.assignment[member_id]) < self.group.max_size(member_id):
            return True
        return any(len(self.group.topic_members[t]) >= 2 for t, _ in self.assignment[member_id])

    def _is_balanced(self) -> bool:
        entries = self.order.entries
        if entries[0][0] >= entries[-1][0] - 1:
            return True
        # self.owner also lists the partitions of members set aside; those cannot reach the
        # comparison (a set-aside member only holds topics nobody else subscribes to), and
        # would count as empty if they did.
        for member_id in self.order:
            mine = self.assignment[member_id]
            if len(mine) == self.group.max_size(member_id):
                continue
            bound = len(mine) + 1
            for topic in self.group.member_topics[member_id]:
                for p in range(self.group.counts[topic]):
                    other = self.owner.get((topic, p), member_id)
                    if other != member_id and bound < len(self.assignment.get(other, ())):
                        return False
        return True

    def _reassign(self, partitions: list[TopicPartition]) -> bool:
        performed = False
        modified = True
        while modified:
            modified = False
            for tp in partitions:
                if self._is_balanced():
                    break
                if self._reassign_one(tp):
                    performed = modified = True
        return performed

    def _reassign_one(self, tp: TopicPartition) -> bool:
        member_id = self.owner[tp]
        size = len(self.assignment[member_id])
        previous = self.previous.get(tp)
        if previous is not None and previous[0] in self.assignment and \
                size > len(self.assignment[previous[0]]) + 1:
            self._move(tp, previous[0])
            return True
        # Kafka first looks for such a member within the partition's racks, but then moves the
        # partition to the same target either way, so the rack check changes nothing here.
        for other in self.group.topic_members[tp[0]]:
            if other in self.assignment and size > len(self.assignment[other]) + 1:
                target = next(m for m in self.order if tp[0] in self.group.member_topics[m])
                self._move(tp, target)
                return True
        return False

    def _move(self, tp: TopicPartition, new: str) -> None:
        tp = self.movements.partition_to_move(tp, self.owner[tp], new)
        old = self.owner[tp]
        self.order.remove(old)
        self.order.remove(new)
        self.movements.move(tp, old, new)
        self.assignment[old].remove(tp)
        self.assignment[new].append(tp)
        self.owner[tp] = new
        self.order.add(new)
        self.order.add(old)


def _previous_owners(state: OwnedState, by_id: Mapping[str, Member]) -> dict[TopicPartition, tuple[str, int]]:
    """Owners from older generations, latest first: a partition may go back to them."""
    previous: dict[TopicPartition, tuple[str, int]] = {}
    for member_id in state.order:
        generation = state.generation[member_id]
        if generation >= state.max_generation:
            continue
        for tp in by_id[member_id].subscription.owned_partitions:
            if tp not in previous or generation > previous[tp][1]:
                previous[tp] = (member_id, generation)
    return previous


def _balance_score(assignment: Assignments) -> int:
    """Sum over member pairs of the difference in partition counts (sorted-prefix formula)."""
    sizes = sorted(len(tps) for tps in assignment.values())
    n = len(sizes)
    return sum(size * (2 * i - n + 1) for i, size in enumerate(sizes))
