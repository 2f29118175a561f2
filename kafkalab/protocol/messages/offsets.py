"""OffsetCommit (8), OffsetFetch (9), OffsetDelete (47): committed consumer positions.

A consumer commits "the next offset I will read" per partition; the coordinator stores it in
``__consumer_offsets`` and answers OffsetFetch from memory. A group member commits with its
generation and member id, which the coordinator checks (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID);
a consumer outside any group commits with ``generation_id_or_member_epoch=-1`` and an empty
member id. OffsetFetch v8+ asks for several groups at once (KIP-709); ``topics=null`` means
every partition the group has committed. ``require_stable`` (v7+, KIP-447) asks to wait for
pending transactional commits (UNSTABLE_OFFSET_COMMIT).

Worked example: OffsetCommit v8 from group ``g`` at generation 3 for ``orders-0`` offset 42
answers error 0 for that partition; OffsetFetch v8 for ``g`` then answers
``committed_offset=42, committed_leader_epoch=-1, metadata=""``. A partition never committed
answers ``committed_offset=-1``.
"""

from __future__ import annotations

from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.schema import f, message

OFFSET_COMMIT_REQUEST = message(
    "OffsetCommitRequest", api_key=ApiKey.OFFSET_COMMIT, valid="2-9", flexible="8+", fields=[
        f("group_id", "string"),
        f("generation_id_or_member_epoch", "int32", "1+", default=-1),
        f("member_id", "string", "1+"),
        f("group_instance_id", "string", "7+", nullable="7+"),
        f("retention_time_ms", "int64", "2-4", default=-1),
        f("topics", "[]OffsetCommitRequestTopic", fields=[
            f("name", "string"),
            f("partitions", "[]OffsetCommitRequestPartition", fields=[
                f("partition_index", "int32"),
                f("committed_offset", "int64"),
                f("committed_leader_epoch", "int32", "6+", default=-1),
                f("committed_metadata", "string", nullable="0+"),
            ]),
        ]),
    ])

OFFSET_COMMIT_RESPONSE = message(
    "OffsetCommitResponse", api_key=ApiKey.OFFSET_COMMIT, valid="2-9", flexible="8+", fields=[
        f("throttle_time_ms", "int32", "3+"),
        f("topics", "[]OffsetCommitResponseTopic", fields=[
            f("name", "string"),
            f("partitions", "[]OffsetCommitResponsePartition", fields=[
                f("partition_index", "int32"),
                f("error_code", "int16"),
            ]),
        ]),
    ])

OFFSET_FETCH_REQUEST = message(
    "OffsetFetchRequest", api_key=ApiKey.OFFSET_FETCH, valid="1-9", flexible="6+", fields=[
        f("group_id", "string", "0-7"),
        f("topics", "[]OffsetFetchRequestTopic", "0-7", nullable="2-7", fields=[
            f("name", "string", "0-7"),
            f("partition_indexes", "[]int32", "0-7"),
        ]),
        f("groups", "[]OffsetFetchRequestGroup", "8+", fields=[
            f("group_id", "string", "8+"),
            f("member_id", "string", "9+", nullable="9+"),
            f("member_epoch", "int32", "9+", default=-1),
            f("topics", "[]OffsetFetchRequestTopics", "8+", nullable="8+", fields=[
                f("name", "string", "8+"),
                f("partition_indexes", "[]int32", "8+"),
            ]),
        ]),
        f("require_stable", "bool", "7+"),
    ])

OFFSET_FETCH_RESPONSE = message(
    "OffsetFetchResponse", api_key=ApiKey.OFFSET_FETCH, valid="1-9", flexible="6+", fields=[
        f("throttle_time_ms", "int32", "3+"),
        f("topics", "[]OffsetFetchResponseTopic", "0-7", fields=[
            f("name", "string", "0-7"),
            f("partitions", "[]OffsetFetchResponsePartition", "0-7", fields=[
                f("partition_index", "int32", "0-7"),
                f("committed_offset", "int64", "0-7"),
                f("committed_leader_epoch", "int32", "5-7", default=-1),
                f("metadata", "string", "0-7", nullable="0-7"),
                f("error_code", "int16", "0-7"),
            ]),
        ]),
        f("error_code", "int16", "2-7"),
        f("groups", "[]OffsetFetchResponseGroup", "8+", fields=[
            f("group_id", "string", "8+"),
            f("topics", "[]OffsetFetchResponseTopics", "8+", fields=[
                f("name", "string", "8+"),
                f("partitions", "[]OffsetFetchResponsePartitions", "8+", fields=[
                    f("partition_index", "int32", "8+"),
                    f("committed_offset", "int64", "8+"),
                    f("committed_leader_epoch", "int32", "8+", default=-1),
                    f("metadata", "string", "8+", nullable="8+"),
                    f("error_code", "int16", "8+"),
                ]),
            ]),
            f("error_code", "int16", "8+"),
        ]),
    ])

OFFSET_DELETE_REQUEST = message(
    "OffsetDeleteRequest", api_key=ApiKey.OFFSET_DELETE, valid="0", flexible="none", fields=[
        f("group_id", "string"),
        f("topics", "[]OffsetDeleteRequestTopic", fields=[
            f("name", "string"),
            f("partitions", "[]OffsetDeleteRequestPartition", fields=[
                f("partition_index", "int32"),
            ]),
        ]),
    ])

OFFSET_DELETE_RESPONSE = message(
    "OffsetDeleteResponse", api_key=ApiKey.OFFSET_DELETE, valid="0", flexible="none", fields=[
        f("error_code", "int16"),
        f("throttle_time_ms", "int32"),
        f("topics", "[]OffsetDeleteResponseTopic", fields=[
            f("name", "string"),
            f("partitions", "[]OffsetDeleteResponsePartition", fields=[
                f("partition_index", "int32"),
                f("error_code", "int16"),
            ]),
        ]),
    ])
