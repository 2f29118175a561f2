"""Step 1 of the sticky assignors: who owns what, once conflicting claims are settled.

Theory of operation
-------------------
Each member's subscription lists the partitions it owned and its generation. The leader walks
the members in the order its ``HashMap`` iterates them (:mod:`.java_order`) and settles every
partition claimed twice: the newer generation wins; two claims in the *same* generation are
both invalid and neither member keeps the partition (it is reassigned, and under the
cooperative protocol only after a revocation round). Claims on topics nobody subscribes to, or on
partitions that do not exist, are dropped. The walk also notes whether all members subscribe to
the same topics, which picks the fast, quota-based algorithm.

Worked example, both subscribed to ``t``: C0 claims ``t-0 t-1`` in generation 4, C1 claims
``t-1`` in generation 5 and C2 claims ``t-0`` in generation 4. C1 wins ``t-1`` (newer); ``t-0``
is claimed twice in generation 4, so neither C0 nor C2 keeps it. Result: C0 nothing, C1
``t-1``, C2 nothing, ``t-0`` marked doubly claimed.

Mirrors ``AbstractStickyAssignor.allSubscriptionsEqual`` in Kafka's client.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kafkalab.client.assignors.java_order import hashmap_order
from kafkalab.client.assignors.members import Member
from kafkalab.client.consumer_protocol import NO_GENERATION
from kafkalab.storage.checkpoints import TopicPartition


@dataclass(slots=True)
class OwnedState:
    """Step 1's result: who owns what after claims are resolved, in the leader's member order.

    Not thread-safe; lives for one assignment."""

    order: list[str]
    owned: dict[str, list[TopicPartition]]
    generation: dict[str, int]
    max_generation: int
    doubly_claimed: set[TopicPartition] = field(default_factory=set)
    all_equal: bool = True


def subscribed_partition_counts(partitions_per_topic: Mapping[str, int],
                                members: Sequence[Member]) -> dict[str, int]:
    """Only subscribed topics with at least one partition take part, as in Kafka's ``assign``."""
    topics = {t for m in members for t in m.subscription.topics}
    return {t: n for t, n in partitions_per_topic.items() if t in topics and n > 0}


def resolve_claims(counts: Mapping[str, int], members: Sequence[Member]) -> OwnedState:
    """Walk members in the leader's order, settling double claims by generation."""
    order = hashmap_order([m.member_id for m in members])
    by_id = {m.member_id: m for m in members}
    state = OwnedState(order, {}, {}, NO_GENERATION)
    first_topics: set[str] = set()
    owner_of: dict[TopicPartition, str] = {}
    for member_id in order:
        subscription = by_id[member_id].subscription
        topics = set(subscription.topics)
        if not first_topics:
            first_topics = topics
        elif state.all_equal and topics != first_topics:
            state.all_equal = False
        generation = subscription.generation_id
        state.generation[member_id] = generation
        state.max_generation = max(state.max_generation, generation)
        owned = state.owned[member_id] = []
        for tp in subscription.owned_partitions:
            # A claim on a partition the topic does not have (it was deleted and re-created
            # smaller) is dropped; Kafka's builders would fail or hand it out.
            if tp[1] >= counts.get(tp[0], 0):
                continue
            if tp not in owner_of:  # the common case, kept inline: a claim nobody disputes
                owned.append(tp)
                owner_of[tp] = member_id
            else:
                _dispute(state, owner_of, member_id, owned, tp)
    return state


def _dispute(state: OwnedState, owner_of: dict[TopicPartition, str], member_id: str,
             owned: list[TopicPartition], tp: TopicPartition) -> None:
    other = owner_of[tp]
    mine, theirs = state.generation[member_id], state.generation[other]
    if mine == theirs:
        # Two owners in one generation: the claim is invalid, and neither keeps the partition.
        state.doubly_claimed.add(tp)
        _remove(state.owned[other], tp)
        owner_of[tp] = member_id
    elif mine > theirs:
        owned.append(tp)
        _remove(state.owned[other], tp)
        owner_of[tp] = member_id


def _remove(partitions: list[TopicPartition], tp: TopicPartition) -> None:
    if tp in partitions:
        partitions.remove(tp)


def all_partitions(counts: Mapping[str, int]) -> list[TopicPartition]:
    """Every partition, sorted by topic then partition number."""
    return [(topic, p) for topic in sorted(counts) for p in range(counts[topic])]
