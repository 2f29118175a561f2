"""Admin requests a client sends to any broker of the simulated cluster are forwarded to the
controller in an Envelope (KIP-590); producer ids come from the controller in blocks
(AllocateProducerIds, KIP-730); topic configs travel as ConfigRecords to every broker."""

from __future__ import annotations

from typing import Any

from kafkalab.errors import ErrorCode
from kafkalab.metadata.records import CONFIG_RESOURCE_TOPIC
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.messages.configs import INCREMENTAL_ALTER_CONFIGS_REQUEST, OP_SET, RESOURCE_TOPIC
from kafkalab.protocol.messages.init_producer_id import INIT_PRODUCER_ID_REQUEST
from kafkalab.protocol.messages.topics import CREATE_TOPICS_REQUEST, DELETE_TOPICS_REQUEST
from kafkalab.sim.cluster import CONTROLLER, SimCluster
from tests.broker._harness import batch

_CT = CREATE_TOPICS_REQUEST.cls
_TOPIC = _CT.CreatableTopic


def ask(cluster: SimCluster, broker: int, api_key: int, version: int, body: Any, wait_ms: int = 90_000) -> Any:
    answers: list[Any] = []
    cluster.send_request(broker, api_key, version, body, answers.append, timeout_ms=wait_ms)
    assert cluster.run_until(lambda: bool(answers), wait_ms), "no answer"
    return answers[0]


def create_topics(cluster: SimCluster, broker: int, *topics: Any, validate_only: bool = False) -> Any:
    return ask(cluster, broker, ApiKey.CREATE_TOPICS, 7, _CT(topics=topics, timeout_ms=30_000,
                                                            validate_only=validate_only))


def topic(name: str, partitions: int = 1, replication_factor: int = 3, **configs: str) -> Any:
    return _TOPIC(name=name, num_partitions=partitions, replication_factor=replication_factor, assignments=(),
                  configs=tuple(_TOPIC.CreatableTopicConfig(k.replace("_", "."), v) for k, v in configs.items()))


def set_config(cluster: SimCluster, broker: int, name: str, key: str, value: str) -> Any:
    R = INCREMENTAL_ALTER_CONFIGS_REQUEST.cls
    resource = R.AlterConfigsResource(RESOURCE_TOPIC, name, (R.AlterConfigsResource.AlterableConfig(key, OP_SET, value),))
    return ask(cluster, broker, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, R(resources=(resource,), validate_only=False))


def test_create_topics_through_a_broker_reaches_every_broker_with_its_configs(cluster: SimCluster) -> None:
    answer = create_topics(cluster, 1, topic("orders", 2, 3, min_insync_replicas="2", retention_ms="60000"))
    (result,) = answer.topics
    assert (result.error_code, result.num_partitions, result.replication_factor) == (0, 2, 3)
    assert result.topic_id == cluster.controller.image.topics["orders"].topic_id
    # The configs are ConfigRecords in the controller's log, replayed by every broker.
    assert cluster.controller.image.configs[(CONFIG_RESOURCE_TOPIC, "orders")] == {
        "min.insync.replicas": "2", "retention.ms": "60000"}
    assert cluster.await_metadata()
    for node in cluster.nodes.values():
        assert node.broker.image.topics["orders"].topic_id == result.topic_id
        assert node.broker.config_store.get("topics", "orders") == {"min.insync.replicas": "2",
                                                                    "retention.ms": "60000"}
        log = node.broker.topics.log("orders", 0)
        assert log is not None and log.config.min_insync_replicas == 2 and log.config.retention_ms == 60_000


def test_config_set_through_one_broker_is_enforced_by_the_leader(cluster: SimCluster) -> None:
    create_topics(cluster, 2, topic("orders", 1, 3, min_insync_replicas="4"))
    assert cluster.await_metadata()
    leader = cluster.leader("orders", 0)
    assert cluster.produce("orders", 0, batch([b"a"])).error_code == ErrorCode.NOT_ENOUGH_REPLICAS
    other = next(n for n in cluster.nodes if n != leader)
    (changed,) = set_config(cluster, other, "orders", "min.insync.replicas", "2").responses
    assert changed.error_code == 0
    assert cluster.await_metadata()
    assert cluster.produce("orders", 0, batch([b"a"])).error_code == 0


def test_controller_rules_answer_for_the_cluster(cluster: SimCluster) -> None:
    too_many, bad_name, bad_config = create_topics(
        cluster, 3, topic("wide", 1, 4), topic("no way"), topic("cfg", 1, 3, cleanup_policy="shred")).topics
    assert too_many.error_code == ErrorCode.INVALID_REPLICATION_FACTOR
    assert too_many.error_message == ("Unable to replicate the partition 4 time(s): The target replication factor "
                                      "of 4 cannot be reached because only 3 broker(s) are registered.")
    assert bad_name.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert bad_config.error_code == ErrorCode.INVALID_CONFIG
    (checked,) = create_topics(cluster, 3, topic("dry", 4, 3), validate_only=True).topics
    assert (checked.error_code, checked.num_partitions, checked.replication_factor) == (0, 4, 3)
    assert "dry" not in cluster.controller.image.topics and not cluster.controller.image.configs


def test_manual_assignment_names_registered_brokers(cluster: SimCluster) -> None:
    A = _TOPIC.CreatableReplicaAssignment
    good = _TOPIC(name="placed", num_partitions=-1, replication_factor=-1, configs=(),
                  assignments=(A(0, (2, 3)), A(1, (3, 1))))
    bad = _TOPIC(name="nowhere", num_partitions=-1, replication_factor=-1, configs=(), assignments=(A(0, (2, 9)),))
    placed, nowhere = create_topics(cluster, 1, good, bad).topics
    assert placed.error_code == 0
    assert [p.replicas for _, p in sorted(cluster.controller.image.topics["placed"].partitions.items())] == [
        (2, 3), (3, 1)]
    assert nowhere.error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert nowhere.error_message == ("The manual partition assignment includes broker 9, but no such broker is "
                                     "registered.")


def test_unreachable_controller_times_the_request_out(cluster: SimCluster) -> None:
    cluster.network.cut(1, CONTROLLER)
    start_ms = cluster.clock.milliseconds()
    D = DELETE_TOPICS_REQUEST.cls
    (result,) = ask(cluster, 1, ApiKey.DELETE_TOPICS, 4, D(topic_names=("orders",), timeout_ms=30_000)).responses
    assert result.error_code == ErrorCode.REQUEST_TIMED_OUT
    assert cluster.clock.milliseconds() - start_ms >= 60_000  # the forwarding channel's retry timeout


def test_producer_ids_come_in_blocks_from_the_controller(cluster: SimCluster) -> None:
    R = INIT_PRODUCER_ID_REQUEST.cls
    init = R(transactional_id=None, transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1)
    first = ask(cluster, 2, ApiKey.INIT_PRODUCER_ID, 4, init)
    second = ask(cluster, 2, ApiKey.INIT_PRODUCER_ID, 4, init)
    other = ask(cluster, 3, ApiKey.INIT_PRODUCER_ID, 4, init)
    assert [a.error_code for a in (first, second, other)] == [0, 0, 0]
    assert (first.producer_id, second.producer_id, other.producer_id) == (0, 1, 1000)
    assert cluster.controller.image.next_producer_id == 2000  # two ProducerIdsRecords


def test_producer_id_without_a_controller_is_retriable(cluster: SimCluster) -> None:
    cluster.network.cut(2, CONTROLLER)
    R = INIT_PRODUCER_ID_REQUEST.cls
    init = R(transactional_id=None, transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1)
    assert ask(cluster, 2, ApiKey.INIT_PRODUCER_ID, 4, init).error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


def test_metadata_auto_creates_a_topic_through_the_controller(cluster: SimCluster) -> None:
    from kafkalab.protocol.messages.metadata import METADATA_REQUEST
    R = METADATA_REQUEST.cls
    auto = R(topics=(R.MetadataRequestTopic(name="clicks"),), allow_auto_topic_creation=True)
    (first,) = ask(cluster, 2, ApiKey.METADATA, 12, auto).topics
    assert first.error_code == ErrorCode.LEADER_NOT_AVAILABLE  # asked of the controller, not there yet
    assert cluster.await_metadata()
    assert "clicks" in cluster.controller.image.topics
    (second,) = cluster.metadata(1, ["clicks"]).topics
    assert second.error_code == 0 and len(second.partitions) == 1  # num.partitions


def test_find_coordinator_creates_the_offsets_topic_with_its_configs(cluster: SimCluster) -> None:
    from kafkalab.protocol.messages.find_coordinator import FIND_COORDINATOR_REQUEST
    R = FIND_COORDINATOR_REQUEST.cls
    answer = ask(cluster, 3, ApiKey.FIND_COORDINATOR, 4, R(key_type=0, coordinator_keys=("g",)))
    assert answer.coordinators[0].error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert cluster.await_metadata()
    assert cluster.controller.image.configs[(CONFIG_RESOURCE_TOPIC, "__consumer_offsets")]["cleanup.policy"] == "compact"
    answer = ask(cluster, 3, ApiKey.FIND_COORDINATOR, 4, R(key_type=0, coordinator_keys=("g",)))
    assert answer.coordinators[0].error_code == 0
