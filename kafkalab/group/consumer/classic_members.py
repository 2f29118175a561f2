"""Classic members inside a KIP-848 consumer group, and the online upgrade and downgrade.

Theory of operation
-------------------
A rolling upgrade from the classic protocol to the consumer protocol (Kafka 3.7+, the default in
4.0) restarts one consumer at a time with ``group.protocol=consumer``. For a while the group has
members of both kinds, so the coordinator must (Kafka's ``GroupMetadataManager``):

* **upgrade** the classic group when the first consumer-protocol member joins it (its
  ConsumerGroupHeartbeat at epoch 0), if ``group.consumer.migration.policy`` is ``upgrade`` or
  ``bidirectional`` and the group's protocol type is ``consumer``: every classic member becomes
  a consumer group member at member epoch = the classic generation, STABLE, holding the
  partitions of its last assignment, which is also its target; the group epoch and the
  assignment epoch are the generation. Joins and syncs that were waiting are answered
  REBALANCE_IN_PROGRESS, and the classic group gets its tombstone (Kafka's ``fromClassicGroup``);
* let **classic members** keep using JoinGroup, SyncGroup, Heartbeat and LeaveGroup in the
  consumer group. The server assignor decides for them as for everyone: a JoinGroup is a
  heartbeat that brings the member's subscription and owned partitions in its embedded
  ConsumerProtocolSubscription, and is answered at once with generation = the member epoch and
  no member list (no client-side assignor runs); SyncGroup hands out the member's current
  assignment as a ConsumerProtocolAssignment; Heartbeat answers REBALANCE_IN_PROGRESS whenever
  the member should rejoin to move on: the group epoch is ahead of it, it has partitions to
  revoke, or partitions it waited for were released.

* **downgrade** the consumer group back to a classic group when a member leaves by heartbeat
  (epoch -1) or times out and every member left uses the classic protocol, if the policy is
  ``downgrade`` or ``bidirectional``, more than the leaving member is in the group and the rest
  fit ``group.max.size`` (Kafka's ``convertToClassicGroup``). One batch holds the consumer
  group's tombstones and the classic GroupMetadata record: generation = the group epoch, each
  member with its own protocols and session timeout, its target assignment encoded in its own
  version of the consumer protocol. The classic group then starts a rebalance, so the members'
  next heartbeats answer REBALANCE_IN_PROGRESS and the leader's assignor decides again. A
  classic member's LeaveGroup never downgrades, as in Kafka.

Partitions move between the two kinds under the one rule of :mod:`.member`: a partition goes
to its new owner only once the old owner has let it go -- a consumer-protocol member by its
heartbeat's owned partitions, a classic one by rejoining without them.

Worked example (``uniform``, ``orders`` with 6 partitions): classic c1 and c2 are Stable in
generation 1 with 0-2 and 3-5. Java member j joins with ``group.protocol=consumer``: the group is
upgraded (epoch 1), then j's heartbeat bumps it to 2 with target c1 {0, 1}, c2 {3, 4}, j {2, 5};
j gets epoch 2 and nothing yet (2 and 5 unreleased). c1's and c2's next heartbeats answer
REBALANCE_IN_PROGRESS; each rejoins owning nothing (eager) and gets generation 2, and their
SyncGroups answer {0, 1} and {3, 4}. j's next heartbeat receives {2, 5}.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kafkalab.client.consumer_protocol import Assignment as ProtocolAssignment
from kafkalab.client.consumer_protocol import decode_assignment, decode_subscription, encode_assignment
from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.group.consumer import records as r
from kafkalab.group.consumer.group import ConsumerGroup
from kafkalab.group.consumer.member import Assignment, ClassicMemberMetadata, ConsumerGroupMember, MemberState
from kafkalab.group.group import ClassicGroup, Member
from kafkalab.group.state import GroupState
from kafkalab.group.requests import JoinRequest, JoinResult, SyncResult
from kafkalab.protocol.messages.consumer_protocol import PROTOCOL_TYPE
from kafkalab.protocol.schema_json import kafka_uuid
from kafkalab.protocol.types import Reader

if TYPE_CHECKING:
    from kafkalab.group.consumer.coordinator import ConsumerGroupCoordinator

E = ErrorCode
JOIN_GROUP_MEMBER_ID_REQUIRED_VERSION = 4  # KIP-394: JoinGroup v4+ may answer MEMBER_ID_REQUIRED


class UpgradeRefused(KafkaError):
    """The classic group cannot become a consumer group (Kafka answers GROUP_ID_NOT_FOUND)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, error_code=ErrorCode.GROUP_ID_NOT_FOUND)


# --- the upgrade -----------------------------------------------------------------------------


def upgrade(coordinator: ConsumerGroupCoordinator, classic: ClassicGroup) -> ConsumerGroup:
    """Kafka's ``convertToConsumerGroup``: the classic group's members, generation and last
    assignment become a consumer group, written (and so applied) at once."""
    if not coordinator.settings.upgrade_enabled or classic.protocol_type != PROTOCOL_TYPE:
        raise UpgradeRefused(f"Group {classic.group_id} is not a consumer group and cannot be upgraded "
                             f"(group.consumer.migration.policy={coordinator.settings.migration_policy}, "
                             f"protocol type {classic.protocol_type!r}).")
    if len(classic.members) > coordinator.settings.max_size:
        raise UpgradeRefused(f"Group {classic.group_id} has {len(classic.members)} members, more than "
                             f"group.consumer.max.size {coordinator.settings.max_size}.")
    generation = classic.generation_id
    members = [_converted(coordinator, classic, member_id) for member_id in sorted(classic.members)]
    held = [(t, p) for m in members for t, parts in m.assigned.items() for p in parts]
    if len(held) != len(set(held)):
        raise UpgradeRefused(f"Group {classic.group_id}'s last assignment gives a partition to two members.")
    assert coordinator.classic is not None, "a classic group exists only beside a classic coordinator"
    coordinator.classic.hand_over(classic, coordinator.now_ms)
    group_id = classic.group_id
    records = [r.member_metadata_record(group_id, m) for m in members]
    records.append(r.group_epoch_record(group_id, generation))
    records += [r.target_assignment_member_record(group_id, m.member_id, m.assigned) for m in members]
    records.append(r.target_assignment_epoch_record(group_id, generation))
    records += [r.current_assignment_record(group_id, m) for m in members]
    coordinator.write(group_id, records)
    for member in members:
        coordinator.start_session(group_id, member.member_id)
    return coordinator.groups[group_id]


def _converted(coordinator: ConsumerGroupCoordinator, classic: ClassicGroup, member_id: str) -> ConsumerGroupMember:
    member = classic.members[member_id]
    protocol = classic.protocol_name or member.protocols[0][0]
    try:
        subscription = decode_subscription(member.metadata(protocol))
        assigned = decode_assignment(member.assignment).partitions if member.assignment else ()
    except (KafkaError, KeyError) as error:
        raise UpgradeRefused(f"Group {classic.group_id}: member {member_id}'s embedded consumer protocol "
                             f"is malformed: {error}") from error
    return ConsumerGroupMember(
        member_id, instance_id=member.group_instance_id, rack_id=subscription.rack_id, client_id=member.client_id,
        client_host=member.client_host, subscribed_topic_names=tuple(subscription.topics),
        rebalance_timeout_ms=member.rebalance_timeout_ms, state=MemberState.STABLE,
        member_epoch=classic.generation_id, previous_member_epoch=classic.generation_id,
        assigned=_by_topic_id(coordinator, assigned),
        classic=ClassicMemberMetadata(member.session_timeout_ms, member.protocols))


# --- the downgrade ---------------------------------------------------------------------------


def may_downgrade(coordinator: ConsumerGroupCoordinator, group: ConsumerGroup, leaving_id: str) -> bool:
    """Kafka's ``validateOnlineDowngradeWithFencedMember``."""
    staying = [m for member_id, m in group.members.items() if member_id != leaving_id]
    return (coordinator.classic is not None and bool(staying) and all(m.classic is not None for m in staying)
            and coordinator.settings.downgrade_enabled and len(staying) <= coordinator.classic.settings.max_size)


def downgrade(coordinator: ConsumerGroupCoordinator, group: ConsumerGroup, leaving_id: str) -> ClassicGroup:
    """Kafka's ``convertToClassicGroup`` for a member that left: the group's records get their
    tombstones and the classic group its GroupMetadata record, in one batch; then the classic
    coordinator owns the group and starts a rebalance."""
    assert coordinator.classic is not None, "may_downgrade checks for a classic coordinator"
    classic = ClassicGroup(group.group_id, state=GroupState.STABLE, state_timestamp_ms=coordinator.now_ms,
                           generation_id=group.group_epoch, protocol_type=PROTOCOL_TYPE)
    for member_id, member in group.members.items():
        if member_id != leaving_id and member.classic is not None:
            classic.add(Member(member_id, member.instance_id, member.client_id, member.client_host,
                               member.rebalance_timeout_ms, member.classic.session_timeout_ms, PROTOCOL_TYPE,
                               tuple(member.classic.protocols)))
    classic.protocol_name = classic.select_protocol()
    for member_id, classic_member in classic.members.items():
        target = group.target.get(member_id, {})
        classic_member.assignment = _encoded(group, target, classic_member.metadata(classic.protocol_name))
    records = _group_tombstones(group)
    records.append(coordinator.classic.group_metadata_record(classic))
    coordinator.log.append(coordinator.classic.partition_of(group.group_id), records, coordinator.now_ms)
    del coordinator.groups[group.group_id]
    coordinator.classic.take_over(classic, coordinator.now_ms,
                                  f"Downgrade group {group.group_id} from consumer to classic.")
    return classic


def _group_tombstones(group: ConsumerGroup) -> list[tuple[bytes, bytes | None]]:
    """Kafka's ``createGroupTombstoneRecords``, in its order."""
    group_id, members = group.group_id, list(group.members)
    return [*(r.tombstone(8, group_id, m) for m in members), *(r.tombstone(7, group_id, m) for m in members),
            r.tombstone(6, group_id), *(r.tombstone(5, group_id, m) for m in members),
            r.tombstone(4, group_id), r.tombstone(3, group_id)]


def _encoded(group: ConsumerGroup, assignment: Assignment, subscription: bytes) -> bytes:
    """A ConsumerProtocolAssignment of ``assignment`` in the version of the member's own
    ConsumerProtocolSubscription (Kafka's ``deserializeVersion``), topics named as the group's
    subscription metadata names them."""
    known = {topic_id: name for name, (topic_id, _count) in group.subscription_metadata.items()}
    names = {topic_id: known[topic_id] for topic_id in assignment if topic_id in known}
    partitions = tuple((names[t], p) for t in sorted(names, key=names.__getitem__) for p in sorted(assignment[t]))
    version = Reader(subscription).int16()
    return encode_assignment(ProtocolAssignment(partitions), max(0, min(version, 3)))


# --- JoinGroup, SyncGroup, Heartbeat, LeaveGroup from classic members --------------------------


def join(coordinator: ConsumerGroupCoordinator, group: ConsumerGroup, request: JoinRequest) -> JoinResult:
    """Kafka's ``classicGroupJoinToConsumerGroup``: answered at once, never parked."""
    member_id = request.member_id
    names = [name for name, _ in request.protocols]
    if request.protocol_type != PROTOCOL_TYPE or not names or not _common_protocol(group, names):
        return JoinResult(E.INCONSISTENT_GROUP_PROTOCOL, member_id=member_id)
    if not member_id:
        member_id = kafka_uuid(coordinator.rng.getrandbits(128).to_bytes(16, "big"))  # as Kafka's Uuid prints
        if request.group_instance_id is None and request.api_version >= JOIN_GROUP_MEMBER_ID_REQUIRED_VERSION:
            return JoinResult(E.MEMBER_ID_REQUIRED, member_id=member_id)
    if member_id not in group.members and len(group.members) >= coordinator.settings.max_size:
        return JoinResult(E.GROUP_MAX_SIZE_REACHED, member_id=member_id)
    static = group.member_for_instance(request.group_instance_id)
    if static is not None and static.member_id != member_id:
        return JoinResult(E.FENCED_INSTANCE_ID, member_id=member_id)
    try:
        subscription = decode_subscription(request.protocols[0][1])
    except KafkaError:
        return JoinResult(E.INCONSISTENT_GROUP_PROTOCOL, member_id=member_id)
    member = group.members.get(member_id) or ConsumerGroupMember(member_id)
    updated = dataclasses.replace(
        member, instance_id=request.group_instance_id, rack_id=subscription.rack_id,
        rebalance_timeout_ms=request.rebalance_timeout_ms, server_assignor=None,
        subscribed_topic_names=tuple(subscription.topics), client_id=request.client_id,
        client_host=request.client_host,
        classic=ClassicMemberMetadata(request.session_timeout_ms, request.protocols))
    owned = _by_topic_id(coordinator, subscription.owned_partitions)
    reconciled = coordinator.advance(group, member, updated, owned, [])
    return JoinResult(E.NONE, member_id, reconciled.member_epoch, PROTOCOL_TYPE, names[0])


def sync(coordinator: ConsumerGroupCoordinator, group: ConsumerGroup, generation_id: int, member_id: str,
         instance_id: str | None, protocol_type: str | None, protocol_name: str | None) -> SyncResult:
    """Kafka's ``classicGroupSyncToConsumerGroup``: the member's current assignment."""
    member, error = _classic_member(group, member_id, instance_id, generation_id)
    if member is None or member.classic is None:
        return SyncResult(error)
    chosen = member.classic.protocols[0][0]
    if (protocol_type is not None and protocol_type != PROTOCOL_TYPE) or (
            protocol_name is not None and protocol_name != chosen):
        return SyncResult(E.INCONSISTENT_GROUP_PROTOCOL)
    if group.group_epoch > member.member_epoch and member.state is not MemberState.UNREVOKED_PARTITIONS:
        return SyncResult(E.REBALANCE_IN_PROGRESS)
    coordinator.start_session(group.group_id, member_id)
    found = {name: coordinator.topics(name) for name in member.subscribed_topic_names}
    names = {metadata[0]: name for name, metadata in found.items() if metadata is not None}
    partitions = tuple((names[t], p) for t in sorted(member.assigned, key=lambda t: names.get(t, ""))
                       if t in names for p in sorted(member.assigned[t]))
    version = Reader(member.classic.protocols[0][1]).int16()  # answer in the member's own version
    assignment = encode_assignment(ProtocolAssignment(partitions), max(0, min(version, 3)))
    return SyncResult(E.NONE, PROTOCOL_TYPE, chosen, assignment)


def heartbeat(coordinator: ConsumerGroupCoordinator, group: ConsumerGroup, generation_id: int, member_id: str,
              instance_id: str | None) -> int:
    """Kafka's ``classicGroupHeartbeatToConsumerGroup``: REBALANCE_IN_PROGRESS asks the
    member to rejoin, which is how a classic member moves towards its target."""
    member, error = _classic_member(group, member_id, instance_id, generation_id)
    if member is None:
        return error
    coordinator.start_session(group.group_id, member_id)
    if (member.member_epoch < group.group_epoch or member.state is MemberState.UNREVOKED_PARTITIONS
            or (member.state is MemberState.UNRELEASED_PARTITIONS and not _waiting_on_release(group, member))):
        return E.REBALANCE_IN_PROGRESS
    return E.NONE


def leave(coordinator: ConsumerGroupCoordinator, group: ConsumerGroup,
          members: Sequence[tuple[str, str | None]]) -> list[int]:
    """LeaveGroup: each departing member is removed as a fenced one is (partitions freed)."""
    results: list[int] = []
    for member_id, instance_id in members:
        member = group.members.get(member_id) if instance_id is None else group.member_for_instance(instance_id)
        if member is None:
            results.append(E.UNKNOWN_MEMBER_ID)
        elif instance_id is not None and member_id and member.member_id != member_id:
            results.append(E.FENCED_INSTANCE_ID)
        else:
            coordinator.fence(group, member)
            results.append(E.NONE)
    return results


def _classic_member(group: ConsumerGroup, member_id: str, instance_id: str | None,
                    generation_id: int) -> tuple[ConsumerGroupMember | None, int]:
    """Kafka's ``validateConsumerGroupMember`` and generation check for SyncGroup and Heartbeat."""
    member = group.members.get(member_id) if instance_id is None else group.member_for_instance(instance_id)
    if member is None or member.classic is None:
        return None, E.UNKNOWN_MEMBER_ID
    if member.member_id != member_id:
        return None, E.FENCED_INSTANCE_ID
    if generation_id != member.member_epoch:
        return None, E.ILLEGAL_GENERATION
    return member, E.NONE


def _common_protocol(group: ConsumerGroup, names: list[str]) -> bool:
    """Some protocol name every classic member also supports (Kafka's ``supportsClassicProtocols``)."""
    common = set(names)
    for member in group.members.values():
        if member.classic is not None:
            common &= {name for name, _ in member.classic.protocols}
    return bool(common)


def _waiting_on_release(group: ConsumerGroup, member: ConsumerGroupMember) -> bool:
    """Is a partition of the member's target still held by another member?"""
    for topic_id, partitions in group.target.get(member.member_id, {}).items():
        mine = member.assigned.get(topic_id, frozenset())
        if any(p not in mine and group.partition_epoch(topic_id, p) != -1 for p in partitions):
            return True
    return False


def _by_topic_id(coordinator: ConsumerGroupCoordinator, partitions: Sequence[tuple[str, int]]) -> Assignment:
    """(topic name, partition) pairs as topic id -> partitions; unknown topics are left out."""
    by_id: dict[uuid.UUID, set[int]] = {}
    for topic, partition in partitions:
        metadata = coordinator.topics(topic)
        if metadata is not None:
            by_id.setdefault(metadata[0], set()).add(partition)
    return {topic_id: frozenset(parts) for topic_id, parts in by_id.items()}


__all__ = ["UpgradeRefused", "downgrade", "heartbeat", "join", "leave", "may_downgrade", "sync", "upgrade"]
