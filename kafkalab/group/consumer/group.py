"""One KIP-848 consumer group: epochs, members, the target assignment and who holds what.

Theory of operation
-------------------
Three epochs order everything (Kafka's ``ConsumerGroup``):

* the **group epoch** grows whenever membership or subscriptions change (a member joins, leaves,
  is fenced, changes its topics, or a subscribed topic gains partitions);
* the **assignment epoch** is the group epoch the target assignment was computed at; when it is
  behind, the next heartbeat recomputes the target;
* each member's **member epoch** says which target it has reconciled to.

The group's state is not stored but read off those numbers (Kafka's ``maybeUpdateGroupState``)::

    no members                                   -> Empty
    group epoch > assignment epoch               -> Assigning
    some member not STABLE at the assignment epoch -> Reconciling
    otherwise                                    -> Stable

Every partition a member holds -- assigned, or still being revoked -- is entered in
:attr:`ConsumerGroup.partition_epochs` with that member's epoch. Entering a partition that is
already held is a broken invariant (two owners at once) and fails an assertion.

Worked example: m1 alone at epoch 1 holding ``t-0 .. t-3`` gives partition epochs
``{t-0: 1, t-1: 1, t-2: 1, t-3: 1}``, state Stable. m2 joins: group epoch 2 > assignment epoch 1,
state Assigning; after the target is computed at 2, state Reconciling until both members are
STABLE at epoch 2.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field

from kafkalab.group.consumer.member import Assignment, ConsumerGroupMember, MemberState

TopicMetadata = tuple[uuid.UUID, int]  # (topic id, partition count)


class ConsumerGroupState(enum.Enum):
    """Kafka's ``ConsumerGroupState``; values are the names DescribeGroups/ListGroups print."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(slots=True)
class ConsumerGroup:
    """A consumer group. Mutable; owned by the consumer group coordinator. Not thread-safe."""

    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerGroupMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    target: dict[str, Assignment] = field(default_factory=dict)  # member id -> target assignment
    partition_epochs: dict[tuple[uuid.UUID, int], int] = field(default_factory=dict)
    subscription_metadata: dict[str, TopicMetadata] = field(default_factory=dict)  # topic name ->

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        return self.partition_epochs.get((topic_id, partition), -1)

    def subscribed_topic_names(self, replacing: ConsumerGroupMember | None = None,
                               removing: str | None = None) -> set[str]:
        """Every topic some member subscribes to, with ``replacing`` standing in for the member
        of its id and ``removing`` left out (the subscription a change would produce)."""
        members = dict(self.members)
        if removing is not None:
            members.pop(removing, None)
        if replacing is not None:
            members[replacing.member_id] = replacing
        return {topic for m in members.values() for topic in m.subscribed_topic_names}

    def member_for_instance(self, instance_id: str | None) -> ConsumerGroupMember | None:
        member_id = None if instance_id is None else self.static_members.get(instance_id)
        return None if member_id is None else self.members.get(member_id)

    # --- changes, applied only by replaying records (see replay.py) --------------------------

    def put_member(self, member: ConsumerGroupMember) -> None:
        """Add or replace a member, moving its partitions' epochs along with it."""
        old = self.members.get(member.member_id)
        if old is not None:
            self._release(old)
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        self._hold(member)

    def remove_member(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is None:
            return
        self._release(member)
        if member.instance_id is not None and self.static_members.get(member.instance_id) == member_id:
            del self.static_members[member.instance_id]

    def _hold(self, member: ConsumerGroupMember) -> None:
        for assignment in (member.assigned, member.pending_revocation):
            for topic_id, partitions in assignment.items():
                for partition in partitions:
                    previous = self.partition_epochs.get((topic_id, partition), -1)
                    assert previous == -1, (
                        f"group {self.group_id}: partition {topic_id}-{partition} given to "
                        f"{member.member_id} at epoch {member.member_epoch} is still held at epoch {previous}")
                    self.partition_epochs[(topic_id, partition)] = member.member_epoch

    def _release(self, member: ConsumerGroupMember) -> None:
        for assignment in (member.assigned, member.pending_revocation):
            for topic_id, partitions in assignment.items():
                for partition in partitions:
                    self.partition_epochs.pop((topic_id, partition), None)

    def is_static_leaving(self, member: ConsumerGroupMember) -> bool:
        return member.instance_id is not None and member.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH


JOIN_GROUP_MEMBER_EPOCH = 0
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2

__all__ = ["ConsumerGroup", "ConsumerGroupState", "JOIN_GROUP_MEMBER_EPOCH", "LEAVE_GROUP_MEMBER_EPOCH",
           "LEAVE_GROUP_STATIC_MEMBER_EPOCH", "MemberState"]
