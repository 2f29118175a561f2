"""CreateTopics (19), DeleteTopics (20), CreatePartitions (37): the topic admin APIs.

CreateTopics names each topic with a partition count and replication factor (-1 means "use the
broker defaults" ``num.partitions`` / ``default.replication.factor``, KIP-464) and optional topic
configs; ``validate_only`` checks without creating. CreatePartitions can only grow a topic.
Worked example: creating ``orders`` with 3 partitions and ``retention.ms=60000`` on an empty broker
answers error 0 and, from v5, echoes ``num_partitions=3`` and the topic's effective configs;
creating it again answers TOPIC_ALREADY_EXISTS (36).
"""

from __future__ import annotations

from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.schema import f, message

CREATE_TOPICS_REQUEST = message("CreateTopicsRequest", api_key=ApiKey.CREATE_TOPICS, valid="2-7", flexible="5+", fields=[
    f("topics", "[]CreatableTopic", fields=[
        f("name", "string"),
        f("num_partitions", "int32"),
        f("replication_factor", "int16"),
        f("assignments", "[]CreatableReplicaAssignment", fields=[
            f("partition_index", "int32"),
            f("broker_ids", "[]int32"),
        ]),
        f("configs", "[]CreatableTopicConfig", fields=[
            f("name", "string"),
            f("value", "string", nullable="0+"),
        ]),
    ]),
    f("timeout_ms", "int32", default=60000),
    f("validate_only", "bool", "1+"),
])

CREATE_TOPICS_RESPONSE = message("CreateTopicsResponse", api_key=ApiKey.CREATE_TOPICS, valid="2-7", flexible="5+", fields=[
    f("throttle_time_ms", "int32", "2+"),
    f("topics", "[]CreatableTopicResult", fields=[
        f("name", "string"),
        f("topic_id", "uuid", "7+"),
        f("error_code", "int16"),
        f("error_message", "string", "1+", nullable="0+"),
        f("topic_config_error_code", "int16", "5+", tag=0),
        f("num_partitions", "int32", "5+", default=-1),
        f("replication_factor", "int16", "5+", default=-1),
        f("configs", "[]CreatableTopicConfigs", "5+", nullable="5+", fields=[
            f("name", "string", "5+"),
            f("value", "string", "5+", nullable="5+"),
            f("read_only", "bool", "5+"),
            f("config_source", "int8", "5+", default=-1),
            f("is_sensitive", "bool", "5+"),
        ]),
    ]),
])

DELETE_TOPICS_REQUEST = message("DeleteTopicsRequest", api_key=ApiKey.DELETE_TOPICS, valid="1-5", flexible="4+", fields=[
    f("topic_names", "[]string", "0-5"),
    f("timeout_ms", "int32"),
])

DELETE_TOPICS_RESPONSE = message("DeleteTopicsResponse", api_key=ApiKey.DELETE_TOPICS, valid="1-5", flexible="4+", fields=[
    f("throttle_time_ms", "int32", "1+"),
    f("responses", "[]DeletableTopicResult", fields=[
        f("name", "string"),
        f("error_code", "int16"),
        f("error_message", "string", "5+", nullable="5+"),
    ]),
])

CREATE_PARTITIONS_REQUEST = message(
    "CreatePartitionsRequest", api_key=ApiKey.CREATE_PARTITIONS, valid="0-3", flexible="2+", fields=[
        f("topics", "[]CreatePartitionsTopic", fields=[
            f("name", "string"),
            f("count", "int32"),
            f("assignments", "[]CreatePartitionsAssignment", nullable="0+", default=None, fields=[
                f("broker_ids", "[]int32"),
            ]),
        ]),
        f("timeout_ms", "int32"),
        f("validate_only", "bool"),
    ])

CREATE_PARTITIONS_RESPONSE = message(
    "CreatePartitionsResponse", api_key=ApiKey.CREATE_PARTITIONS, valid="0-3", flexible="2+", fields=[
        f("throttle_time_ms", "int32"),
        f("results", "[]CreatePartitionsTopicResult", fields=[
            f("name", "string"),
            f("error_code", "int16"),
            f("error_message", "string", nullable="0+"),
        ]),
    ])
