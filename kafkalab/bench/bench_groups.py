"""Consumer groups: the messages a rebalance costs, and OffsetCommit throughput.

Figures (``python -m kafkalab.bench groups``):

* ``groups.rebalance_requests_{25,50,100}`` -- a group of N of kafkalab's own members
  (:mod:`kafkalab.client.membership`, ``range``, heartbeat every 3 s) is stable on a one-broker
  :class:`~kafkalab.sim.cluster.SimCluster`; one more member joins, and we count the group
  requests every member sends from that moment until all N + 1 are stable in the new
  generation (each request has one answer, so the messages on the wire are twice this). The
  baseline is N, so the ratio is requests per member. Kafka's classic protocol costs each old
  member one Heartbeat (answered REBALANCE_IN_PROGRESS), one JoinGroup and one SyncGroup, the
  leader one Metadata more, and the newcomer FindCoordinator, two JoinGroups (KIP-394) and a
  SyncGroup: 3N + 5. The 100-member line has the target ratio <= 4.
* ``groups.rebalance_growth`` -- requests per member at 100 members against at 25: O(members)
  means this stays flat; target <= 1.1.
* ``groups.offset_commit`` -- OffsetCommit requests per second from confluent-kafka
  (librdkafka) committing one partition's offset, asynchronously, ``COMMITS`` times, with the
  answers counted through ``on_commit``; kafkalab's server against librdkafka's mock cluster
  (``test.mock.num.brokers=1``, found through the broker list its own client reports). Target
  ratio >= 0.5. ``groups.offset_commit_sync`` is the same with ``commit(asynchronous=False)``,
  one request in flight at a time (a context line).

Each throughput figure is the median-ratio run of ``RUNS`` runs taken side by side.

Each committer first makes ``WARM_UP_COMMITS`` untimed commits: ``Broker.handle`` is slower over
the first thousand commits than after a few thousand, and the figure is meant to describe a
server in its steady state.

No commit waits for a timer: on a lone broker the append moves the high watermark at once, so
``when_committed`` answers inside the request and the answer is written before the server reads
again. librdkafka pipelines the asynchronous commits (a few arrive in one read), so the figure
is the server's CPU per commit. Measured in process (librdkafka's own v9 frames replayed through
``Broker.handle``, one-record commits), that is about 50-70 us on a busy two-core machine,
with the common case kept lean: the request and its answer go through OffsetCommit's dedicated
reader and writer (:mod:`kafkalab.protocol.offset_commit_codec`) instead of the generic
schemas, the coordinator encodes its one-record batch straight from key and value
(:func:`kafkalab.broker.group_log.coordinator_batch`), that batch takes the log's fused append
path with its key checked by walking the record's framing
(:func:`kafkalab.storage.log_append.assign_plain_batch`), and a group's partition is hashed
once. What is left is spread over the layers a commit must cross -- the group checks, the
offset record, the append and its high watermark, the answer -- a few microseconds each, and
each answer costs one ``write`` system call (15-25 us on loopback while the client reads on the
other core). The mock cluster keeps offsets in a C structure and writes nothing, answering in
about 10 us per commit, near the client's own cost; 0.5x of it would need about 20 us per
commit end to end, so this ratio stays below the target. (Holding the answers to one read's
commits for a single ``write`` measured slower, not faster: the client then gets no answer
until the whole read is done.)
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from kafkalab.bench.report import CONTEXT, Reporter, alternate

GROUP_SIZES = (25, 50, 100)
PARTITIONS = 200
HEARTBEAT_INTERVAL_MS = 3_000  # heartbeat.interval.ms default
SESSION_TIMEOUT_MS = 45_000  # session.timeout.ms default
SETTLE_MS_MAX = 120_000  # a group that is not stable after two simulated minutes is a bug
COMMITS = 2_000
WARM_UP_COMMITS = 5_000  # the server takes a few thousand commits to reach its steady speed
COMMITS_FULL = 10_000
RUNS = 5
TOPIC = "commits"
DEADLINE_S = 60.0


def run(reporter: Reporter, full: bool = False) -> None:
    per_member = {}
    for members in GROUP_SIZES:
        requests = rebalance_requests(members)
        per_member[members] = requests / members
        reporter.report(f"groups.rebalance_requests_{members}", requests, "requests", members,
                        "<=4" if members == max(GROUP_SIZES) else CONTEXT)
    reporter.report("groups.rebalance_growth", per_member[max(GROUP_SIZES)], "requests/member",
                    per_member[min(GROUP_SIZES)], "<=1.1")
    commit_throughput(reporter, COMMITS_FULL if full else COMMITS)


# --- the rebalance ---------------------------------------------------------------------------


def rebalance_requests(members: int) -> int:
    """Group requests sent from a newcomer's arrival until all ``members + 1`` are stable."""
    from kafkalab.client.membership import MemberConfig, MemberState
    from kafkalab.sim.cluster import SimCluster
    from kafkalab.sim.events import EventRecorder

    config = MemberConfig("bench", ("orders",), assignors=("range",), session_timeout_ms=SESSION_TIMEOUT_MS,
                          heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS)
    with tempfile.TemporaryDirectory(prefix="kafkalab-bench-groups-") as tmp:
        sim = SimCluster(Path(tmp), nodes=1, seed=1, properties={"group.initial.rebalance.delay.ms": "0"})
        try:
            sim.create_topic("orders", PARTITIONS, 1)
            for index in range(members):
                sim.add_member(f"m{index}", config)

            def settled(generation: int) -> bool:
                return all(m.state is MemberState.STABLE and m.generation_id > generation
                           for m in sim.members.values())

            if not sim.run_until(lambda: settled(0), SETTLE_MS_MAX):
                raise RuntimeError(f"{members} members did not settle")
            generation = max(m.generation_id for m in sim.members.values())
            sim.run_for(HEARTBEAT_INTERVAL_MS // 2)  # mid-way between heartbeats
            recorder = EventRecorder(sim)
            sim.add_member("newcomer", config)
            if not sim.run_until(lambda: settled(generation), SETTLE_MS_MAX):
                raise RuntimeError(f"{members + 1} members did not settle after the newcomer joined")
            return sum(1 for row in recorder.rows if row.kind == "group-request")
        finally:
            sim.close()


# --- OffsetCommit throughput -----------------------------------------------------------------


def commit_throughput(reporter: Reporter, commits: int) -> None:
    from confluent_kafka import Producer

    from kafkalab.client.launcher import start_server

    # The mock cluster lives as long as the client that created it.
    mock_owner = Producer({"test.mock.num.brokers": 1, "bootstrap.servers": "", "log_level": 3})
    broker = next(iter(mock_owner.list_topics(timeout=10).brokers.values()))
    brokers = {"mock": f"{broker.host}:{broker.port}"}
    with tempfile.TemporaryDirectory(prefix="kafkalab-bench-") as tmp:
        server = start_server(Path(tmp) / "data")
        try:
            brokers["kafkalab"] = server.bootstrap
            committers = {name: Committer(bootstrap) for name, bootstrap in brokers.items()}
            try:
                for asynchronous, name, target in ((True, "groups.offset_commit", ">=0.5"),
                                                   (False, "groups.offset_commit_sync", CONTEXT)):
                    rates = alternate({n: _rate(c, commits, asynchronous) for n, c in committers.items()}, RUNS)
                    reporter.report_runs(name, rates["kafkalab"], "commits/s", rates["mock"], target)
            finally:
                for committer in committers.values():
                    committer.close()
        finally:
            server.stop()


def _rate(committer: Committer, commits: int, asynchronous: bool) -> Any:
    return lambda: commits / committer.commit_many(commits, asynchronous)


class Committer:
    """A confluent-kafka consumer in its own group, assigned one partition, that commits."""

    def __init__(self, bootstrap_servers: str) -> None:
        from confluent_kafka import Consumer, Producer, TopicPartition

        producer = Producer({"bootstrap.servers": bootstrap_servers})
        producer.produce(TOPIC, b"creates the topic", partition=0)
        if producer.flush(DEADLINE_S):
            raise RuntimeError(f"could not produce to {bootstrap_servers}")
        self._partition = TopicPartition
        self.answered = 0
        self.failed: list[object] = []
        self.consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": "bench-commits",
                                  "enable.auto.commit": False, "on_commit": self._on_commit,
                                  "log_level": 3})
        self.consumer.assign([TopicPartition(TOPIC, 0, 0)])
        self.offset = 0
        self.commit_many(WARM_UP_COMMITS, asynchronous=False)  # coordinator lookup, connections, caches

    def _on_commit(self, error: object, _partitions: object) -> None:
        if error is not None:
            self.failed.append(error)
        self.answered += 1

    def commit_many(self, commits: int, asynchronous: bool) -> float:
        """Seconds to commit ``commits`` successive offsets and have every answer back."""
        self.answered, self.failed = 0, []
        start = time.perf_counter()
        for _ in range(commits):
            self.offset += 1
            offsets = [self._partition(TOPIC, 0, self.offset)]
            if asynchronous:
                self.consumer.commit(offsets=offsets, asynchronous=True)
                self.consumer.poll(0)
            else:
                self.consumer.commit(offsets=offsets, asynchronous=False)
        deadline = start + DEADLINE_S
        while asynchronous and self.answered < commits and time.perf_counter() < deadline:
            self.consumer.poll(0.01)
        elapsed = time.perf_counter() - start
        if self.failed or (asynchronous and self.answered < commits):
            raise RuntimeError(f"{self.answered} of {commits} commits answered, failures: {self.failed[:3]}")
        return elapsed

    def close(self) -> None:
        self.consumer.close()
