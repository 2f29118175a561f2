"""Committed offsets: OffsetCommit, OffsetFetch, OffsetDelete and expiration.

Theory of operation
-------------------
A commit is checked against the group first (Kafka's ``ClassicGroup.validateOffsetCommit``):

* no such group: generation -1 creates an Empty "simple" group and commits (a consumer using
  ``assign()``, or the admin tool); any other generation is ILLEGAL_GENERATION (v9+:
  GROUP_ID_NOT_FOUND);
* generation -1, empty member id and an Empty group: accepted;
* otherwise the member must be known (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID) and the generation
  current (ILLEGAL_GENERATION); during CompletingRebalance the answer is REBALANCE_IN_PROGRESS;
* a KIP-848 consumer group checks its member's epoch instead (``generation_id`` carries it,
  OffsetCommit v9+): STALE_MEMBER_EPOCH when it is not the member's current epoch.

Accepted offsets are appended as one batch of OffsetCommit records. The commit is answered --
and the offsets applied in memory, so OffsetFetch shows them -- only once the log says the batch
is committed: in a cluster, once every ISR replica of the ``__consumer_offsets`` partition has
it (the coordinator appends with acks=all). If that fails the whole commit fails with the log's
error: NOT_COORDINATOR when this broker lost the leadership meanwhile, COORDINATOR_NOT_AVAILABLE
when ``offsets.commit.timeout.ms`` ran out (Kafka's ``handleOperationException`` mapping).
Expiration (Kafka's ``OffsetExpirationConditionImpl``) runs every
``offsets.retention.check.interval.ms``: an offset expires ``offsets.retention.minutes`` after
its base time -- its explicit expire timestamp if the commit had one (v2-v4
``retention_time_ms``), else, for an Empty group with a protocol type, the moment the group
became Empty, else the commit time (always the commit time for a KIP-848 group, as Kafka's
``ConsumerGroup``). Offsets of non-empty consumer groups do not expire. Each
expired offset gets a tombstone; an Empty group left without offsets becomes Dead.

A *transactional* commit (TxnOffsetCommit, KIP-98) is written the same way but as a batch of
the producer's transaction, and held in :attr:`OffsetStore.pending` until the transaction's
marker lands in the group's ``__consumer_offsets`` partition (Kafka's
``GroupMetadata.completePendingTxnOffsetCommit``): COMMIT makes the offsets visible, ABORT drops
them. Meanwhile OffsetFetch with ``require_stable`` answers UNSTABLE_OFFSET_COMMIT for them.

Worked example: group ``g`` goes Empty at t=0 with ``orders-0`` committed; with retention
10080 minutes the check at t=604_800_000 writes a tombstone for ``(g, orders, 0)`` and one for
group ``g``, which is then gone from ListGroups.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.group.group import ClassicGroup
from kafkalab.group.records import (
    LEGACY_OFFSET_COMMIT_TYPE,
    OFFSET_COMMIT_TYPE,
    OffsetCommitValue,
    OffsetKey,
    decode_key,
    decode_offset_value,
    group_metadata_key,
    offset_commit_key,
    offset_commit_value,
    record_type,
)
from kafkalab.group.state import GroupState
from kafkalab.protocol.messages.consumer_protocol import CONSUMER_PROTOCOL_SUBSCRIPTION, PROTOCOL_TYPE
from kafkalab.protocol.types import Reader

if TYPE_CHECKING:
    from kafkalab.group.coordinator import GroupCoordinator

E = ErrorCode
S = GroupState
GROUP_ID_NOT_FOUND_COMMIT_VERSION = 9  # OffsetCommit v9+ answers GROUP_ID_NOT_FOUND


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int = -1


@dataclass(frozen=True, slots=True)
class OffsetCommit:
    """One partition of an OffsetCommit request."""

    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None


TopicPartition = tuple[str, int]


class OffsetStore:
    """Offsets per group. Not thread-safe; owned by the group coordinator."""

    def __init__(self, coordinator: GroupCoordinator) -> None:
        self.coordinator = coordinator
        self.offsets: dict[str, dict[TopicPartition, CommittedOffset]] = {}
        # producer id -> group id -> offsets its open transaction committed
        self.pending: dict[int, dict[str, dict[TopicPartition, CommittedOffset]]] = {}

    def commit(self, group_id: str, generation_id: int, member_id: str, instance_id: str | None,
               commits: Sequence[OffsetCommit], retention_ms: int, api_version: int, now_ms: int,
               respond: Callable[[list[int]], None] | None = None) -> list[int] | None:
        """One error code per commit, in order -- now, or (None) later through ``respond`` once
        the append is committed. Without ``respond`` the log must commit at once."""
        coordinator = self.coordinator
        coordinator.now_ms = now_ms
        error = coordinator.coordinator_error(group_id) or self._check_commit(
            group_id, generation_id, member_id, instance_id, api_version, now_ms)
        if error:
            return [error] * len(commits)
        expire_ms = now_ms + retention_ms if retention_ms >= 0 else -1
        results, records, accepted = self._offset_records(group_id, commits, now_ms, expire_ms)
        if not records:
            return results
        partition = coordinator.partition_of(group_id)
        last_offset = coordinator.log.append(partition, records, now_ms) + len(records) - 1

        def committed(log_error: int) -> None:
            if not log_error:
                self.offsets.setdefault(group_id, {}).update(accepted)

        return self._answer_when_committed(partition, last_offset, results, committed, respond)

    def txn_commit(self, group_id: str, producer: tuple[int, int], generation_id: int, member_id: str,
                   instance_id: str | None, commits: Sequence[OffsetCommit], now_ms: int,
                   respond: Callable[[list[int]], None] | None = None) -> list[int] | None:
        """TxnOffsetCommit: one error code per commit, answered as :meth:`commit` is, once the
        append is committed (acks=all, as Kafka's ``storeOffsets``); accepted offsets then wait
        for the transaction's marker."""
        coordinator = self.coordinator
        coordinator.now_ms = now_ms
        error = coordinator.coordinator_error(group_id) or self._check_txn_commit(
            group_id, generation_id, member_id, instance_id, now_ms)
        if error:
            return [error] * len(commits)
        results, records, accepted = self._offset_records(group_id, commits, now_ms, -1)
        if not records:
            return results
        partition = coordinator.partition_of(group_id)
        last_offset = coordinator.log.append(partition, records, now_ms, producer=producer) + len(records) - 1
        pending = self.pending.setdefault(producer[0], {}).setdefault(group_id, {})
        pending.update(accepted)

        def committed(log_error: int) -> None:
            if log_error:  # Kafka's failed pending commit: the marker will not make it visible
                for tp, value in accepted:
                    if pending.get(tp) is value:
                        del pending[tp]

        return self._answer_when_committed(partition, last_offset, results, committed, respond)

    def _offset_records(self, group_id: str, commits: Sequence[OffsetCommit], now_ms: int, expire_ms: int,
                        ) -> tuple[list[int], list[tuple[bytes, bytes | None]], list[tuple[TopicPartition, CommittedOffset]]]:
        """Per commit an error code (metadata over ``offset.metadata.max.bytes`` is refused), and
        for the accepted ones their ``__consumer_offsets`` records and values."""
        limit = self.coordinator.settings.offset_metadata_max_bytes
        results: list[int] = []
        records: list[tuple[bytes, bytes | None]] = []
        accepted: list[tuple[TopicPartition, CommittedOffset]] = []
        for commit in commits:
            metadata = commit.metadata or ""
            if len(metadata.encode()) > limit:
                results.append(E.OFFSET_METADATA_TOO_LARGE)
                continue
            value = CommittedOffset(commit.offset, commit.leader_epoch, metadata, now_ms, expire_ms)
            records.append((offset_commit_key(group_id, commit.topic, commit.partition),
                            offset_commit_value(_record(value))))
            accepted.append(((commit.topic, commit.partition), value))
            results.append(E.NONE)
        return results, records, accepted

    def _answer_when_committed(self, partition: int, last_offset: int, results: list[int],
                               on_commit: Callable[[int], None],
                               respond: Callable[[list[int]], None] | None) -> list[int] | None:
        """Answer ``results`` once the log has committed ``last_offset`` (acks=all), after
        ``on_commit(log_error)``; a log error replaces every NONE. Without ``respond`` the log
        must commit at once and the answer is returned."""
        answered: list[list[int]] = []

        def committed(log_error: int) -> None:
            on_commit(log_error)
            final = [log_error if log_error and code == E.NONE else code for code in results]
            if respond is None:
                answered.append(final)
            else:
                respond(final)

        self.coordinator.log.when_committed(partition, last_offset, committed)
        if respond is None:
            assert answered, "without a respond callback the log must commit at once"
        return answered[0] if respond is None else None

    def _check_txn_commit(self, group_id: str, generation_id: int, member_id: str, instance_id: str | None,
                          now_ms: int) -> int:
        """Kafka's classic ``doTxnCommitOffsets`` checks: a transactional producer that is no
        group member (generation -1, no member id) may commit to any group."""
        if not group_id:
            return E.INVALID_GROUP_ID
        coordinator = self.coordinator
        group = coordinator.groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                return E.ILLEGAL_GENERATION
            group = coordinator.groups[group_id] = ClassicGroup(group_id, state_timestamp_ms=now_ms)
        if group.is_in(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        if instance_id is not None and group.member_for_instance(instance_id) not in (None, member_id):
            return E.FENCED_INSTANCE_ID
        if member_id and member_id not in group.members:
            return E.UNKNOWN_MEMBER_ID
        if generation_id >= 0 and generation_id != group.generation_id:
            return E.ILLEGAL_GENERATION
        return E.NONE

    def complete_transaction(self, producer_id: int, commit: bool, partitions: Sequence[int]) -> None:
        """The producer's marker landed in these ``__consumer_offsets`` partitions: make its
        pending offsets of the groups there visible (COMMIT) or drop them (ABORT)."""
        by_group = self.pending.get(producer_id, {})
        for group_id in [g for g in by_group if self.coordinator.partition_of(g) in partitions]:
            offsets = by_group.pop(group_id)
            if commit:
                self.offsets.setdefault(group_id, {}).update(offsets)
        if not by_group:
            self.pending.pop(producer_id, None)

    def load_pending(self, open_transactions: dict[int, list[tuple[int, bytes, bytes | None]]]) -> None:
        """At load: the offset commits of transactions the log leaves undecided become pending
        again (Kafka's loader keeps them in ``pendingTransactionalOffsetCommits``)."""
        for producer_id, records in open_transactions.items():
            for _partition, key_bytes, value_bytes in records:
                if value_bytes is None or record_type(key_bytes) not in (LEGACY_OFFSET_COMMIT_TYPE, OFFSET_COMMIT_TYPE):
                    continue
                key = decode_key(key_bytes)
                assert isinstance(key, OffsetKey)
                value = decode_offset_value(value_bytes)
                committed = CommittedOffset(value.offset, value.leader_epoch, value.metadata, value.commit_timestamp)
                self.pending.setdefault(producer_id, {}).setdefault(key.group, {})[(key.topic, key.partition)] = committed
                if key.group not in self.coordinator.groups:
                    self.coordinator.groups[key.group] = ClassicGroup(key.group, state_timestamp_ms=value.commit_timestamp)

    def has_pending(self, group_id: str, partition: TopicPartition) -> bool:
        """Does an open transaction hold an offset of ``partition`` for ``group_id``?"""
        return any(partition in groups.get(group_id, {}) for groups in self.pending.values())

    def _check_commit(self, group_id: str, generation_id: int, member_id: str, instance_id: str | None,
                      api_version: int, now_ms: int) -> int:
        if not group_id:
            return E.INVALID_GROUP_ID
        coordinator = self.coordinator
        consumer_group = coordinator.consumer.groups.get(group_id)
        if consumer_group is not None:  # a KIP-848 group checks the member epoch instead
            return coordinator.consumer.validate_offset_commit(consumer_group, member_id, generation_id, api_version)
        group = coordinator.groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                missing = api_version >= GROUP_ID_NOT_FOUND_COMMIT_VERSION
                return E.GROUP_ID_NOT_FOUND if missing else E.ILLEGAL_GENERATION
            group = coordinator.groups[group_id] = ClassicGroup(group_id, state_timestamp_ms=now_ms)
        if group.is_in(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.is_in(S.EMPTY):
            return E.NONE
        if generation_id >= 0 or member_id or instance_id is not None:
            error = coordinator.check_member(group, member_id, instance_id)
            if error:
                return error
            if generation_id != group.generation_id:
                return E.ILLEGAL_GENERATION
        elif not group.is_in(S.EMPTY):
            return E.UNKNOWN_MEMBER_ID
        if group.is_in(S.COMPLETING_REBALANCE):
            return E.REBALANCE_IN_PROGRESS
        return E.NONE

    def fetch(self, group_id: str,
              partitions: Sequence[TopicPartition] | None) -> list[tuple[TopicPartition, CommittedOffset | None]]:
        """The committed offset of each partition (None: never committed); ``partitions=None``
        means every partition the group has committed."""
        committed = self.offsets.get(group_id, {})  # the caller checked coordinator_error
        if partitions is None:
            return sorted(committed.items())
        return [(tp, committed.get(tp)) for tp in partitions]

    def delete(self, group_id: str, partitions: Sequence[TopicPartition], now_ms: int) -> tuple[int, list[int]]:
        """OffsetDelete: (group error, per-partition errors)."""
        if self.coordinator.coordinator_error(group_id):
            return self.coordinator.coordinator_error(group_id), []
        consumer_group = self.coordinator.consumer.groups.get(group_id)
        group = self.coordinator.groups.get(group_id)
        if consumer_group is not None:  # KIP-848: the members' subscriptions, read directly
            subscribed = consumer_group.subscribed_topic_names()
        elif group is None or group.is_in(S.DEAD):
            return int(E.GROUP_ID_NOT_FOUND), []
        else:
            subscribed = subscribed_topics(group) if not group.is_in(S.EMPTY) else set()
        committed = self.offsets.get(group_id, {})
        results: list[int] = []
        gone = []
        for tp in partitions:
            if tp[0] in subscribed:
                results.append(E.GROUP_SUBSCRIBED_TO_TOPIC)
                continue
            results.append(E.NONE)
            if tp in committed:
                gone.append(tp)
        self._tombstone(group_id, gone, now_ms)
        return int(E.NONE), results

    def _tombstone(self, group_id: str, partitions: Sequence[TopicPartition], now_ms: int) -> None:
        if not partitions:
            return
        records = [(offset_commit_key(group_id, topic, partition), None) for topic, partition in partitions]
        self.coordinator.log.append(self.coordinator.partition_of(group_id), records, now_ms)
        committed = self.offsets.get(group_id, {})
        for tp in partitions:
            committed.pop(tp, None)

    def delete_group_offsets(self, group_id: str, now_ms: int) -> None:
        """DeleteGroups: a tombstone for every offset and for the group, in one batch."""
        committed = self.offsets.pop(group_id, {})
        records = [(offset_commit_key(group_id, topic, partition), None) for topic, partition in sorted(committed)]
        records.append((group_metadata_key(group_id), None))
        self.coordinator.log.append(self.coordinator.partition_of(group_id), records, now_ms)

    def expire(self, now_ms: int) -> int:
        """Tombstone every expired offset; remove Empty groups left with none. Returns the count."""
        retention_ms = self.coordinator.settings.offsets_retention_ms
        expired_count = 0
        for group_id in list(self.offsets):
            group = self.coordinator.groups.get(group_id)
            if group is not None and not group.is_in(S.EMPTY):
                continue  # Kafka keeps a live consumer group's offsets
            if not self.coordinator.consumer.is_empty(group_id):
                continue  # KIP-848 groups too
            expired = [tp for tp, value in self.offsets[group_id].items()
                       if _expired(group, value, retention_ms, now_ms)]
            self._tombstone(group_id, expired, now_ms)
            expired_count += len(expired)
            if not self.offsets[group_id]:
                del self.offsets[group_id]
                if group is not None and group.is_in(S.EMPTY):
                    self.coordinator.remove_group(group, now_ms)
                consumer_group = self.coordinator.consumer.groups.get(group_id)
                if consumer_group is not None:  # an Empty KIP-848 group goes with its last offset
                    self.coordinator.consumer.delete_group(consumer_group)
        return expired_count


def _expired(group: ClassicGroup | None, value: CommittedOffset, retention_ms: int, now_ms: int) -> bool:
    if value.expire_timestamp_ms >= 0:
        return now_ms >= value.expire_timestamp_ms  # the commit chose its own expiry
    return now_ms >= _expiry_base_ms(group, value) + retention_ms


def _expiry_base_ms(group: ClassicGroup | None, value: CommittedOffset) -> int:
    if group is not None and group.protocol_type and group.is_in(S.EMPTY):
        return group.state_timestamp_ms
    return value.commit_timestamp_ms


def _record(value: CommittedOffset) -> object:
    return OffsetCommitValue(offset=value.offset, leader_epoch=value.leader_epoch, metadata=value.metadata,
                             commit_timestamp=value.commit_timestamp_ms, expire_timestamp=value.expire_timestamp_ms)


def subscribed_topics(group: ClassicGroup) -> set[str]:
    """Topics a consumer group's members subscribe to: the ``topics`` of each member's
    ConsumerProtocolSubscription, read at v0 -- the prefix of every version -- as Kafka's
    ``ClassicGroup.computeSubscribedTopics`` reads them. A member whose bytes do not parse adds none."""
    topics: set[str] = set()
    if group.protocol_type != PROTOCOL_TYPE or group.protocol_name is None:
        return topics
    for member in group.members.values():
        try:
            reader = Reader(member.metadata(group.protocol_name))
            reader.int16()  # the subscription's own version; v0's fields come first in all of them
            topics.update(CONSUMER_PROTOCOL_SUBSCRIPTION.read(reader, 0).topics)
        except (KafkaError, KeyError):
            continue
    return topics
