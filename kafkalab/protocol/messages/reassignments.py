"""AlterPartitionReassignments (45) and ListPartitionReassignments (46): move replicas (KIP-455).

AlterPartitionReassignments names, per partition, the target replica list, or null to cancel the
reassignment in progress; each partition is answered alone. Version 1 (KIP-860) adds
``allow_replication_factor_change`` (default true): false refuses a target whose length differs
from the partition's replication factor (INVALID_REPLICATION_FACTOR). ListPartitionReassignments
answers the partitions with a reassignment in progress, each with its whole replica list and the
replicas being added and removed; null topics means every topic. Both are flexible from v0.

Worked example: ``AlterPartitionReassignments {topics: [{name: "orders", partitions:
[{partition_index: 0, replicas: [4, 2, 3]}]}]}`` on replicas [1, 2, 3] answers error 0, and
``ListPartitionReassignments {topics: null}`` then answers ``orders`` / 0 / replicas [4, 2, 3, 1],
adding [4], removing [1] until broker 4 has caught up.
"""

from __future__ import annotations

from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.schema import f, message

ALTER_PARTITION_REASSIGNMENTS_REQUEST = message(
    "AlterPartitionReassignmentsRequest", api_key=ApiKey.ALTER_PARTITION_REASSIGNMENTS, valid="0-1",
    flexible="0+", fields=[
        f("timeout_ms", "int32", default=60000),
        f("allow_replication_factor_change", "bool", "1+", default=True),
        f("topics", "[]ReassignableTopic", fields=[
            f("name", "string"),
            f("partitions", "[]ReassignablePartition", fields=[
                f("partition_index", "int32"),
                f("replicas", "[]int32", nullable="0+", default=None),
            ]),
        ]),
    ])

ALTER_PARTITION_REASSIGNMENTS_RESPONSE = message(
    "AlterPartitionReassignmentsResponse", api_key=ApiKey.ALTER_PARTITION_REASSIGNMENTS, valid="0-1",
    flexible="0+", fields=[
        f("throttle_time_ms", "int32"),
        f("allow_replication_factor_change", "bool", "1+", default=True),
        f("error_code", "int16"),
        f("error_message", "string", nullable="0+"),
        f("responses", "[]ReassignableTopicResponse", fields=[
            f("name", "string"),
            f("partitions", "[]ReassignablePartitionResponse", fields=[
                f("partition_index", "int32"),
                f("error_code", "int16"),
                f("error_message", "string", nullable="0+"),
            ]),
        ]),
    ])

LIST_PARTITION_REASSIGNMENTS_REQUEST = message(
    "ListPartitionReassignmentsRequest", api_key=ApiKey.LIST_PARTITION_REASSIGNMENTS, valid="0",
    flexible="0+", fields=[
        f("timeout_ms", "int32", default=60000),
        f("topics", "[]ListPartitionReassignmentsTopics", nullable="0+", default=None, fields=[
            f("name", "string"),
            f("partition_indexes", "[]int32"),
        ]),
    ])

LIST_PARTITION_REASSIGNMENTS_RESPONSE = message(
    "ListPartitionReassignmentsResponse", api_key=ApiKey.LIST_PARTITION_REASSIGNMENTS, valid="0",
    flexible="0+", fields=[
        f("throttle_time_ms", "int32"),
        f("error_code", "int16"),
        f("error_message", "string", nullable="0+"),
        f("topics", "[]OngoingTopicReassignment", fields=[
            f("name", "string"),
            f("partitions", "[]OngoingPartitionReassignment", fields=[
                f("partition_index", "int32"),
                f("replicas", "[]int32"),
                f("adding_replicas", "[]int32"),
                f("removing_replicas", "[]int32"),
            ]),
        ]),
    ])

__all__ = [
    "ALTER_PARTITION_REASSIGNMENTS_REQUEST", "ALTER_PARTITION_REASSIGNMENTS_RESPONSE",
    "LIST_PARTITION_REASSIGNMENTS_REQUEST", "LIST_PARTITION_REASSIGNMENTS_RESPONSE",
]
