"""DescribeQuorum: the KRaft quorum of ``__cluster_metadata`` -- leader, epoch, high watermark,
and each voter's and observer's replication state (``kafka-metadata-quorum.sh describe``).

Mirrors Kafka's ``KafkaRaftClient.handleDescribeQuorumRequest`` (a Kafka broker forwards the
request to the active controller, which answers it): a request for anything but partition 0 of
``__cluster_metadata`` gets UNKNOWN_TOPIC_OR_PARTITION on each partition asked; a node that is
not the quorum leader answers NOT_LEADER_OR_FOLLOWER at the top level.

A lone kafkalab node is a quorum of one voter, itself, always the leader: its metadata log is
committed as soon as it is flushed, so the high watermark and its log end offset are one. Worked
example: node 0 whose metadata log holds offsets 0..6 answers leader 0, epoch 1, high watermark
7, voters ``[{replica 0, log end offset 7, fetched and caught up now}]``, no observers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkalab.broker.request import Request
from kafkalab.controller.raft.metadata_log import METADATA_PARTITION, METADATA_TOPIC
from kafkalab.controller.raft.node import NotLeaderError, QuorumDescription
from kafkalab.controller.quorum_controller import sole_voter_description
from kafkalab.errors import ErrorCode
from kafkalab.protocol.messages.raft import DESCRIBE_QUORUM_RESPONSE

if TYPE_CHECKING:
    from kafkalab.broker.broker import Broker

LISTENER_NAME = "PLAINTEXT"  # the one listener a kafkalab node serves its voters' endpoint on


def handle_describe_quorum(broker: Broker, request: Request) -> Any:
    R = DESCRIBE_QUORUM_RESPONSE.cls
    topics = request.body.topics
    if len(topics) != 1 or topics[0].topic_name != METADATA_TOPIC or [
            p.partition_index for p in topics[0].partitions] != [METADATA_PARTITION]:
        return R(error_code=0, topics=tuple(R.TopicData(topic_name=t.topic_name, partitions=tuple(
            R.TopicData.PartitionData(partition_index=p.partition_index,
                                      error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                      error_message=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION.name,
                                      leader_id=-1, leader_epoch=-1, high_watermark=-1)
            for p in t.partitions)) for t in topics))
    try:
        described = _describe(broker, request.now_ms)
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
    settings = broker.settings
    nodes = (R.Node(node_id=settings.node_id, listeners=(R.Node.Listener(LISTENER_NAME, settings.host, settings.port),)),)
    return R(error_code=0, topics=(R.TopicData(topic_name=METADATA_TOPIC, partitions=(partition,)),), nodes=nodes)


def _describe(broker: Broker, now_ms: int) -> QuorumDescription:
    controller = broker.controller
    if controller is None:  # a cluster's broker: Kafka's forwards the request to the controller
        raise NotLeaderError(f"broker {broker.settings.node_id} is not a controller; "
                             f"DescribeQuorum is answered by the active controller")
    describe = getattr(controller, "describe_quorum", None)
    if describe is not None:  # a controller of a real quorum
        return describe(now_ms)
    return sole_voter_description(broker.settings.node_id, controller.image.offset + 1, now_ms)
