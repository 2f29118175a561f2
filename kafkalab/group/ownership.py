"""Taking over and handing off the groups of one ``__consumer_offsets`` partition.

A broker coordinates the groups whose partition it leads (see
:mod:`kafkalab.broker.coordinator_partitions`). On election it replays the partition's log
(:func:`load_partition`, Kafka's ``GroupCoordinator.onElection``): groups come back Stable or
Empty at their stored generation, with their committed offsets, and every loaded member gets a
fresh session -- a member that does not heartbeat the new coordinator within its session timeout
is removed, as on the old one. On resignation (:func:`unload_partition`, ``onResignation``) it
forgets them: each group goes Dead, and every JoinGroup or SyncGroup still parked is answered
NOT_COORDINATOR so its member looks for the new coordinator.

Worked example: broker 3 becomes leader of partition 12, whose log holds ``my-group`` at
generation 4 with members c1 and c2 and ``orders-0`` committed at 57; ``load_partition`` gives
broker 3 the group Stable at generation 4 and the offset 57, and c1's next Heartbeat
(generation 4) is answered NONE.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from kafkalab.errors import ErrorCode
from kafkalab.group.group import ClassicGroup
from kafkalab.group.loader import replay
from kafkalab.group.state import GroupEvent, GroupState

if TYPE_CHECKING:
    from kafkalab.group.coordinator import GroupCoordinator


def load_partition(coordinator: GroupCoordinator, partition: int,
                   records: Iterable[tuple[int, bytes, bytes | None]], now_ms: int) -> int:
    """Replay one partition's records into the coordinator; the number of records applied."""
    coordinator.now_ms = max(coordinator.now_ms, now_ms)
    count = replay(coordinator, records)
    _after_load(coordinator, _groups_of(coordinator, partition))
    return count


def load_all(coordinator: GroupCoordinator, now_ms: int) -> int:
    """Replay the whole log (every partition) into the coordinator; the number of records."""
    coordinator.now_ms = now_ms
    count = replay(coordinator, coordinator.log.replay())
    _after_load(coordinator, list(coordinator.groups.values()))
    return count


def _after_load(coordinator: GroupCoordinator, groups: Iterable[ClassicGroup]) -> None:
    """Transactional offset commits the log leaves undecided become pending again; every loaded
    member, classic or KIP-848, gets a fresh session, as Kafka schedules on load."""
    coordinator.offsets.load_pending(coordinator.log.open_transactions())
    for group in groups:
        for member in group.members.values():
            coordinator._schedule_heartbeat(group, member.member_id, member.session_timeout_ms)
    coordinator.consumer.after_load()


def unload_partition(coordinator: GroupCoordinator, partition: int) -> list[str]:
    """Forget every group of ``partition`` and its offsets; the group ids dropped."""
    from kafkalab.group.coordinator import JoinResult, SyncResult

    dropped = []
    for group in _groups_of(coordinator, partition):
        if not group.is_in(GroupState.DEAD):  # first, so a completed DelayedJoin finds it Dead
            group.transition(GroupEvent.GROUP_REMOVED, coordinator.now_ms)
        for member in group.members.values():
            coordinator._cancel_heartbeat(group, member.member_id)
            join, member.join_callback = member.join_callback, None
            sync, member.sync_callback = member.sync_callback, None
            if join is not None:
                join(JoinResult(ErrorCode.NOT_COORDINATOR, member_id=member.member_id))
            if sync is not None:
                sync(SyncResult(ErrorCode.NOT_COORDINATOR))
        for pending in list(group.pending_heartbeats):
            coordinator._cancel_heartbeat(group, pending)
        for operation in (group.join_operation, group.sync_operation):
            if operation is not None:
                operation.force_complete()  # leaves the timer without expiring
        group.join_operation = group.sync_operation = None
        del coordinator.groups[group.group_id]
        dropped.append(group.group_id)
    for group_id in [g for g in coordinator.offsets.offsets if coordinator.partition_of(g) == partition]:
        del coordinator.offsets.offsets[group_id]
    return dropped


def _groups_of(coordinator: GroupCoordinator, partition: int) -> list[ClassicGroup]:
    return [g for g in list(coordinator.groups.values()) if coordinator.partition_of(g.group_id) == partition]
