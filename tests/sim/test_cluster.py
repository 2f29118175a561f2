"""A three-broker cluster in the simulation: every inter-node message is an encoded Kafka request
or response on the seeded network. Replication copies bytes exactly, acks=all waits for the ISR,
a cut-off follower leaves the ISR after replica.lag.time.max.ms and rejoins once it catches up."""

from __future__ import annotations

from pathlib import Path


from kafkalab.errors import ErrorCode
from kafkalab.sim.cluster import SimCluster
from tests.broker._harness import batch, decode_records

LAG_MS = 30_000  # replica.lag.time.max.ms default


def _log_bytes(sim: SimCluster, node: int, topic: str = "orders") -> bytes:
    log = sim.nodes[node].broker.topics.log(topic, 0)
    assert log is not None
    return b"".join(s.log_path.read_bytes() for s in log.segments)


def test_acks_all_returns_once_every_isr_member_has_the_batch(cluster: SimCluster) -> None:
    cluster.create_topic("orders", 1, 3)
    leader = cluster.leader("orders", 0)
    answer = cluster.produce("orders", 0, batch([b"a", b"b"]))
    assert answer.error_code == 0 and answer.base_offset == 0
    for node in cluster.nodes.values():
        log = node.broker.topics.log("orders", 0)
        assert log is not None and log.log_end_offset == 2
    assert cluster.nodes[leader].broker.topics.log("orders", 0).high_watermark == 2
    cluster.run_for(1_000)  # followers learn the HW on their next fetch
    assert {n.broker.topics.log("orders", 0).high_watermark for n in cluster.nodes.values()} == {2}
    assert _log_bytes(cluster, 1) == _log_bytes(cluster, 2) == _log_bytes(cluster, 3)
    records = decode_records(_log_bytes(cluster, 2))
    assert [value for _, _, value, _ in records] == [b"a", b"b"]


def test_cut_off_follower_leaves_the_isr_and_rejoins(cluster: SimCluster) -> None:
    cluster.create_topic("orders", 1, 3)
    leader = cluster.leader("orders", 0)
    follower = next(n for n in cluster.nodes if n != leader)
    cluster.produce("orders", 0, batch([b"first"]))
    cluster.network.isolate(follower, list(cluster.nodes))
    # acks=all waits for the cut-off follower until the leader drops it from the ISR.
    answer = cluster.produce("orders", 0, batch([b"second"]), timeout_ms=60_000)
    assert answer.error_code == 0
    registration = cluster.controller.image.partition("orders", 0)
    assert registration is not None and follower not in registration.isr
    assert cluster.clock.milliseconds() - 1_700_000_000_000 >= LAG_MS
    cluster.network.heal()
    # The fetch lost in the cut is given up after request.timeout.ms; the next one catches up.

    def rejoined() -> bool:
        current = cluster.controller.image.partition("orders", 0)
        return current is not None and follower in current.isr
    assert cluster.run_until(rejoined, 2 * LAG_MS)
    assert _log_bytes(cluster, follower) == _log_bytes(cluster, leader)


def test_min_insync_replicas_refuses_acks_all_when_the_isr_is_too_small(tmp_path: Path) -> None:
    sim = SimCluster(tmp_path, nodes=3, seed=3, properties={"min.insync.replicas": "2"})
    try:
        sim.create_topic("orders", 1, 3)
        leader = sim.leader("orders", 0)
        for other in sim.nodes:
            if other != leader:
                sim.network.isolate(other, list(sim.nodes))
        slow = sim.produce("orders", 0, batch([b"x"]), timeout_ms=40_000)
        # The followers never fetch, so the HW stands still and the produce times out.
        assert slow.error_code == ErrorCode.REQUEST_TIMED_OUT
        # The ISR check (every replica.lag.time.max.ms / 2 = 15 s) drops them once 30 s have
        # passed since they were last caught up: at the 45 s check.
        sim.run_for(10_000)
        assert sim.controller.image.partition("orders", 0).isr == (leader,)  # type: ignore[union-attr]
        refused = sim.produce("orders", 0, batch([b"y"]))
        assert refused.error_code == ErrorCode.NOT_ENOUGH_REPLICAS
    finally:
        sim.close()


def test_docstring_example_placement(cluster: SimCluster) -> None:
    cluster.create_topic("orders", 1, 3)
    registration = cluster.controller.image.partition("orders", 0)
    assert registration is not None and registration.replicas == (3, 1, 2) and cluster.leader("orders", 0) == 3


def test_same_seed_same_run(tmp_path: Path) -> None:
    def run(directory: Path) -> list[tuple[int, int]]:
        sim = SimCluster(directory, nodes=3, seed=11)
        try:
            sim.create_topic("orders", 1, 3)
            sim.produce("orders", 0, batch([b"a"]))
            return [(sim.clock.milliseconds(), sim.network.stats.delivered)]
        finally:
            sim.close()
    assert run(tmp_path / "one") == run(tmp_path / "two")


def test_leader_crash_fails_over_and_the_old_leader_rejoins_as_follower(cluster: SimCluster) -> None:
    cluster.create_topic("orders", 1, 3)
    old_leader = cluster.leader("orders", 0)
    assert cluster.produce("orders", 0, batch([b"a", b"b"])).error_code == 0
    cluster.crash(old_leader)
    cluster.run_for(10_000)  # past broker.session.timeout.ms: fenced, a follower elected
    new_leader = cluster.leader("orders", 0)
    registration = cluster.controller.image.partition("orders", 0)
    assert registration is not None
    assert new_leader not in (old_leader, -1) and registration.leader_epoch == 1
    assert old_leader not in registration.isr
    assert cluster.produce("orders", 0, batch([b"c"])).error_code == 0
    cluster.restart(old_leader)

    def rejoined() -> bool:
        current = cluster.controller.image.partition("orders", 0)
        return current is not None and old_leader in current.isr
    assert cluster.run_until(rejoined, 60_000)
    assert _log_bytes(cluster, old_leader) == _log_bytes(cluster, new_leader)
    values = [value for _, _, value, _ in decode_records(_log_bytes(cluster, old_leader))]
    assert values == [b"a", b"b", b"c"]


def test_the_leader_reports_the_isr_change_the_controller_accepted(cluster: SimCluster) -> None:
    # Regression: the controller publishes the new image before the AlterPartition answer, and
    # the leader's IsrChanged event was lost between the two.
    from kafkalab.replication import events as ev

    cluster.create_topic("orders", 1, 3)
    leader = cluster.leader("orders", 0)
    seen: list[ev.ReplicationEvent] = []
    cluster.nodes[leader].broker.replica_manager.subscribe(seen.append)
    follower = next(n for n in cluster.nodes if n != leader)
    cluster.network.isolate(follower, list(cluster.nodes))
    cluster.produce("orders", 0, batch([b"a"]), acks=1)
    cluster.run_for(50_000)
    changes = [e for e in seen if isinstance(e, ev.IsrChanged)]
    assert [(c.old, c.new) for c in changes] == [((1, 2, 3), tuple(sorted({1, 2, 3} - {follower})))]
    assert not [e for e in seen if isinstance(e, ev.BecameLeader)]  # no election happened


def test_a_produce_while_nobody_leads_times_out_instead_of_failing(cluster: SimCluster) -> None:
    cluster.create_topic("orders", 1, 3)
    for node in list(cluster.nodes):
        cluster.crash(node)
    cluster.run_for(10_000)
    assert cluster.leader("orders", 0) == -1
    assert cluster.produce("orders", 0, batch([b"a"]), timeout_ms=1_000, wait_ms=40_000) is None


def test_metadata_names_no_leader_once_every_replica_of_a_partition_is_down(cluster: SimCluster) -> None:
    """A partition whose only replica crashed answers LEADER_NOT_AVAILABLE (Kafka's code 5, as
    kafka-python's error table has it) with leader -1; a replicated one has moved its leadership."""
    from kafka.errors import LeaderNotAvailableError

    cluster.create_topic("single", 3, 1)
    cluster.create_topic("triple", 3, 3)
    victim = cluster.leader("single", 0)
    cluster.crash(victim)
    # broker.session.timeout.ms later the controller fences the broker and elects no leader
    assert cluster.run_until(lambda: cluster.leader("single", 0) == -1, 20_000)
    survivor = next(n for n in cluster.nodes if n != victim)
    response = cluster.metadata(survivor, ["single", "triple"])
    single, triple = response.topics
    assert [(p.partition_index, p.error_code, p.leader_id) for p in single.partitions
            if p.error_code] == [(0, LeaderNotAvailableError.errno, -1)]
    assert sum(1 for p in single.partitions if p.leader_id == -1) == 1
    assert all(p.error_code == 0 and p.leader_id not in (-1, victim) for p in triple.partitions)
    cluster.restart(victim)
    assert cluster.run_until(lambda: cluster.leader("single", 0) == victim, 20_000)
    single, _ = cluster.metadata(survivor, ["single", "triple"]).topics
    assert all(p.error_code == 0 and p.leader_id >= 0 for p in single.partitions)
