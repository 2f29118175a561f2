"""DescribeQuorum: the KRaft quorum of ``__cluster_metadata`` -- leader, epoch, high watermark,
and each voter's and observer's replication state (``kafka-metadata-quorum.sh describe``).

Mirrors Kafka's ``KafkaRaftClient.handleDescribeQuorumRequest``. The quorum answers it: a lone
node (its own quorum) in process, a cluster's active controller for the brokers, which forward
the request to it in an Envelope (DescribeQuorum is one of Kafka's forwardable APIs). A request
for anything but partition 0 of ``__cluster_metadata`` gets UNKNOWN_TOPIC_OR_PARTITION on each
partition asked; a node that is not the quorum leader answers NOT_LEADER_OR_FOLLOWER at the top
level.

A node that is its own quorum is a quorum of one voter, always the leader: its metadata log is
committed as soon as it is flushed, so the high watermark and its log end offset are one. Worked
example: node 0 whose metadata log holds offsets 0..6 answers leader 0, epoch 1, high watermark
7, voters ``[{replica 0, log end offset 7, fetched and caught up now}]``, no observers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafkalab.controller.raft.api import NotLeaderError, QuorumDescription
from kafkalab.controller.raft.metadata_log import METADATA_PARTITION, METADATA_TOPIC
from kafkalab.errors import ErrorCode
from kafkalab.metadata.snapshot import LISTENER_NAME  # the one listener a kafkalab node serves
from kafkalab.protocol.messages.raft import DESCRIBE_QUORUM_RESPONSE


@dataclass(frozen=True, slots=True)
class QuorumNode:
    """The node that answers: its id and the endpoint the answer lists for it."""

    node_id: int
    host: str
    port: int


def describe_quorum_response(body: Any, describe: Callable[[], QuorumDescription], node: QuorumNode | None) -> Any:
    """The DescribeQuorum response to ``body``; ``describe`` may raise NotLeaderError. ``node``
    is the answering node's endpoint (None: not listed)."""
    R = DESCRIBE_QUORUM_RESPONSE.cls
    topics = body.topics
    if len(topics) != 1 or topics[0].topic_name != METADATA_TOPIC or [
            p.partition_index for p in topics[0].partitions] != [METADATA_PARTITION]:
        return R(error_code=0, topics=tuple(R.TopicData(topic_name=t.topic_name, partitions=tuple(
            R.TopicData.PartitionData(partition_index=p.partition_index,
                                      error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                      error_message=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION.name,
                                      leader_id=-1, leader_epoch=-1, high_watermark=-1)
            for p in t.partitions)) for t in topics))
    try:
        described = describe()
    except NotLeaderError as error:
        return R(error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER, error_message=str(error))
    state = R.TopicData.PartitionData.ReplicaState

    def replicas(found: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(state(replica_id=v.replica_id, log_end_offset=v.log_end_offset,
                           last_fetch_timestamp=v.last_fetch_timestamp,
                           last_caught_up_timestamp=v.last_caught_up_timestamp) for v in found)
    partition = R.TopicData.PartitionData(
        partition_index=METADATA_PARTITION, error_code=0, leader_id=described.leader_id,
        leader_epoch=described.leader_epoch, high_watermark=described.high_watermark,
        current_voters=replicas(described.current_voters), observers=replicas(described.observers))
    nodes = () if node is None else (
        R.Node(node_id=node.node_id, listeners=(R.Node.Listener(LISTENER_NAME, node.host, node.port),)),)
    return R(error_code=0, topics=(R.TopicData(topic_name=METADATA_TOPIC, partitions=(partition,)),), nodes=nodes)


__all__ = ["LISTENER_NAME", "QuorumNode", "describe_quorum_response"]
