"""OffsetCommit, OffsetFetch and OffsetDelete: decode, call the group coordinator, encode.

OffsetFetch v8+ carries several groups (KIP-709); earlier versions one. From v9 each group may
carry a KIP-848 member's id and epoch (STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID). ``topics=null``
(v2+) asks for every committed partition of the group. ``require_stable`` (v7+, KIP-447:
Kafka's Java consumer sets it with ``isolation.level=read_committed``) asks the coordinator to
refuse an offset a transaction has committed but not yet decided (TxnOffsetCommit before its
marker): that partition answers UNSTABLE_OFFSET_COMMIT, which the consumer retries. Worked
example: OffsetFetch v5 for ``g`` and ``orders-[0, 1]`` where only partition 0
was committed (at 42) answers ``[(0, 42, ""), (1, -1, "")]`` with error 0.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kafkalab.broker.request import PENDING, Request
from kafkalab.errors import ErrorCode
from kafkalab.group.offsets import CommittedOffset, OffsetCommit
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.messages.offsets import (
    OFFSET_COMMIT_RESPONSE,
    OFFSET_DELETE_RESPONSE,
    OFFSET_FETCH_RESPONSE,
)

if TYPE_CHECKING:
    from kafkalab.broker.broker import Broker

BATCHED_OFFSET_FETCH_VERSION = 8  # KIP-709
_C = OFFSET_COMMIT_RESPONSE.cls
_F = OFFSET_FETCH_RESPONSE.cls
_D = OFFSET_DELETE_RESPONSE.cls


def handle_offset_commit(broker: Broker, request: Request) -> Any:
    """Answered once the commit's ``__consumer_offsets`` batch is committed (acks=all)."""
    body = request.body
    commits = [OffsetCommit(t.name, p.partition_index, p.committed_offset, p.committed_leader_epoch,
                            p.committed_metadata)
               for t in body.topics for p in t.partitions]
    header, connection_id = request.header, request.connection_id

    def respond(errors: list[int]) -> None:
        broker.respond(connection_id, header.api_key, header.api_version, header.correlation_id,
                       _commit_response(body, errors))

    errors = broker.group_coordinator.offsets.commit(
        body.group_id, body.generation_id_or_member_epoch, body.member_id, body.group_instance_id, commits,
        body.retention_time_ms, header.api_version, request.now_ms, respond)
    return PENDING if errors is None else _commit_response(body, errors)


def _commit_response(body: Any, error_codes: list[int]) -> Any:
    errors = iter(error_codes)
    return _C(topics=tuple(
        _C.OffsetCommitResponseTopic(name=t.name, partitions=tuple(
            _C.OffsetCommitResponseTopic.OffsetCommitResponsePartition(p.partition_index, next(errors))
            for p in t.partitions))
        for t in body.topics))


def handle_offset_fetch(broker: Broker, request: Request) -> Any:
    body = request.body
    stable = bool(body.require_stable)
    if request.header.api_version >= BATCHED_OFFSET_FETCH_VERSION:
        return _F(groups=tuple(_fetch_group(broker, g.group_id, g.topics, stable, g.member_id, g.member_epoch)
                               for g in body.groups))
    group = _fetch_group(broker, body.group_id, body.topics, stable)
    topic_cls = _F.OffsetFetchResponseTopic
    partition_cls = topic_cls.OffsetFetchResponsePartition
    return _F(error_code=group.error_code, topics=tuple(
        topic_cls(name=t.name, partitions=tuple(
            partition_cls(p.partition_index, p.committed_offset, p.committed_leader_epoch, p.metadata, p.error_code)
            for p in t.partitions))
        for t in group.topics))


def _fetch_group(broker: Broker, group_id: str, topics: Any, require_stable: bool,
                 member_id: str | None = None, member_epoch: int = -1) -> Any:
    group_cls = _F.OffsetFetchResponseGroup
    # Not this broker's group (another leads its partition), or, from v9, a KIP-848 member's
    # id and epoch checked as a commit's would be.
    error = (broker.group_coordinator.coordinator_error(group_id)
             or broker.group_coordinator.consumer.validate_offset_fetch(group_id, member_id, member_epoch))
    if error:
        return group_cls(group_id=group_id, error_code=error, topics=())
    wanted = None if topics is None else [(t.name, p) for t in topics for p in t.partition_indexes]
    offsets = broker.group_coordinator.offsets
    found = offsets.fetch(group_id, wanted)
    by_topic: dict[str, list[Any]] = {}
    partition_cls = group_cls.OffsetFetchResponseTopics.OffsetFetchResponsePartitions
    for (topic, partition), value in found:
        if require_stable and offsets.has_pending(group_id, (topic, partition)):
            answer = partition_cls(partition_index=partition, committed_offset=-1, committed_leader_epoch=-1,
                                   metadata="", error_code=ErrorCode.UNSTABLE_OFFSET_COMMIT)
        else:
            answer = _partition(partition_cls, partition, value)
        by_topic.setdefault(topic, []).append(answer)
    return group_cls(group_id=group_id, error_code=0, topics=tuple(
        group_cls.OffsetFetchResponseTopics(name=topic, partitions=tuple(parts)) for topic, parts in by_topic.items()))


def _partition(cls: Any, partition: int, value: CommittedOffset | None) -> Any:
    if value is None:
        return cls(partition_index=partition, committed_offset=-1, committed_leader_epoch=-1, metadata="",
                   error_code=0)
    return cls(partition_index=partition, committed_offset=value.offset,
               committed_leader_epoch=value.leader_epoch, metadata=value.metadata, error_code=0)


def handle_offset_delete(broker: Broker, request: Request) -> Any:
    body = request.body
    partitions = [(t.name, p.partition_index) for t in body.topics for p in t.partitions]
    error, results = broker.group_coordinator.offsets.delete(body.group_id, partitions, request.now_ms)
    if error:
        return _D(error_code=error)
    codes = iter(results)
    topic_cls = _D.OffsetDeleteResponseTopic
    return _D(error_code=0, topics=tuple(
        topic_cls(name=t.name, partitions=tuple(
            topic_cls.OffsetDeleteResponsePartition(p.partition_index, next(codes)) for p in t.partitions))
        for t in body.topics))


OFFSET_HANDLERS: dict[int, Callable[[Broker, Request], Any]] = {
    ApiKey.OFFSET_COMMIT: handle_offset_commit,
    ApiKey.OFFSET_FETCH: handle_offset_fetch,
    ApiKey.OFFSET_DELETE: handle_offset_delete,
}
