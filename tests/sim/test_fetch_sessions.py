"""Followers fetch in incremental sessions (KIP-227) in the simulated cluster: idle fetches name
nothing, a restarted leader's unknown session sends them back to a full fetch, and replication
and determinism are unchanged."""

from __future__ import annotations

from pathlib import Path

from kafkalab.sim.cluster import SimCluster
from tests.broker._harness import batch

PARTITIONS = 6


def _logs_equal(sim: SimCluster, topic: str, partition: int) -> bool:
    """Every live node hosts the partition, with the same log end offset."""
    hosted = [node.broker.replica_manager.partition(topic, partition) for node in sim.nodes.values() if node.alive]
    return all(h is not None for h in hosted) and len({h.log.log_end_offset for h in hosted if h is not None}) == 1


def test_followers_go_incremental_and_replicate_everything(tmp_path: Path) -> None:
    sim = SimCluster(tmp_path, nodes=3, seed=5)
    try:
        sim.create_topic("orders", PARTITIONS, 3)
        for i in range(20):
            assert sim.produce("orders", i % PARTITIONS, batch([b"v%d" % i])).error_code == 0
        sim.run_for(2_000)
        assert all(_logs_equal(sim, "orders", p) for p in range(PARTITIONS))
        for node in sim.nodes.values():
            handlers = node.broker.follower_sessions.handlers
            assert handlers and all(h.session_id != 0 for h in handlers.values())
            # A few full fetches (the first, and after the partitions a leader leads changed),
            # then incremental ones; an idle one names no partition.
            assert all(h.incremental_requests > 4 * h.full_requests for h in handlers.values())
        assert sum(node.broker.fetch_sessions.incremental_fetches for node in sim.nodes.values()) > 50
    finally:
        sim.close()


def test_a_restarted_leader_sends_its_followers_back_to_a_full_fetch(tmp_path: Path) -> None:
    sim = SimCluster(tmp_path, nodes=3, seed=7)
    try:
        sim.create_topic("orders", 1, 3)
        sim.produce("orders", 0, batch([b"a"]))
        sim.run_for(1_000)
        leader = sim.leader("orders", 0)
        follower = next(n for n in sim.nodes if n != leader)
        handler = sim.nodes[follower].broker.follower_sessions.handlers[leader]
        old_session, fulls = handler.session_id, handler.full_requests
        assert old_session != 0
        # A crash and a quick restart: the restarted broker's session cache is empty, so the
        # follower's next incremental fetch is refused and it starts over with a full one.
        sim.crash(leader)
        sim.restart(leader)
        sim.run_for(3_000)
        assert handler.refused >= 1 and handler.full_requests > fulls  # FETCH_SESSION_ID_NOT_FOUND, then full
        assert handler.session_id not in (0, old_session) and handler.incremental_requests > 0
        assert sim.run_until(lambda: sim.produce("orders", 0, batch([b"b"])).error_code == 0, 30_000)
        assert sim.run_until(lambda: _logs_equal(sim, "orders", 0), 30_000)
    finally:
        sim.close()


def test_same_seed_same_sessions(tmp_path: Path) -> None:
    def run(directory: Path) -> list[tuple[int, int, int]]:
        sim = SimCluster(directory, nodes=3, seed=11)
        try:
            sim.create_topic("orders", 3, 3)
            for i in range(6):
                sim.produce("orders", i % 3, batch([b"x"]))
            sim.run_for(1_000)
            return [(node_id, leader_id, h.session_id) for node_id, node in sorted(sim.nodes.items())
                    for leader_id, h in sorted(node.broker.follower_sessions.handlers.items())]
        finally:
            sim.close()

    assert run(tmp_path / "a") == run(tmp_path / "b")
