"""DescribeCluster (60): the cluster id, the controller id clients should use, the live brokers.

Admin clients ask it instead of Metadata (KIP-700). ``endpoint_type`` (v1+) says which kind of
node the client believes it talks to: 1 BROKER, 2 CONTROLLER (KIP-919); a broker answers only
type 1. Version 2 (KIP-1073) may include fenced brokers, flagged ``is_fenced``. Every version is
flexible.

Worked example: one node with id 0 on 127.0.0.1:9092 answers v1 ``{error_code: 0, endpoint_type:
1, cluster_id: "...", controller_id: 0, brokers: [{broker_id: 0, host: "127.0.0.1", port: 9092,
rack: null}]}``.
"""

from __future__ import annotations

from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.messages.metadata import AUTHORIZED_OPERATIONS_UNKNOWN
from kafkalab.protocol.schema import f, message

ENDPOINT_BROKER, ENDPOINT_CONTROLLER = 1, 2  # Kafka's EndpointType ids

DESCRIBE_CLUSTER_REQUEST = message("DescribeClusterRequest", api_key=ApiKey.DESCRIBE_CLUSTER, valid="0-2", flexible="0+", fields=[
    f("include_cluster_authorized_operations", "bool"),
    f("endpoint_type", "int8", "1+", default=ENDPOINT_BROKER),
    f("include_fenced_brokers", "bool", "2+"),
])

DESCRIBE_CLUSTER_RESPONSE = message("DescribeClusterResponse", api_key=ApiKey.DESCRIBE_CLUSTER, valid="0-2", flexible="0+", fields=[
    f("throttle_time_ms", "int32"),
    f("error_code", "int16"),
    f("error_message", "string", nullable="0+", default=None),
    f("endpoint_type", "int8", "1+", default=ENDPOINT_BROKER),
    f("cluster_id", "string"),
    f("controller_id", "int32", default=-1),
    f("brokers", "[]DescribeClusterBroker", fields=[
        f("broker_id", "int32"),
        f("host", "string"),
        f("port", "int32"),
        f("rack", "string", nullable="0+", default=None),
        f("is_fenced", "bool", "2+"),
    ]),
    f("cluster_authorized_operations", "int32", default=AUTHORIZED_OPERATIONS_UNKNOWN),
])

__all__ = ["DESCRIBE_CLUSTER_REQUEST", "DESCRIBE_CLUSTER_RESPONSE", "ENDPOINT_BROKER", "ENDPOINT_CONTROLLER"]
