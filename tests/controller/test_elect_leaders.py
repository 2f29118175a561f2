"""Preferred and unclean leader elections through the controller, checked against Kafka's rules
(``ReplicationControlManager.electLeader``) and carried out as PartitionChangeRecords."""

from __future__ import annotations

import random

from kafkalab.controller.local import LocalController
from kafkalab.controller.partition_change import Election
from kafkalab.errors import ErrorCode
from kafkalab.metadata.delta import replay
from kafkalab.metadata.image import BrokerRegistration, MetadataImage
from kafkalab.metadata.record_log import MemoryRecordLog


def _cluster() -> tuple[LocalController, MemoryRecordLog]:
    log = MemoryRecordLog()
    brokers = [BrokerRegistration(b, 10 + b, "127.0.0.1", 9090 + b) for b in (1, 2, 3)]
    controller = LocalController(brokers, random.Random(3), log)
    controller.create_topic("orders", 2, 3)
    return controller, log


def test_preferred_election_moves_leadership_back_after_a_restart() -> None:
    controller, log = _cluster()
    preferred = controller.image.partition("orders", 0).replicas[0]
    controller.fence_broker(preferred)
    assert controller.image.partition("orders", 0).leader != preferred
    controller.register_broker(BrokerRegistration(preferred, 100, "127.0.0.1", 9999))
    # Back and unfenced, but out of the ISR until it catches up: not available yet.
    assert controller.elect_leaders(Election.PREFERRED, [("orders", 0)]) == [
        ("orders", 0, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, None)]
    current = controller.image.partition("orders", 0)
    controller.alter_partition(current.leader, "orders", 0, current.leader_epoch, current.partition_epoch,
                               [(b, -1) for b in current.replicas])  # it caught up: ISR grows back
    before = len(log.values)
    assert controller.elect_leaders(Election.PREFERRED, [("orders", 0), ("orders", 0)]) == [
        ("orders", 0, ErrorCode.NONE, None), ("orders", 0, ErrorCode.NONE, None)]
    assert controller.image.partition("orders", 0).leader == preferred
    assert len(log.values) == before + 1  # one PartitionChangeRecord, even if asked twice
    assert replay(MetadataImage(), log.records(), len(log.values) - 1) == controller.image
    assert controller.elect_leaders(Election.PREFERRED, [("orders", 0)]) == [
        ("orders", 0, ErrorCode.ELECTION_NOT_NEEDED, None)]


def test_unclean_election_only_for_leaderless_partitions() -> None:
    controller, _ = _cluster()
    assert controller.elect_leaders(Election.UNCLEAN, [("orders", 1), ("nope", 0)]) == [
        ("orders", 1, ErrorCode.ELECTION_NOT_NEEDED, None),
        ("nope", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "No such partition as nope-0")]
    replicas = controller.image.partition("orders", 1).replicas
    for broker in replicas[1:] + replicas[:1]:  # the first replica is fenced last: it is the ISR
        controller.fence_broker(broker)
    assert controller.image.partition("orders", 1).leader == -1
    assert controller.elect_leaders(Election.UNCLEAN, [("orders", 1)]) == [
        ("orders", 1, ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, None)]  # nobody alive at all
    controller.register_broker(BrokerRegistration(replicas[1], 50, "127.0.0.1", 9998))
    assert controller.elect_leaders(Election.UNCLEAN, [("orders", 1)]) == [("orders", 1, ErrorCode.NONE, None)]
    elected = controller.image.partition("orders", 1)
    assert (elected.leader, elected.isr, elected.leader_recovery_state) == (replicas[1], (replicas[1],), 1)


def test_all_partitions_leaves_out_those_that_need_no_election() -> None:
    controller, _ = _cluster()
    assert controller.elect_leaders(Election.PREFERRED, None) == []
