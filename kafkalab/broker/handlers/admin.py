"""The admin APIs: those the controller decides, and DeleteRecords, which the partition leader does.

CreateTopics, DeleteTopics, CreatePartitions, AlterConfigs, IncrementalAlterConfigs,
ElectLeaders, AlterPartitionReassignments and ListPartitionReassignments are the controller's
(:mod:`kafkalab.controller.controller_apis`). :func:`handle_forwardable` is Kafka's
``KafkaApis.maybeForwardToController``: a cluster's broker wraps the request in an Envelope for
the active controller and answers once the controller has (:mod:`kafkalab.broker.forwarding`);
a lone broker, its own controller, runs the controller's handler in process. Either way the
same rules decide: a CreateTopics with replication factor 3 on a lone broker answers
INVALID_REPLICATION_FACTOR, "... only 1 broker(s) are registered.", and in a cluster of three
it creates the topic.

DeleteRecords moves a partition's log start offset; the leader does that itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkalab.broker.request import PENDING, Request
from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.protocol.messages.delete_records import DELETE_RECORDS_RESPONSE

if TYPE_CHECKING:
    from kafkalab.broker.broker import Broker


def handle_forwardable(broker: Broker, request: Request) -> Any:
    """Decide in process on a lone broker; forward to the active controller in a cluster."""
    if broker.forwarding is None:
        assert broker.controller_apis is not None, "a lone broker is its own controller"
        return broker.controller_apis.handle(request.header.api_key, request.body)
    broker.forwarding.forward(request, broker.client_hosts.get(request.connection_id))
    return PENDING  # answered with the controller's response


def handle_delete_records(broker: Broker, request: Request) -> Any:
    R = DELETE_RECORDS_RESPONSE.cls
    topics = []
    for topic in request.body.topics:
        partitions = tuple(_delete_before(broker, topic.name, p.partition_index, p.offset) for p in topic.partitions)
        topics.append(R.DeleteRecordsTopicResult(name=topic.name, partitions=partitions))
    return R(topics=tuple(topics))


def _delete_before(broker: Broker, topic: str, partition: int, offset: int) -> Any:
    P = DELETE_RECORDS_RESPONSE.cls.DeleteRecordsTopicResult.DeleteRecordsPartitionResult
    log = broker.topics.log(topic, partition)
    if log is None:
        return P(partition, -1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    target = log.high_watermark if offset == -1 else offset
    if target < 0 or target > log.high_watermark:
        return P(partition, -1, ErrorCode.OFFSET_OUT_OF_RANGE)
    try:
        low_watermark = broker.log_store.delete_records(topic, partition, target)
    except KafkaError as error:
        return P(partition, -1, error.error_code)
    return P(partition, low_watermark, 0)
