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
    settings = broker.settings
    return _M(
        brokers=(_M.MetadataResponseBroker(settings.node_id, settings.host, settings.port, settings.rack),),
        cluster_id=settings.cluster_id,
        controller_id=settings.node_id,
        topics=topics,
    )


def _describe_topic(broker: Broker, name: str, may_create: bool) -> Any:
    info = broker.topics.get(name)
    if info is None and may_create:
        try:
            info = auto_create_topic(broker, name)
        except TopicError as error:
            return _M.MetadataResponseTopic(error_code=error.error_code, name=name)
    if info is None:
        return _M.MetadataResponseTopic(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=name)
    node = broker.settings.node_id
    partitions = tuple(
        _M.MetadataResponseTopic.MetadataResponsePartition(
            error_code=0, partition_index=p, leader_id=node, leader_epoch=0,
            replica_nodes=(node,), isr_nodes=(node,),
        )
        for p in range(info.partition_count)
    )
    return _M.MetadataResponseTopic(
        error_code=0, name=name, topic_id=info.topic_id, is_internal=name.startswith("__"),
        partitions=partitions,
    )


def auto_create_topic(broker: Broker, name: str) -> TopicInfo:
    """Create ``name`` with the broker's default partition count (auto.create.topics.enable)."""
    validate_topic_name(name)
    return broker.topics.create(name, broker.settings.num_partitions, broker.config_store.topic_properties(name))
