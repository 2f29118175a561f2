"""ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69): the consumer group protocol of KIP-848.

Where the classic protocol needs JoinGroup, SyncGroup and Heartbeat, and a leader member that
computes the assignment, a KIP-848 member only heartbeats. Each heartbeat carries what changed
since the last one (its subscription, its rebalance timeout, the partitions it now owns); the
coordinator computes the assignment itself and answers with the member's epoch and, when it
changed, the partitions the member may now consume. Partitions travel as topic ids (uuid), not
names. ``member_epoch`` 0 joins, -1 leaves, -2 leaves a static member that will come back.

Worked example: Kafka's Java consumer 3.9 with ``group.protocol=consumer`` joins ``g`` with
``member_id=""``, ``member_epoch=0``, ``rebalance_timeout_ms=300000``,
``subscribed_topic_names=["orders"]``, ``topic_partitions=[]``; alone in the group it gets back a
member id, ``member_epoch=1``, ``heartbeat_interval_ms=5000`` and every partition of
``orders`` in ``assignment``. ConsumerGroupDescribe then shows it with group epoch 1.

Kafka 3.9 defines version 0 of both; version 1 of the heartbeat (4.0) adds a topic regex.
"""

from __future__ import annotations

from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.schema import Field, f, message


def _topic_partitions(name: str, *, with_name: bool = False) -> Field:
    fields = [f("topic_id", "uuid")]
    if with_name:
        fields.append(f("topic_name", "string"))
    fields.append(f("partitions", "[]int32"))
    return f(name, "[]TopicPartitions", fields=fields)


CONSUMER_GROUP_HEARTBEAT_REQUEST = message(
    "ConsumerGroupHeartbeatRequest", api_key=ApiKey.CONSUMER_GROUP_HEARTBEAT, valid="0", flexible="0+", fields=[
        f("group_id", "string"),
        f("member_id", "string"),
        f("member_epoch", "int32"),
        f("instance_id", "string", nullable="0+"),
        f("rack_id", "string", nullable="0+"),
        f("rebalance_timeout_ms", "int32", default=-1),
        f("subscribed_topic_names", "[]string", nullable="0+", default=None),
        f("server_assignor", "string", nullable="0+"),
        f("topic_partitions", "[]TopicPartitions", nullable="0+", default=None, fields=[
            f("topic_id", "uuid"),
            f("partitions", "[]int32"),
        ]),
    ])

CONSUMER_GROUP_HEARTBEAT_RESPONSE = message(
    "ConsumerGroupHeartbeatResponse", api_key=ApiKey.CONSUMER_GROUP_HEARTBEAT, valid="0", flexible="0+", fields=[
        f("throttle_time_ms", "int32"),
        f("error_code", "int16"),
        f("error_message", "string", nullable="0+"),
        f("member_id", "string", nullable="0+"),
        f("member_epoch", "int32"),
        f("heartbeat_interval_ms", "int32"),
        f("assignment", "Assignment", nullable="0+", fields=[
            _topic_partitions("topic_partitions"),
        ]),
    ])

CONSUMER_GROUP_DESCRIBE_REQUEST = message(
    "ConsumerGroupDescribeRequest", api_key=ApiKey.CONSUMER_GROUP_DESCRIBE, valid="0", flexible="0+", fields=[
        f("group_ids", "[]string"),
        f("include_authorized_operations", "bool"),
    ])

AUTHORIZED_OPERATIONS_OMITTED = -2147483648  # Kafka's default: operations were not asked for

CONSUMER_GROUP_DESCRIBE_RESPONSE = message(
    "ConsumerGroupDescribeResponse", api_key=ApiKey.CONSUMER_GROUP_DESCRIBE, valid="0", flexible="0+", fields=[
        f("throttle_time_ms", "int32"),
        f("groups", "[]DescribedGroup", fields=[
            f("error_code", "int16"),
            f("error_message", "string", nullable="0+"),
            f("group_id", "string"),
            f("group_state", "string"),
            f("group_epoch", "int32"),
            f("assignment_epoch", "int32"),
            f("assignor_name", "string"),
            f("members", "[]Member", fields=[
                f("member_id", "string"),
                f("instance_id", "string", nullable="0+"),
                f("rack_id", "string", nullable="0+"),
                f("member_epoch", "int32"),
                f("client_id", "string"),
                f("client_host", "string"),
                f("subscribed_topic_names", "[]string"),
                f("subscribed_topic_regex", "string", nullable="0+"),
                f("assignment", "Assignment", fields=[_topic_partitions("topic_partitions", with_name=True)]),
                f("target_assignment", "Assignment", fields=[_topic_partitions("topic_partitions", with_name=True)]),
            ]),
            f("authorized_operations", "int32", default=AUTHORIZED_OPERATIONS_OMITTED),
        ]),
    ])
