"""ElectLeaders (43): ask the controller to elect the preferred (or any live) leader.

Version 0 elects the preferred replica only; version 1 adds ``election_type`` (0 PREFERRED,
1 UNCLEAN) and a top-level error code; version 2 is flexible. A null ``topic_partitions`` means
every partition, and then partitions that already have the leader asked for are left out of
the answer (Kafka's ``ReplicationControlManager.electLeaders``).

Worked example: ``{election_type: 0, topic_partitions: [{topic: "orders", partitions: [0]}]}``
with ``orders-0`` led by its second replica answers ``orders`` / partition 0 / error 0 and
moves leadership back to the first replica; asked again it answers ELECTION_NOT_NEEDED (84).
"""

from __future__ import annotations

from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.schema import f, message

PREFERRED, UNCLEAN = 0, 1  # ElectionType.value

ELECT_LEADERS_REQUEST = message("ElectLeadersRequest", api_key=ApiKey.ELECT_LEADERS, valid="0-2", flexible="2+", fields=[
    f("election_type", "int8", "1+"),
    f("topic_partitions", "[]TopicPartitions", nullable="0+", fields=[
        f("topic", "string"),
        f("partitions", "[]int32"),
    ]),
    f("timeout_ms", "int32", default=60000),
])

ELECT_LEADERS_RESPONSE = message("ElectLeadersResponse", api_key=ApiKey.ELECT_LEADERS, valid="0-2", flexible="2+", fields=[
    f("throttle_time_ms", "int32"),
    f("error_code", "int16", "1+"),
    f("replica_election_results", "[]ReplicaElectionResult", fields=[
        f("topic", "string"),
        f("partition_result", "[]PartitionResult", fields=[
            f("partition_id", "int32"),
            f("error_code", "int16"),
            f("error_message", "string", nullable="0+"),
        ]),
    ]),
])

__all__ = ["ELECT_LEADERS_REQUEST", "ELECT_LEADERS_RESPONSE", "PREFERRED", "UNCLEAN"]
