"""ApiVersions and Metadata: what a client asks before anything else.

Metadata answers with this one broker (at its advertised address) as the leader, only replica
and only in-sync replica of every partition. Unknown topics are created on the spot when both the
request (``allow_auto_topic_creation``, v4+) and the broker (``auto.create.topics.enable``) allow
it, with ``num.partitions`` partitions, mirroring Kafka's ``AutoTopicCreationManager``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkalab.broker.request import Request
from kafkalab.broker.topics import TopicError, TopicInfo, validate_topic_name
from kafkalab.errors import ErrorCode
from kafkalab.protocol.messages.api_versions import API_VERSIONS_RESPONSE
from kafkalab.protocol.messages.metadata import METADATA_RESPONSE
from kafkalab.protocol.versions import ADVERTISED

if TYPE_CHECKING:
    from kafkalab.broker.broker import Broker

_M = METADATA_RESPONSE.cls


def handle_api_versions(broker: Broker, request: Request) -> Any:
    keys = tuple(
        API_VERSIONS_RESPONSE.cls.ApiVersion(api_key, low, high)
        for api_key, (low, high) in sorted(ADVERTISED.items())
    )
    return API_VERSIONS_RESPONSE.cls(error_code=0, api_keys=keys)


def handle_metadata(broker: Broker, request: Request) -> Any:
    body = request.body
    if body.topics is None or (request.header.api_version == 0 and not body.topics):
        names = broker.topics.names()  # v0 uses an empty list to mean "all topics"
    else:
        names = [t.name for t in body.topics if t.name is not None]
    may_create = body.allow_auto_topic_creation and broker.settings.auto_create_topics_enable
    topics = tuple(_describe_topic(broker, name, may_create) for name in names)
    image = broker.image
    return _M(
        brokers=tuple(_M.MetadataResponseBroker(b.broker_id, b.host, b.port, b.rack)
                      for b in sorted(image.brokers.values(), key=lambda b: b.broker_id) if not b.fenced),
        cluster_id=broker.settings.cluster_id,
        controller_id=broker.settings.node_id,
        topics=topics,
    )


def _describe_topic(broker: Broker, name: str, may_create: bool) -> Any:
    if broker.topics.get(name) is None and may_create:
        try:
            auto_create_topic(broker, name)
        except TopicError as error:
            return _M.MetadataResponseTopic(error_code=error.error_code, name=name)
    topic = broker.image.topics.get(name)
    if topic is None:
        return _M.MetadataResponseTopic(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=name)
    partitions = tuple(
        _M.MetadataResponseTopic.MetadataResponsePartition(
            error_code=ErrorCode.LEADER_NOT_AVAILABLE if p.leader < 0 else 0, partition_index=index,
            leader_id=p.leader, leader_epoch=p.leader_epoch, replica_nodes=p.replicas, isr_nodes=p.isr,
        )
        for index, p in sorted(topic.partitions.items())
    )
    return _M.MetadataResponseTopic(
        error_code=0, name=name, topic_id=topic.topic_id, is_internal=name.startswith("__"),
        partitions=partitions,
    )


def auto_create_topic(broker: Broker, name: str) -> TopicInfo:
    """Create ``name`` with the broker's default partition count (auto.create.topics.enable): at
    once on a lone broker; a cluster's asks the controller and answers LEADER_NOT_AVAILABLE
    until the topic arrives (Kafka's AutoTopicCreationManager)."""
    validate_topic_name(name)
    return broker.topics.create(name, broker.settings.num_partitions, broker.settings.default_replication_factor)
