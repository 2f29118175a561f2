"""A deterministic fault campaign for KRaft voters over kafkalab.sim.network.

One run is a function of its seed: voters on a ManualClock exchange messages through a seeded
Network with delay, loss, duplication, one-way and two-way cuts, and crashes (memory lost; the
metadata log directory and quorum-state file kept). After every step the checker asserts:

* at most one leader per epoch;
* every node's log below its own high watermark equals the committed log, byte for byte (so
  offsets and leader epochs too), and every leader holds the whole committed log;
* no node ever loses a committed record it held (no truncation below it);
* a leader's high watermark never decreases within its epoch.

At the end the network heals, every node restarts, and a fresh append must commit everywhere.
Replay one seed: ``PYTHONPATH=. python tests/controller/raft/simulation.py SEED VOTERS [RUN_MS HEAL_MS]``.
"""

from __future__ import annotations

import random
import sys
import tempfile
from unittest import mock
from dataclasses import dataclass, field
from pathlib import Path

from kafkalab.clock import ManualClock
from kafkalab.controller.raft.metadata_log import StorageRaftLog
from kafkalab.controller.raft.node import Output, RaftConfig, RaftNode
from kafkalab.controller.raft.quorum_state_file import FILE_NAME, QuorumStateFile
from kafkalab.controller.raft.state import QuorumStateKind
from kafkalab.sim.network import LinkFaults, Network

STEP_MS_MAX = 20
# Memory-backed scratch space where there is one: index files are mmapped, and msync on a disk
# would dominate a campaign's time.
SCRATCH = "/dev/shm" if Path("/dev/shm").is_dir() else None
# A lost message here stands for a dropped connection, which a real client notices well before
# controller.quorum.request.timeout.ms (2000): retry a fetch after 750 ms (> FETCH_MAX_WAIT_MS).
CONFIG = RaftConfig(request_timeout_ms=750)
HEAL_MS = 15_000


def replay_command(seed: int, voters: int, duration_ms: int, heal_ms: int) -> str:
    return f"PYTHONPATH=. python tests/controller/raft/simulation.py {seed} {voters} {duration_ms} {heal_ms}"


@dataclass
class Checker:
    committed: bytearray = field(default_factory=bytearray)  # the committed log's bytes
    positions: dict[int, int] = field(default_factory=lambda: {0: 0})  # batch base offset -> byte
    committed_offset: int = 0
    leaders: dict[int, int] = field(default_factory=dict)  # epoch -> leader id
    leader_hw: dict[tuple[int, int], int] = field(default_factory=dict)
    verified: dict[int, int] = field(default_factory=dict)  # node -> offset verified on its disk
    # (epoch, committed offset): the committed prefix as it stood when a node of that epoch (or
    # of a later one, for a follower that moved on) saw it
    commit_points: list[tuple[int, int]] = field(default_factory=list)

    def check(self, nodes: dict[int, RaftNode | None]) -> None:
        for node_id, node in nodes.items():
            if node is None:
                continue
            log = node.log
            assert log.log_end_offset >= self.verified.get(node_id, 0), (
                f"node {node_id} lost committed records: LEO {log.log_end_offset} < "
                f"{self.verified[node_id]} it held")
            if node.kind is QuorumStateKind.LEADER:
                self._check_leader(node_id, node)
            self._extend(node)
            self._verify(node_id, node, log.high_watermark)

    def _check_leader(self, node_id: int, node: RaftNode) -> None:
        assert self.leaders.setdefault(node.epoch, node_id) == node_id, (
            f"two leaders in epoch {node.epoch}: {self.leaders[node.epoch]} and {node_id}")
        key = (node_id, node.epoch)
        hw = node.log.high_watermark
        assert hw >= self.leader_hw.get(key, 0), f"leader {node_id} HW went back in epoch {node.epoch}"
        self.leader_hw[key] = hw
        # Leader completeness: what was committed in an earlier epoch is in this leader's log.
        # (A deposed leader that has not heard of later epochs yet lacks their commits.)
        required = max((offset for epoch, offset in self.commit_points if epoch < node.epoch), default=0)
        assert node.log.log_end_offset >= required, (
            f"leader {node_id} of epoch {node.epoch} lacks committed offsets "
            f"{node.log.log_end_offset}..{required}")
        self._verify(node_id, node, required)

    def _extend(self, node: RaftNode) -> None:
        hw = node.log.high_watermark
        if hw <= self.committed_offset:
            return
        data = node.log.read(self.committed_offset, 1 << 30)
        position, offset = 0, self.committed_offset
        while offset < hw:
            length = int.from_bytes(data[position + 8:position + 12], "big")
            size = 12 + length
            last = int.from_bytes(data[position:position + 8], "big") + int.from_bytes(
                data[position + 23:position + 27], "big")
            self.committed += data[position:position + size]
            position += size
            offset = last + 1
            self.positions[offset] = len(self.committed)
        assert offset == hw, f"high watermark {hw} is not at a batch boundary"
        self.committed_offset = hw
        self.commit_points.append((node.epoch, hw))

    def _verify(self, node_id: int, node: RaftNode, upto: int) -> None:
        start = self.verified.get(node_id, 0)
        upto = min(upto, self.committed_offset)
        if upto <= start:
            return
        assert upto in self.positions, f"node {node_id}'s offset {upto} is not a committed batch boundary"
        begin, end = self.positions[start], self.positions[upto]
        data = node.log.read(start, end - begin)
        assert bytes(data[:end - begin]) == bytes(self.committed[begin:end]), (
            f"node {node_id}'s log differs from the committed log in offsets {start}..{upto}")
        self.verified[node_id] = upto


class Simulation:
    def __init__(self, seed: int, voter_count: int, root: Path, *, faults: bool = True) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.ids = list(range(1, voter_count + 1))
        self.root = root
        self.clock = ManualClock(0)
        self.net = Network(random.Random(seed * 31 + 7), LinkFaults(1, 8, loss=0.02, duplicate=0.02))
        self.faults = faults
        self.nodes: dict[int, RaftNode | None] = {i: None for i in self.ids}
        self.restarts = 0
        self.checker = Checker()
        self.appended = 0
        for i in self.ids:
            self.start(i)

    def start(self, node_id: int) -> None:
        log = StorageRaftLog.open(self.root / f"node-{node_id}", self.clock)
        self.restarts += 1
        node_rng = random.Random(self.seed * 1000 + node_id * 100 + self.restarts)
        self.nodes[node_id] = RaftNode(node_id, self.ids, log, QuorumStateFile(log.directory / FILE_NAME),
                                       node_rng, self.clock.milliseconds(), CONFIG)

    def crash(self, node_id: int) -> None:
        node = self.nodes[node_id]
        assert node is not None
        node.log.close()
        self.nodes[node_id] = None
        self.net.drop_node(node_id)

    def emit(self, src: int, out: Output) -> None:
        now = self.clock.milliseconds()
        for send in out.sends:
            self.net.send(src, send.dst, (send.correlation_id, send.message), now)

    def step(self) -> None:
        now = self.clock.milliseconds() + self.rng.randint(1, STEP_MS_MAX)
        self.clock.set_ms(now)
        for delivery in self.net.deliver(now):
            node = self.nodes[delivery.dst]
            if node is not None:
                correlation_id, message = delivery.message
                self.emit(delivery.dst, node.handle(delivery.src, correlation_id, message, now))
        for node_id, node in self.nodes.items():
            if node is not None:
                self.emit(node_id, node.tick(now))
        self.maybe_append(now)
        if self.faults:
            self.maybe_fault()
        self.checker.check(self.nodes)

    def maybe_append(self, now: int) -> None:
        if self.rng.random() > 0.2:
            return
        for node_id, node in self.nodes.items():
            if node is not None and node.kind is QuorumStateKind.LEADER:
                self.appended += 1
                _, out = node.append([f"{self.seed}:{self.appended}".encode()], now)
                self.emit(node_id, out)
                return

    def maybe_fault(self) -> None:
        rng, ids = self.rng, self.ids
        roll = rng.random()
        if roll < 0.004:
            live = [i for i in ids if self.nodes[i] is not None]
            if live:
                self.crash(rng.choice(live))
        elif roll < 0.012:
            dead = [i for i in ids if self.nodes[i] is None]
            if dead:
                self.start(rng.choice(dead))
        elif roll < 0.016:
            a, b = rng.sample(ids, 2)
            self.net.cut(a, b, one_way=rng.random() < 0.5)
        elif roll < 0.019:
            self.net.heal()
        elif roll < 0.020:
            live = [i for i in ids if self.nodes[i] is not None]
            leader = [i for i in live if self.nodes[i].kind is QuorumStateKind.LEADER]  # type: ignore[union-attr]
            if leader:
                self.emit(leader[0], self.nodes[leader[0]].resign(self.clock.milliseconds()))  # type: ignore[union-attr]

    def run(self, duration_ms: int) -> None:
        end = self.clock.milliseconds() + duration_ms
        while self.clock.milliseconds() < end:
            self.step()

    def heal_and_converge(self, heal_ms: int = HEAL_MS) -> None:
        """Liveness: with the faults gone, a leader is elected and a new record commits on all."""
        self.faults = False
        self.net.heal()
        for link in [(a, b) for a in self.ids for b in self.ids if a != b]:
            self.net.set_link(*link, LinkFaults(1, 8))
        for i in self.ids:
            if self.nodes[i] is None:
                self.start(i)
        self.run(heal_ms // 2)
        leaders = [n for n in self.nodes.values() if n is not None and n.kind is QuorumStateKind.LEADER]
        assert len(leaders) == 1, f"no single leader after healing: {len(leaders)}"
        offset, out = leaders[0].append([b"final"], self.clock.milliseconds())
        self.emit(leaders[0].local_id, out)
        self.run(heal_ms // 2)
        for node in self.nodes.values():
            assert node is not None and node.log.high_watermark > offset, (
                f"node {node and node.local_id} did not commit offset {offset}")

    def close(self) -> None:
        for node in self.nodes.values():
            if node is not None:
                node.log.close()


def run(seed: int, voter_count: int, duration_ms: int = 20_000, heal_ms: int = HEAL_MS) -> Simulation:
    """Run one seed; any violation raises AssertionError with the replay command.

    The campaign models process crashes, not power loss: what a node wrote stays in its files.
    So fsync changes nothing here, and it is skipped to keep a run to CPU time."""
    with tempfile.TemporaryDirectory(prefix=f"raft-sim-{seed}-", dir=SCRATCH) as tmp, mock.patch("os.fsync"):
        sim = Simulation(seed, voter_count, Path(tmp))
        try:
            sim.run(duration_ms)
            sim.heal_and_converge(heal_ms)
        except AssertionError as exc:
            raise AssertionError(f"{exc} -- replay: {replay_command(seed, voter_count, duration_ms, heal_ms)}") from exc
        finally:
            sim.close()
        return sim


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    result = run(*args)
    print(f"seed {sys.argv[1]}: committed offset {result.checker.committed_offset}, "
          f"epochs {len(result.checker.leaders)}, net {result.net.stats}")
