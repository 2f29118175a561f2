"""The input every assignor shares: the group's members and the partitions per topic.

Theory of operation
-------------------
An assignor runs on the group leader after JoinGroup. It sees each member's id, its static
``group.instance.id`` (KIP-345) if it has one, and the decoded
:class:`~kafkalab.client.consumer_protocol.Subscription` (topics, owned partitions, generation,
rack); from metadata it knows how many partitions each topic has. It returns, for every member,
the list of partitions that member should consume. Topics nobody subscribes to, and subscribed
topics the metadata does not know, take no part.

The order of :class:`Member` values handed to an assignor is the order of JoinGroup's member
list. Range and RoundRobin ignore it (they sort members), the sticky assignors use it exactly
where Kafka's Java leader would see it through its ``HashMap`` (see
:mod:`kafkalab.client.assignors.java_order`).

Member order for Range and RoundRobin is Kafka's ``MemberInfo`` order: members with a
``group.instance.id`` first, sorted by it, then the others sorted by member id. A static member
keeps its place across restarts even though it gets a fresh member id each time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kafkalab.client.assignors.java_order import java_string_key
from kafkalab.client.consumer_protocol import Subscription
from kafkalab.errors import InvalidRequestError
from kafkalab.storage.checkpoints import TopicPartition

Assignments = dict[str, list[TopicPartition]]

# An assignment lists every partition once, so its size is bounded by the group's partitions.
# Kafka caps a cluster at a few hundred thousand partitions in practice; a million is generous
# and keeps a hostile partition count from allocating without bound.
ASSIGNABLE_PARTITIONS_MAX = 1_000_000


@dataclass(frozen=True, slots=True)
class Member:
    """One group member as the leader sees it."""

    member_id: str
    subscription: Subscription
    group_instance_id: str | None = None


def member_sort_key(member: Member) -> tuple[int, bytes]:
    """Kafka's ``MemberInfo.compareTo``: static members by instance id first, then by member id."""
    if member.group_instance_id is not None:
        return (0, java_string_key(member.group_instance_id))
    return (1, java_string_key(member.member_id))


def check_input(members: Sequence[Member], partitions_per_topic: Mapping[str, int]) -> None:
    """Reject duplicate member ids, negative partition counts and more partitions than
    :data:`ASSIGNABLE_PARTITIONS_MAX` (typed errors, not asserts)."""
    ids = {m.member_id for m in members}
    if len(ids) != len(members):
        raise InvalidRequestError(f"duplicate member ids among {len(members)} members")
    bad = {t: n for t, n in partitions_per_topic.items() if n < 0}
    if bad:
        raise InvalidRequestError(f"negative partition counts: {bad}")
    subscribed = {t for m in members for t in m.subscription.topics}
    total = sum(n for t, n in partitions_per_topic.items() if t in subscribed)
    if total > ASSIGNABLE_PARTITIONS_MAX:
        raise InvalidRequestError(
            f"{total} subscribed partitions to assign, over the limit {ASSIGNABLE_PARTITIONS_MAX}")


def empty_assignments(members: Sequence[Member]) -> Assignments:
    """Every member gets a list, empty ones included, as Kafka's assignors return."""
    return {m.member_id: [] for m in members}
