"""The transaction coordinator in a three-broker simulated cluster: FindCoordinator names the
leader of the transactional id's ``__transaction_state`` partition, and only that broker
coordinates the id -- the others answer NOT_COORDINATOR, so the client looks it up again."""

from __future__ import annotations

from typing import Any

from kafkalab.errors import ErrorCode
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.sim.cluster import CLIENT, SimCluster
from kafkalab.txn.coordinator import TRANSACTION_STATE_TOPIC, partition_for


def _call(sim: SimCluster, node: int, api_key: int, version: int, body: dict) -> Any:
    answers: list[Any] = []
    sim._send(CLIENT, node, api_key, version, body, answers.append)
    sim.run_until(lambda: bool(answers), 60_000)
    [answer] = answers
    return answer


def test_only_the_partition_leader_coordinates_a_transactional_id(cluster: SimCluster) -> None:
    cluster.create_topic(TRANSACTION_STATE_TOPIC, 50, 3)
    leader = cluster.leader(TRANSACTION_STATE_TOPIC, partition_for("app", 50))
    for node in cluster.nodes:
        found = _call(cluster, node, ApiKey.FIND_COORDINATOR, 1, {"key": "app", "key_type": 1})
        assert (found.error_code, found.node_id) == (0, leader)
    init = {"transactional_id": "app", "transaction_timeout_ms": 60_000}
    follower = next(n for n in cluster.nodes if n != leader)
    assert _call(cluster, follower, ApiKey.INIT_PRODUCER_ID, 1, init).error_code == ErrorCode.NOT_COORDINATOR
    answer = _call(cluster, leader, ApiKey.INIT_PRODUCER_ID, 1, init)
    assert answer.error_code == 0 and answer.producer_epoch == 0
    cluster.run_for(1_000)
    for node in cluster.nodes.values():  # the record replicated like any other
        log = node.broker.topics.log(TRANSACTION_STATE_TOPIC, partition_for("app", 50))
        assert log.log_end_offset == 1


def test_find_coordinator_creates_the_transaction_state_topic_first(cluster: SimCluster) -> None:
    """Before ``__transaction_state`` exists no broker names itself: the first FindCoordinator
    creates the topic (replication factor 3, as configured) and answers COORDINATOR_NOT_AVAILABLE,
    as Kafka's ``getCoordinator`` does; asked again, every broker names the same leader."""
    asked = min(cluster.nodes)
    first = _call(cluster, asked, ApiKey.FIND_COORDINATOR, 1, {"key": "app", "key_type": 1})
    assert (first.error_code, first.node_id) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, -1)
    cluster.run_for(1_000)
    leader = cluster.leader(TRANSACTION_STATE_TOPIC, partition_for("app", 50))
    registration = cluster.controller.image.partition(
        TRANSACTION_STATE_TOPIC, partition_for("app", 50))
    assert registration is not None and len(registration.replicas) == 3
    for node in cluster.nodes:
        found = _call(cluster, node, ApiKey.FIND_COORDINATOR, 1, {"key": "app", "key_type": 1})
        assert (found.error_code, found.node_id) == (0, leader)
