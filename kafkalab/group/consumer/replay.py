"""Replaying consumer group records: the only way a consumer group's state ever changes.

Theory of operation
-------------------
As in Kafka's ``GroupMetadataManager.replay``, the coordinator never edits a group directly: a
heartbeat produces records, the records are appended to ``__consumer_offsets``, and then the
very same :func:`apply` that loads the log at start-up applies them. So the state a coordinator
rebuilds after a restart is, by construction, the state it had.

=====  ==============================  =================================================
type   record                          applied as
=====  ==============================  =================================================
3      group epoch                     create the group if new, set its group epoch;
                                       tombstone: forget the group
4      subscription metadata           the subscribed topics' ids and partition counts
5      member metadata                 create or update the member's subscription;
                                       tombstone: remove the member
6      target assignment epoch         set the assignment epoch (tombstone: -1)
7      a member's target               set it; tombstone: drop it
8      a member's current assignment   epoch, state, partitions -- partition epochs move
                                       with them; tombstone: the member holds nothing
=====  ==============================  =================================================

Worked example: ``(3, g) -> epoch 1``, ``(5, g, m1) -> [orders]``, ``(7, g, m1) -> orders 0-2``,
``(6, g) -> 1``, ``(8, g, m1) -> epoch 1 STABLE orders 0-2`` rebuild group ``g`` at epoch 1,
Stable, with m1 holding three partitions at epoch 1.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kafkalab.group.consumer.group import LEAVE_GROUP_MEMBER_EPOCH, ConsumerGroup
from kafkalab.group.consumer.member import ClassicMemberMetadata, ConsumerGroupMember, MemberState
from kafkalab.group.consumer.records import DecodedRecord, from_topic_partitions

Groups = dict[str, ConsumerGroup]


def apply(groups: Groups, record: DecodedRecord) -> None:
    if record.value is None and record.group_id not in groups:
        return  # a tombstone outliving its group's other records (compaction keeps them a while)
    APPLY[record.record_type](groups, record)


def _group(groups: Groups, group_id: str) -> ConsumerGroup:
    group = groups.get(group_id)
    if group is None:
        group = groups[group_id] = ConsumerGroup(group_id)
    return group


def _member(group: ConsumerGroup, member_id: str) -> ConsumerGroupMember:
    return group.members.get(member_id) or ConsumerGroupMember(member_id)


def _group_epoch(groups: Groups, record: DecodedRecord) -> None:
    if record.value is None:
        groups.pop(record.group_id, None)
        return
    _group(groups, record.group_id).group_epoch = record.value.epoch


def _subscription_metadata(groups: Groups, record: DecodedRecord) -> None:
    group = _group(groups, record.group_id)
    topics = () if record.value is None else record.value.topics
    group.subscription_metadata = {t.topic_name: (t.topic_id, t.num_partitions) for t in topics}


def _member_metadata(groups: Groups, record: DecodedRecord) -> None:
    group = _group(groups, record.group_id)
    assert record.member_id is not None
    if record.value is None:
        group.remove_member(record.member_id)
        return
    v = record.value
    group.put_member(dataclasses.replace(
        _member(group, record.member_id), instance_id=v.instance_id, rack_id=v.rack_id, client_id=v.client_id,
        client_host=v.client_host, subscribed_topic_names=tuple(v.subscribed_topic_names),
        rebalance_timeout_ms=v.rebalance_timeout_ms, server_assignor=v.server_assignor,
        classic=None if v.classic_member_metadata is None else ClassicMemberMetadata(
            v.classic_member_metadata.session_timeout_ms,
            tuple((p.name, bytes(p.metadata)) for p in v.classic_member_metadata.supported_protocols))))


def _assignment_epoch(groups: Groups, record: DecodedRecord) -> None:
    group = _group(groups, record.group_id)
    group.assignment_epoch = -1 if record.value is None else record.value.assignment_epoch


def _target_member(groups: Groups, record: DecodedRecord) -> None:
    group = _group(groups, record.group_id)
    assert record.member_id is not None
    if record.value is None:
        group.target.pop(record.member_id, None)
    else:
        group.target[record.member_id] = from_topic_partitions(record.value.topic_partitions)


def _current_assignment(groups: Groups, record: DecodedRecord) -> None:
    group = _group(groups, record.group_id)
    assert record.member_id is not None
    member = _member(group, record.member_id)
    v: Any = record.value
    if v is None:
        updated = dataclasses.replace(member, member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                                      previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH, assigned={},
                                      pending_revocation={})
    else:
        state = MemberState(v.state) if v.state in {s.value for s in MemberState} else MemberState.UNKNOWN
        updated = dataclasses.replace(
            member, member_epoch=v.member_epoch, previous_member_epoch=v.previous_member_epoch, state=state,
            assigned=from_topic_partitions(v.assigned_partitions),
            pending_revocation=from_topic_partitions(v.partitions_pending_revocation))
    if record.member_id in group.members or v is not None:
        group.put_member(updated)


APPLY = {
    3: _group_epoch,
    4: _subscription_metadata,
    5: _member_metadata,
    6: _assignment_epoch,
    7: _target_member,
    8: _current_assignment,
}

__all__ = ["APPLY", "apply"]
