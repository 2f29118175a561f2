"""Consumer-group admin requests: what Kafka's ``Admin`` client sends for kafka-consumer-groups.

Theory of operation
-------------------
Group requests must reach the group's coordinator, partition requests the partition's leader.
:class:`GroupAdmin` starts from one bootstrap connection, learns the brokers from Metadata, and
opens (and reuses) one connection per other broker it has to talk to, as Kafka's Java ``Admin``
does. Each method maps to one of that client's calls:

=========================  ==============================================
Java ``Admin``             requests (API key)
=========================  ==============================================
listConsumerGroups         ListGroups (16) to every broker
describeConsumerGroups     FindCoordinator (10), DescribeGroups (15)
listConsumerGroupOffsets   FindCoordinator, OffsetFetch (9), topics=null
alterConsumerGroupOffsets  FindCoordinator, OffsetCommit (8), generation -1
deleteConsumerGroups       FindCoordinator, DeleteGroups (42)
deleteConsumerGroupOffsets FindCoordinator, OffsetDelete (47)
listOffsets                ListOffsets (2) to each partition's leader
=========================  ==============================================

Worked example: against one broker on 127.0.0.1:9092, ``describe_group("orders-app")`` sends
FindCoordinator (answer: node 0 at 127.0.0.1:9092, the same broker), then DescribeGroups, and
returns ``GroupDescription(state="Stable", protocol="range", members=(...))`` with each member's
assignment decoded from the ConsumerProtocol bytes the group leader sent in SyncGroup.

An OffsetCommit from outside the group carries generation -1 and an empty member id; Kafka's
coordinator accepts it only while the group has no members, which is why ``--reset-offsets``
refuses to run against an active group.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kafkalab.client.connection import BrokerConnection, check_error
from kafkalab.client.consumer_protocol import PROTOCOL_TYPE, decode_assignment
from kafkalab.errors import ErrorCode, ProtocolError
from kafkalab.protocol import SCHEMAS
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.storage.checkpoints import TopicPartition

GROUP_KEY_TYPE = 0  # FindCoordinator key_type: 0 group, 1 transaction
BATCHED_FIND_COORDINATOR_VERSION = 4  # KIP-699: coordinator_keys
BATCHED_OFFSET_FETCH_VERSION = 8  # KIP-709: groups
NO_GENERATION = -1  # an OffsetCommit from outside the group
READ_UNCOMMITTED = 0  # ListOffsets isolation_level; Admin.listOffsets's default
CONSUMER_GROUP_TYPES = (PROTOCOL_TYPE, "")  # Admin.listConsumerGroups keeps these protocol types


@dataclass(frozen=True, slots=True)
class Node:
    """A broker as Metadata and FindCoordinator name it."""

    node_id: int
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class GroupListing:
    """One group as ListGroups lists it; ``state`` is "" from brokers older than ListGroups v4."""

    group_id: str
    protocol_type: str
    state: str


@dataclass(frozen=True, slots=True)
class MemberDescription:
    """One member: its ids, where it connects from, and the partitions it was assigned."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class GroupDescription:
    """A group as DescribeGroups describes it; ``state`` "Dead" means no such group."""

    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: tuple[MemberDescription, ...]
    coordinator: Node


def _cls(api_key: int) -> Any:
    return SCHEMAS[api_key][0].cls


class GroupAdmin:
    """Consumer-group admin calls over blocking connections. Not thread-safe; close it when done."""

    def __init__(self, bootstrap: BrokerConnection) -> None:
        self.bootstrap = bootstrap
        self._connections: dict[tuple[str, int], BrokerConnection] = {
            (bootstrap.host, bootstrap.port): bootstrap}

    def close(self) -> None:
        """Close the connections this object opened (the bootstrap one belongs to the caller)."""
        for conn in self._connections.values():
            if conn is not self.bootstrap:
                conn.close()
        self._connections = {(self.bootstrap.host, self.bootstrap.port): self.bootstrap}

    def connection(self, node: Node) -> BrokerConnection:
        key = (node.host, node.port)
        if key not in self._connections:
            self._connections[key] = BrokerConnection(
                node.host, node.port, request_timeout_ms=self.bootstrap.request_timeout_ms,
                client_id=self.bootstrap.protocol.client_id)
        return self._connections[key]

    def brokers(self) -> list[Node]:
        return sorted((Node(b.node_id, b.host, b.port) for b in self.bootstrap.metadata([]).brokers),
                      key=lambda n: n.node_id)

    # -- groups ---------------------------------------------------------------------------------

    def find_coordinator(self, group_id: str) -> Node:
        version = self.bootstrap.protocol.version_for(ApiKey.FIND_COORDINATOR)
        request = _cls(ApiKey.FIND_COORDINATOR)(
            key=group_id, key_type=GROUP_KEY_TYPE, coordinator_keys=(group_id,))
        response = self.bootstrap.request(ApiKey.FIND_COORDINATOR, request)
        answer = response.coordinators[0] if version >= BATCHED_FIND_COORDINATOR_VERSION else response
        check_error(answer.error_code, f"find the coordinator of group {group_id!r}", answer.error_message)
        return Node(answer.node_id, answer.host, answer.port)

    def list_groups(self) -> list[GroupListing]:
        """Consumer groups of every broker, sorted by id (``listConsumerGroups``)."""
        listings = {}
        for node in self.brokers():
            response = self.connection(node).request(ApiKey.LIST_GROUPS, _cls(ApiKey.LIST_GROUPS)(
                states_filter=(), types_filter=()))
            check_error(response.error_code, f"list groups on broker {node.node_id}")
            for g in response.groups:
                if g.protocol_type in CONSUMER_GROUP_TYPES:
                    listings[g.group_id] = GroupListing(g.group_id, g.protocol_type, g.group_state)
        return [listings[g] for g in sorted(listings)]

    def describe_group(self, group_id: str) -> GroupDescription:
        coordinator = self.find_coordinator(group_id)
        response = self.connection(coordinator).request(ApiKey.DESCRIBE_GROUPS, _cls(ApiKey.DESCRIBE_GROUPS)(
            groups=(group_id,), include_authorized_operations=False))
        (group,) = response.groups
        if group.error_code == ErrorCode.GROUP_ID_NOT_FOUND:  # v6+ says so; older versions say Dead
            return GroupDescription(group_id, "Dead", "", "", (), coordinator)
        check_error(group.error_code, f"describe group {group_id!r}", getattr(group, "error_message", None))
        members = tuple(
            MemberDescription(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                              _assigned(group.protocol_type, m.member_assignment))
            for m in group.members)
        return GroupDescription(group_id, group.group_state, group.protocol_type, group.protocol_data,
                                members, coordinator)

    def committed_offsets(self, group_id: str) -> dict[TopicPartition, int]:
        """Every committed offset of the group (OffsetFetch with topics=null)."""
        conn = self.connection(self.find_coordinator(group_id))
        request_cls = _cls(ApiKey.OFFSET_FETCH)
        batched = conn.protocol.version_for(ApiKey.OFFSET_FETCH) >= BATCHED_OFFSET_FETCH_VERSION
        request = request_cls(
            group_id=group_id, topics=None, require_stable=False,
            groups=(request_cls.OffsetFetchRequestGroup(group_id=group_id, member_id=None, topics=None),))
        response = conn.request(ApiKey.OFFSET_FETCH, request)
        answer = response.groups[0] if batched else response
        check_error(answer.error_code, f"fetch the committed offsets of group {group_id!r}")
        offsets = {}
        for topic in answer.topics:
            for p in topic.partitions:
                check_error(p.error_code, f"fetch the committed offset of {topic.name}-{p.partition_index}")
                if p.committed_offset >= 0:
                    offsets[(topic.name, p.partition_index)] = p.committed_offset
        return offsets

    def alter_offsets(self, group_id: str, offsets: dict[TopicPartition, int]) -> None:
        """Commit ``offsets`` for the group from outside it (``alterConsumerGroupOffsets``)."""
        request_cls = _cls(ApiKey.OFFSET_COMMIT)
        topic_cls = request_cls.OffsetCommitRequestTopic
        topics = tuple(
            topic_cls(name=topic, partitions=tuple(
                topic_cls.OffsetCommitRequestPartition(partition_index=p, committed_offset=offsets[(t, p)],
                                                       committed_metadata="")
                for t, p in sorted(offsets) if t == topic))
            for topic in sorted({t for t, _ in offsets}))
        conn = self.connection(self.find_coordinator(group_id))
        response = conn.request(ApiKey.OFFSET_COMMIT, request_cls(
            group_id=group_id, generation_id_or_member_epoch=NO_GENERATION, member_id="",
            group_instance_id=None, topics=topics))
        for topic in response.topics:
            for p in topic.partitions:
                check_error(p.error_code, f"commit offset {offsets[(topic.name, p.partition_index)]} "
                            f"for {topic.name}-{p.partition_index} in group {group_id!r}")

    def delete_group(self, group_id: str) -> ErrorCode:
        """DeleteGroups for one group; the error code (NONE on success)."""
        conn = self.connection(self.find_coordinator(group_id))
        response = conn.request(ApiKey.DELETE_GROUPS, _cls(ApiKey.DELETE_GROUPS)(groups_names=(group_id,)))
        (result,) = response.results
        return _code(result.error_code)

    def delete_offsets(self, group_id: str, partitions: Iterable[TopicPartition]
                       ) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        """OffsetDelete: the top-level error and one error per partition."""
        wanted = sorted(set(partitions))
        request_cls = _cls(ApiKey.OFFSET_DELETE)
        topic_cls = request_cls.OffsetDeleteRequestTopic
        topics = tuple(topic_cls(name=topic, partitions=tuple(
            topic_cls.OffsetDeleteRequestPartition(partition_index=p) for t, p in wanted if t == topic))
            for topic in sorted({t for t, _ in wanted}))
        conn = self.connection(self.find_coordinator(group_id))
        response = conn.request(ApiKey.OFFSET_DELETE, request_cls(group_id=group_id, topics=topics))
        top = _code(response.error_code)
        per_partition = {(t.name, p.partition_index): _code(p.error_code)
                         for t in response.topics for p in t.partitions}
        return top, {tp: per_partition.get(tp, top) for tp in wanted}

    # -- partitions -----------------------------------------------------------------------------

    def partitions_of(self, topics: list[str]) -> list[TopicPartition]:
        """Every partition of ``topics``; an unknown topic raises UNKNOWN_TOPIC_OR_PARTITION."""
        result: list[TopicPartition] = []
        for topic in self.bootstrap.metadata(topics).topics:
            check_error(topic.error_code, f"describe topic {topic.name!r}")
            result.extend((topic.name, p.partition_index) for p in topic.partitions)
        return sorted(result)

    def list_offsets(self, partitions: Iterable[TopicPartition], timestamp: int) -> dict[TopicPartition, int]:
        """ListOffsets at ``timestamp`` (-2 earliest, -1 latest, or a time in ms) from each leader.

        A partition with no record at or after the timestamp answers offset -1, as Kafka's does."""
        wanted = sorted(set(partitions))
        if not wanted:
            return {}
        metadata = self.bootstrap.metadata(sorted({t for t, _ in wanted}))
        nodes = {b.node_id: Node(b.node_id, b.host, b.port) for b in metadata.brokers}
        leaders = {(t.name, p.partition_index): p.leader_id for t in metadata.topics for p in t.partitions}
        by_leader: dict[int, list[TopicPartition]] = {}
        for tp in wanted:
            if leaders.get(tp, -1) not in nodes:
                raise ProtocolError(f"no leader is known for {tp[0]}-{tp[1]}")
            by_leader.setdefault(leaders[tp], []).append(tp)
        offsets = {}
        for leader, owned in by_leader.items():
            offsets.update(self._list_offsets_from(nodes[leader], owned, timestamp))
        return offsets

    def _list_offsets_from(self, node: Node, partitions: list[TopicPartition],
                           timestamp: int) -> dict[TopicPartition, int]:
        request_cls = _cls(ApiKey.LIST_OFFSETS)
        topic_cls = request_cls.ListOffsetsTopic
        topics = tuple(topic_cls(name=topic, partitions=tuple(
            topic_cls.ListOffsetsPartition(partition_index=p, timestamp=timestamp)
            for t, p in partitions if t == topic)) for topic in sorted({t for t, _ in partitions}))
        response = self.connection(node).request(ApiKey.LIST_OFFSETS, request_cls(
            replica_id=-1, isolation_level=READ_UNCOMMITTED, topics=topics))
        offsets = {}
        for topic in response.topics:
            for p in topic.partitions:
                check_error(p.error_code, f"list offsets of {topic.name}-{p.partition_index} at {timestamp}")
                offsets[(topic.name, p.partition_index)] = p.offset
        return offsets


def _assigned(protocol_type: str, assignment: bytes) -> tuple[TopicPartition, ...]:
    """A member's partitions, from ConsumerProtocol bytes (none for other protocol types)."""
    if protocol_type != PROTOCOL_TYPE or not assignment:
        return ()
    return decode_assignment(assignment).partitions


def _code(error_code: int) -> ErrorCode:
    try:
        return ErrorCode(error_code)
    except ValueError:
        return ErrorCode.UNKNOWN_SERVER_ERROR
