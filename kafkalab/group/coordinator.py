"""The classic group coordinator: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, and the admin APIs.

Theory of operation
-------------------
One rebalance, as Kafka's ``GroupMetadataManager`` runs it for classic groups::

    c1: JoinGroup(member_id="")  --> MEMBER_ID_REQUIRED, member_id="c1-<uuid>"   (v4+, KIP-394)
    c1: JoinGroup("c1-<uuid>")   --> parked; group Empty -> PreparingRebalance,
                                     InitialDelayedJoin(group.initial.rebalance.delay.ms)
    c2: JoinGroup ... parked     --> the delay runs out: generation 1, CompletingRebalance;
                                     every parked JoinGroup is answered; the leader gets members
    c1 (leader): SyncGroup(assignments) --> group metadata committed (acks=all); Stable; answered
    c2: SyncGroup                --> answered with its assignment (parked until the leader's)
    Heartbeat every heartbeat.interval.ms; each replaces the member's DelayedHeartbeat

A JoinGroup or SyncGroup that must wait returns ``None`` from its method and is answered later
through the ``respond`` callback it brought; every other call answers at once. Errors follow
Kafka: UNKNOWN_MEMBER_ID for a member id the group does not know, ILLEGAL_GENERATION for a stale
generation, REBALANCE_IN_PROGRESS when a heartbeat or commit arrives mid-rebalance,
FENCED_INSTANCE_ID when a static member's instance id now belongs to another member id.

A group id that belongs to a KIP-848 consumer group with members is served there instead: its
classic members' JoinGroup, SyncGroup, Heartbeat and LeaveGroup go to
:mod:`kafkalab.group.consumer.classic_members` (a rolling upgrade between the protocols).

Worked example (initial delay 3000 ms, session timeout 10000 ms): c1 and c2 join at t=0; at
t=3000 both get generation 1 (c1 leads); c2 stops heartbeating after t=3000, so at t=13000 its
DelayedHeartbeat expires, the group moves to PreparingRebalance, c1's next heartbeat answers
REBALANCE_IN_PROGRESS, c1 rejoins alone and gets generation 2 with every partition.
"""

from __future__ import annotations

import functools
import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kafkalab.errors import ErrorCode
from kafkalab.group.admin import GroupAdministration
from kafkalab.group.consumer import classic_members
from kafkalab.group.consumer.coordinator import ConsumerGroupCoordinator, ConsumerGroupSettings, TopicLookup
from kafkalab.group.delayed import DelayedHeartbeat, DelayedJoin, DelayedSync, InitialDelayedJoin
from kafkalab.group.group import ClassicGroup, Member
from kafkalab.group.log import CoordinatorLog
from kafkalab.group.offsets import OffsetStore
from kafkalab.group.partitioner import partition_for
from kafkalab.group.records import GroupMetadataValue, MemberMetadata, group_metadata_key, group_metadata_value
from kafkalab.group.requests import JoinRequest, JoinResult, Respond, SyncResult
from kafkalab.group.state import GroupEvent, GroupState
from kafkalab.purgatory import DelayedOperationPurgatory
from kafkalab.timer import Timer

JOIN_GROUP_MEMBER_ID_REQUIRED_VERSION = 4  # KIP-394: JoinGroup v4+ may answer MEMBER_ID_REQUIRED
GROUPS_CACHED = 4096  # group ids whose partition is remembered: each request of a group asks
E = ErrorCode
S = GroupState


@dataclass(frozen=True, slots=True)
class GroupSettings:
    """The broker configs the coordinator obeys (Kafka's names and defaults)."""

    initial_rebalance_delay_ms: int = 3000  # group.initial.rebalance.delay.ms
    min_session_timeout_ms: int = 6000  # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1800000  # group.max.session.timeout.ms
    max_size: int = 2**31 - 1  # group.max.size
    offsets_partitions: int = 50  # offsets.topic.num.partitions
    offsets_retention_ms: int = 10080 * 60_000  # offsets.retention.minutes
    offset_metadata_max_bytes: int = 4096  # offset.metadata.max.bytes


class GroupCoordinator(GroupAdministration):
    """Every classic group this node coordinates. Not thread-safe; owned by one broker. The
    group-wide APIs (list, describe, delete, expire, load) are in :mod:`kafkalab.group.admin`."""

    def __init__(self, settings: GroupSettings, log: CoordinatorLog, timer: Timer, rng: random.Random,
                 clock_ms: Callable[[], int] | None = None, topics: TopicLookup | None = None,
                 consumer_settings: ConsumerGroupSettings | None = None) -> None:
        self.settings = settings
        # Requests bring their own now_ms; a timeout has none, so the coordinator asks this
        # (the broker's Clock.milliseconds) to stamp what a timeout changes. Without it, the
        # time of the latest request is used.
        self._clock_ms = clock_ms
        self.log = log
        self.rng = rng
        self.groups: dict[str, ClassicGroup] = {}
        self.offsets = OffsetStore(self)
        self.rebalance_purgatory: DelayedOperationPurgatory[Any] = DelayedOperationPurgatory("Rebalance", timer=timer)
        self.heartbeat_purgatory: DelayedOperationPurgatory[Any] = DelayedOperationPurgatory("Heartbeat", timer=timer)
        self.now_ms = 0  # the latest time a request or timer event brought
        # KIP-848 consumer groups share the group ids, the log and the offsets with classic ones.
        self.consumer = ConsumerGroupCoordinator(
            consumer_settings or ConsumerGroupSettings(offsets_partitions=settings.offsets_partitions),
            log, timer, rng, topics or (lambda name: None), classic=self)
        self.partition_error: Callable[[int], int] = lambda partition: E.NONE  # set by the broker

    def coordinator_error(self, group_id: str) -> int:
        """NONE if this node leads and has loaded ``group_id``'s partition; else the error to answer."""
        return self.partition_error(self.partition_of(group_id))

    def _timer_fired(self) -> None:
        if self._clock_ms is not None:
            self.now_ms = max(self.now_ms, self._clock_ms())

    def advance_clock(self, now_ms: int) -> None:
        """Run the timer (shared with the broker) to ``now_ms`` and purge completed joins and
        heartbeats from the watch lists once enough pile up: every heartbeat completes one."""
        self.rebalance_purgatory.advance_clock(now_ms)
        self.heartbeat_purgatory.advance_clock(now_ms)
        self.consumer.advance_clock(now_ms)

    # --- JoinGroup ------------------------------------------------------------------------

    def join_group(self, request: JoinRequest, now_ms: int, respond: Respond) -> JoinResult | None:
        """Answer now (a JoinResult) or later through ``respond`` (None)."""
        self.now_ms = now_ms
        error = self.coordinator_error(request.group_id) or self._check_join(request)
        if error:
            return JoinResult(error, member_id=request.member_id)
        consumer_group = self.consumer.groups.get(request.group_id)
        if consumer_group is not None:  # an Empty one gives way, as in Kafka
            if consumer_group.members:  # a classic member of a consumer group (a rolling upgrade)
                self.consumer.now_ms = max(self.consumer.now_ms, now_ms)
                return classic_members.join(self.consumer, consumer_group, request)
            self.consumer.delete_group(consumer_group)
        group = self.groups.get(request.group_id)
        if group is None:
            if request.member_id:
                return JoinResult(E.UNKNOWN_MEMBER_ID, member_id=request.member_id)
            group = self.groups[request.group_id] = ClassicGroup(request.group_id, state_timestamp_ms=now_ms)
        if group.is_in(S.DEAD):
            return JoinResult(E.COORDINATOR_NOT_AVAILABLE, member_id=request.member_id)
        if not group.supports_protocols(request.protocol_type, {name for name, _ in request.protocols}):
            return JoinResult(E.INCONSISTENT_GROUP_PROTOCOL, member_id=request.member_id)
        if not request.member_id:
            return self._join_unknown_member(group, request, respond)
        return self._join_known_member(group, request, respond)

    def _check_join(self, request: JoinRequest) -> int:
        if not request.group_id:
            return E.INVALID_GROUP_ID
        timeout = request.session_timeout_ms
        if not self.settings.min_session_timeout_ms <= timeout <= self.settings.max_session_timeout_ms:
            return E.INVALID_SESSION_TIMEOUT
        return E.NONE

    def _join_unknown_member(self, group: ClassicGroup, request: JoinRequest, respond: Respond) -> JoinResult | None:
        new_id = f"{request.client_id}-{uuid.UUID(int=self.rng.getrandbits(128), version=4)}"
        instance_id = request.group_instance_id
        old_id = group.member_for_instance(instance_id)
        if instance_id is not None and old_id is not None:
            return self._rejoin_static_member(group, request, instance_id, old_id, new_id, respond)
        if len(group.members) + len(group.pending_members) >= self.settings.max_size:
            return JoinResult(E.GROUP_MAX_SIZE_REACHED)
        if instance_id is None and request.api_version >= JOIN_GROUP_MEMBER_ID_REQUIRED_VERSION:
            group.pending_members.add(new_id)
            self._schedule_heartbeat(group, new_id, request.session_timeout_ms)
            return JoinResult(E.MEMBER_ID_REQUIRED, member_id=new_id)
        self._add_member_and_rebalance(group, request, new_id, respond)
        return None

    def _rejoin_static_member(self, group: ClassicGroup, request: JoinRequest, instance_id: str,
                              old_id: str, new_id: str, respond: Respond) -> JoinResult | None:
        """KIP-345: the instance comes back under a new member id; the old id is fenced."""
        old = group.members[old_id]
        if old.join_callback is not None:
            old.join_callback(JoinResult(E.FENCED_INSTANCE_ID, member_id=old_id))
            old.join_callback = None
        if old.sync_callback is not None:
            old.sync_callback(SyncResult(E.FENCED_INSTANCE_ID))
            old.sync_callback = None
        self._cancel_heartbeat(group, old_id)
        unchanged = old.protocols == request.protocols
        member = group.replace_static_member(instance_id, old_id, new_id)
        self._update_member(member, request, respond)
        if group.is_in(S.STABLE) and unchanged and group.leader_id != new_id:
            member.join_callback = None
            self._schedule_heartbeat(group, new_id, member.session_timeout_ms)
            return self._store_static_rejoin(group, member, instance_id, old_id, respond)
        self._prepare_rebalance(group, f"static member {instance_id} rejoined")
        return None

    def _store_static_rejoin(self, group: ClassicGroup, member: Member, instance_id: str, old_id: str,
                             respond: Respond) -> JoinResult | None:
        """Persist the new member id first, so a new coordinator fences the old one too; a failed
        write restores the old id and answers the error, as Kafka does."""
        answers: list[JoinResult] = []
        later = [False]  # True once this call has returned None: answer through respond

        def stored(error: int) -> None:
            if error and group.static_members.get(instance_id) == member.member_id:
                group.replace_static_member(instance_id, member.member_id, old_id)
            result = (JoinResult(error, member_id=member.member_id) if error
                      else self._join_result(group, member, with_members=False))
            respond(result) if later[0] else answers.append(result)

        self.log.when_committed(self.partition_of(group.group_id), self._append_group_metadata(group), stored)
        later[0] = not answers
        return answers[0] if answers else None

    def _join_known_member(self, group: ClassicGroup, request: JoinRequest, respond: Respond) -> JoinResult | None:
        member_id = request.member_id
        if member_id in group.pending_members:
            self._cancel_heartbeat(group, member_id)
            self._add_member_and_rebalance(group, request, member_id, respond)
            return None
        error = self.check_member(group, member_id, request.group_instance_id)
        if error:
            return JoinResult(error, member_id=member_id)
        member = group.members[member_id]
        if group.is_in(S.PREPARING_REBALANCE):
            self._update_member(member, request, respond)
            self.rebalance_purgatory.check_and_complete(group.group_id)
            return None
        if group.is_in(S.COMPLETING_REBALANCE) and member.protocols == request.protocols:
            return self._join_result(group, member, with_members=member_id == group.leader_id)
        if group.is_in(S.STABLE) and member.protocols == request.protocols and member_id != group.leader_id:
            return self._join_result(group, member, with_members=False)
        # The leader rejoining, or any member whose metadata changed (a new subscription, or
        # owned partitions in a cooperative rebalance), starts a new rebalance.
        self._update_member(member, request, respond)
        self._prepare_rebalance(group, f"member {member_id} rejoined with new metadata")
        return None

    def check_member(self, group: ClassicGroup, member_id: str, instance_id: str | None) -> int:
        """Kafka's ``validateMember``: an unknown id, or a fenced static instance."""
        if instance_id is not None:
            known = group.member_for_instance(instance_id)
            if known is None:
                return E.UNKNOWN_MEMBER_ID
            if known != member_id:
                return E.FENCED_INSTANCE_ID
        if member_id not in group.members or group.is_in(S.EMPTY, S.DEAD):
            return E.UNKNOWN_MEMBER_ID
        return E.NONE

    def _add_member_and_rebalance(self, group: ClassicGroup, request: JoinRequest, member_id: str,
                                  respond: Respond) -> None:
        member = Member(member_id, request.group_instance_id, request.client_id, request.client_host,
                        request.rebalance_timeout_ms, request.session_timeout_ms, request.protocol_type,
                        request.protocols, join_callback=respond)
        group.add(member)
        group.new_member_added = True
        self._schedule_heartbeat(group, member_id, request.session_timeout_ms)
        if group.is_in(S.PREPARING_REBALANCE):
            self.rebalance_purgatory.check_and_complete(group.group_id)
        else:
            self._prepare_rebalance(group, f"member {member_id} joined")

    @staticmethod
    def _update_member(member: Member, request: JoinRequest, respond: Respond) -> None:
        # Like Kafka's ``ClassicGroup.updateMember``, a newer JoinGroup replaces a parked one,
        # which is left unanswered: it came on an earlier connection, whose client gave up.
        member.protocols = request.protocols
        member.rebalance_timeout_ms = request.rebalance_timeout_ms
        member.session_timeout_ms = request.session_timeout_ms
        member.join_callback = respond

    # --- the rebalance --------------------------------------------------------------------

    def _prepare_rebalance(self, group: ClassicGroup, reason: str) -> None:
        if group.is_in(S.COMPLETING_REBALANCE):
            for member in group.members.values():
                member.assignment = b""
                self._answer_sync(member, SyncResult(E.REBALANCE_IN_PROGRESS))
        self._end_pending_sync(group)
        was_empty = group.is_in(S.EMPTY)
        group.rebalance_reason = reason
        group.transition(GroupEvent.REBALANCE_STARTED, self.now_ms)
        if was_empty:
            delay_ms = self.settings.initial_rebalance_delay_ms
            remaining_ms = max(group.rebalance_timeout_ms() - delay_ms, 0)
            self._start_initial_join(group, delay_ms, remaining_ms)
        else:
            group.join_operation = DelayedJoin(group.group_id, group.rebalance_timeout_ms(),
                                               group.all_members_joined, lambda: self._complete_join(group),
                                               on_timeout=self._timer_fired)
            self.rebalance_purgatory.try_complete_else_watch(group.join_operation, [group.group_id])

    def _start_initial_join(self, group: ClassicGroup, delay_ms: int, remaining_ms: int) -> None:
        group.new_member_added = False

        def expire() -> None:
            self._timer_fired()
            if group.new_member_added and remaining_ms > 0:
                step_ms = min(self.settings.initial_rebalance_delay_ms, remaining_ms)
                self._start_initial_join(group, step_ms, remaining_ms - step_ms)
            else:
                self._complete_join(group)

        group.join_operation = InitialDelayedJoin(group.group_id, delay_ms, expire)
        self.rebalance_purgatory.try_complete_else_watch(group.join_operation, [group.group_id])

    def _complete_join(self, group: ClassicGroup) -> None:
        """Kafka's ``completeClassicGroupJoin``: drop who did not rejoin, start a generation."""
        if not group.is_in(S.PREPARING_REBALANCE):
            return
        for member in list(group.members.values()):
            if member.join_callback is None and member.group_instance_id is None:
                self._remove_member(group, member.member_id)
        group.generation_id += 1
        if not group.members:
            group.protocol_name = None
            group.leader_id = None
            group.transition(GroupEvent.ALL_MEMBERS_LEFT, self.now_ms)
            self._append_group_metadata(group)
            return
        group.protocol_name = group.select_protocol()
        group.transition(GroupEvent.JOIN_COMPLETED, self.now_ms)
        self._start_pending_sync(group)
        for member in list(group.members.values()):
            callback, member.join_callback = member.join_callback, None
            if callback is not None:
                callback(self._join_result(group, member, with_members=member.member_id == group.leader_id))
            self._schedule_heartbeat(group, member.member_id, member.session_timeout_ms)

    def _join_result(self, group: ClassicGroup, member: Member, *, with_members: bool) -> JoinResult:
        members: tuple[tuple[str, str | None, bytes], ...] = ()
        if with_members and group.protocol_name is not None:
            members = tuple((m.member_id, m.group_instance_id, m.metadata(group.protocol_name))
                            for m in group.members.values())
        return JoinResult(E.NONE, member.member_id, group.generation_id, group.protocol_type,
                          group.protocol_name, group.leader_id or "", members)

    # --- SyncGroup ------------------------------------------------------------------------

    def sync_group(self, group_id: str, generation_id: int, member_id: str, instance_id: str | None,
                   protocol_type: str | None, protocol_name: str | None,
                   assignments: Sequence[tuple[str, bytes]], now_ms: int, respond: Respond) -> SyncResult | None:
        self.now_ms = now_ms
        group = self.groups.get(group_id)
        if self.coordinator_error(group_id):
            return SyncResult(self.coordinator_error(group_id))
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            return classic_members.sync(self.consumer, consumer_group, generation_id, member_id, instance_id,
                                        protocol_type, protocol_name)
        if group is None:
            return SyncResult(E.UNKNOWN_MEMBER_ID)
        error = self.check_member(group, member_id, instance_id)
        if error:
            return SyncResult(error)
        if generation_id != group.generation_id:
            return SyncResult(E.ILLEGAL_GENERATION)
        if (protocol_type is not None and protocol_type != group.protocol_type) or (
                protocol_name is not None and protocol_name != group.protocol_name):
            return SyncResult(E.INCONSISTENT_GROUP_PROTOCOL)
        if group.is_in(S.PREPARING_REBALANCE):
            return SyncResult(E.REBALANCE_IN_PROGRESS)
        member = group.members[member_id]
        self._schedule_heartbeat(group, member_id, member.session_timeout_ms)
        group.pending_sync.discard(member_id)
        if not group.pending_sync:
            self._end_pending_sync(group)
        if group.is_in(S.STABLE):
            return self._sync_result(group, member)
        member.sync_callback = respond
        if member_id == group.leader_id:
            self._complete_sync(group, dict(assignments))
        return None

    def _complete_sync(self, group: ClassicGroup, assignments: dict[str, bytes]) -> None:
        """Store the assignment; once committed (acks=all) the group is Stable and every SyncGroup
        answered. A failed write answers the error to all and rebalances (as Kafka does)."""
        for member in group.members.values():
            member.assignment = assignments.get(member.member_id, b"")
        generation = group.generation_id
        offset = self._append_group_metadata(group)

        def stored(error: int) -> None:
            if group.generation_id != generation or not group.is_in(S.COMPLETING_REBALANCE):
                return  # the group moved on (or was unloaded) while the write replicated
            if error:
                for member in group.members.values():
                    member.assignment = b""
                    self._answer_sync(member, SyncResult(error))
                self._prepare_rebalance(group, f"error {error} storing the assignment of generation {generation}")
                return
            group.transition(GroupEvent.ASSIGNMENT_RECEIVED, self.now_ms)
            for member in group.members.values():
                self._answer_sync(member, self._sync_result(group, member))

        self.log.when_committed(self.partition_of(group.group_id), offset, stored)

    def _sync_result(self, group: ClassicGroup, member: Member) -> SyncResult:
        return SyncResult(E.NONE, group.protocol_type, group.protocol_name, member.assignment)

    @staticmethod
    def _answer_sync(member: Member, result: SyncResult) -> None:
        callback, member.sync_callback = member.sync_callback, None
        if callback is not None:
            callback(result)

    def _start_pending_sync(self, group: ClassicGroup) -> None:
        group.pending_sync = set(group.members)
        generation_id = group.generation_id
        group.sync_operation = DelayedSync(group.group_id, group.rebalance_timeout_ms(),
                                           lambda: self._on_sync_expired(group, generation_id))
        self.rebalance_purgatory.try_complete_else_watch(group.sync_operation, [("sync", group.group_id)])

    @staticmethod
    def _end_pending_sync(group: ClassicGroup) -> None:
        group.pending_sync.clear()
        if group.sync_operation is not None:
            group.sync_operation.force_complete()
            group.sync_operation = None

    def _on_sync_expired(self, group: ClassicGroup, generation_id: int) -> None:
        """Kafka's ``expirePendingSync``: drop the members of this generation that never synced."""
        self._timer_fired()
        group.sync_operation = None
        missing = sorted(group.pending_sync)
        if generation_id != group.generation_id or not missing or not group.is_in(S.COMPLETING_REBALANCE, S.STABLE):
            return
        for member_id in missing:
            self._remove_member(group, member_id)
        self._prepare_rebalance(group, f"members {missing} did not sync in time")

    # --- Heartbeat and LeaveGroup ---------------------------------------------------------

    def heartbeat(self, group_id: str, generation_id: int, member_id: str, instance_id: str | None,
                  now_ms: int) -> int:
        self.now_ms = now_ms
        group = self.groups.get(group_id)
        if self.coordinator_error(group_id):
            return self.coordinator_error(group_id)
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            return classic_members.heartbeat(self.consumer, consumer_group, generation_id, member_id, instance_id)
        if group is None:
            return E.UNKNOWN_MEMBER_ID
        error = self.check_member(group, member_id, instance_id)
        if error:
            return error
        if generation_id != group.generation_id:
            return E.ILLEGAL_GENERATION
        self._schedule_heartbeat(group, member_id, group.members[member_id].session_timeout_ms)
        if group.is_in(S.PREPARING_REBALANCE):
            return E.REBALANCE_IN_PROGRESS
        return E.NONE

    def leave_group(self, group_id: str, members: Sequence[tuple[str, str | None]], now_ms: int) -> list[int]:
        """One error code per (member id, instance id) leaving."""
        self.now_ms = now_ms
        group = self.groups.get(group_id)
        if self.coordinator_error(group_id):
            return [self.coordinator_error(group_id) for _ in members]
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            return classic_members.leave(self.consumer, consumer_group, members)
        if group is None or group.is_in(S.DEAD):
            return [E.UNKNOWN_MEMBER_ID for _ in members]
        results: list[int] = []
        for member_id, instance_id in members:
            if instance_id is not None:
                known = group.member_for_instance(instance_id)
                if known is None:
                    results.append(E.UNKNOWN_MEMBER_ID)
                    continue
                if member_id and member_id != known:
                    results.append(E.FENCED_INSTANCE_ID)
                    continue
                member_id = known
            if member_id in group.pending_members:
                group.pending_members.discard(member_id)
                self._cancel_heartbeat(group, member_id)
                self._after_departure(group, member_id, "left before joining")
                results.append(E.NONE)
            elif member_id in group.members:
                self._remove_member_and_rebalance(group, member_id, "left the group")
                results.append(E.NONE)
            else:
                results.append(E.UNKNOWN_MEMBER_ID)
        return results

    def _remove_member_and_rebalance(self, group: ClassicGroup, member_id: str, reason: str) -> None:
        self._remove_member(group, member_id)
        self._after_departure(group, member_id, reason)

    def _after_departure(self, group: ClassicGroup, member_id: str, reason: str) -> None:
        if group.is_in(S.STABLE, S.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, f"member {member_id} {reason}")
        elif group.is_in(S.PREPARING_REBALANCE):
            self.rebalance_purgatory.check_and_complete(group.group_id)

    def _remove_member(self, group: ClassicGroup, member_id: str) -> None:
        member = group.remove(member_id)
        if member is None:
            return
        self._cancel_heartbeat(group, member_id)
        group.pending_sync.discard(member_id)
        if member.join_callback is not None:
            member.join_callback(JoinResult(E.UNKNOWN_MEMBER_ID, member_id=member_id))
            member.join_callback = None
        self._answer_sync(member, SyncResult(E.UNKNOWN_MEMBER_ID))

    def hand_over(self, group: ClassicGroup, now_ms: int) -> None:
        """The group becomes a consumer group (KIP-848's online upgrade): waiting JoinGroups and
        SyncGroups answer REBALANCE_IN_PROGRESS, sessions end, and the group gets its tombstone."""
        for member in group.members.values():
            callback, member.join_callback = member.join_callback, None
            if callback is not None:
                callback(JoinResult(E.REBALANCE_IN_PROGRESS, member_id=member.member_id))
            self._answer_sync(member, SyncResult(E.REBALANCE_IN_PROGRESS))
        for member_id in [*group.members, *group.pending_members]:
            self._cancel_heartbeat(group, member_id)
        self._end_pending_sync(group)
        self.remove_group(group, now_ms)
        if group.join_operation is not None:
            group.join_operation.force_complete()  # finds the group Dead and does nothing

    def take_over(self, group: ClassicGroup, now_ms: int, reason: str) -> None:
        """A consumer group became this classic group (KIP-848's online downgrade; its records
        are already written): every member's session starts, and a rebalance begins so that the
        members rejoin and the leader's assignor decides again."""
        self.now_ms = max(self.now_ms, now_ms)
        self.groups[group.group_id] = group
        for member in group.members.values():
            self._schedule_heartbeat(group, member.member_id, member.session_timeout_ms)
        self._prepare_rebalance(group, reason)

    # --- sessions -------------------------------------------------------------------------

    def _schedule_heartbeat(self, group: ClassicGroup, member_id: str, timeout_ms: int) -> None:
        """Start (or restart) the member's session: it ends ``timeout_ms`` from now."""
        self._cancel_heartbeat(group, member_id)
        operation = DelayedHeartbeat(f"{group.group_id}-{member_id}", timeout_ms,
                                     lambda: self._on_session_expired(group, member_id))
        group.pending_heartbeats[member_id] = operation
        self.heartbeat_purgatory.try_complete_else_watch(operation, [(group.group_id, member_id)])

    def _cancel_heartbeat(self, group: ClassicGroup, member_id: str) -> None:
        operation = group.pending_heartbeats.pop(member_id, None)
        if operation is not None:
            operation.force_complete()  # completed without expiring: the session goes on

    def _on_session_expired(self, group: ClassicGroup, member_id: str) -> None:
        self._timer_fired()
        group.pending_heartbeats.pop(member_id, None)
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            self._after_departure(group, member_id, "never completed its join")
        elif member_id in group.members:
            self._remove_member_and_rebalance(group, member_id, "session timed out")

    # --- the log --------------------------------------------------------------------------

    def partition_of(self, group_id: str) -> int:
        return _cached_partition_for(group_id, self.settings.offsets_partitions)

    def _append_group_metadata(self, group: ClassicGroup) -> int:
        """Write the group's GroupMetadata record; the offset it landed at."""
        return self.log.append(self.partition_of(group.group_id), [self.group_metadata_record(group)], self.now_ms)

    def group_metadata_record(self, group: ClassicGroup) -> tuple[bytes, bytes]:
        """The group's GroupMetadata record (key, value): members, generation, assignments."""
        protocol = group.protocol_name
        members = tuple(
            MemberMetadata(member_id=m.member_id, group_instance_id=m.group_instance_id,
                           client_id=m.client_id, client_host=m.client_host,
                           rebalance_timeout=m.rebalance_timeout_ms, session_timeout=m.session_timeout_ms,
                           subscription=m.metadata(protocol) if protocol else b"", assignment=m.assignment)
            for m in group.members.values()
        )
        value = GroupMetadataValue(protocol_type=group.protocol_type or "", generation=group.generation_id,
                                   protocol=protocol, leader=group.leader_id,
                                   current_state_timestamp=self.now_ms, members=members)
        return group_metadata_key(group.group_id), group_metadata_value(value)


# Every request of a group asks for its partition, some twice; hashing the id in Python each
# time cost more than the answer's encoding.
_cached_partition_for = functools.lru_cache(maxsize=GROUPS_CACHED)(partition_for)
