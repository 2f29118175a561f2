"""The KIP-848 consumer group coordinator: ConsumerGroupHeartbeat and its timers.

Theory of operation
-------------------
One heartbeat, as Kafka's ``GroupMetadataManager.consumerGroupHeartbeat`` handles it:

1. find (or, at member epoch 0, create) the group and the member; check the member epoch
   (FENCED_MEMBER_EPOCH when it is ahead of the coordinator's, or behind it other than by one
   lost response), the member id (UNKNOWN_MEMBER_ID) and the static instance id
   (UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID);
2. fold in what changed (subscription, rebalance timeout, assignor); a new subscription, or new
   partitions in a subscribed topic, bumps the **group epoch**;
3. if the target assignment is older than the group epoch, run the server assignor for every
   member (:mod:`.assignors`) and move the assignment epoch up;
4. reconcile this member one step towards its target (:mod:`.member`: revoke before assign);
5. append the records all this produced, then apply them (:mod:`.replay`) -- the in-memory
   group is only ever changed by replaying records;
6. restart the member's session (``group.consumer.session.timeout.ms``); while it must revoke,
   a rebalance timeout (its ``rebalance_timeout_ms``) runs too, and fences it if it does not.

Steps 2 to 6 are :meth:`ConsumerGroupCoordinator.advance`, which a classic member's JoinGroup
runs too: a consumer group admits members of the classic protocol, and its first
consumer-protocol member upgrades a classic group (:mod:`.classic_members`, a rolling upgrade).

Member epoch -1 leaves (-2: a static member leaves for now, keeping its partitions until its
session ends or it comes back under a new member id). A fenced or departed member's partitions
are freed at once and the group epoch moves, so the others pick them up on their next heartbeat.

Worked example (session timeout 45 s, heartbeat interval 5 s): m1 joins ``g`` subscribed to
``orders`` (6 partitions): group epoch 1, target m1 = 0-5, m1 STABLE at epoch 1 with all six.
m2 joins: epoch 2, target m1 = 0-2, m2 = 3-5 (uniform, sticky); m2 gets epoch 2 and nothing yet
(3-5 unreleased); m1's next heartbeat is told to keep 0-2; once it reports owning only 0-2 it
moves to epoch 2 and m2's next heartbeat receives 3-5. If m2 then stops heartbeating, 45 s later
it is fenced: epoch 3, and m1 is given 3-5 back.
"""

from __future__ import annotations

import dataclasses
import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafkalab.errors import ConfigError, ErrorCode, KafkaError
from kafkalab.group.consumer import classic_members
from kafkalab.group.consumer import records as r
from kafkalab.group.consumer.assignors import DEFAULT_ASSIGNORS, SERVER_ASSIGNORS, MemberSpec
from kafkalab.group.consumer.group import (
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroup,
    ConsumerGroupState,
    TopicMetadata,
)
from kafkalab.group.consumer.member import Assignment, ConsumerGroupMember, FencedMemberEpoch, MemberState, reconcile
from kafkalab.group.consumer.replay import apply
from kafkalab.group.delayed import DelayedHeartbeat
from kafkalab.group.log import CoordinatorLog, KeyValue
from kafkalab.group.partitioner import partition_for
from kafkalab.protocol.schema_json import kafka_uuid
from kafkalab.purgatory import DelayedOperationPurgatory
from kafkalab.timer import Timer

if TYPE_CHECKING:
    from kafkalab.group.coordinator import GroupCoordinator

E = ErrorCode
TopicLookup = Callable[[str], TopicMetadata | None]  # topic name -> (topic id, partition count)
OFFSET_COMMIT_MEMBER_EPOCH_VERSION = 9  # OffsetCommit v9+ carries the member epoch (KIP-848)
# group.consumer.migration.policy: which online conversions between the protocols are allowed
MIGRATION_POLICIES = frozenset({"disabled", "upgrade", "downgrade", "bidirectional"})


@dataclass(frozen=True, slots=True)
class ConsumerGroupSettings:
    """The broker configs consumer groups obey (Kafka's names and defaults)."""

    session_timeout_ms: int = 45000  # group.consumer.session.timeout.ms
    heartbeat_interval_ms: int = 5000  # group.consumer.heartbeat.interval.ms
    assignors: tuple[str, ...] = DEFAULT_ASSIGNORS  # group.consumer.assignors; the first is the default
    max_size: int = 2**31 - 1  # group.consumer.max.size
    offsets_partitions: int = 50  # offsets.topic.num.partitions
    migration_policy: str = "bidirectional"  # group.consumer.migration.policy (Kafka 4.0's default)

    def __post_init__(self) -> None:
        unknown = [name for name in self.assignors if name not in SERVER_ASSIGNORS]
        if unknown or not self.assignors:
            raise ConfigError(f"group.consumer.assignors {list(self.assignors)}: must name some of "
                              f"{sorted(SERVER_ASSIGNORS)}")
        if self.migration_policy not in MIGRATION_POLICIES:
            raise ConfigError(f"group.consumer.migration.policy {self.migration_policy!r}: must be one of "
                              f"{sorted(MIGRATION_POLICIES)}")

    @property
    def upgrade_enabled(self) -> bool:
        """May a classic group become a consumer group when a consumer-protocol member joins?"""
        return self.migration_policy in ("upgrade", "bidirectional")

    @property
    def downgrade_enabled(self) -> bool:
        """May a consumer group become a classic group when its last consumer-protocol member leaves?"""
        return self.migration_policy in ("downgrade", "bidirectional")


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """One ConsumerGroupHeartbeat; None fields did not change since the member's last one."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    server_assignor: str | None = None
    owned: Assignment | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True)
class HeartbeatResult:
    error_code: int
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None  # None: unchanged, not sent


class GroupError(KafkaError):
    """A heartbeat refused with a Kafka error code (the coordinator's answer, not a failure)."""

    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message, error_code=error_code)


class ConsumerGroupCoordinator:
    """Every consumer group this node coordinates. Not thread-safe; owned by the group coordinator."""

    def __init__(self, settings: ConsumerGroupSettings, log: CoordinatorLog, timer: Timer, rng: random.Random,
                 topics: TopicLookup, classic: GroupCoordinator | None = None) -> None:
        self.settings = settings
        self.log = log
        self.rng = rng
        self.topics = topics
        self.classic = classic
        self.groups: dict[str, ConsumerGroup] = {}
        self.session_purgatory: DelayedOperationPurgatory[Any] = DelayedOperationPurgatory(
            "ConsumerGroupSession", timer=timer)
        self.rebalance_purgatory: DelayedOperationPurgatory[Any] = DelayedOperationPurgatory(
            "ConsumerGroupRebalance", timer=timer)
        self._timers: dict[tuple[str, str, str], DelayedHeartbeat] = {}  # (kind, group, member) ->
        self.now_ms = 0

    def advance_clock(self, now_ms: int) -> None:
        self.session_purgatory.advance_clock(now_ms)
        self.rebalance_purgatory.advance_clock(now_ms)

    # --- ConsumerGroupHeartbeat -----------------------------------------------------------

    def heartbeat(self, request: Heartbeat, now_ms: int) -> HeartbeatResult:
        self.now_ms = max(self.now_ms, now_ms)
        try:
            self._validate(request)
            if request.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                return self._leave(request)
            return self._heartbeat(request)
        except GroupError as error:
            return HeartbeatResult(error.error_code, str(error))
        except FencedMemberEpoch as error:
            return HeartbeatResult(E.FENCED_MEMBER_EPOCH, str(error))

    def _validate(self, request: Heartbeat) -> None:
        """Kafka's ``throwIfConsumerGroupHeartbeatRequestIsInvalid``."""
        def require(ok: bool, message: str) -> None:
            if not ok:
                raise GroupError(E.INVALID_REQUEST, message)

        require(bool(request.group_id), "GroupId can't be empty.")
        require(request.instance_id != "", "InstanceId can't be empty.")
        require(request.rack_id != "", "RackId can't be empty.")
        epoch = request.member_epoch
        if epoch > 0 or epoch == LEAVE_GROUP_MEMBER_EPOCH:
            require(bool(request.member_id), "MemberId can't be empty.")
        elif epoch == JOIN_GROUP_MEMBER_EPOCH:
            require(request.rebalance_timeout_ms != -1, "RebalanceTimeoutMs must be provided in first request.")
            require(request.owned is not None and not any(request.owned.values()),
                    "TopicPartitions must be empty when (re-)joining.")
            require(bool(request.subscribed_topic_names), "SubscribedTopicNames must be set in first request.")
        elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            require(bool(request.member_id), "MemberId can't be empty.")
            require(request.instance_id is not None, "InstanceId can't be null.")
        else:
            require(False, "MemberEpoch is invalid.")
        if request.server_assignor is not None and request.server_assignor not in self.settings.assignors:
            raise GroupError(E.UNSUPPORTED_ASSIGNOR, f"ServerAssignor {request.server_assignor} is not supported. "
                             f"Supported assignors: {', '.join(self.settings.assignors)}.")

    def _heartbeat(self, request: Heartbeat) -> HeartbeatResult:
        group = self._group_for(request.group_id, create=request.member_epoch == JOIN_GROUP_MEMBER_EPOCH)
        member = self._member_for(group, request)
        reconciled = self.advance(group, member, _with_request(member, request), request.owned, [])
        full = request.member_epoch == JOIN_GROUP_MEMBER_EPOCH or (
            request.rebalance_timeout_ms != -1 and request.subscribed_topic_names is not None
            and request.owned is not None)
        changed = reconciled.assigned != member.assigned
        return HeartbeatResult(E.NONE, None, reconciled.member_id, reconciled.member_epoch,
                               self.settings.heartbeat_interval_ms,
                               dict(reconciled.assigned) if full or changed else None)

    def advance(self, group: ConsumerGroup, member: ConsumerGroupMember, updated: ConsumerGroupMember,
                owned: Assignment | None, records: list[KeyValue]) -> ConsumerGroupMember:
        """Steps 2 to 6 for one member's request (a heartbeat, or a classic member's JoinGroup):
        ``updated`` is ``member`` with what the request changed; the member after it."""
        group_epoch = self._maybe_bump_epoch(group, member, updated, records)
        if group_epoch > group.assignment_epoch:
            target = self._update_target(group, group_epoch, updated, records).get(updated.member_id, {})
            target_epoch = group_epoch
        else:
            target = group.target.get(updated.member_id, {})
            target_epoch = group.assignment_epoch
        reconciled = reconcile(updated, target_epoch, target, group.partition_epoch, owned)
        if _assignment_state(reconciled) != _assignment_state(updated):
            records.append(r.current_assignment_record(group.group_id, reconciled))
            self._arm_rebalance_timeout(group.group_id, reconciled)
        self.write(group.group_id, records)
        self.start_session(group.group_id, reconciled.member_id)
        return reconciled

    def _group_for(self, group_id: str, *, create: bool) -> ConsumerGroup:
        """Kafka's ``getOrMaybeCreateConsumerGroup``: a classic group with members holds the id."""
        group = self.groups.get(group_id)
        if group is not None:
            return group
        classic = None if self.classic is None else self.classic.describe_group(group_id)
        if classic is not None and not create:
            raise GroupError(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        if classic is not None and classic.members:
            try:
                return classic_members.upgrade(self, classic)  # a rolling upgrade's first member
            except classic_members.UpgradeRefused as error:
                raise GroupError(E.GROUP_ID_NOT_FOUND, str(error)) from error
        if not create:
            raise GroupError(E.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        if classic is not None and self.classic is not None:
            self.classic.remove_group(classic, self.now_ms)  # an Empty classic group gives way
        return ConsumerGroup(group_id)

    def _member_for(self, group: ConsumerGroup, request: Heartbeat) -> ConsumerGroupMember:
        joining = request.member_epoch == JOIN_GROUP_MEMBER_EPOCH
        member_id = request.member_id or kafka_uuid(self.rng.getrandbits(128).to_bytes(16, "big"))
        if member_id not in group.members and len(group.members) >= self.settings.max_size:
            raise GroupError(E.GROUP_MAX_SIZE_REACHED, f"The consumer group has reached its maximum capacity of "
                                                       f"{self.settings.max_size} members.")
        if request.instance_id is not None:
            return self._static_member_for(group, member_id, request)
        member = group.members.get(member_id)
        if member is None:
            if not joining:
                raise GroupError(E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group.group_id}.")
            return ConsumerGroupMember(member_id)
        _check_member_epoch(member, request.member_epoch, request.owned)
        return member

    def _static_member_for(self, group: ConsumerGroup, member_id: str, request: Heartbeat) -> ConsumerGroupMember:
        """KIP-345 in the consumer protocol: an instance id names one member at a time."""
        existing = group.member_for_instance(request.instance_id)
        if request.member_epoch == JOIN_GROUP_MEMBER_EPOCH:
            if existing is None:
                return group.members.get(member_id) or ConsumerGroupMember(member_id)
            if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                raise GroupError(E.UNRELEASED_INSTANCE_ID, f"Static member {existing.member_id} with instance id "
                                 f"{request.instance_id} is not released yet; the new member cannot join.")
            return self._replace_static_member(group, existing, member_id)
        if existing is None:
            raise GroupError(E.UNKNOWN_MEMBER_ID, f"Instance id {request.instance_id} is unknown.")
        if existing.member_id != member_id:
            raise GroupError(E.FENCED_INSTANCE_ID, f"Instance id {request.instance_id} belongs to "
                             f"{existing.member_id}, not {member_id}.")
        _check_member_epoch(existing, request.member_epoch, request.owned)
        return existing

    def _replace_static_member(self, group: ConsumerGroup, old: ConsumerGroupMember,
                               new_id: str) -> ConsumerGroupMember:
        """The instance comes back under a new member id and takes over its predecessor's
        partitions, target and epoch, without a rebalance (Kafka's static member replacement).
        Written at once, so the rest of the heartbeat sees the new member in the group."""
        target = group.target.get(old.member_id, {})
        new = dataclasses.replace(old, member_id=new_id, member_epoch=old.previous_member_epoch)
        self._cancel(("session", group.group_id, old.member_id))
        self.write(group.group_id, [
            *_member_tombstones(group.group_id, old.member_id),
            r.member_metadata_record(group.group_id, new),
            r.target_assignment_member_record(group.group_id, new_id, target),
            r.current_assignment_record(group.group_id, new),
        ])
        return group.members[new_id]

    def _maybe_bump_epoch(self, group: ConsumerGroup, member: ConsumerGroupMember, updated: ConsumerGroupMember,
                          records: list[KeyValue]) -> int:
        """Records for a changed member and subscription; the group epoch they lead to."""
        bump = False
        if _metadata(updated) != _metadata(member) or updated.member_id not in group.members:
            records.append(r.member_metadata_record(group.group_id, updated))
            bump = updated.subscribed_topic_names != member.subscribed_topic_names
        metadata = self._subscription_metadata(group.subscribed_topic_names(replacing=updated))
        if metadata != group.subscription_metadata:
            records.append(r.partition_metadata_record(group.group_id, metadata))
            bump = True
        if not bump:
            return group.group_epoch
        records.append(r.group_epoch_record(group.group_id, group.group_epoch + 1))
        return group.group_epoch + 1

    def _subscription_metadata(self, names: set[str]) -> dict[str, TopicMetadata]:
        found = {name: self.topics(name) for name in sorted(names)}
        return {name: metadata for name, metadata in found.items() if metadata is not None}

    def _update_target(self, group: ConsumerGroup, group_epoch: int, updated: ConsumerGroupMember,
                       records: list[KeyValue]) -> dict[str, Assignment]:
        """Kafka's ``TargetAssignmentBuilder``: run the assignor, record the targets that changed."""
        members = {**group.members, updated.member_id: updated}
        metadata = self._subscription_metadata({t for m in members.values() for t in m.subscribed_topic_names})
        specs = [MemberSpec(m.member_id, m.instance_id,
                            frozenset(metadata[t][0] for t in m.subscribed_topic_names if t in metadata),
                            group.target.get(m.member_id, {}))
                 for m in members.values()]
        assignor = SERVER_ASSIGNORS[self.preferred_assignor(members.values())]
        target = assignor(specs, {topic_id: count for topic_id, count in metadata.values()})
        for member_id in sorted(target):
            if member_id not in group.target or target[member_id] != group.target[member_id]:
                records.append(r.target_assignment_member_record(group.group_id, member_id, target[member_id]))
        records.append(r.target_assignment_epoch_record(group.group_id, group_epoch))
        return dict(target)

    def preferred_assignor(self, members: Any) -> str:
        """The server assignor most members name, else the first of ``group.consumer.assignors``."""
        votes: dict[str, int] = {}
        for member in members:
            if member.server_assignor is not None:
                votes[member.server_assignor] = votes.get(member.server_assignor, 0) + 1
        if not votes:
            return self.settings.assignors[0]
        return max(sorted(votes), key=lambda name: votes[name])

    # --- leaving and fencing --------------------------------------------------------------

    def _leave(self, request: Heartbeat) -> HeartbeatResult:
        group = self.groups.get(request.group_id)
        if group is None:
            raise GroupError(E.GROUP_ID_NOT_FOUND, f"Consumer group {request.group_id} not found.")
        if request.instance_id is None:
            member = group.members.get(request.member_id)
            if member is None:
                raise GroupError(E.UNKNOWN_MEMBER_ID, f"Member {request.member_id} is not a member of "
                                                      f"group {group.group_id}.")
        else:
            member = group.member_for_instance(request.instance_id)
            if member is None:
                raise GroupError(E.UNKNOWN_MEMBER_ID, f"Instance id {request.instance_id} is unknown.")
            if member.member_id != request.member_id:
                raise GroupError(E.FENCED_INSTANCE_ID, f"Instance id {request.instance_id} belongs to "
                                                       f"{member.member_id}.")
        if request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            # It means to come back: keep its partitions (not those it was revoking, as Kafka),
            # and let its session decide.
            left = dataclasses.replace(member.with_epoch(LEAVE_GROUP_STATIC_MEMBER_EPOCH), pending_revocation={})
            self.write(group.group_id, [r.current_assignment_record(group.group_id, left)])
            self._cancel(("rebalance", group.group_id, member.member_id))
        else:
            self.fence_or_downgrade(group, member)
        return HeartbeatResult(E.NONE, None, request.member_id, request.member_epoch,
                               self.settings.heartbeat_interval_ms)

    def fence(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        """Remove a member (left, session expired, or too slow to revoke): its partitions are
        free at once; the group epoch moves so the others are assigned them."""
        records = _member_tombstones(group.group_id, member.member_id)
        metadata = self._subscription_metadata(group.subscribed_topic_names(removing=member.member_id))
        if metadata != group.subscription_metadata:
            records.append(r.partition_metadata_record(group.group_id, metadata))
        records.append(r.group_epoch_record(group.group_id, group.group_epoch + 1))
        self._cancel(("session", group.group_id, member.member_id))
        self._cancel(("rebalance", group.group_id, member.member_id))
        self.write(group.group_id, records)

    def _fence_on_timeout(self, group_id: str, member_id: str, member_epoch: int | None) -> None:
        """A session or rebalance timeout ran out; a rebalance timeout only fences a member
        still at the epoch it was revoking in."""
        group = self.groups.get(group_id)
        member = None if group is None else group.members.get(member_id)
        if group is None or member is None:
            return
        if member_epoch is not None and member.member_epoch != member_epoch:
            return
        self.fence_or_downgrade(group, member)

    def fence_or_downgrade(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        """A member left by heartbeat or timed out: if only classic members remain, the group
        may go back to the classic protocol (Kafka's ``consumerGroupFenceMember``); otherwise
        the member is fenced. A classic member's LeaveGroup fences without this check, as in Kafka."""
        if classic_members.may_downgrade(self, group, member.member_id):
            self._cancel_all(group)
            classic_members.downgrade(self, group, member.member_id)
        else:
            self.fence(group, member)

    def _cancel_all(self, group: ConsumerGroup) -> None:
        for member_id in group.members:
            self._cancel(("session", group.group_id, member_id))
            self._cancel(("rebalance", group.group_id, member_id))

    def start_session(self, group_id: str, member_id: str) -> None:
        """(Re)start the member's session: it is fenced unless it heartbeats within the timeout
        (``group.consumer.session.timeout.ms``; a classic member's own, from its JoinGroup)."""
        group = self.groups.get(group_id)
        member = None if group is None else group.members.get(member_id)
        classic = None if member is None else member.classic
        timeout_ms = self.settings.session_timeout_ms if classic is None else classic.session_timeout_ms
        self._schedule(("session", group_id, member_id), timeout_ms,
                       lambda: self._fence_on_timeout(group_id, member_id, None))

    def _arm_rebalance_timeout(self, group_id: str, member: ConsumerGroupMember) -> None:
        key = ("rebalance", group_id, member.member_id)
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            epoch = member.member_epoch
            self._schedule(key, max(member.rebalance_timeout_ms, 0),
                           lambda: self._fence_on_timeout(group_id, member.member_id, epoch))
        else:
            self._cancel(key)

    # --- timers and the log ---------------------------------------------------------------

    def _schedule(self, key: tuple[str, str, str], delay_ms: int, expire: Callable[[], None]) -> None:
        self._cancel(key)

        def on_expiration() -> None:
            if self._timers.get(key) is operation:
                del self._timers[key]
                expire()

        operation = DelayedHeartbeat("-".join(key), delay_ms, on_expiration)
        self._timers[key] = operation
        purgatory = self.session_purgatory if key[0] == "session" else self.rebalance_purgatory
        purgatory.try_complete_else_watch(operation, [key])

    def _cancel(self, key: tuple[str, str, str]) -> None:
        operation = self._timers.pop(key, None)
        if operation is not None:
            operation.force_complete()

    def write(self, group_id: str, records: Sequence[KeyValue]) -> None:
        """Append, then apply: the log is written before memory changes, as Kafka's coordinator
        runtime does (there, memory is rolled back if the append fails)."""
        if not records:
            return
        self.log.append(partition_for(group_id, self.settings.offsets_partitions), records, self.now_ms)
        for key, value in records:
            apply(self.groups, r.decode(key, value))

    def replay(self, key: bytes, value: bytes | None) -> None:
        """One record of ``__consumer_offsets`` at load time."""
        apply(self.groups, r.decode(key, value))

    def after_load(self) -> None:
        """Every loaded member gets a fresh session; a revoking one its rebalance timeout."""
        for group in self.groups.values():
            for member in group.members.values():
                self.start_session(group.group_id, member.member_id)
                self._arm_rebalance_timeout(group.group_id, member)

    # --- offsets, listing, describing, deleting -------------------------------------------

    def validate_offset_commit(self, group: ConsumerGroup, member_id: str, member_epoch: int,
                               api_version: int) -> int:
        """Kafka's ``ConsumerGroup.validateOffsetCommit``."""
        if member_epoch < 0 and not group.members:
            return E.NONE
        member = group.members.get(member_id)
        if member is None:
            return E.UNKNOWN_MEMBER_ID
        if member.classic is not None:  # its generation is its member epoch, at any version
            return E.NONE if member_epoch == member.member_epoch else E.ILLEGAL_GENERATION
        if api_version < OFFSET_COMMIT_MEMBER_EPOCH_VERSION:
            return E.UNSUPPORTED_VERSION
        return E.NONE if member_epoch == member.member_epoch else E.STALE_MEMBER_EPOCH

    def validate_offset_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> int:
        """Kafka's ``ConsumerGroup.validateOffsetFetch`` (OffsetFetch v9+)."""
        group = self.groups.get(group_id)
        if group is None or (member_id is None and member_epoch < 0):
            return E.NONE
        member = group.members.get(member_id or "")
        if member is None:
            return E.UNKNOWN_MEMBER_ID
        return E.NONE if member_epoch == member.member_epoch else E.STALE_MEMBER_EPOCH

    def list_groups(self, states: Sequence[str], types: Sequence[str]) -> list[tuple[str, str, str]]:
        """(group id, protocol type, state) of each consumer group, filtered as ListGroups v5."""
        wanted_states = {s.lower() for s in states}
        wanted_types = {t.lower() for t in types}
        if wanted_types and "consumer" not in wanted_types:
            return []
        return [(g.group_id, "consumer", g.state.value) for g in sorted(self.groups.values(), key=lambda g: g.group_id)
                if not wanted_states or g.state.value.lower() in wanted_states]

    def delete_group(self, group: ConsumerGroup) -> int:
        """DeleteGroups: only an Empty group may go; its records all get tombstones."""
        if group.members:
            return E.NON_EMPTY_GROUP
        records = [r.tombstone(6, group.group_id), r.tombstone(4, group.group_id), r.tombstone(3, group.group_id)]
        self.write(group.group_id, records)
        return E.NONE

    def is_empty(self, group_id: str) -> bool:
        group = self.groups.get(group_id)
        return group is None or group.state is ConsumerGroupState.EMPTY


def _with_request(member: ConsumerGroupMember, request: Heartbeat) -> ConsumerGroupMember:
    """The member with what the heartbeat changed (None and -1 mean unchanged)."""
    return dataclasses.replace(
        member,
        instance_id=request.instance_id if request.instance_id is not None else member.instance_id,
        rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
        rebalance_timeout_ms=request.rebalance_timeout_ms if request.rebalance_timeout_ms != -1
        else member.rebalance_timeout_ms,
        server_assignor=request.server_assignor if request.server_assignor is not None else member.server_assignor,
        subscribed_topic_names=tuple(request.subscribed_topic_names) if request.subscribed_topic_names is not None
        else member.subscribed_topic_names,
        client_id=request.client_id, client_host=request.client_host)


def _metadata(member: ConsumerGroupMember) -> tuple[Any, ...]:
    return (member.instance_id, member.rack_id, member.client_id, member.client_host,
            member.subscribed_topic_names, member.rebalance_timeout_ms, member.server_assignor)


def _assignment_state(member: ConsumerGroupMember) -> tuple[Any, ...]:
    return (member.member_epoch, member.previous_member_epoch, member.state, dict(member.assigned),
            dict(member.pending_revocation))


def _member_tombstones(group_id: str, member_id: str) -> list[KeyValue]:
    """Kafka's ``removeMember``: current assignment, target, then the member itself."""
    return [r.tombstone(8, group_id, member_id), r.tombstone(7, group_id, member_id),
            r.tombstone(5, group_id, member_id)]


def _check_member_epoch(member: ConsumerGroupMember, received: int, owned: Assignment | None) -> None:
    """Kafka's ``throwIfConsumerGroupMemberEpochIsInvalid``: behind by one lost response is
    forgiven when the member owns no more than it was given; anything else is fenced."""
    if received > member.member_epoch:
        raise FencedMemberEpoch(f"The consumer group member has a greater member epoch ({received}) than the one "
                                f"known by the group coordinator ({member.member_epoch}). The member must abandon "
                                "all its partitions and rejoin.")
    if received < member.member_epoch:
        subset = owned is not None and all(parts <= member.assigned.get(t, frozenset()) for t, parts in owned.items()
                                           if parts)
        if received != member.previous_member_epoch or not subset:
            raise FencedMemberEpoch(f"The consumer group member has a smaller member epoch ({received}) than the one "
                                    f"known by the group coordinator ({member.member_epoch}). The member must "
                                    "abandon all its partitions and rejoin.")


__all__ = ["ConsumerGroupCoordinator", "ConsumerGroupSettings", "Heartbeat", "HeartbeatResult"]
