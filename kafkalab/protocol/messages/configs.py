"""DescribeConfigs (32), AlterConfigs (33), IncrementalAlterConfigs (44): dynamic configuration.

A *resource* is a topic (type 2) or a broker (type 4, named by its node id, or "" for the
cluster-wide default). AlterConfigs replaces the whole set of dynamic configs of a resource;
IncrementalAlterConfigs applies operations one key at a time (0 SET, 1 DELETE, 2 APPEND,
3 SUBTRACT). Each described config says where its value came from (``config_source``: 1 dynamic
topic, 2 dynamic broker, 4 static broker (server.properties), 5 Kafka's default). Worked example: after
``SET retention.ms=60000`` on topic ``orders``, DescribeConfigs for ``orders`` lists
``retention.ms = 60000`` with source 1 (DYNAMIC_TOPIC_CONFIG).
"""

from __future__ import annotations

from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.schema import f, message

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4

DESCRIBE_CONFIGS_REQUEST = message(
    "DescribeConfigsRequest", api_key=ApiKey.DESCRIBE_CONFIGS, valid="1-4", flexible="4+", fields=[
        f("resources", "[]DescribeConfigsResource", fields=[
            f("resource_type", "int8"),
            f("resource_name", "string"),
            f("configuration_keys", "[]string", nullable="0+", default=None),
        ]),
        f("include_synonyms", "bool", "1+"),
        f("include_documentation", "bool", "3+"),
    ])

DESCRIBE_CONFIGS_RESPONSE = message(
    "DescribeConfigsResponse", api_key=ApiKey.DESCRIBE_CONFIGS, valid="1-4", flexible="4+", fields=[
        f("throttle_time_ms", "int32"),
        f("results", "[]DescribeConfigsResult", fields=[
            f("error_code", "int16"),
            f("error_message", "string", nullable="0+"),
            f("resource_type", "int8"),
            f("resource_name", "string"),
            f("configs", "[]DescribeConfigsResourceResult", fields=[
                f("name", "string"),
                f("value", "string", nullable="0+"),
                f("read_only", "bool"),
                f("config_source", "int8", "1+", default=-1),
                f("is_sensitive", "bool"),
                f("synonyms", "[]DescribeConfigsSynonym", "1+", fields=[
                    f("name", "string", "1+"),
                    f("value", "string", "1+", nullable="0+"),
                    f("source", "int8", "1+"),
                ]),
                f("config_type", "int8", "3+"),
                f("documentation", "string", "3+", nullable="0+"),
            ]),
        ]),
    ])

ALTER_CONFIGS_REQUEST = message("AlterConfigsRequest", api_key=ApiKey.ALTER_CONFIGS, valid="0-2", flexible="2+", fields=[
    f("resources", "[]AlterConfigsResource", fields=[
        f("resource_type", "int8"),
        f("resource_name", "string"),
        f("configs", "[]AlterableConfig", fields=[
            f("name", "string"),
            f("value", "string", nullable="0+"),
        ]),
    ]),
    f("validate_only", "bool"),
])

_ALTER_RESULT_FIELDS = [
    f("error_code", "int16"),
    f("error_message", "string", nullable="0+"),
    f("resource_type", "int8"),
    f("resource_name", "string"),
]

ALTER_CONFIGS_RESPONSE = message("AlterConfigsResponse", api_key=ApiKey.ALTER_CONFIGS, valid="0-2", flexible="2+", fields=[
    f("throttle_time_ms", "int32"),
    f("responses", "[]AlterConfigsResourceResponse", fields=_ALTER_RESULT_FIELDS),
])

OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3

INCREMENTAL_ALTER_CONFIGS_REQUEST = message(
    "IncrementalAlterConfigsRequest", api_key=ApiKey.INCREMENTAL_ALTER_CONFIGS, valid="0-1", flexible="1+", fields=[
        f("resources", "[]AlterConfigsResource", fields=[
            f("resource_type", "int8"),
            f("resource_name", "string"),
            f("configs", "[]AlterableConfig", fields=[
                f("name", "string"),
                f("config_operation", "int8"),
                f("value", "string", nullable="0+"),
            ]),
        ]),
        f("validate_only", "bool"),
    ])

INCREMENTAL_ALTER_CONFIGS_RESPONSE = message(
    "IncrementalAlterConfigsResponse", api_key=ApiKey.INCREMENTAL_ALTER_CONFIGS, valid="0-1", flexible="1+", fields=[
        f("throttle_time_ms", "int32"),
        f("responses", "[]AlterConfigsResourceResponse", fields=_ALTER_RESULT_FIELDS),
    ])
