"""CoordinatorPartitions and coordinator_of: the routing any internal-topic coordinator shares."""

from __future__ import annotations

from kafkalab.broker.coordinator_partitions import (
    CoordinatorPartitions,
    coordinator_of,
    internal_topic_replication_factor,
)
from kafkalab.errors import ErrorCode
from kafkalab.metadata.image import BrokerRegistration, MetadataImage, PartitionRegistration, TopicImage

TOPIC = "__consumer_offsets"


def test_elections_load_and_resignations_unload_only_their_topic() -> None:
    calls: list[tuple[str, int]] = []
    partitions = CoordinatorPartitions(TOPIC, lambda p: calls.append(("load", p)),
                                       lambda p: calls.append(("unload", p)))
    assert partitions.error_for(3) == ErrorCode.NOT_COORDINATOR
    partitions.follow([(TOPIC, 3), ("orders", 3)], [])
    assert calls == [("load", 3)] and partitions.error_for(3) == ErrorCode.NONE
    partitions.follow([(TOPIC, 3)], [])  # a new leader epoch: reload
    assert calls[1:] == [("unload", 3), ("load", 3)]
    partitions.follow([], [(TOPIC, 3), (TOPIC, 4)])  # 4 was never led: nothing to unload
    assert calls[3:] == [("unload", 3)] and partitions.error_for(3) == ErrorCode.NOT_COORDINATOR


def test_requests_during_a_load_are_told_to_wait() -> None:
    seen: list[int] = []
    partitions: CoordinatorPartitions

    def load(partition: int) -> None:
        seen.append(partitions.error_for(partition))

    partitions = CoordinatorPartitions(TOPIC, load, lambda p: None)
    partitions.elect(7)
    assert seen == [ErrorCode.COORDINATOR_LOAD_IN_PROGRESS] and partitions.error_for(7) == ErrorCode.NONE


def test_find_coordinator_answers_the_live_leader() -> None:
    registration = PartitionRegistration(replicas=(2, 1, 3), isr=(2, 1, 3), leader=2)
    topic = TopicImage(TOPIC, None, {0: registration})  # type: ignore[arg-type]
    brokers = {n: BrokerRegistration(n, 0, "localhost", 9090 + n) for n in (1, 2, 3)}
    image = MetadataImage(brokers=brokers, topics={TOPIC: topic})
    assert coordinator_of(image, TOPIC, 0).node_id == 2 and coordinator_of(image, TOPIC, 0).port == 9092
    assert coordinator_of(image, TOPIC, 1).error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    fenced = MetadataImage(brokers={**brokers, 2: BrokerRegistration(2, 0, "localhost", 9092, fenced=True)},
                           topics={TOPIC: topic})
    assert coordinator_of(fenced, TOPIC, 0).error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_replication_factor_is_kept_in_a_cluster_and_one_on_a_lone_broker() -> None:
    assert internal_topic_replication_factor(3, lone_broker=False) == 3  # the controller refuses it
    assert internal_topic_replication_factor(3, lone_broker=True) == 1
