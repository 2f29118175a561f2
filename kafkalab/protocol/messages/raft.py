"""The KRaft quorum RPCs (KIP-595): Vote (52), BeginQuorumEpoch (53), EndQuorumEpoch (54),
DescribeQuorum (55).

Voters send the first three to each other; DescribeQuorum is what
``kafka-metadata-quorum.sh describe`` asks the active controller. Every request names the
topic-partitions it concerns (always ``__cluster_metadata`` partition 0 today). Version 1 of
Vote/BeginQuorumEpoch/EndQuorumEpoch and version 2 of DescribeQuorum add KIP-853's directory ids
and endpoints; Kafka 3.9 controllers speak versions 0-1 (0-2 for DescribeQuorum).

Worked example: candidate 2 asking for votes in epoch 5, its log ending at offset 40 in
epoch 4, sends VoteRequest v0 ``{cluster_id: "...", topics: [{topic_name: "__cluster_metadata",
partitions: [{partition_index: 0, candidate_epoch: 5, candidate_id: 2, last_offset_epoch: 4,
last_offset: 40}]}]}``. The sans-I/O messages of :mod:`kafkalab.controller.raft.messages` carry
the same fields for that one partition.
"""

from __future__ import annotations

from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.schema import f, message

_ENDPOINT = [f("name", "string", "1+"), f("host", "string", "1+"), f("port", "uint16", "1+")]
_NODE_ENDPOINTS = f("node_endpoints", "[]NodeEndpoint", "1+", tag=0, fields=[
    f("node_id", "int32", "1+"), f("host", "string", "1+"), f("port", "uint16", "1+"),
])


def _partition_answer(name: str) -> list:
    """The response shape Vote, BeginQuorumEpoch and EndQuorumEpoch share."""
    return [
        f("error_code", "int16"),
        f("topics", "[]TopicData", fields=[
            f("topic_name", "string"),
            f("partitions", "[]PartitionData", fields=[
                f("partition_index", "int32"),
                f("error_code", "int16"),
                f("leader_id", "int32"),
                f("leader_epoch", "int32"),
                *([f("vote_granted", "bool")] if name == "Vote" else []),
            ]),
        ]),
        _NODE_ENDPOINTS,
    ]


VOTE_REQUEST = message("VoteRequest", api_key=52, valid="0-1", flexible="0+", fields=[
    f("cluster_id", "string", nullable="0+"),
    f("voter_id", "int32", "1+", default=-1),
    f("topics", "[]TopicData", fields=[
        f("topic_name", "string"),
        f("partitions", "[]PartitionData", fields=[
            f("partition_index", "int32"),
            f("candidate_epoch", "int32"),
            f("candidate_id", "int32"),
            f("candidate_directory_id", "uuid", "1+"),
            f("voter_directory_id", "uuid", "1+"),
            f("last_offset_epoch", "int32"),
            f("last_offset", "int64"),
        ]),
    ]),
])

VOTE_RESPONSE = message("VoteResponse", api_key=52, valid="0-1", flexible="0+",
                        fields=_partition_answer("Vote"))

BEGIN_QUORUM_EPOCH_REQUEST = message(
    "BeginQuorumEpochRequest", api_key=53, valid="0-1", flexible="1+", fields=[
        f("cluster_id", "string", nullable="0+"),
        f("voter_id", "int32", "1+", default=-1),
        f("topics", "[]TopicData", fields=[
            f("topic_name", "string"),
            f("partitions", "[]PartitionData", fields=[
                f("partition_index", "int32"),
                f("voter_directory_id", "uuid", "1+"),
                f("leader_id", "int32"),
                f("leader_epoch", "int32"),
            ]),
        ]),
        f("leader_endpoints", "[]LeaderEndpoint", "1+", fields=_ENDPOINT),
    ])

BEGIN_QUORUM_EPOCH_RESPONSE = message(
    "BeginQuorumEpochResponse", api_key=53, valid="0-1", flexible="1+",
    fields=_partition_answer("BeginQuorumEpoch"))

END_QUORUM_EPOCH_REQUEST = message(
    "EndQuorumEpochRequest", api_key=54, valid="0-1", flexible="1+", fields=[
        f("cluster_id", "string", nullable="0+"),
        f("topics", "[]TopicData", fields=[
            f("topic_name", "string"),
            f("partitions", "[]PartitionData", fields=[
                f("partition_index", "int32"),
                f("leader_id", "int32"),
                f("leader_epoch", "int32"),
                f("preferred_successors", "[]int32", "0"),
                f("preferred_candidates", "[]ReplicaInfo", "1+", fields=[
                    f("candidate_id", "int32", "1+"),
                    f("candidate_directory_id", "uuid", "1+"),
                ]),
            ]),
        ]),
        f("leader_endpoints", "[]LeaderEndpoint", "1+", fields=_ENDPOINT),
    ])

END_QUORUM_EPOCH_RESPONSE = message(
    "EndQuorumEpochResponse", api_key=54, valid="0-1", flexible="1+",
    fields=_partition_answer("EndQuorumEpoch"))

DESCRIBE_QUORUM_REQUEST = message("DescribeQuorumRequest", api_key=ApiKey.DESCRIBE_QUORUM, valid="0-2", flexible="0+", fields=[
    f("topics", "[]TopicData", fields=[
        f("topic_name", "string"),
        f("partitions", "[]PartitionData", fields=[f("partition_index", "int32")]),
    ]),
])

_REPLICA_STATE = [
    f("replica_id", "int32"),
    f("replica_directory_id", "uuid", "2+"),
    f("log_end_offset", "int64"),
    f("last_fetch_timestamp", "int64", "1+", default=-1),
    f("last_caught_up_timestamp", "int64", "1+", default=-1),
]

DESCRIBE_QUORUM_RESPONSE = message("DescribeQuorumResponse", api_key=ApiKey.DESCRIBE_QUORUM, valid="0-2", flexible="0+", fields=[
    f("error_code", "int16"),
    f("error_message", "string", "2+", nullable="2+"),
    f("topics", "[]TopicData", fields=[
        f("topic_name", "string"),
        f("partitions", "[]PartitionData", fields=[
            f("partition_index", "int32"),
            f("error_code", "int16"),
            f("error_message", "string", "2+", nullable="2+"),
            f("leader_id", "int32"),
            f("leader_epoch", "int32"),
            f("high_watermark", "int64"),
            f("current_voters", "[]ReplicaState", fields=_REPLICA_STATE),
            f("observers", "[]ReplicaState", fields=_REPLICA_STATE),
        ]),
    ]),
    f("nodes", "[]Node", "2+", fields=[
        f("node_id", "int32", "2+"),
        f("listeners", "[]Listener", "2+", fields=[
            f("name", "string", "2+"), f("host", "string", "2+"), f("port", "uint16", "2+"),
        ]),
    ]),
])

_SNAPSHOT_ID = [f("end_offset", "int64"), f("epoch", "int32")]

FETCH_SNAPSHOT_REQUEST = message("FetchSnapshotRequest", api_key=ApiKey.FETCH_SNAPSHOT, valid="0-1", flexible="0+", fields=[
    f("cluster_id", "string", nullable="0+", tag=0, default=None),
    f("replica_id", "int32", default=-1),
    f("max_bytes", "int32", default=0x7FFFFFFF),
    f("topics", "[]TopicSnapshot", fields=[
        f("name", "string"),
        f("partitions", "[]PartitionSnapshot", fields=[
            f("partition", "int32"),
            f("current_leader_epoch", "int32"),
            f("snapshot_id", "SnapshotId", fields=_SNAPSHOT_ID),
            f("position", "int64"),
            f("replica_directory_id", "uuid", "1+", tag=0),
        ]),
    ]),
])

FETCH_SNAPSHOT_RESPONSE = message("FetchSnapshotResponse", api_key=ApiKey.FETCH_SNAPSHOT, valid="0-1", flexible="0+", fields=[
    f("throttle_time_ms", "int32"),
    f("error_code", "int16"),
    f("topics", "[]TopicSnapshot", fields=[
        f("name", "string"),
        f("partitions", "[]PartitionSnapshot", fields=[
            f("index", "int32"),
            f("error_code", "int16"),
            f("snapshot_id", "SnapshotId", fields=_SNAPSHOT_ID),
            f("current_leader", "LeaderIdAndEpoch", tag=0, fields=[
                f("leader_id", "int32"), f("leader_epoch", "int32"),
            ]),
            f("size", "int64"),
            f("position", "int64"),
            f("unaligned_records", "records"),
        ]),
    ]),
    _NODE_ENDPOINTS,
])

# Vote, BeginQuorumEpoch and EndQuorumEpoch are not in kafkalab.protocol.messages.SCHEMAS: a
# broker does not serve them (the controller's network adapter registers them). DescribeQuorum
# is there too: a broker answers it, as a Kafka broker forwards it to the active controller.
RAFT_SCHEMAS = {
    52: (VOTE_REQUEST, VOTE_RESPONSE),
    53: (BEGIN_QUORUM_EPOCH_REQUEST, BEGIN_QUORUM_EPOCH_RESPONSE),
    54: (END_QUORUM_EPOCH_REQUEST, END_QUORUM_EPOCH_RESPONSE),
    55: (DESCRIBE_QUORUM_REQUEST, DESCRIBE_QUORUM_RESPONSE),
    59: (FETCH_SNAPSHOT_REQUEST, FETCH_SNAPSHOT_RESPONSE),
}

__all__ = [
    "BEGIN_QUORUM_EPOCH_REQUEST", "BEGIN_QUORUM_EPOCH_RESPONSE", "DESCRIBE_QUORUM_REQUEST",
    "DESCRIBE_QUORUM_RESPONSE", "END_QUORUM_EPOCH_REQUEST", "END_QUORUM_EPOCH_RESPONSE",
    "FETCH_SNAPSHOT_REQUEST", "FETCH_SNAPSHOT_RESPONSE", "RAFT_SCHEMAS",
    "VOTE_REQUEST", "VOTE_RESPONSE",
]
