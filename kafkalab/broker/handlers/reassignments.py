"""AlterPartitionReassignments and ListPartitionReassignments: hand them to the controller.

The controller decides and writes the PartitionChangeRecords
(:meth:`~kafkalab.controller.local.LocalController.alter_partition_reassignments`); the images it
publishes then move the replicas on every broker -- a new replica starts following, a removed
one stops and deletes its log -- as for any other change. Whether a cancelled reassignment may
need an unclean election is the topic's ``unclean.leader.election.enable``.

Worked example: on a single node (broker 1), a target [1] for ``orders-0`` answers error 0 and
changes nothing (a no-op writes no record); a target [2] answers INVALID_REPLICA_ASSIGNMENT (39),
"The manual partition assignment includes broker 2, but no such broker is registered.".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkalab.broker.request import Request
from kafkalab.config.resolve import topic_value
from kafkalab.protocol.messages.reassignments import (
    ALTER_PARTITION_REASSIGNMENTS_RESPONSE,
    LIST_PARTITION_REASSIGNMENTS_RESPONSE,
)

if TYPE_CHECKING:
    from kafkalab.broker.broker import Broker


def handle_alter_partition_reassignments(broker: Broker, request: Request) -> Any:
    body = request.body
    R = ALTER_PARTITION_REASSIGNMENTS_RESPONSE.cls
    node = str(broker.settings.node_id)

    def unclean(name: str) -> bool:
        return bool(topic_value(broker.config_store.layers(), name, "unclean.leader.election.enable", node))
    targets = [(t.name, p.partition_index, p.replicas) for t in body.topics for p in t.partitions]
    outcome = {(t, i): (error, message) for t, i, error, message in broker.controller.alter_partition_reassignments(
        targets, unclean, allow_replication_factor_change=body.allow_replication_factor_change)}
    return R(responses=tuple(
        R.ReassignableTopicResponse(name=topic.name, partitions=tuple(
            R.ReassignableTopicResponse.ReassignablePartitionResponse(
                partition_index=p.partition_index, error_code=outcome[(topic.name, p.partition_index)][0],
                error_message=outcome[(topic.name, p.partition_index)][1])
            for p in topic.partitions))
        for topic in body.topics))


def handle_list_partition_reassignments(broker: Broker, request: Request) -> Any:
    topics = request.body.topics
    R = LIST_PARTITION_REASSIGNMENTS_RESPONSE.cls
    wanted = None if topics is None else [(t.name, t.partition_indexes) for t in topics]
    by_topic: dict[str, list[Any]] = {}
    for name, index, registration in broker.controller.list_partition_reassignments(wanted):
        by_topic.setdefault(name, []).append(R.OngoingTopicReassignment.OngoingPartitionReassignment(
            partition_index=index, replicas=registration.replicas, adding_replicas=registration.adding_replicas,
            removing_replicas=registration.removing_replicas))
    return R(topics=tuple(R.OngoingTopicReassignment(name=name, partitions=tuple(partitions))
                          for name, partitions in by_topic.items()))


__all__ = ["handle_alter_partition_reassignments", "handle_list_partition_reassignments"]
