"""CreateTopics, DeleteTopics, CreatePartitions and DeleteRecords: the admin APIs.

A single broker can hold one replica of each partition, so a replication factor other than 1
(or -1, "the default", KIP-464) is refused with INVALID_REPLICATION_FACTOR, and an explicit
assignment must name only this broker. Topic configs given at creation are validated against
Kafka's topic keys and stored as the topic's dynamic configs, where DescribeConfigs finds them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkalab.broker.request import Request
from kafkalab.broker.topics import TopicError, validate_topic_name
from kafkalab.config.resolve import describe_topic_config
from kafkalab.config.definitions import TOPIC_KEYS
from kafkalab.config.resolve import validate_topic_configs
from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.protocol.messages.delete_records import DELETE_RECORDS_RESPONSE
from kafkalab.protocol.messages.topics import (
    CREATE_PARTITIONS_RESPONSE,
    CREATE_TOPICS_RESPONSE,
    DELETE_TOPICS_RESPONSE,
)

if TYPE_CHECKING:
    from kafkalab.broker.broker import Broker

_CT = CREATE_TOPICS_RESPONSE.cls
_CTR = _CT.CreatableTopicResult
TOPIC_CONFIG_SOURCES = {  # kafkalab.config's sources -> Kafka's DescribeConfigs source ids
    "DYNAMIC_TOPIC_CONFIG": 1, "DYNAMIC_BROKER_CONFIG": 2, "DYNAMIC_DEFAULT_BROKER_CONFIG": 3,
    "STATIC_BROKER_CONFIG": 4, "DEFAULT_CONFIG": 5,
}


def handle_create_topics(broker: Broker, request: Request) -> Any:
    body = request.body
    results = tuple(_create_one(broker, topic, body.validate_only) for topic in body.topics)
    return _CT(topics=results)


def _create_one(broker: Broker, topic: Any, validate_only: bool) -> Any:
    try:
        partitions = _check_create(broker, topic)
        configs = {c.name: c.value for c in topic.configs if c.value is not None}
        validate_topic_configs(configs)
        if validate_only:
            return _CTR(name=topic.name, error_code=0, num_partitions=partitions, replication_factor=1)
        if configs:
            broker.config_store.alter("topics", topic.name, add=configs)
        try:
            info = broker.topics.create(topic.name, partitions)
        except KafkaError:
            if configs:
                broker.config_store.alter("topics", topic.name, add={}, delete=list(configs))
            raise
    except KafkaError as error:
        return _CTR(name=topic.name, error_code=error.error_code, error_message=str(error))
    return _CTR(
        name=topic.name, topic_id=info.topic_id, error_code=0, num_partitions=partitions,
        replication_factor=1, configs=_created_configs(broker, topic.name),
    )


def _check_create(broker: Broker, topic: Any) -> int:
    validate_topic_name(topic.name)
    if broker.topics.get(topic.name) is not None:
        raise TopicError(f"Topic '{topic.name}' already exists.", error_code=ErrorCode.TOPIC_ALREADY_EXISTS)
    if topic.assignments:
        if topic.num_partitions != -1 or topic.replication_factor != -1:
            raise TopicError("Both numPartitions or replicationFactor and replicasAssignments were set. "
                             "Both cannot be used at the same time.", error_code=ErrorCode.INVALID_REQUEST)
        for assignment in topic.assignments:
            if list(assignment.broker_ids) != [broker.settings.node_id]:
                raise TopicError(
                    f"partition {assignment.partition_index} is assigned to brokers "
                    f"{list(assignment.broker_ids)}; only broker {broker.settings.node_id} exists",
                    error_code=ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                )
        return len(topic.assignments)
    replication = topic.replication_factor
    replication = broker.settings.default_replication_factor if replication == -1 else replication
    if replication != 1:
        raise TopicError(
            f"Unable to replicate the partition {replication} time(s): The target replication factor "
            f"of {replication} cannot be reached because only 1 broker(s) are registered.",
            error_code=ErrorCode.INVALID_REPLICATION_FACTOR,
        )
    partitions = broker.settings.num_partitions if topic.num_partitions == -1 else topic.num_partitions
    if partitions < 1:
        raise TopicError(f"Number of partitions was set to an invalid non-positive value {partitions}.",
                         error_code=ErrorCode.INVALID_PARTITIONS)
    return partitions


def _created_configs(broker: Broker, topic: str) -> tuple[Any, ...]:
    layers = broker.config_store.layers()
    entries = (describe_topic_config(layers, topic, name, str(broker.settings.node_id)) for name in sorted(TOPIC_KEYS))
    return tuple(
        _CTR.CreatableTopicConfigs(
            name=e.name, value=None if e.sensitive else e.value, read_only=e.read_only,
            config_source=TOPIC_CONFIG_SOURCES[e.source.value], is_sensitive=e.sensitive,
        )
        for e in entries
    )


def handle_delete_topics(broker: Broker, request: Request) -> Any:
    R = DELETE_TOPICS_RESPONSE.cls
    results = []
    for name in request.body.topic_names:
        try:
            broker.topics.delete(name)
        except KafkaError as error:
            results.append(R.DeletableTopicResult(name=name, error_code=error.error_code, error_message=str(error)))
            continue
        existing = broker.config_store.get("topics", name)
        if existing:
            broker.config_store.alter("topics", name, add={}, delete=list(existing))
        results.append(R.DeletableTopicResult(name=name, error_code=0))
    return R(responses=tuple(results))


def handle_create_partitions(broker: Broker, request: Request) -> Any:
    R = CREATE_PARTITIONS_RESPONSE.cls
    results = []
    for topic in request.body.topics:
        try:
            _grow(broker, topic, request.body.validate_only)
        except KafkaError as error:
            results.append(R.CreatePartitionsTopicResult(topic.name, error.error_code, str(error)))
            continue
        results.append(R.CreatePartitionsTopicResult(topic.name, 0, None))
    return R(results=tuple(results))


def _grow(broker: Broker, topic: Any, validate_only: bool) -> None:
    info = broker.topics.get(topic.name)
    if info is None:
        raise TopicError(f"The topic '{topic.name}' does not exist.", error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if topic.count <= info.partition_count:
        raise TopicError(
            f"Topic currently has {info.partition_count} partitions, which is higher than or equal "
            f"to the requested {topic.count}.", error_code=ErrorCode.INVALID_PARTITIONS,
        )
    if topic.assignments is not None:
        for assignment in topic.assignments:
            if list(assignment.broker_ids) != [broker.settings.node_id]:
                raise TopicError(f"assignment {list(assignment.broker_ids)} names unknown brokers",
                                 error_code=ErrorCode.INVALID_REPLICA_ASSIGNMENT)
    if not validate_only:
        broker.topics.add_partitions(topic.name, topic.count)


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
