"""Metadata (key 3): brokers, topics, partitions, leaders -- the client's map of the cluster.

A null topic list (v1+) asks for every topic; an empty list asks for none. From v4 the request says
whether the broker may auto-create the topics it names (``allow_auto_topic_creation``), which the
broker honours only when ``auto.create.topics.enable`` is also true. Worked example: a v4 request
for ``["orders"]`` against a single broker 0 on 127.0.0.1:9092 with a 3-partition topic returns one
broker, controller id 0, and three partitions each led by 0 with replicas and ISR ``[0]``.
"""

from __future__ import annotations

from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.schema import f, message

METADATA_REQUEST = message("MetadataRequest", api_key=ApiKey.METADATA, valid="0-12", flexible="9+", fields=[
    f("topics", "[]MetadataRequestTopic", nullable="1+", fields=[
        f("topic_id", "uuid", "10+"),
        f("name", "string", nullable="10+"),
    ]),
    f("allow_auto_topic_creation", "bool", "4+", default=True),
    f("include_cluster_authorized_operations", "bool", "8-10"),
    f("include_topic_authorized_operations", "bool", "8+"),
])

AUTHORIZED_OPERATIONS_UNKNOWN = -(2**31)  # Kafka's "not requested" sentinel

METADATA_RESPONSE = message("MetadataResponse", api_key=ApiKey.METADATA, valid="0-12", flexible="9+", fields=[
    f("throttle_time_ms", "int32", "3+"),
    f("brokers", "[]MetadataResponseBroker", fields=[
        f("node_id", "int32"),
        f("host", "string"),
        f("port", "int32"),
        f("rack", "string", "1+", nullable="1+"),
    ]),
    f("cluster_id", "string", "2+", nullable="2+"),
    f("controller_id", "int32", "1+", default=-1),
    f("topics", "[]MetadataResponseTopic", fields=[
        f("error_code", "int16"),
        f("name", "string", nullable="12+", default=""),
        f("topic_id", "uuid", "10+"),
        f("is_internal", "bool", "1+"),
        f("partitions", "[]MetadataResponsePartition", fields=[
            f("error_code", "int16"),
            f("partition_index", "int32"),
            f("leader_id", "int32"),
            f("leader_epoch", "int32", "7+", default=-1),
            f("replica_nodes", "[]int32"),
            f("isr_nodes", "[]int32"),
            f("offline_replicas", "[]int32", "5+"),
        ]),
        f("topic_authorized_operations", "int32", "8+", default=AUTHORIZED_OPERATIONS_UNKNOWN),
    ]),
    f("cluster_authorized_operations", "int32", "8-10", default=AUTHORIZED_OPERATIONS_UNKNOWN),
])
