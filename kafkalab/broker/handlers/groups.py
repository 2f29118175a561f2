"""FindCoordinator and the classic group APIs: decode, call the group coordinator, encode.

The handlers never touch group state; :class:`kafkalab.group.coordinator.GroupCoordinator`
owns it. JoinGroup and SyncGroup may have to wait (for the other members, for the leader's
assignment): the coordinator then keeps the ``respond`` callback given here and the handler
returns PENDING, as a parked fetch does. The connection sends nothing else meanwhile (one
request in flight per connection); other connections carry on.

FindCoordinator for a group names the leader of the group's ``__consumer_offsets`` partition
(:mod:`kafkalab.broker.coordinator_partitions`), creating the topic first if it is missing; a
broker that does not coordinate a group answers its requests NOT_COORDINATOR.

Worked example: kafka-python's JoinGroup v5 for a new group returns PENDING; three seconds later
(``group.initial.rebalance.delay.ms``) the coordinator completes the join and the callback puts
the JoinGroup response on the connection's outbox.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kafkalab.broker.coordinator_partitions import CoordinatorAnswer, coordinator_of
from kafkalab.broker.handlers.txn import transaction_coordinators
from kafkalab.broker.request import PENDING, Request
from kafkalab.broker.topics import TopicError
from kafkalab.errors import ErrorCode
from kafkalab.group.coordinator import JoinRequest, JoinResult, SyncResult
from kafkalab.group.partitioner import OFFSETS_TOPIC
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.messages.find_coordinator import FIND_COORDINATOR_RESPONSE
from kafkalab.protocol.messages.group_admin import (
    DELETE_GROUPS_RESPONSE,
    DESCRIBE_GROUPS_RESPONSE,
    LIST_GROUPS_RESPONSE,
)
from kafkalab.protocol.messages.group_membership import (
    HEARTBEAT_RESPONSE,
    JOIN_GROUP_RESPONSE,
    LEAVE_GROUP_RESPONSE,
    SYNC_GROUP_RESPONSE,
)

if TYPE_CHECKING:
    from kafkalab.broker.broker import Broker

GROUP_KEY_TYPE = 0  # FindCoordinator key_type: 0 group, 1 transaction
TRANSACTION_KEY_TYPE = 1
BATCHED_FIND_COORDINATOR_VERSION = 4  # KIP-699
_FC = FIND_COORDINATOR_RESPONSE.cls


def handle_find_coordinator(broker: Broker, request: Request) -> Any:
    body = request.body
    if request.header.api_version >= BATCHED_FIND_COORDINATOR_VERSION:
        keys = body.coordinator_keys
    else:
        keys = (body.key,)
    found: dict[str, CoordinatorAnswer] = {}
    if body.key_type == TRANSACTION_KEY_TYPE:
        named = [key for key in keys if key]  # a transactional id is never empty
        found = dict(zip(named, transaction_coordinators(broker, named), strict=True))
    elif body.key_type == GROUP_KEY_TYPE:
        found = {key: group_coordinator_of(broker, key) for key in keys}
    answers = [_coordinator(key, found.get(key), body.key_type) for key in keys]
    if request.header.api_version >= BATCHED_FIND_COORDINATOR_VERSION:
        return _FC(coordinators=tuple(answers))
    one = answers[0]
    return _FC(error_code=one.error_code, error_message=one.error_message, node_id=one.node_id,
               host=one.host, port=one.port)


def _coordinator(key: str, found: CoordinatorAnswer | None, key_type: int) -> Any:
    if found is None:
        return _FC.Coordinator(key=key, node_id=-1, host="", port=-1, error_code=ErrorCode.INVALID_REQUEST,
                               error_message=f"no coordinator for key type {key_type} and key {key!r}")
    return _FC.Coordinator(key=key, node_id=found.node_id, host=found.host, port=found.port,
                           error_code=found.error_code)


def group_coordinator_of(broker: Broker, group_id: str) -> CoordinatorAnswer:
    """The leader of the group's ``__consumer_offsets`` partition. The topic is created first
    if missing, as Kafka's FindCoordinator does; while it cannot be (too few brokers for
    ``offsets.topic.replication.factor``) the answer is COORDINATOR_NOT_AVAILABLE."""
    try:
        broker.offsets_log.ensure_topic()
    except TopicError:
        return CoordinatorAnswer(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    return coordinator_of(broker.image, OFFSETS_TOPIC, broker.group_coordinator.partition_of(group_id))


def _responder(broker: Broker, request: Request, encode: Any) -> Any:
    header, connection_id = request.header, request.connection_id

    def respond(result: Any) -> None:
        broker.respond(connection_id, header.api_key, header.api_version, header.correlation_id, encode(result))

    return respond


def _join_response(result: JoinResult) -> Any:
    member = JOIN_GROUP_RESPONSE.cls.JoinGroupResponseMember
    return JOIN_GROUP_RESPONSE.cls(
        error_code=result.error_code, generation_id=result.generation_id,
        protocol_type=result.protocol_type, protocol_name=result.protocol_name or "",
        leader=result.leader_id, member_id=result.member_id,
        members=tuple(member(member_id=m, group_instance_id=i, metadata=d) for m, i, d in result.members),
    )


def handle_join_group(broker: Broker, request: Request) -> Any:
    body = request.body
    join = JoinRequest(
        group_id=body.group_id, member_id=body.member_id, group_instance_id=body.group_instance_id,
        client_id=request.header.client_id or "", client_host=broker.client_hosts.get(request.connection_id, ""),
        session_timeout_ms=body.session_timeout_ms,
        rebalance_timeout_ms=body.rebalance_timeout_ms if body.rebalance_timeout_ms >= 0 else body.session_timeout_ms,
        protocol_type=body.protocol_type, protocols=tuple((p.name, p.metadata) for p in body.protocols),
        api_version=request.header.api_version,
    )
    respond = _responder(broker, request, _join_response)
    result = broker.group_coordinator.join_group(join, request.now_ms, respond)
    return PENDING if result is None else _join_response(result)


def _sync_response(result: SyncResult) -> Any:
    return SYNC_GROUP_RESPONSE.cls(error_code=result.error_code, protocol_type=result.protocol_type,
                                   protocol_name=result.protocol_name, assignment=result.assignment)


def handle_sync_group(broker: Broker, request: Request) -> Any:
    body = request.body
    respond = _responder(broker, request, _sync_response)
    result = broker.group_coordinator.sync_group(
        body.group_id, body.generation_id, body.member_id, body.group_instance_id, body.protocol_type,
        body.protocol_name, [(a.member_id, a.assignment) for a in body.assignments], request.now_ms, respond)
    return PENDING if result is None else _sync_response(result)


def handle_heartbeat(broker: Broker, request: Request) -> Any:
    body = request.body
    error = broker.group_coordinator.heartbeat(body.group_id, body.generation_id, body.member_id,
                                               body.group_instance_id, request.now_ms)
    return HEARTBEAT_RESPONSE.cls(error_code=error)


def handle_leave_group(broker: Broker, request: Request) -> Any:
    body = request.body
    batched = request.header.api_version >= 3
    leaving = [(m.member_id, m.group_instance_id) for m in body.members] if batched else [(body.member_id, None)]
    errors = broker.group_coordinator.leave_group(body.group_id, leaving, request.now_ms)
    _R = LEAVE_GROUP_RESPONSE.cls
    if not batched:
        return _R(error_code=errors[0])
    members = tuple(_R.MemberResponse(member_id=m, group_instance_id=i, error_code=e)
                    for (m, i), e in zip(leaving, errors))
    return _R(error_code=0, members=members)


def handle_list_groups(broker: Broker, request: Request) -> Any:
    body = request.body
    _R = LIST_GROUPS_RESPONSE.cls
    coordinator = broker.group_coordinator
    groups = [(*group, "classic") for group in coordinator.list_groups(body.states_filter, body.types_filter)]
    groups += [(*group, "consumer") for group in coordinator.consumer.list_groups(body.states_filter,
                                                                                  body.types_filter)]
    return _R(error_code=0, groups=tuple(
        _R.ListedGroup(group_id=g, protocol_type=t, group_state=s, group_type=k) for g, t, s, k in sorted(groups)))


def handle_describe_groups(broker: Broker, request: Request) -> Any:
    _R = DESCRIBE_GROUPS_RESPONSE.cls
    return _R(groups=tuple(_describe(broker, group_id, request.header.api_version) for group_id in request.body.groups))


def _describe(broker: Broker, group_id: str, version: int) -> Any:
    described = DESCRIBE_GROUPS_RESPONSE.cls.DescribedGroup
    error = broker.group_coordinator.coordinator_error(group_id)
    if error:
        return described(error_code=error, group_id=group_id, group_state="")
    group = broker.group_coordinator.describe_group(group_id)
    if group is None:  # Kafka: a Dead group, and from v6 GROUP_ID_NOT_FOUND
        code = ErrorCode.GROUP_ID_NOT_FOUND if version >= 6 else 0
        return described(error_code=code, group_id=group_id, group_state="Dead")
    stable = group.state.value == "Stable"
    members = tuple(
        described.DescribedGroupMember(
            member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
            client_host=m.client_host,
            member_metadata=m.metadata(group.protocol_name) if stable and group.protocol_name else b"",
            member_assignment=m.assignment if stable else b"")
        for m in group.members.values()
    )
    return described(error_code=0, group_id=group_id, group_state=group.state.value,
                     protocol_type=group.protocol_type or "",
                     protocol_data=(group.protocol_name or "") if stable else "", members=members)


def handle_delete_groups(broker: Broker, request: Request) -> Any:
    _R = DELETE_GROUPS_RESPONSE.cls
    results = tuple(
        _R.DeletableGroupResult(group_id=g, error_code=broker.group_coordinator.delete_group(g, request.now_ms))
        for g in request.body.groups_names
    )
    return _R(results=results)


GROUP_HANDLERS: dict[int, Callable[[Broker, Request], Any]] = {
    ApiKey.FIND_COORDINATOR: handle_find_coordinator,
    ApiKey.JOIN_GROUP: handle_join_group,
    ApiKey.SYNC_GROUP: handle_sync_group,
    ApiKey.HEARTBEAT: handle_heartbeat,
    ApiKey.LEAVE_GROUP: handle_leave_group,
    ApiKey.LIST_GROUPS: handle_list_groups,
    ApiKey.DESCRIBE_GROUPS: handle_describe_groups,
    ApiKey.DELETE_GROUPS: handle_delete_groups,
}
