"""The consumer's request bodies and the parts of their answers it reads, one pair per API.

Each builder returns the request dataclass from :data:`kafkalab.protocol.SCHEMAS`; each reader
flattens an answer into ``(topic-partition, value, error code)`` rows, so the core never walks
nested response types itself. Worked example: ``list_offsets({("orders", 0): -2}, 0)`` asks
for orders-0's earliest offset; an answer of offset 0 reads back as ``[(("orders", 0), 0,
ErrorCode.NONE)]``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from kafkalab.client.consumer.fetcher import CONSUMER_REPLICA_ID
from kafkalab.client.membership.member import GROUP_KEY_TYPE
from kafkalab.errors import ErrorCode
from kafkalab.protocol import SCHEMAS
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.storage.checkpoints import TopicPartition

# The versions the consumer speaks; an adapter may negotiate lower ones with a broker. Each is
# the newest version before the API turned flexible (KIP-482): librdkafka's mock cluster (2.16)
# answers flexible Metadata with a stray trailing byte and closes the connection on a flexible
# JoinGroup, and cuts LeaveGroup v3's answer short; the older versions carry every field this
# consumer uses. The group member's requests are capped here too.
VERSIONS: dict[int, int] = {
    ApiKey.METADATA: 8, ApiKey.FETCH: 11, ApiKey.LIST_OFFSETS: 5,
    ApiKey.OFFSET_FETCH: 5, ApiKey.OFFSET_COMMIT: 7,
    ApiKey.FIND_COORDINATOR: 2, ApiKey.JOIN_GROUP: 5, ApiKey.SYNC_GROUP: 3,
    ApiKey.HEARTBEAT: 3, ApiKey.LEAVE_GROUP: 2,
}
NO_METADATA = None  # OffsetCommit's committed_metadata: the consumer attaches none


def _cls(api_key: int) -> Any:
    return SCHEMAS[api_key][0].cls


def _by_topic(tps: Mapping[TopicPartition, Any]) -> dict[str, list[tuple[int, Any]]]:
    grouped: dict[str, list[tuple[int, Any]]] = {}
    for (topic, partition), value in sorted(tps.items()):
        grouped.setdefault(topic, []).append((partition, value))
    return grouped


def find_coordinator(group_id: str) -> Any:
    """FindCoordinator for ``group_id`` in the one-key shape of v0-v3."""
    return _cls(ApiKey.FIND_COORDINATOR)(key=group_id, key_type=GROUP_KEY_TYPE, coordinator_keys=(group_id,))


def find_coordinator_result(body: Any) -> tuple[int, str, int, ErrorCode]:
    """(node id, host, port, error) of a FindCoordinator answer, either shape (v4+ has a list)."""
    answer = body.coordinators[0] if getattr(body, "coordinators", None) else body
    return int(answer.node_id), str(answer.host), int(answer.port), ErrorCode(answer.error_code)


def metadata(topics: list[str]) -> Any:
    request = _cls(ApiKey.METADATA)
    return request(topics=tuple(request.MetadataRequestTopic(name=t) for t in topics),
                   allow_auto_topic_creation=False)


def list_offsets(timestamps: Mapping[TopicPartition, int], isolation_level: int) -> Any:
    request = _cls(ApiKey.LIST_OFFSETS)
    topic = request.ListOffsetsTopic
    return request(replica_id=CONSUMER_REPLICA_ID, isolation_level=isolation_level, topics=tuple(
        topic(name=name, partitions=tuple(topic.ListOffsetsPartition(partition_index=p, timestamp=t)
                                          for p, t in rows))
        for name, rows in _by_topic(timestamps).items()))


def list_offsets_results(body: Any) -> Iterator[tuple[TopicPartition, int, ErrorCode]]:
    for topic in body.topics:
        for p in topic.partitions:
            yield (topic.name, p.partition_index), int(p.offset), ErrorCode(p.error_code)


def offset_fetch(group_id: str, tps: list[TopicPartition]) -> Any:
    """OffsetFetch in the one-group shape of v0-v7; ``require_stable`` (v7+, KIP-447) waits out
    pending transactional commits where the version carries it."""
    request = _cls(ApiKey.OFFSET_FETCH)
    return request(group_id=group_id, require_stable=True, topics=tuple(
        request.OffsetFetchRequestTopic(name=name, partition_indexes=tuple(p for p, _ in rows))
        for name, rows in _by_topic(dict.fromkeys(tps)).items()))


def offset_fetch_results(body: Any) -> Iterator[tuple[TopicPartition, int, ErrorCode]]:
    top = ErrorCode(body.error_code)
    for topic in body.topics:
        for p in topic.partitions:
            error = top if top != ErrorCode.NONE else ErrorCode(p.error_code)
            yield (topic.name, p.partition_index), int(p.committed_offset), error


def offset_commit(group_id: str, generation_id: int, member_id: str, group_instance_id: str | None,
                  offsets: Mapping[TopicPartition, int]) -> Any:
    request = _cls(ApiKey.OFFSET_COMMIT)
    topic = request.OffsetCommitRequestTopic
    return request(group_id=group_id, generation_id_or_member_epoch=generation_id, member_id=member_id,
                   group_instance_id=group_instance_id, topics=tuple(
                       topic(name=name, partitions=tuple(topic.OffsetCommitRequestPartition(
                           partition_index=p, committed_offset=o, committed_metadata=NO_METADATA)
                           for p, o in rows))
                       for name, rows in _by_topic(offsets).items()))


def offset_commit_results(body: Any) -> Iterator[tuple[TopicPartition, ErrorCode]]:
    for topic in body.topics:
        for p in topic.partitions:
            yield (topic.name, p.partition_index), ErrorCode(p.error_code)


def fetch_results(body: Any) -> Iterator[tuple[TopicPartition, Any]]:
    """Each partition's part of a Fetch answer; a top-level error is copied onto every part."""
    for topic in body.responses:
        for p in topic.partitions:
            yield (topic.topic, p.partition_index), p
