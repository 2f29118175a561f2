"""ListOffsets: earliest (-2), latest (-1), max timestamp (-3) or the first offset at or after a
timestamp.

"Latest" is the last offset a consumer may fetch up to: the high watermark under
read_uncommitted (``isolation_level`` 0), the last stable offset under read_committed (1, v2+;
KIP-98), as Kafka's ``Partition.fetchOffsetForTimestamp`` answers. "Max timestamp" (KIP-734,
v7+) is the first record carrying the partition's largest timestamp, not the end of its batch
(see :meth:`Log.offset_for_timestamp`). A timestamp later than every record, or a record at or
above that fetchable end, answers offset -1 and timestamp -1, as Kafka does. Worked example: a
log whose HW is 6 with a transaction open from offset 4 answers latest = 6 read_uncommitted and
4 read_committed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkalab.broker.handlers.fetch import READ_COMMITTED
from kafkalab.broker.request import Request
from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.protocol.messages.list_offsets import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    LIST_OFFSETS_RESPONSE,
)

if TYPE_CHECKING:
    from kafkalab.broker.broker import Broker

_R = LIST_OFFSETS_RESPONSE.cls
_T = _R.ListOffsetsTopicResponse
_P = _T.ListOffsetsPartitionResponse


def handle_list_offsets(broker: Broker, request: Request) -> Any:
    topics = []
    for topic in request.body.topics:
        partitions = tuple(_one(broker, topic.name, p.partition_index, p.timestamp,
                                request.body.isolation_level == READ_COMMITTED) for p in topic.partitions)
        topics.append(_T(name=topic.name, partitions=partitions))
    return _R(topics=tuple(topics))


def _one(broker: Broker, topic: str, partition: int, timestamp_ms: int, read_committed: bool) -> Any:
    log = broker.topics.log(topic, partition)
    if log is None:
        return _P(partition_index=partition, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    try:
        broker.check_online(log)
    except KafkaError as error:
        return _P(partition_index=partition, error_code=error.error_code)
    if timestamp_ms == EARLIEST_TIMESTAMP:
        return _P(partition_index=partition, error_code=0, timestamp=-1, offset=log.log_start_offset, leader_epoch=0)
    fetchable_end = log.last_stable_offset if read_committed else log.high_watermark
    if timestamp_ms == LATEST_TIMESTAMP:
        return _P(partition_index=partition, error_code=0, timestamp=-1, offset=fetchable_end, leader_epoch=0)
    try:
        found = log.offset_for_timestamp(timestamp_ms)
    except KafkaError as error:
        broker.on_storage_error(error)
        return _P(partition_index=partition, error_code=error.error_code)
    if found is None or found.offset >= fetchable_end:
        return _P(partition_index=partition, error_code=0, timestamp=-1, offset=-1)
    epoch = found.leader_epoch if found.leader_epoch is not None else -1
    return _P(partition_index=partition, error_code=0, timestamp=found.timestamp, offset=found.offset,
              leader_epoch=epoch)
