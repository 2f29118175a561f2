"""A KRaft controller quorum in one process: Raft voters on one ManualClock and a seeded network.

Theory of operation
-------------------
Each voter is a sans-I/O :class:`~kafkalab.controller.raft.node.RaftNode` over its own
``__cluster_metadata-0`` directory and ``quorum-state`` file. :meth:`SimQuorum.run_for` moves
the clock in steps of ``STEP_MS``; at each step every message due is delivered to its voter
(Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch and their answers, carried by
:class:`~kafkalab.sim.network.Network`), then every live voter is ticked. Whatever a voter
answers goes back onto the network. A crash loses the voter's memory and its messages in
flight; its log directory and quorum-state file stay, and :meth:`SimQuorum.start` reopens them.

After each step the quorum notes every voter whose (state, epoch, leader) changed, so a reader
can follow an election as a list of :class:`QuorumEvent` rows.

Worked example: ``SimQuorum(tmp, voters=3, seed=1)`` then ``run_for(3_000)``: every voter
starts UNATTACHED at epoch 0; the first election timer to fire (drawn in [1000, 2000) ms) makes
its voter a CANDIDATE of epoch 1, one granted vote makes it LEADER, and the other two become
its FOLLOWERs. Crash the leader: after ``controller.quorum.fetch.timeout.ms`` (2 s) without a
fetch answer a follower stands for epoch 2 and wins. The exact times are the seed's.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from kafkalab.clock import ManualClock
from kafkalab.controller.raft.messages import RaftMessage, Send
from kafkalab.controller.raft.metadata_log import StorageRaftLog
from kafkalab.controller.raft.node import Output, RaftConfig, RaftNode
from kafkalab.controller.raft.quorum_state_file import FILE_NAME, QuorumStateFile
from kafkalab.controller.raft.state import QuorumStateKind
from kafkalab.sim.network import LinkFaults, Network

STEP_MS = 5  # the clock's step; well below every Raft timeout, so the order of events is kept
RUN_MS_MAX = 600_000  # one run_for: ten simulated minutes at most


@dataclass(frozen=True, slots=True)
class QuorumEvent:
    """Voter ``node_id`` entered ``state`` (or ``"CRASHED"``) at ``time_ms``."""

    time_ms: int
    node_id: int
    state: str
    epoch: int
    leader_id: int


class SimQuorum:
    """Raft voters 1..n driven by one clock. Not thread-safe; owned by one notebook or test."""

    def __init__(self, data_dir: Path, *, voters: int = 3, seed: int = 0, config: RaftConfig | None = None,
                 faults: LinkFaults | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.seed = seed
        self.ids = list(range(1, voters + 1))
        self.config = config or RaftConfig()
        self.clock = ManualClock(now_ms=0)
        self.network = Network(random.Random(seed), faults or LinkFaults())
        self.nodes: dict[int, RaftNode | None] = dict.fromkeys(self.ids)
        self.events: list[QuorumEvent] = []
        self._seen: dict[int, tuple[str, int, int]] = {}
        self._starts = 0
        for node_id in self.ids:
            self.start(node_id)

    def start(self, node_id: int) -> None:
        """Start a voter (again) on its directory: it reads its quorum-state file first."""
        assert self.nodes[node_id] is None, f"voter {node_id} is running"
        log = StorageRaftLog.open(self.data_dir / f"node-{node_id}", self.clock)
        self._starts += 1
        rng = random.Random(self.seed * 1000 + node_id * 100 + self._starts)
        node = RaftNode(node_id, self.ids, log, QuorumStateFile(log.directory / FILE_NAME), rng,
                        self.clock.milliseconds(), self.config)
        self.nodes[node_id] = node
        self._note()

    def crash(self, node_id: int) -> None:
        """Kill a voter: its memory and its messages in flight are lost, its files stay."""
        node = self.nodes[node_id]
        assert node is not None, f"voter {node_id} is already down"
        node.log.close()
        self.nodes[node_id] = None
        self.network.drop_node(node_id)
        self._seen.pop(node_id, None)
        self.events.append(QuorumEvent(self.clock.milliseconds(), node_id, "CRASHED", node.epoch, -1))

    def leader(self) -> RaftNode | None:
        """The live voter that is LEADER of the highest epoch, if any."""
        leaders = [n for n in self.nodes.values() if n is not None and n.kind is QuorumStateKind.LEADER]
        return max(leaders, key=lambda n: n.epoch, default=None)

    def append(self, values: list[bytes]) -> int:
        """Append ``values`` on the leader as one batch; returns the offset of the last one
        (committed once the quorum's high watermark passes it, as the simulation runs)."""
        leader = self.leader()
        assert leader is not None, "no leader to append to"
        base_offset, out = leader.append(values, self.clock.milliseconds())
        self._emit(leader.local_id, out)
        return base_offset + len(values) - 1

    def run_for(self, duration_ms: int) -> None:
        if not 0 < duration_ms <= RUN_MS_MAX:
            raise ValueError(f"run_for({duration_ms}) is outside (0, {RUN_MS_MAX}]")
        end_ms = self.clock.milliseconds() + duration_ms
        while self.clock.milliseconds() < end_ms:
            now_ms = min(self.clock.milliseconds() + STEP_MS, end_ms)
            self.clock.set_ms(now_ms)
            for delivery in self.network.deliver(now_ms):
                correlation_id, message = delivery.message
                self._deliver(int(str(delivery.src)), int(str(delivery.dst)), correlation_id, message, now_ms)
            for node_id, node in self.nodes.items():
                if node is not None:
                    self._tick(node_id, node, now_ms)
            self._tick_others(now_ms)
            self._note()

    def _deliver(self, src: int, dst: int, correlation_id: int, message: RaftMessage, now_ms: int) -> None:
        node = self.nodes.get(dst)
        if node is not None:
            self._emit(dst, node.handle(src, correlation_id, message, now_ms))

    def _tick(self, node_id: int, node: RaftNode, now_ms: int) -> None:
        self._emit(node_id, node.tick(now_ms))

    def _tick_others(self, now_ms: int) -> None:
        """Tick whatever else shares the network (observers, in a subclass)."""

    def run_until_leader(self, max_ms: int = 30_000) -> RaftNode | None:
        """Run until some voter leads (None if none does within ``max_ms``)."""
        waited = 0
        while self.leader() is None and waited < max_ms:
            self.run_for(STEP_MS)
            waited += STEP_MS
        return self.leader()

    def _emit(self, src: int, out: Output) -> None:
        self._send_all(src, out.sends)

    def _send_all(self, src: int, sends: list[Send]) -> None:
        now_ms = self.clock.milliseconds()
        for send in sends:
            self.network.send(src, send.dst, (send.correlation_id, send.message), now_ms)

    def _note(self) -> None:
        for node_id, node in self.nodes.items():
            if node is None:
                continue
            now = (node.kind.name, node.epoch, node.leader_id)
            if self._seen.get(node_id) != now:
                self._seen[node_id] = now
                self.events.append(QuorumEvent(self.clock.milliseconds(), node_id, *now))

    def close(self) -> None:
        for node in self.nodes.values():
            if node is not None:
                node.log.close()


__all__ = ["QuorumEvent", "SimQuorum", "STEP_MS"]
