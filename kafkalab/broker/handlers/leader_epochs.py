"""OffsetForLeaderEpoch: where each asked-for leader epoch ends in this leader's log.

Per partition: the partition must be hosted (UNKNOWN_TOPIC_OR_PARTITION) and led here
(NOT_LEADER_OR_FOLLOWER), and ``current_leader_epoch`` must be ours (FENCED_LEADER_EPOCH or
UNKNOWN_LEADER_EPOCH, KIP-320); then the leader-epoch cache answers, as Kafka's
``LeaderEpochFileCache.endOffsetFor`` does: the current epoch ends at the log end offset, an
older one where the next known epoch starts, and an unknown one with -1/-1 and no error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkalab.broker.request import Request
from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.protocol.messages.offset_for_leader_epoch import OFFSET_FOR_LEADER_EPOCH_RESPONSE
from kafkalab.replication.partition import NotLeaderOrFollowerError

if TYPE_CHECKING:
    from kafkalab.broker.broker import Broker

_R = OFFSET_FOR_LEADER_EPOCH_RESPONSE.cls
_T = _R.OffsetForLeaderTopicResult
_E = _T.EpochEndOffset
DEBUGGING_REPLICA_ID = -2  # Kafka lets a debugging request read a follower too


def handle_offset_for_leader_epoch(broker: Broker, request: Request) -> Any:
    body = request.body
    topics = tuple(
        _T(topic=t.topic, partitions=tuple(_one(broker, t.topic, p, body.replica_id) for p in t.partitions))
        for t in body.topics
    )
    return _R(topics=topics)


def _one(broker: Broker, topic: str, wanted: Any, replica_id: int) -> Any:
    hosted = broker.topics.partition(topic, wanted.partition)
    if hosted is None:
        return _E(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, partition=wanted.partition)
    partition, log = hosted.partition, hosted.log
    try:
        partition.check_current_leader_epoch(wanted.current_leader_epoch)
        if replica_id != DEBUGGING_REPLICA_ID and not partition.is_leader:
            raise NotLeaderOrFollowerError(f"broker {partition.local_broker_id} does not lead {topic}-{wanted.partition}")
    except KafkaError as error:
        return _E(error_code=error.error_code, partition=wanted.partition)
    epoch, end_offset = log.leader_epoch_cache.end_offset_for(wanted.leader_epoch, log.log_end_offset)
    return _E(error_code=0, partition=wanted.partition, leader_epoch=epoch, end_offset=end_offset)
