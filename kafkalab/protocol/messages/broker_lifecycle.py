"""What a broker says to the active controller: BrokerRegistration (62), BrokerHeartbeat (63)
and AlterPartition (56).

In KRaft these three travel on the controller listener, never to a client:

* **BrokerRegistration** -- a starting broker announces itself: its id, the cluster id it was
  formatted for, a fresh *incarnation id* (a random uuid per process start, so the controller can
  tell a restart from a retry), its listeners, the features it supports and its rack. The
  controller answers with the *broker epoch*, the offset of the RegisterBrokerRecord it wrote.
  v1 adds ``is_migrating_zk_broker``, v2 ``log_dirs`` (KIP-858), v3 ``previous_broker_epoch``
  (KIP-966: the epoch before a clean shutdown); v4 only changes which features may be listed.
* **BrokerHeartbeat** -- every ``broker.heartbeat.interval.ms`` (2 s): the broker's epoch, the
  metadata offset it has replayed, and whether it wants to be fenced or to shut down. The answer
  says whether it is caught up, fenced, and whether it may now stop (``should_shut_down``). v1
  adds the tagged ``offline_log_dirs``.
* **AlterPartition** -- a partition leader proposes a new ISR. v2 names topics by id instead of
  name; v3 sends each ISR member with the broker epoch its fetches carried (KIP-903), so a
  replica that restarted cannot be put back into the ISR by its past life's fetches.

Kafka 3.9 brokers send BrokerRegistration v4, BrokerHeartbeat v1 and AlterPartition v3 (the
newest each side speaks); kafkalab declares every version Kafka defines.

Worked example: broker 2 heartbeating with epoch 17 after replaying the metadata log up to
offset 40 sends ``{broker_id: 2, broker_epoch: 17, current_metadata_offset: 40, want_fence:
false, want_shut_down: false}``; a controller whose log ends at 40 answers ``{error_code: 0,
is_caught_up: true, is_fenced: false, should_shut_down: false}``.
"""

from __future__ import annotations

from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.messages.forwarding import (
    ALLOCATE_PRODUCER_IDS_REQUEST,
    ALLOCATE_PRODUCER_IDS_RESPONSE,
    ENVELOPE_REQUEST,
    ENVELOPE_RESPONSE,
)
from kafkalab.protocol.schema import Message, f, message

BROKER_REGISTRATION_VERSION = 4  # what a Kafka 3.9 broker sends
BROKER_HEARTBEAT_VERSION = 1
ALTER_PARTITION_VERSION = 3

BROKER_REGISTRATION_REQUEST = message(
    "BrokerRegistrationRequest", api_key=ApiKey.BROKER_REGISTRATION, valid="0-4", flexible="0+", fields=[
        f("broker_id", "int32"),
        f("cluster_id", "string"),
        f("incarnation_id", "uuid"),
        f("listeners", "[]Listener", fields=[
            f("name", "string"), f("host", "string"), f("port", "uint16"), f("security_protocol", "int16"),
        ]),
        f("features", "[]Feature", fields=[
            f("name", "string"), f("min_supported_version", "int16"), f("max_supported_version", "int16"),
        ]),
        f("rack", "string", nullable="0+"),
        f("is_migrating_zk_broker", "bool", "1+", default=False),
        f("log_dirs", "[]uuid", "2+"),
        f("previous_broker_epoch", "int64", "3+", default=-1),
    ])

BROKER_REGISTRATION_RESPONSE = message(
    "BrokerRegistrationResponse", api_key=ApiKey.BROKER_REGISTRATION, valid="0-4", flexible="0+", fields=[
        f("throttle_time_ms", "int32"),
        f("error_code", "int16"),
        f("broker_epoch", "int64", default=-1),
    ])

BROKER_HEARTBEAT_REQUEST = message(
    "BrokerHeartbeatRequest", api_key=ApiKey.BROKER_HEARTBEAT, valid="0-1", flexible="0+", fields=[
        f("broker_id", "int32"),
        f("broker_epoch", "int64", default=-1),
        f("current_metadata_offset", "int64"),
        f("want_fence", "bool"),
        f("want_shut_down", "bool"),
        f("offline_log_dirs", "[]uuid", "1+", tag=0),
    ])

BROKER_HEARTBEAT_RESPONSE = message(
    "BrokerHeartbeatResponse", api_key=ApiKey.BROKER_HEARTBEAT, valid="0-1", flexible="0+", fields=[
        f("throttle_time_ms", "int32"),
        f("error_code", "int16"),
        f("is_caught_up", "bool", default=False),
        f("is_fenced", "bool", default=True),
        f("should_shut_down", "bool"),
    ])

ALTER_PARTITION_REQUEST = message(
    "AlterPartitionRequest", api_key=ApiKey.ALTER_PARTITION, valid="0-3", flexible="0+", fields=[
        f("broker_id", "int32"),
        f("broker_epoch", "int64", default=-1),
        f("topics", "[]TopicData", fields=[
            f("topic_name", "string", "0-1"),
            f("topic_id", "uuid", "2+"),
            f("partitions", "[]PartitionData", fields=[
                f("partition_index", "int32"),
                f("leader_epoch", "int32"),
                f("new_isr", "[]int32", "0-2"),
                f("new_isr_with_epochs", "[]BrokerState", "3+", fields=[
                    f("broker_id", "int32", "3+"), f("broker_epoch", "int64", "3+", default=-1),
                ]),
                f("leader_recovery_state", "int8", "1+", default=0),
                f("partition_epoch", "int32"),
            ]),
        ]),
    ])

ALTER_PARTITION_RESPONSE = message(
    "AlterPartitionResponse", api_key=ApiKey.ALTER_PARTITION, valid="0-3", flexible="0+", fields=[
        f("throttle_time_ms", "int32"),
        f("error_code", "int16"),
        f("topics", "[]TopicData", fields=[
            f("topic_name", "string", "0-1"),
            f("topic_id", "uuid", "2+"),
            f("partitions", "[]PartitionData", fields=[
                f("partition_index", "int32"),
                f("error_code", "int16"),
                f("leader_id", "int32"),
                f("leader_epoch", "int32"),
                f("isr", "[]int32"),
                f("leader_recovery_state", "int8", "1+", default=0),
                f("partition_epoch", "int32"),
            ]),
        ]),
    ])

# Controller-only APIs: the codec knows them (so frames encode and decode with the right header),
# but they are not in kafkalab.protocol.messages.SCHEMAS, whose APIs a broker advertises to
# clients in ApiVersions. Kafka's brokers do not advertise them either.
CONTROLLER_SCHEMAS: dict[int, tuple[Message, Message]] = {
    ApiKey.BROKER_REGISTRATION: (BROKER_REGISTRATION_REQUEST, BROKER_REGISTRATION_RESPONSE),
    ApiKey.BROKER_HEARTBEAT: (BROKER_HEARTBEAT_REQUEST, BROKER_HEARTBEAT_RESPONSE),
    ApiKey.ALTER_PARTITION: (ALTER_PARTITION_REQUEST, ALTER_PARTITION_RESPONSE),
    ApiKey.ENVELOPE: (ENVELOPE_REQUEST, ENVELOPE_RESPONSE),
    ApiKey.ALLOCATE_PRODUCER_IDS: (ALLOCATE_PRODUCER_IDS_REQUEST, ALLOCATE_PRODUCER_IDS_RESPONSE),
}

__all__ = [
    "ALTER_PARTITION_REQUEST", "ALTER_PARTITION_RESPONSE", "ALTER_PARTITION_VERSION",
    "BROKER_HEARTBEAT_REQUEST", "BROKER_HEARTBEAT_RESPONSE", "BROKER_HEARTBEAT_VERSION",
    "BROKER_REGISTRATION_REQUEST", "BROKER_REGISTRATION_RESPONSE", "BROKER_REGISTRATION_VERSION",
    "CONTROLLER_SCHEMAS",
]
