"""Replaying ``__consumer_offsets``: rebuilding groups and committed offsets at start-up.

Records are applied in log order, so the last record per key wins -- exactly what compaction
keeps. An OffsetCommit record sets a committed offset (a tombstone removes it); a GroupMetadata
record replaces the whole group (a tombstone removes the group). A group loaded with members is
Stable at its stored generation; one without is Empty. Mirrors Kafka's
``GroupMetadataManager.replay`` for classic groups.

KIP-848 consumer group records (key types 3-8) go to the consumer group coordinator's own
replay (:mod:`kafkalab.group.consumer.replay`). Share and streams group records (types 9 and
up), which a log written by a newer Apache Kafka may hold, are skipped.

Worked example: records ``(g, orders, 0) -> 42``, ``g -> generation 3, members [c1]``,
``(g, orders, 0) -> 57`` load as group ``g`` Stable at generation 3 with ``orders-0`` at 57.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from kafkalab.group.consumer.records import CONSUMER_GROUP_KEYS
from kafkalab.group.group import ClassicGroup, Member
from kafkalab.group.offsets import CommittedOffset
from kafkalab.group.records import (
    CLASSIC_RECORD_TYPE_MAX,
    GroupKey,
    OffsetKey,
    decode_group_value,
    decode_key,
    decode_offset_value,
    record_type,
)
from kafkalab.group.state import GroupState

if TYPE_CHECKING:
    from kafkalab.group.coordinator import GroupCoordinator


def replay(coordinator: GroupCoordinator, records: Iterable[tuple[int, bytes, bytes | None]]) -> int:
    count = 0
    for _partition, key_bytes, value_bytes in records:
        type_ = record_type(key_bytes)
        if type_ > CLASSIC_RECORD_TYPE_MAX:
            if type_ in CONSUMER_GROUP_KEYS:
                coordinator.consumer.replay(key_bytes, value_bytes)
                count += 1
            continue
        key = decode_key(key_bytes)
        if isinstance(key, OffsetKey):
            _replay_offset(coordinator, key, value_bytes)
        else:
            _replay_group(coordinator, key, value_bytes)
        count += 1
    return count


def _replay_offset(coordinator: GroupCoordinator, key: OffsetKey, value_bytes: bytes | None) -> None:
    committed = coordinator.offsets.offsets.setdefault(key.group, {})
    if value_bytes is None:
        committed.pop((key.topic, key.partition), None)
        return
    value = decode_offset_value(value_bytes)
    committed[(key.topic, key.partition)] = CommittedOffset(
        value.offset, value.leader_epoch, value.metadata, value.commit_timestamp, value.expire_timestamp)
    if key.group not in coordinator.groups:
        coordinator.groups[key.group] = ClassicGroup(key.group, state_timestamp_ms=value.commit_timestamp)


def _replay_group(coordinator: GroupCoordinator, key: GroupKey, value_bytes: bytes | None) -> None:
    if value_bytes is None:
        coordinator.groups.pop(key.group, None)
        return
    coordinator.groups[key.group] = _group_from(key.group, decode_group_value(value_bytes))


def _group_from(group_id: str, value: Any) -> ClassicGroup:
    group = ClassicGroup(
        group_id, state=GroupState.STABLE if value.members else GroupState.EMPTY,
        state_timestamp_ms=value.current_state_timestamp, generation_id=value.generation,
        protocol_type=value.protocol_type or None, protocol_name=value.protocol,
    )
    for stored in value.members:
        protocols = ((value.protocol, stored.subscription),) if value.protocol else ()
        group.add(Member(stored.member_id, stored.group_instance_id, stored.client_id, stored.client_host,
                         stored.rebalance_timeout, stored.session_timeout, value.protocol_type,
                         protocols, assignment=stored.assignment))
    group.leader_id = value.leader if value.members else None
    return group
