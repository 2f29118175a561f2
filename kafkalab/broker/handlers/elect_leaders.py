"""ElectLeaders: hand the request to the controller, answer each partition's outcome.

The controller decides and writes the PartitionChangeRecords
(:meth:`~kafkalab.controller.local.LocalController.elect_leaders`); the new image then moves
leadership on every broker, as for any other change. Version 0 knows only preferred elections.
An unknown election type fails the whole request with INVALID_REQUEST, as Kafka's controller
does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkalab.broker.request import Request
from kafkalab.controller.partition_change import Election
from kafkalab.errors import ErrorCode
from kafkalab.protocol.messages.elect_leaders import ELECT_LEADERS_RESPONSE, PREFERRED, UNCLEAN

if TYPE_CHECKING:
    from kafkalab.broker.broker import Broker

ELECTIONS = {PREFERRED: Election.PREFERRED, UNCLEAN: Election.UNCLEAN}  # ElectionType value -> rule


def handle_elect_leaders(broker: Broker, request: Request) -> Any:
    body = request.body
    R = ELECT_LEADERS_RESPONSE.cls
    election = ELECTIONS.get(body.election_type)
    if election is None:
        return R(error_code=ErrorCode.INVALID_REQUEST)
    wanted = None if body.topic_partitions is None else [
        (t.topic, p) for t in body.topic_partitions for p in t.partitions]
    # Every topic asked for (or, for all partitions, every topic) is answered, even if empty.
    names = sorted(broker.image.topics) if wanted is None else [t.topic for t in body.topic_partitions]
    by_topic: dict[str, list[Any]] = {name: [] for name in names}
    for topic, partition, error, message in broker.controller.elect_leaders(election, wanted):
        by_topic.setdefault(topic, []).append(R.ReplicaElectionResult.PartitionResult(
            partition_id=partition, error_code=error, error_message=message))
    return R(replica_election_results=tuple(
        R.ReplicaElectionResult(topic=topic, partition_result=tuple(results)) for topic, results in by_topic.items()))
