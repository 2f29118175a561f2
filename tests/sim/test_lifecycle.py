"""Brokers and the controller over the simulated network: registration, fencing by heartbeat
silence, controlled shutdown, and metadata learned by fetching the log (Kafka 3.9's rules)."""

from __future__ import annotations

from kafkalab.broker.lifecycle import BrokerState
from kafkalab.metadata.records import decode_record
from kafkalab.sim.cluster import BROKER_SESSION_TIMEOUT_MS, SimCluster

HEARTBEAT_MS = 2_000  # broker.heartbeat.interval.ms


def test_brokers_start_registered_unfenced_and_with_the_controllers_image(cluster: SimCluster) -> None:
    assert all(n.broker.lifecycle.state is BrokerState.RUNNING for n in cluster.nodes.values())  # type: ignore[union-attr]
    cluster.create_topic("orders", 3, 3)
    for node in cluster.nodes.values():
        # Learned by replaying the fetched records: equal to the controller's, not the same object.
        assert node.broker.image == cluster.controller.image and node.broker.image is not cluster.controller.image
    registered = {r.broker_id: r.broker_epoch for r in (decode_record(v) for v in cluster.controller.log.values)
                  if type(r).__name__ == "RegisterBrokerRecord"}
    for broker_id, broker in cluster.controller.image.brokers.items():
        assert not broker.fenced and broker.broker_epoch == registered[broker_id]  # the record's own offset:
        assert type(decode_record(cluster.controller.log.values[broker.broker_epoch])).__name__ == "RegisterBrokerRecord"


def test_a_cut_off_broker_is_fenced_only_when_its_heartbeats_stop_reaching_the_controller(cluster: SimCluster) -> None:
    cluster.create_topic("orders", 1, 3)
    follower = next(n for n in cluster.nodes if n != cluster.leader("orders", 0))
    cluster.network.isolate(follower, list(cluster.nodes))  # brokers only: the controller still hears it
    cluster.run_for(BROKER_SESSION_TIMEOUT_MS + HEARTBEAT_MS)
    assert not cluster.controller.image.brokers[follower].fenced
    cluster.network.cut(follower, "controller")
    start = cluster.clock.milliseconds()
    cluster.run_until(lambda: cluster.controller.image.brokers[follower].fenced, 20_000)
    assert BROKER_SESSION_TIMEOUT_MS - HEARTBEAT_MS < cluster.clock.milliseconds() - start <= BROKER_SESSION_TIMEOUT_MS
    cluster.network.heal()  # it heartbeats again, is caught up, and is unfenced
    cluster.run_until(lambda: not cluster.controller.image.brokers[follower].fenced, 3 * HEARTBEAT_MS)
    assert not cluster.controller.image.brokers[follower].fenced


def test_controlled_shutdown_moves_leadership_then_stops(cluster: SimCluster) -> None:
    cluster.create_topic("orders", 3, 3)
    leader = cluster.leader("orders", 0)
    led = [p for p in range(3) if cluster.leader("orders", p) == leader]
    assert cluster.stop(leader)  # released by the controller
    for p in led:
        registration = cluster.controller.image.partition("orders", p)
        assert registration is not None and registration.leader not in (leader, -1)
        assert leader not in registration.isr  # it left every ISR, as Kafka's controlled shutdown does
    assert cluster.controller.image.brokers[leader].fenced  # SHUTDOWN_NOW fences it
    cluster.restart(leader)  # no session to wait out: it registers again at once
    cluster.run_until(lambda: cluster.nodes[leader].broker.lifecycle.state is BrokerState.RUNNING, 1_000)  # type: ignore[union-attr]
    assert not cluster.controller.image.brokers[leader].fenced


def test_a_restart_within_the_session_waits_for_the_old_incarnation_to_expire(cluster: SimCluster) -> None:
    cluster.create_topic("orders", 1, 3)
    leader = cluster.leader("orders", 0)
    cluster.crash(leader)
    cluster.run_for(1_000)
    cluster.restart(leader)  # DUPLICATE_BROKER_REGISTRATION until the old session expires
    cluster.run_for(3_000)
    assert cluster.nodes[leader].broker.lifecycle.state is BrokerState.STARTING  # type: ignore[union-attr]
    assert cluster.leader("orders", 0) == leader  # not yet fenced: nobody else leads
    cluster.run_until(lambda: cluster.nodes[leader].broker.lifecycle.state is BrokerState.RUNNING, 10_000)  # type: ignore[union-attr]
    assert cluster.nodes[leader].broker.lifecycle.state is BrokerState.RUNNING  # type: ignore[union-attr]
    registration = cluster.controller.image.partition("orders", 0)
    assert registration is not None and registration.leader != leader and registration.leader_epoch == 1
