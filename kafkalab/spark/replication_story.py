"""A replication story run on the simulated cluster, exported as Parquet: the data behind lab 06.

Theory of operation
-------------------
The simulation (:class:`~kafkalab.sim.cluster.SimCluster`) runs three real brokers over a seeded
network on a manual clock, and its :class:`~kafkalab.sim.events.EventRecorder` turns everything
replication does into flat rows: elections, high-watermark moves, ISR changes, produce answers,
crashes and restarts. :func:`write_replication_story` scripts a few minutes of a cluster's life
and writes those rows to one Parquet file (:meth:`EventRecorder.to_parquet`'s fixed schema),
the kind of event log an operator would collect from real brokers' metrics:

* a producer sends one acks=all batch per partition every second, with
  ``min.insync.replicas=2`` on a topic of replication factor 3;
* a follower of partition 0 loses its link to that partition's leader for a while, then the
  link heals: the ISR shrinks once the follower has not caught up for
  ``replica.lag.time.max.ms`` and grows back after the heal;
* the leader of partition 1 crashes and restarts later: after ``broker.session.timeout.ms`` the
  controller fences it and a follower takes over, and the old leader comes back as a follower;
* near the end both followers of partition 2 lose their links to its leader, so that ISR falls
  to the leader alone, below ``min.insync.replicas``: acks=all produces are refused with
  NOT_ENOUGH_REPLICAS and partition 2's high watermark stops.

Links are cut, not whole brokers: the simulation's controller runs in process, so a broker cut
off from everyone would keep its registration and, if it leads, go on leading a partition no
follower can reach (a real KRaft controller would fence it for missing heartbeats).

Everything is deterministic (the seed picks the network's behaviour and nothing else is random),
so the same story gives the same rows.

Worked example: with the defaults, partition 0's ISR shrinks about 30-45 s after its follower
is cut off (the leader checks every 15 s whether a follower has fallen more than 30 s behind).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kafkalab.records.model import Record
from kafkalab.records.v2 import build_v2_batch
from kafkalab.sim.cluster import START_MS, SimCluster
from kafkalab.sim.events import EventRecorder

MS_PER_S = 1_000


@dataclass(frozen=True)
class ReplicationStory:
    """The script, in whole seconds of simulated time. Immutable; defaults are lab 06's."""

    topic: str = "orders"
    partitions: int = 3
    seconds: int = 360
    cut_follower: tuple[int, int] = (20, 110)  # a follower of partition 0 cut from its leader, then healed
    crash_leader: tuple[int, int] = (150, 210)  # partition 1's leader crashed, then restarted
    cut_two: tuple[int, int] = (270, 330)  # partition 2's followers cut from its leader: ISR below min.insync
    min_insync_replicas: int = 2
    seed: int = 6


@dataclass(frozen=True)
class StoryMarks:
    """Who the script picked, for the lab to name."""

    cut_follower: int  # partition 0's follower whose link to leader_0 is cut
    leader_0: int
    crashed_leader: int  # partition 1's leader
    leader_2: int  # partition 2's leader, cut off from both its followers


def write_replication_story(data_dir: Path, parquet_path: Path, story: ReplicationStory = ReplicationStory(),
                            progress: Callable[[int], None] | None = None) -> StoryMarks:
    """Run ``story`` on a 3-broker simulation in ``data_dir`` and write its events to
    ``parquet_path``; ``progress`` is called with 1 after each simulated second."""
    sim = SimCluster(data_dir, nodes=3, seed=story.seed,
                     properties={"min.insync.replicas": str(story.min_insync_replicas)})
    try:
        recorder = EventRecorder(sim)
        sim.create_topic(story.topic, story.partitions, 3)
        leader_0 = sim.leader(story.topic, 0)
        registration = sim.controller.image.partition(story.topic, 0)
        assert registration is not None, "the topic was just created"
        cut = next(n for n in registration.replicas if n != leader_0)
        marks = StoryMarks(cut, leader_0, sim.leader(story.topic, 1), sim.leader(story.topic, 2))
        for second in range(story.seconds):
            _script(sim, story, second, marks)
            _produce(sim, story, second)
            sim.run_for(MS_PER_S)
            if progress is not None:
                progress(1)
        Path(parquet_path).parent.mkdir(parents=True, exist_ok=True)
        recorder.to_parquet(parquet_path)
        return marks
    finally:
        sim.close()


def _script(sim: SimCluster, story: ReplicationStory, second: int, marks: StoryMarks) -> None:
    if second == story.cut_follower[0]:
        sim.network.cut(marks.cut_follower, marks.leader_0)
    if second in (story.cut_follower[1], story.cut_two[1]):
        sim.network.heal()
    if second == story.crash_leader[0]:
        sim.crash(marks.crashed_leader)
    if second == story.crash_leader[1]:
        sim.restart(marks.crashed_leader)
    if second == story.cut_two[0]:
        for node in sim.nodes:
            if node != marks.leader_2:
                sim.network.cut(node, marks.leader_2)


def _produce(sim: SimCluster, story: ReplicationStory, second: int) -> None:
    for partition in range(story.partitions):
        if not sim.nodes[sim.leader(story.topic, partition)].alive:
            continue  # no leader to send to until the controller fences the dead one
        record = Record(0, START_MS + second * MS_PER_S, None, f"{partition}-{second}".encode())
        sim.send_produce(story.topic, partition, build_v2_batch([record]), lambda answer: None, acks=-1)


__all__ = ["ReplicationStory", "StoryMarks", "write_replication_story"]
