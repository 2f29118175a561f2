"""A broker that loses power comes back with a shorter log, recovers it, and catches up from the
leader: acknowledged records survive on the others, and the replicas end byte for byte equal."""

from __future__ import annotations

from pathlib import Path

from kafkalab.records import Record, build_batch
from kafkalab.sim.cluster import SimCluster
from kafkalab.sim.invariants import ReplicationChecker


def segment_bytes(cluster: SimCluster, node: int) -> bytes:
    log = cluster.nodes[node].broker.replica_manager.partition("orders", 0).log
    return b"".join(s.log_path.read_bytes() for s in log.segments)


def test_the_leader_loses_power_and_nothing_acknowledged_is_lost(tmp_path: Path) -> None:
    cluster = SimCluster(tmp_path, nodes=3, seed=11, properties={"min.insync.replicas": "2"})
    try:
        cluster.create_topic("orders", 1, 3)
        checker = ReplicationChecker(cluster)
        for i in range(20):
            values = (f"v{i}".encode(),)
            answer = cluster.produce("orders", 0, build_batch([Record(0, 0, None, values[0])]), acks=-1)
            assert answer.error_code == 0
            checker.record_ack("orders", 0, answer.base_offset, values)
        old_leader = cluster.leader("orders", 0)
        lost = cluster.crash(old_leader, power_loss=True)  # nothing was fsynced: all 20 at risk
        assert lost and sum(t.lost_bytes for t in lost) > 0
        cluster.run_for(15_000)  # fenced after 9 s; a follower leads
        assert cluster.leader("orders", 0) != old_leader
        checker.check()
        cluster.restart(old_leader)  # recovery cuts the torn tail; it fetches the rest back
        cluster.run_for(10_000)
        checker.check()
        assert segment_bytes(cluster, old_leader) == segment_bytes(cluster, cluster.leader("orders", 0))
    finally:
        cluster.close()
