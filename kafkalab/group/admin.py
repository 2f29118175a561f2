"""Classic groups as a whole: ListGroups, DescribeGroups, DeleteGroups, offset expiry and load.

Theory of operation
-------------------
The membership protocol (:mod:`kafkalab.group.coordinator`: JoinGroup, SyncGroup, Heartbeat,
LeaveGroup) changes one group from inside, member by member, and waits on timers. What is here
looks at groups from outside and never waits: the admin APIs and the coordinator's periodic and
load-time work, as Kafka's ``GroupCoordinatorService`` serves them beside the rebalance protocol.
:class:`GroupAdministration` is mixed into :class:`~kafkalab.group.coordinator.GroupCoordinator`,
so callers keep asking the one coordinator.

* ListGroups and DescribeGroups skip Dead groups (a deleted group's last moment).
* DeleteGroups removes only an Empty group (else NON_EMPTY_GROUP); its offsets get tombstones
  first, then the group. A KIP-848 consumer group of the same id is the consumer coordinator's.
* An Empty group whose offsets have all expired gets a GroupMetadata tombstone and is forgotten
  (:meth:`GroupAdministration.remove_group`, called from the offset expiry).

Worked example: groups ``a`` (Stable) and ``b`` (Empty); ListGroups with states
``["empty"]`` answers ``[("b", "consumer", "Empty")]``; DeleteGroups ``["a", "b"]`` answers
``[NON_EMPTY_GROUP, NONE]`` and ``b`` is gone from the next ListGroups.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kafkalab.errors import ErrorCode
from kafkalab.group.group import ClassicGroup
from kafkalab.group.records import group_metadata_key
from kafkalab.group.state import GroupEvent, GroupState

if TYPE_CHECKING:
    from kafkalab.group.consumer.coordinator import ConsumerGroupCoordinator
    from kafkalab.group.log import CoordinatorLog
    from kafkalab.group.offsets import OffsetStore

E = ErrorCode
S = GroupState


class GroupAdministration:
    """The group-wide half of the classic coordinator. Not thread-safe; part of one
    :class:`~kafkalab.group.coordinator.GroupCoordinator`, whose state it reads and changes."""

    # Provided by GroupCoordinator.
    groups: dict[str, ClassicGroup]
    consumer: ConsumerGroupCoordinator
    offsets: OffsetStore
    log: CoordinatorLog
    now_ms: int

    def coordinator_error(self, group_id: str) -> int:
        raise NotImplementedError

    def partition_of(self, group_id: str) -> int:
        raise NotImplementedError

    def list_groups(self, states: Sequence[str], types: Sequence[str]) -> list[tuple[str, str, str]]:
        """(group id, protocol type, state) of every live group, filtered as ListGroups v4/v5."""
        wanted_states = {s.lower() for s in states}
        wanted_types = {t.lower() for t in types}
        return [
            (group.group_id, group.protocol_type or "", group.state.value)
            for group in sorted(self.groups.values(), key=lambda g: g.group_id)
            if not group.is_in(S.DEAD)
            and (not wanted_states or group.state.value.lower() in wanted_states)
            and (not wanted_types or "classic" in wanted_types)
        ]

    def describe_group(self, group_id: str) -> ClassicGroup | None:
        group = self.groups.get(group_id)
        return None if group is None or group.is_in(S.DEAD) else group

    def delete_group(self, group_id: str, now_ms: int) -> int:
        """DeleteGroups for one group: only an Empty group may go (NON_EMPTY_GROUP)."""
        self.now_ms = now_ms
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            error = self.consumer.delete_group(consumer_group)
            if error == E.NONE:
                self.offsets.delete_group_offsets(group_id, now_ms)
            return error
        group = self.groups.get(group_id)
        if self.coordinator_error(group_id):
            return self.coordinator_error(group_id)
        if group is None or group.is_in(S.DEAD):
            return E.GROUP_ID_NOT_FOUND
        if not group.is_in(S.EMPTY):
            return E.NON_EMPTY_GROUP
        self.offsets.delete_group_offsets(group_id, now_ms)
        group.transition(GroupEvent.GROUP_REMOVED, now_ms)
        del self.groups[group_id]
        return E.NONE

    def remove_group(self, group: ClassicGroup, now_ms: int) -> None:
        """An Empty group whose offsets all expired: tombstone it and forget it."""
        self.log.append(self.partition_of(group.group_id), [(group_metadata_key(group.group_id), None)], now_ms)
        group.transition(GroupEvent.GROUP_REMOVED, now_ms)
        self.groups.pop(group.group_id, None)

    def expire_offsets(self, now_ms: int) -> int:
        self.now_ms = now_ms
        return self.offsets.expire(now_ms)

    def load(self, now_ms: int) -> int:
        """Rebuild groups and offsets from the whole log (Kafka's coordinator load); the number
        of records replayed. A broker loads one partition at a time instead, as it is elected."""
        from kafkalab.group.coordinator import GroupCoordinator
        from kafkalab.group.ownership import load_all

        assert isinstance(self, GroupCoordinator), "mixed into the group coordinator only"
        return load_all(self, now_ms)
