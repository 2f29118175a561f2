"""Brokers' lifecycle in the simulation: controlled shutdown and failover after a crash.

Two figures from issue 14, both in simulated time on a three-broker
:class:`~kafkalab.sim.cluster.SimCluster` with Kafka's default timeouts:

* ``lifecycle.controlled_shutdown_100_leaders`` -- a broker leading 100 partitions (a topic of
  300 partitions, replication factor 3, spread evenly) is stopped with SIGTERM. The figure is
  the simulated time from the stop until every partition it led has a new leader that knows it
  leads (its broker has fetched the metadata and acts as leader). Baseline 1,000 ms; target:
  ratio <= 1 (leadership moves in under a second).
* ``lifecycle.acks_all_resume_after_leader_crash`` -- kafkalab's producer sends an acks=all
  record every 10 ms to a one-partition topic (replication factor 3); the leader is killed
  (SIGKILL: its heartbeats stop). The figure is the simulated time from the kill to the first
  record acknowledged after it. Baseline ``broker.session.timeout.ms`` + 2 s = 11,000 ms;
  target: ratio <= 1. The controller can only elect a new leader once it fences the silent
  broker, 9 s after its last heartbeat, so most of the figure is that timeout.

Both are deterministic (seeded); each prints one run per seed over three seeds, the median
with the spread.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from kafkalab.bench.report import Reporter
from kafkalab.client.producer.producer import ProducerRecord
from kafkalab.sim.campaign import scratch_root
from kafkalab.sim.cluster import BROKER_SESSION_TIMEOUT_MS, SimCluster
from kafkalab.sim.producer import SimProducer

SEEDS = (1, 2, 3)
SHUTDOWN_BASELINE_MS = 1_000
RESUME_BASELINE_MS = BROKER_SESSION_TIMEOUT_MS + 2_000
SEND_EVERY_MS = 10


def controlled_shutdown_ms(seed: int) -> int:
    """Simulated ms for a broker leading 100 partitions to hand every leadership over."""
    with tempfile.TemporaryDirectory(prefix="kafkalab-bench-lifecycle-", dir=scratch_root()) as tmp:
        cluster = SimCluster(Path(tmp), nodes=3, seed=seed)
        try:
            cluster.create_topic("load", 300, 3)
            cluster.run_for(1_000)
            victim = 1
            led = [p for p in range(300) if cluster.leader("load", p) == victim]
            assert len(led) == 100, f"broker {victim} leads {len(led)} partitions"
            start_ms = cluster.clock.milliseconds()
            lifecycle = cluster.nodes[victim].broker.lifecycle
            assert lifecycle is not None
            lifecycle.begin_controlled_shutdown(start_ms)

            def moved() -> bool:
                return all(_acting_leader(cluster, p, victim) for p in led)
            assert cluster.run_until(moved, 30_000), "leadership did not move"
            return cluster.clock.milliseconds() - start_ms
        finally:
            cluster.close()


def _acting_leader(cluster: SimCluster, partition: int, victim: int) -> bool:
    leader = cluster.leader("load", partition)
    if leader in (victim, -1):
        return False
    hosted = cluster.nodes[leader].broker.replica_manager.partition("load", partition)
    return hosted is not None and hosted.partition.is_leader


def resume_after_crash_ms(seed: int) -> int:
    """Simulated ms from killing the leader to the next acks=all acknowledgement."""
    with tempfile.TemporaryDirectory(prefix="kafkalab-bench-lifecycle-", dir=scratch_root()) as tmp:
        cluster = SimCluster(Path(tmp), nodes=3, seed=seed)
        try:
            cluster.create_topic("orders", 1, 3)
            producer = SimProducer(cluster, {"acks": "all", "linger.ms": 0}, seed=seed)
            acked: list[int] = []

            def send() -> None:
                producer.send(ProducerRecord("orders", b"v", partition=0),
                              lambda metadata, error: acked.append(cluster.clock.milliseconds()) if error is None else None)
            for _ in range(100):
                send()
                cluster.run_for(SEND_EVERY_MS)
            assert acked, "nothing was acknowledged before the crash"
            crash_ms = cluster.clock.milliseconds()
            cluster.crash(cluster.leader("orders", 0))
            deadline_ms = crash_ms + 60_000
            while cluster.clock.milliseconds() < deadline_ms and not any(t > crash_ms for t in acked):
                send()
                cluster.run_for(SEND_EVERY_MS)
            resumed = [t for t in acked if t > crash_ms]
            assert resumed, "the producer never resumed"
            return resumed[0] - crash_ms
        finally:
            cluster.close()


def run(reporter: Reporter, *, full: bool = False) -> None:
    reporter.report_runs("lifecycle.controlled_shutdown_100_leaders",
                         [controlled_shutdown_ms(seed) for seed in SEEDS], "ms", SHUTDOWN_BASELINE_MS, "<=1.0")
    reporter.report_runs("lifecycle.acks_all_resume_after_leader_crash",
                         [resume_after_crash_ms(seed) for seed in SEEDS], "ms", RESUME_BASELINE_MS, "<=1.0")
