"""A fault campaign: random produce traffic and faults on a simulated cluster, checked every step.

Theory of operation
-------------------
One run is a function of its seed. A three-broker :class:`~kafkalab.sim.cluster.SimCluster`
with ``min.insync.replicas=2`` hosts ``orders`` (two partitions, replication factor 3) over links
of 1-20 ms with a little loss. Then, ``steps`` times, the seed's generator picks one action:

=====================  =====================================================================
action                 what happens
=====================  =====================================================================
produce                an acks=all batch of 1-5 unique values to a random partition's leader
crash                  a running broker is killed (at most one is down at a time)
power-loss             a running broker loses power: its segments also lose a seeded part of
                       what they wrote since their last fsync, possibly mid-batch; only while
                       every replica is in the ISR, as Kafka's durability without fsync assumes
restart                the broker that is down starts again and recovers its logs
isolate / heal         one broker is cut off from the other brokers (not from the controller),
                       or every cut is healed
wait                   100 ms to 40 s of simulated time pass (ISR checks, session timeouts)
=====================  =====================================================================

After every action the :class:`~kafkalab.sim.invariants.ReplicationChecker` checks that no
acknowledged record is lost, each leader epoch has one leader, leaders' HWs never fall,
replicas agree below their HWs, and no fenced broker or stale epoch changed an ISR (every
AlterPartition the controller accepted is audited). A kafkalab consumer reads both partitions
from the start the whole time; :class:`~kafkalab.sim.consumer_check.ConsumerReadCheck` checks
that no Fetch answer hands it a record at or above the committed end, and, once every replica
is back, that every record it read is still the leader's. A broken promise raises with a
one-line replay command::

    python -m kafkalab.sim.campaign --seed 1234

``python -m kafkalab.sim.campaign --seeds 1000`` runs seeds 0..999 and prints the figures
(``make campaign`` runs it). Worked example: seed 0 over 40 steps produces about a dozen
batches, crashes and restarts brokers a few times, and ends with every acknowledged value on
every replica.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from kafkalab.records import Record, build_batch
from kafkalab.sim.cluster import SimCluster
from kafkalab.client.consumer import ConsumerConfig, ConsumerCore
from kafkalab.sim.consumer_check import ConsumerReadCheck
from kafkalab.sim.invariants import ReplicationChecker, records_below
from kafkalab.sim.network import LinkFaults

STEPS_DEFAULT = 40
TOPIC, PARTITIONS, REPLICATION_FACTOR = "orders", 2, 3
FAULTS = LinkFaults(delay_min_ms=1, delay_max_ms=20, loss=0.01)
# Small preallocated indexes: a restart maps and scans each one, and the logs here are tiny.
PROPERTIES = {"min.insync.replicas": "2", "log.index.size.max.bytes": "65536"}
ACTIONS = ("produce", "produce", "produce", "crash", "power-loss", "restart", "isolate", "heal", "wait")


@dataclass(frozen=True, slots=True)
class RunResult:
    seed: int
    acked: int
    actions: Counter[str]
    checks: int
    simulated_ms: int
    bytes_lost_to_power_loss: int = 0  # unflushed segment bytes the power losses took


def run(seed: int, data_dir: Path, steps: int = STEPS_DEFAULT) -> RunResult:
    """One campaign run; raises :class:`~kafkalab.sim.invariants.InvariantViolation` on a
    broken promise."""
    rng = random.Random(seed)
    cluster = SimCluster(data_dir, nodes=3, seed=seed, faults=FAULTS, properties=PROPERTIES)
    checker = ReplicationChecker(cluster)
    actions: Counter[str] = Counter()
    lost_bytes = 0
    start_ms = cluster.clock.milliseconds()
    try:
        cluster.create_topic(TOPIC, PARTITIONS, REPLICATION_FACTOR)
        cluster.run_for(100)
        reader = _start_consumer(cluster, checker)
        for step in range(steps):
            action = rng.choice(ACTIONS)
            actions[action] += 1
            lost_bytes += _act(cluster, checker, rng, action, step)
            checker.check()
            reader.consumer.take_records(cluster.clock.milliseconds())  # keep its buffers flowing
        cluster.network.heal()
        for node_id, node in cluster.nodes.items():
            if not node.alive:
                cluster.restart(node_id)
        cluster.run_until(lambda: _caught_up(cluster), 60_000)  # everyone catches up
        checker.check()
        reader.check_read_records_kept(lambda topic, partition: _leader_records(cluster, topic, partition))
    finally:
        cluster.close()
    return RunResult(seed, len(checker.acked), actions, checker.checks, cluster.clock.milliseconds() - start_ms,
                     lost_bytes)


def _start_consumer(cluster: SimCluster, checker: ReplicationChecker) -> ConsumerReadCheck:
    """A consumer of every partition from offset 0, its Fetch answers checked as they arrive."""
    consumer = cluster.add_consumer("reader", ConsumerCore(ConsumerConfig(
        auto_offset_reset="earliest", enable_auto_commit=False)))
    consumer.assign([(TOPIC, p) for p in range(PARTITIONS)], cluster.clock.milliseconds())
    return ConsumerReadCheck(cluster, checker, consumer)


def _leader_records(cluster: SimCluster, topic: str, partition: int) -> dict[int, bytes | None] | None:
    leader = cluster.leader(topic, partition)
    node = cluster.nodes.get(leader)
    hosted = node.broker.replica_manager.partition(topic, partition) if node is not None and node.alive else None
    return None if hosted is None else records_below(hosted.log, hosted.log.log_end_offset)


def _act(cluster: SimCluster, checker: ReplicationChecker, rng: random.Random, action: str, step: int) -> int:
    """Carry out one action; the bytes a power loss took (0 for anything else)."""
    down = [n for n, node in cluster.nodes.items() if not node.alive]
    if action == "produce":
        _produce(cluster, checker, rng, step)
    elif action == "crash" and not down:
        cluster.crash(rng.choice(sorted(cluster.nodes)))
    elif action == "power-loss" and not down and _every_replica_in_sync(cluster):
        lost = cluster.crash(rng.choice(sorted(cluster.nodes)), power_loss=True)
        return sum(tail.lost_bytes for tail in lost)
    elif action == "restart" and down:
        cluster.restart(down[0])
    elif action == "isolate":
        cluster.network.isolate(rng.choice(sorted(cluster.nodes)), list(cluster.nodes))
    elif action == "heal":
        cluster.network.heal()
    else:
        cluster.run_for(rng.randrange(100, 40_000))
    return 0


def _caught_up(cluster: SimCluster) -> bool:
    """Every replica is in the ISR and holds its leader's log end offset."""
    if not _every_replica_in_sync(cluster):
        return False
    for partition in range(PARTITIONS):
        ends = {hosted.log.log_end_offset for node in cluster.nodes.values() if node.alive
                if (hosted := node.broker.replica_manager.partition(TOPIC, partition)) is not None}
        if len(ends) != 1:
            return False
    return True


def _every_replica_in_sync(cluster: SimCluster) -> bool:
    """Kafka keeps acknowledged records through one replica's power loss when the others hold
    them; with the whole ISR in place, every committed record is on every replica."""
    image = cluster.controller.image
    return all((registration := image.partition(TOPIC, p)) is not None
               and len(registration.isr) == REPLICATION_FACTOR for p in range(PARTITIONS))


def _produce(cluster: SimCluster, checker: ReplicationChecker, rng: random.Random, step: int) -> None:
    partition = rng.randrange(PARTITIONS)
    if cluster.leader(TOPIC, partition) < 0 or not cluster.nodes[cluster.leader(TOPIC, partition)].alive:
        cluster.run_for(1_000)  # no leader to send to: a client would wait for new metadata
        return
    values = tuple(f"s{step}-{i}".encode() for i in range(rng.randrange(1, 6)))
    now_ms = cluster.clock.milliseconds()
    batch = build_batch([Record(i, now_ms, None, value) for i, value in enumerate(values)])
    answer = cluster.produce(TOPIC, partition, batch, acks=-1, timeout_ms=10_000, wait_ms=45_000)
    if answer is not None and answer.error_code == 0:
        checker.record_ack(TOPIC, partition, answer.base_offset, values)


def scratch_root() -> str | None:
    """Where runs keep their logs: memory-backed ``/dev/shm`` when the machine has it (a
    simulated broker fsyncs as a real one does, and a disk makes each fsync cost milliseconds),
    else the system temp directory."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkalab.sim.campaign", description=__doc__.split("\n")[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--seed", type=int, help="replay one seed")
    group.add_argument("--seeds", type=int, default=200, help="run seeds 0..N-1 (default 200)")
    parser.add_argument("--steps", type=int, default=STEPS_DEFAULT)
    args = parser.parse_args(argv)
    seeds = [args.seed] if args.seed is not None else list(range(args.seeds))
    totals: Counter[str] = Counter()
    acked = lost_bytes = 0
    for seed in seeds:
        with tempfile.TemporaryDirectory(prefix=f"kafkalab-campaign-{seed}-", dir=scratch_root()) as tmp:
            result = run(seed, Path(tmp), args.steps)
        totals.update(result.actions)
        acked += result.acked
        lost_bytes += result.bytes_lost_to_power_loss
    print(f"campaign: {len(seeds)} seeds, {args.steps} steps each, {acked} acknowledged batches, "
          f"actions {dict(sorted(totals.items()))} (power losses took {lost_bytes} unflushed bytes): "
          "every invariant held")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
