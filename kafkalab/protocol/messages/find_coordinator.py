"""FindCoordinator (key 10): which broker coordinates a consumer group or a transactional id.

kafkalab has no group or transaction coordinator yet, so the broker answers
COORDINATOR_NOT_AVAILABLE (15). The API is still advertised because librdkafka enables LZ4
compression only when a broker advertises FindCoordinator v0 (it treats that as "broker >= 0.10").
"""

from __future__ import annotations

from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.schema import f, message

FIND_COORDINATOR_REQUEST = message(
    "FindCoordinatorRequest", api_key=ApiKey.FIND_COORDINATOR, valid="0-2", flexible="3+", fields=[
        f("key", "string", "0-3"),
        f("key_type", "int8", "1+"),
    ])

FIND_COORDINATOR_RESPONSE = message(
    "FindCoordinatorResponse", api_key=ApiKey.FIND_COORDINATOR, valid="0-2", flexible="3+", fields=[
        f("throttle_time_ms", "int32", "1+"),
        f("error_code", "int16", "0-3"),
        f("error_message", "string", "1-3", nullable="1-3"),
        f("node_id", "int32", "0-3"),
        f("host", "string", "0-3"),
        f("port", "int32", "0-3"),
    ])
