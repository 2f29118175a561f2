"""ConsumerGroupHeartbeat and ConsumerGroupDescribe (KIP-848): decode, call the coordinator, encode.

The consumer group coordinator (:mod:`kafkalab.group.consumer.coordinator`) owns the state; the
handlers translate between the wire (topic ids and partition lists, ``null`` for "unchanged")
and its types. A heartbeat is answered at once: unlike JoinGroup, nothing in the consumer
protocol waits on other members.

Worked example: a Java consumer's first heartbeat for ``g`` (``member_epoch=0``, topics
``["orders"]``, ``topic_partitions=[]``) becomes ``Heartbeat(group_id="g", member_id="",
member_epoch=0, subscribed_topic_names=("orders",), owned={})``; the answer, member epoch 1 and
``{<orders id>: {0, 1, 2}}``, goes back as ``assignment.topic_partitions=[(id, [0, 1, 2])]``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kafkalab.broker.request import Request
from kafkalab.errors import ErrorCode
from kafkalab.group.consumer.coordinator import Heartbeat, HeartbeatResult
from kafkalab.group.consumer.member import Assignment
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.messages.consumer_group import (
    CONSUMER_GROUP_DESCRIBE_RESPONSE,
    CONSUMER_GROUP_HEARTBEAT_RESPONSE,
)

if TYPE_CHECKING:
    from kafkalab.broker.broker import Broker

_H = CONSUMER_GROUP_HEARTBEAT_RESPONSE.cls
_D = CONSUMER_GROUP_DESCRIBE_RESPONSE.cls


def _owned(topic_partitions: Any) -> Assignment | None:
    if topic_partitions is None:
        return None
    owned: dict[Any, frozenset[int]] = {}
    for entry in topic_partitions:
        owned[entry.topic_id] = owned.get(entry.topic_id, frozenset()) | frozenset(entry.partitions)
    return owned


def handle_consumer_group_heartbeat(broker: Broker, request: Request) -> Any:
    body = request.body
    heartbeat = Heartbeat(
        group_id=body.group_id, member_id=body.member_id, member_epoch=body.member_epoch,
        instance_id=body.instance_id, rack_id=body.rack_id, rebalance_timeout_ms=body.rebalance_timeout_ms,
        subscribed_topic_names=None if body.subscribed_topic_names is None else tuple(body.subscribed_topic_names),
        server_assignor=body.server_assignor, owned=_owned(body.topic_partitions),
        client_id=request.header.client_id or "", client_host=broker.client_hosts.get(request.connection_id, ""))
    result = broker.group_coordinator.consumer.heartbeat(heartbeat, request.now_ms)
    return _heartbeat_response(result)


def _heartbeat_response(result: HeartbeatResult) -> Any:
    assignment = None
    if result.assignment is not None:
        partitions = _H.Assignment.TopicPartitions
        assignment = _H.Assignment(topic_partitions=tuple(
            partitions(topic_id=topic_id, partitions=tuple(sorted(parts)))
            for topic_id, parts in sorted(result.assignment.items()) if parts))
    return _H(error_code=result.error_code, error_message=result.error_message, member_id=result.member_id,
              member_epoch=result.member_epoch, heartbeat_interval_ms=result.heartbeat_interval_ms,
              assignment=assignment)


def handle_consumer_group_describe(broker: Broker, request: Request) -> Any:
    return _D(groups=tuple(_describe(broker, group_id) for group_id in request.body.group_ids))


def _describe(broker: Broker, group_id: str) -> Any:
    coordinator = broker.group_coordinator
    group = coordinator.consumer.groups.get(group_id)
    if group is None:
        message = (f"Group {group_id} is not a consumer group." if coordinator.describe_group(group_id) is not None
                   else f"Group {group_id} not found.")
        return _D.DescribedGroup(error_code=ErrorCode.GROUP_ID_NOT_FOUND, error_message=message, group_id=group_id,
                                 group_state="Dead")
    names = {topic_id: name for name, (topic_id, _) in group.subscription_metadata.items()}
    member_cls = _D.DescribedGroup.Member
    members = tuple(
        member_cls(member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
                   client_id=m.client_id, client_host=m.client_host, subscribed_topic_names=m.subscribed_topic_names,
                   assignment=_assignment(m.assigned, names),
                   target_assignment=_assignment(group.target.get(m.member_id, {}), names))
        for m in group.members.values())
    return _D.DescribedGroup(error_code=0, group_id=group_id, group_state=group.state.value,
                             group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
                             assignor_name=coordinator.consumer.preferred_assignor(group.members.values()),
                             members=members)


def _assignment(assignment: Assignment, names: dict[Any, str]) -> Any:
    cls = _D.DescribedGroup.Member.Assignment
    return cls(topic_partitions=tuple(
        cls.TopicPartitions(topic_id=topic_id, topic_name=names.get(topic_id, ""), partitions=tuple(sorted(parts)))
        for topic_id, parts in sorted(assignment.items()) if parts))


CONSUMER_GROUP_HANDLERS: dict[int, Callable[[Broker, Request], Any]] = {
    ApiKey.CONSUMER_GROUP_HEARTBEAT: handle_consumer_group_heartbeat,
    ApiKey.CONSUMER_GROUP_DESCRIBE: handle_consumer_group_describe,
}
