"""Automatic leader balancing (``auto.leader.rebalance.enable``), checked against Kafka's KRaft
controller: ``QuorumController.maybeScheduleNextBalancePartitionLeaders`` schedules a check one
``leader.imbalance.check.interval.seconds`` after a partition becomes imbalanced, and
``ReplicationControlManager.maybeBalancePartitionLeaders`` runs preferred elections for up to
``maxElectionsPerImbalance`` (1,000) partitions per check."""

from __future__ import annotations

import random
from pathlib import Path

from kafkalab.clock import ManualClock
from kafkalab.controller.leader_balance import LeaderBalancer, balancing_interval_ms
from kafkalab.controller.local import LocalController
from kafkalab.metadata.image import BrokerRegistration
from kafkalab.metadata.record_log import MemoryRecordLog
from kafkalab.sim.cluster import SimCluster


def _controller(partitions: int = 4) -> LocalController:
    brokers = [BrokerRegistration(b, 10 + b, "127.0.0.1", 9090 + b) for b in (1, 2, 3)]
    controller = LocalController(brokers, random.Random(3), MemoryRecordLog())
    controller.create_topic("orders", partitions, 3)
    return controller


def _restart_and_catch_up(controller: LocalController, broker: int) -> None:
    controller.fence_broker(broker)
    controller.register_broker(BrokerRegistration(broker, 100, "127.0.0.1", 9090 + broker))
    for index, registration in sorted(controller.image.topics["orders"].partitions.items()):
        controller.alter_partition(registration.leader, "orders", index, registration.leader_epoch,
                                   registration.partition_epoch, [(b, -1) for b in registration.replicas])


def test_the_interval_follows_kafkas_keys_and_defaults() -> None:
    assert balancing_interval_ms({}) == 300_000  # enabled by default, every 300 s
    assert balancing_interval_ms({"leader.imbalance.check.interval.seconds": "5"}) == 5_000
    assert balancing_interval_ms({"auto.leader.rebalance.enable": "false"}) is None


def test_balancing_elects_preferred_leaders_in_batches() -> None:
    controller = _controller(partitions=6)
    _restart_and_catch_up(controller, 1)
    led_by_others = controller.imbalanced_partitions()
    assert led_by_others and all(controller.image.partition(t, p).replicas[0] == 1 for t, p in led_by_others)
    assert controller.balance_partition_leaders(max_elections=1) is True  # a full batch: check again soon
    assert len(controller.imbalanced_partitions()) == len(led_by_others) - 1
    assert controller.balance_partition_leaders() is False
    assert controller.imbalanced_partitions() == []
    assert all(p.leader == p.replicas[0] for p in controller.image.topics["orders"].partitions.values())


def test_a_preferred_replica_out_of_the_isr_is_left_alone() -> None:
    controller = _controller()
    controller.fence_broker(1)
    controller.register_broker(BrokerRegistration(1, 100, "127.0.0.1", 9091))  # back, not caught up
    waiting = controller.imbalanced_partitions()
    assert waiting
    assert controller.balance_partition_leaders() is False
    assert controller.imbalanced_partitions() == waiting


def test_the_check_runs_one_interval_after_the_imbalance_and_again_while_it_lasts() -> None:
    clock = ManualClock(0)
    controller = _controller()
    balancer = LeaderBalancer(controller, 300_000, clock.milliseconds)
    assert balancer.next_deadline_ms() is None  # balanced: nothing scheduled
    clock.set_ms(1_000)
    controller.fence_broker(1)
    controller.register_broker(BrokerRegistration(1, 100, "127.0.0.1", 9091))
    assert balancer.next_deadline_ms() == 301_000
    balancer.on_tick(300_999)
    assert balancer.checks == 0
    balancer.on_tick(301_000)  # broker 1 is still out of the ISRs: nothing to elect yet
    assert balancer.checks == 1 and controller.imbalanced_partitions()
    assert balancer.next_deadline_ms() == 601_000
    _restart_and_catch_up(controller, 1)
    balancer.on_tick(601_000)
    assert controller.imbalanced_partitions() == [] and balancer.next_deadline_ms() is None


def test_a_restarted_broker_leads_again_in_the_simulation(tmp_path: Path) -> None:
    sim = SimCluster(tmp_path, nodes=3, seed=4, properties={"leader.imbalance.check.interval.seconds": "30"})
    try:
        sim.create_topic("orders", 3, 3)
        preferred = {p: sim.controller.image.partition("orders", p).replicas[0] for p in range(3)}
        victim = preferred[0]
        sim.crash(victim)
        sim.run_for(10_000)  # fenced: every partition it led has another leader
        assert sim.leader("orders", 0) != victim
        sim.restart(victim)
        assert sim.run_until(lambda: all(sim.leader("orders", p) == preferred[p] for p in range(3)), 120_000)
        assert sim.leader_balancer is not None and sim.leader_balancer.checks >= 1
    finally:
        sim.close()


def test_without_auto_rebalance_leadership_stays_where_failover_put_it(tmp_path: Path) -> None:
    sim = SimCluster(tmp_path, nodes=3, seed=4, properties={"auto.leader.rebalance.enable": "false",
                                                          "leader.imbalance.check.interval.seconds": "30"})
    try:
        sim.create_topic("orders", 1, 3)
        victim = sim.leader("orders", 0)
        sim.crash(victim)
        sim.run_for(10_000)
        sim.restart(victim)
        sim.run_for(120_000)
        assert sim.leader("orders", 0) != victim and sim.leader_balancer is None
    finally:
        sim.close()
