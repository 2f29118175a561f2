"""Three KRaft controllers carrying the metadata log, with brokers following it as observers.

Theory of operation
-------------------
:class:`SimControllerQuorum` is a :class:`~kafkalab.sim.quorum.SimQuorum` whose voters are whole
controllers: each Raft node is wrapped in a
:class:`~kafkalab.controller.quorum_controller.QuorumController`, which makes decisions while it
is active and replays every committed batch of its log into its own metadata image. Observers
(brokers' :class:`~kafkalab.controller.raft.observer.MetadataObserver`) share the same clock and
network: they fetch the committed log from the leader and replay it into their images.

A write goes to the active controller -- ``quorum.write(lambda c: c.create_topic(...))`` -- and
comes back with the decision at once; it is in the images only after the quorum commits it,
which takes a round of fetches (``run_for``).

Worked example: ``SimControllerQuorum(tmp, voters=3, observers=(101,), seed=1)``;
``run_until_active()`` elects a leader (about 1-2 s of simulated time) that claims once its
LEADER_CHANGE batch and the bootstrap FeatureLevelRecord commit; ``write(lambda c:
c.create_topic("orders", 3, 1))`` needs a registered broker first
(``register_broker``); after ``run_for(1_000)`` controllers 1, 2, 3 and broker 101 all hold
the same image with ``orders`` in it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from kafkalab.controller.quorum_controller import QuorumController
from kafkalab.controller.raft.messages import FetchResponse, FetchSnapshotResponse, RaftMessage
from kafkalab.controller.raft.node import RaftConfig, RaftNode
from kafkalab.controller.raft.observer import MetadataObserver
from kafkalab.sim.network import LinkFaults
from kafkalab.sim.quorum import STEP_MS, SimQuorum

T = TypeVar("T")


class SimControllerQuorum(SimQuorum):
    """Controllers 1..n and observers on one clock. Not thread-safe; owned by one test or notebook."""

    def __init__(self, data_dir: Path, *, voters: int = 3, observers: Sequence[int] = (), seed: int = 0,
                 config: RaftConfig | None = None, faults: LinkFaults | None = None) -> None:
        self.controllers: dict[int, QuorumController | None] = {}
        self.observers: dict[int, MetadataObserver] = {}
        super().__init__(data_dir, voters=voters, seed=seed, config=config, faults=faults)
        for broker_id in observers:
            if broker_id in self.ids:
                raise ValueError(f"observer {broker_id} has a voter's id")
            self.observers[broker_id] = MetadataObserver(broker_id, self.ids, self.clock.milliseconds(),
                                                         config=self.config)

    def start(self, node_id: int) -> None:
        super().start(node_id)
        node = self.nodes[node_id]
        assert node is not None
        self.controllers[node_id] = QuorumController(node, random.Random(self.seed * 7919 + node_id * 31 + self._starts))

    def crash(self, node_id: int) -> None:
        super().crash(node_id)
        self.controllers[node_id] = None

    def active(self) -> QuorumController | None:
        """The active controller of the highest epoch, if any."""
        active = [c for c in self.controllers.values() if c is not None and c.is_active]
        return max(active, key=lambda c: c.epoch, default=None)

    def run_until_active(self, max_ms: int = 30_000) -> QuorumController | None:
        waited = 0
        while self.active() is None and waited < max_ms:
            self.run_for(STEP_MS)
            waited += STEP_MS
        return self.active()

    def write(self, decide: Callable[[QuorumController], T]) -> T:
        """Run one decision on the active controller and send what its append produced."""
        active = self.active()
        assert active is not None, "no active controller to write to"
        result = decide(active)
        self._send_all(active.node.local_id, active.take_sends())
        return result

    def _deliver(self, src: int, dst: int, correlation_id: int, message: RaftMessage, now_ms: int) -> None:
        controller = self.controllers.get(dst)
        if controller is not None:
            self._send_all(dst, controller.handle(src, correlation_id, message, now_ms))
        elif dst in self.observers and isinstance(message, (FetchResponse, FetchSnapshotResponse)):
            self._send_all(dst, self.observers[dst].handle(src, correlation_id, message, now_ms))

    def _tick(self, node_id: int, node: RaftNode, now_ms: int) -> None:
        controller = self.controllers[node_id]
        assert controller is not None
        self._send_all(node_id, controller.tick(now_ms))

    def _tick_others(self, now_ms: int) -> None:
        for broker_id, observer in self.observers.items():
            self._send_all(broker_id, observer.poll(now_ms))


__all__ = ["SimControllerQuorum"]
