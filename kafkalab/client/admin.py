"""Admin requests over a :class:`~kafkalab.client.connection.BrokerConnection`.

Each function builds one request, sends it, and turns a non-zero error code into a
:class:`~kafkalab.errors.BrokerResponseError` that names the topic and Kafka's error, e.g.
``create topic 'orders' failed with TOPIC_ALREADY_EXISTS (36): Topic 'orders' already exists.``
These are what ``kafkalab topics`` calls; they mirror the calls Kafka's ``TopicCommand`` makes
through the Java ``Admin`` client (createTopics, listTopics, describeTopics, describeConfigs,
createPartitions, deleteTopics, listPartitionReassignments).

Worked example: ``create_topic(conn, "orders", partitions=3, replication_factor=1,
configs={"retention.ms": "3600000"})`` sends CreateTopics with one ``CreatableTopic`` and
returns once the broker has created all three partitions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafkalab.client.connection import BrokerConnection, check_error
from kafkalab.protocol import SCHEMAS
from kafkalab.protocol.api_keys import ApiKey

TOPIC_RESOURCE_TYPE = 2  # ConfigResource.Type.TOPIC
OP_SET = 0  # IncrementalAlterConfigs operation SET
DEFAULT_CONFIG_SOURCE = 5  # DescribeConfigsResponse.ConfigSource.DEFAULT_CONFIG
ADMIN_TIMEOUT_MS = 30_000  # default.api.timeout.ms's share the broker may wait


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """One partition as Metadata describes it."""

    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """One topic as Metadata describes it; ``topic_id`` is None when the broker sends none."""

    name: str
    topic_id: bytes | None
    is_internal: bool
    partitions: tuple[PartitionInfo, ...]


def _cls(api_key: int) -> Any:
    return SCHEMAS[api_key][0].cls


def create_topic(conn: BrokerConnection, name: str, *, partitions: int, replication_factor: int,
                 configs: dict[str, str]) -> None:
    request = _cls(ApiKey.CREATE_TOPICS)
    topic = request.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=replication_factor,
        configs=tuple(request.CreatableTopic.CreatableTopicConfig(name=k, value=v) for k, v in configs.items()),
    )
    response = conn.request(ApiKey.CREATE_TOPICS, request(topics=(topic,), timeout_ms=ADMIN_TIMEOUT_MS))
    for result in response.topics:
        check_error(result.error_code, f"create topic {result.name!r}", result.error_message)


def delete_topics(conn: BrokerConnection, names: list[str]) -> None:
    response = conn.request(ApiKey.DELETE_TOPICS, _cls(ApiKey.DELETE_TOPICS)(
        topic_names=tuple(names), timeout_ms=ADMIN_TIMEOUT_MS))
    for result in response.responses:
        check_error(result.error_code, f"delete topic {result.name!r}", result.error_message)


def describe_topics(conn: BrokerConnection, names: list[str] | None = None) -> list[TopicInfo]:
    """Metadata for ``names`` (None = every topic), sorted by name; unknown names raise."""
    topics = []
    for topic in conn.metadata(names).topics:
        check_error(topic.error_code, f"describe topic {topic.name!r}")
        topic_id = getattr(topic, "topic_id", None)
        partitions = tuple(sorted(
            (PartitionInfo(p.partition_index, p.leader_id, tuple(p.replica_nodes), tuple(p.isr_nodes))
             for p in topic.partitions), key=lambda p: p.partition))
        topics.append(TopicInfo(topic.name, topic_id.bytes if topic_id and topic_id.int else None,
                                topic.is_internal, partitions))
    return sorted(topics, key=lambda t: t.name)


def describe_topic_configs(conn: BrokerConnection, name: str) -> list[tuple[str, str | None, bool]]:
    """``(name, value, is_default)`` for every config of topic ``name``, in the broker's order."""
    request = _cls(ApiKey.DESCRIBE_CONFIGS)
    resource = request.DescribeConfigsResource(
        resource_type=TOPIC_RESOURCE_TYPE, resource_name=name, configuration_keys=None)
    response = conn.request(ApiKey.DESCRIBE_CONFIGS, request(resources=(resource,)))
    (result,) = response.results
    check_error(result.error_code, f"describe configs of topic {name!r}", result.error_message)
    return [(c.name, c.value, c.config_source == DEFAULT_CONFIG_SOURCE) for c in result.configs]


def create_partitions(conn: BrokerConnection, name: str, count: int) -> None:
    request = _cls(ApiKey.CREATE_PARTITIONS)
    topic = request.CreatePartitionsTopic(name=name, count=count, assignments=None)
    response = conn.request(ApiKey.CREATE_PARTITIONS, request(
        topics=(topic,), timeout_ms=ADMIN_TIMEOUT_MS, validate_only=False))
    for result in response.results:
        check_error(result.error_code, f"increase the partitions of {result.name!r} to {count}",
                    result.error_message)


Reassignment = tuple[list[int], list[int], list[int]]  # a partition's replicas, adding, removing


def list_partition_reassignments(conn: BrokerConnection,
                                 partitions: list[tuple[str, int]] | None = None) -> dict[tuple[str, int], Reassignment]:
    """ListPartitionReassignments: the partitions asked for (None = all) that are being moved."""
    request = _cls(ApiKey.LIST_PARTITION_REASSIGNMENTS)
    topics = None
    if partitions is not None:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        topics = tuple(request.ListPartitionReassignmentsTopics(name=t, partition_indexes=tuple(p))
                       for t, p in by_topic.items())
    response = conn.request(ApiKey.LIST_PARTITION_REASSIGNMENTS, request(timeout_ms=ADMIN_TIMEOUT_MS, topics=topics))
    check_error(response.error_code, "list partition reassignments", response.error_message)
    return {(t.name, p.partition_index): (list(p.replicas), list(p.adding_replicas), list(p.removing_replicas))
            for t in response.topics for p in t.partitions}


def set_topic_configs(conn: BrokerConnection, name: str, configs: dict[str, str]) -> None:
    """IncrementalAlterConfigs SET of each ``key=value`` on topic ``name`` (KIP-339)."""
    request = _cls(ApiKey.INCREMENTAL_ALTER_CONFIGS)
    resource_cls = request.AlterConfigsResource
    resource = resource_cls(resource_type=TOPIC_RESOURCE_TYPE, resource_name=name, configs=tuple(
        resource_cls.AlterableConfig(name=k, config_operation=OP_SET, value=v) for k, v in configs.items()))
    response = conn.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, request(resources=(resource,), validate_only=False))
    for result in response.responses:
        check_error(result.error_code, f"alter configs of topic {name!r}", result.error_message)
