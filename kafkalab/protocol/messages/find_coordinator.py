"""FindCoordinator (key 10): which broker coordinates a consumer group or a transactional id.

The coordinator of group ``g`` is the leader of ``__consumer_offsets`` partition
``abs(hash(g)) % 50`` (see :mod:`kafkalab.group.partitioner`); on one node that is always this
broker. ``key_type`` 0 asks for a group coordinator, 1 for a transaction coordinator (v1+). From
v4 a client asks for several keys at once (``coordinator_keys``, KIP-699) and gets one
``Coordinator`` entry per key. Worked example: kafka-python sends v4 with
``key_type=0, coordinator_keys=["orders-app"]`` and kafkalab on port 9092 answers
``coordinators=[{key: "orders-app", node_id: 1, host: "127.0.0.1", port: 9092, error_code: 0}]``.
librdkafka 2.0.2 enables LZ4 only when a broker advertises v0, so the range starts there.
"""

from __future__ import annotations

from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.schema import f, message

FIND_COORDINATOR_REQUEST = message(
    "FindCoordinatorRequest", api_key=ApiKey.FIND_COORDINATOR, valid="0-6", flexible="3+", fields=[
        f("key", "string", "0-3"),
        f("key_type", "int8", "1+"),
        f("coordinator_keys", "[]string", "4+"),
    ])

FIND_COORDINATOR_RESPONSE = message(
    "FindCoordinatorResponse", api_key=ApiKey.FIND_COORDINATOR, valid="0-6", flexible="3+", fields=[
        f("throttle_time_ms", "int32", "1+"),
        f("error_code", "int16", "0-3"),
        f("error_message", "string", "1-3", nullable="1-3"),
        f("node_id", "int32", "0-3"),
        f("host", "string", "0-3"),
        f("port", "int32", "0-3"),
        f("coordinators", "[]Coordinator", "4+", fields=[
            f("key", "string", "4+"),
            f("node_id", "int32", "4+"),
            f("host", "string", "4+"),
            f("port", "int32", "4+"),
            f("error_code", "int16", "4+"),
            f("error_message", "string", "4+", nullable="4+"),
        ]),
    ])
