"""The simulation's speed: simulated seconds per wall-clock second, against real time.

A three-broker :class:`~kafkalab.sim.cluster.SimCluster` hosts 30 partitions with replication
factor 3 and takes 1,000 records/s: a 10-record acks=all batch every 10 simulated ms, spread
round-robin over the partitions, so every produce waits for both followers' fetches. The
figure is how many simulated seconds pass per wall second; the baseline is real time (1.0), and
the target is >= 50 (a notebook cell can show a minute of cluster life in about a second).

Five runs of 5 simulated seconds each (``--full``: 20 s); the median run is printed with the
spread. The cluster lives in ``/dev/shm`` where the machine has it, as the campaign's does.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from kafkalab.bench.report import Reporter, Spread
from kafkalab.records import Record, build_batch
from kafkalab.sim.campaign import scratch_root
from kafkalab.sim.cluster import SimCluster

PARTITIONS = 30
RECORDS_PER_BATCH = 10
BATCH_EVERY_MS = 10  # 10 records per 10 ms: 1,000 records/s
RUNS = 5


def _one_run(simulated_ms: int) -> float:
    """Simulated seconds per wall second for one run."""
    with tempfile.TemporaryDirectory(prefix="kafkalab-bench-sim-", dir=scratch_root()) as tmp:
        cluster = SimCluster(Path(tmp), nodes=3, seed=1)
        try:
            cluster.create_topic("load", PARTITIONS, 3)
            cluster.run_for(1_000)  # followers start fetching
            start_wall = time.perf_counter()
            start_ms = cluster.clock.milliseconds()
            sent = 0
            while cluster.clock.milliseconds() - start_ms < simulated_ms:
                now_ms = cluster.clock.milliseconds()
                batch = build_batch([Record(i, now_ms, None, b"v" * 100) for i in range(RECORDS_PER_BATCH)])
                cluster.send_produce("load", sent % PARTITIONS, batch, lambda answer: None)
                sent += 1
                cluster.run_for(BATCH_EVERY_MS)
            wall_s = time.perf_counter() - start_wall
            return (cluster.clock.milliseconds() - start_ms) / 1000 / wall_s
        finally:
            cluster.close()


def run(reporter: Reporter, *, full: bool = False) -> None:
    simulated_ms = 20_000 if full else 5_000
    speeds = sorted(_one_run(simulated_ms) for _ in range(RUNS))
    median = speeds[RUNS // 2]
    reporter.report("sim.speedup_3_nodes_30_partitions_1k_rps", median, "x", 1.0, ">=50",
                    Spread(speeds[0], speeds[-1], RUNS))
