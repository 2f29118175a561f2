"""A fault campaign over three KRaft controllers and an observing broker: the metadata log holds.

Theory of operation
-------------------
One run is a function of its seed. A :class:`~kafkalab.sim.controller_quorum.SimControllerQuorum`
of three controllers and one observer (broker 101) runs over links of 1-10 ms that lose 1% of
messages; three brokers are registered first. Then ``steps`` times the seed's generator picks:

=========  =========================================================================
action     what happens
=========  =========================================================================
write      the active controller (if any) decides: create a topic, allocate producer
           ids, fence or re-register a broker -- one batch each
crash      a running controller dies: memory lost, log and quorum-state kept
restart    a crashed controller starts again on its directory
isolate    a controller is cut off from everyone (a deposed leader keeps writing)
heal       every cut is healed
snapshot   a running controller writes its committed image as a ``.checkpoint`` and
           starts its log after it; a replica further behind must fetch the snapshot
wait       100 ms to 4 s of simulated time pass
=========  =========================================================================

Every 100 ms of simulated time the :class:`QuorumChecker` checks what KRaft promises:

* **at most one active controller per epoch** (and at most one Raft leader per epoch);
* **the logs match below the high watermark**: every batch below a controller's high watermark
  is, byte for byte, the batch every other controller has at that offset below its own (the
  checker keeps the committed batches seen so far, the *ledger*, and compares);
* **no committed record is lost**: a leader holds every batch committed before its epoch (in
  its log, or below its log start in its snapshot), every snapshot is the ledger replayed up to
  its end, and every controller's and the observer's image is exactly the ledger replayed up to
  that image's offset.

A controller's log *above* its high watermark, or a cut-off node's stale tail, may differ: that
is uncommitted and Raft truncates it. At the end every cut heals, every controller restarts, a
last write is made, and every controller must hold the same committed log and image as the
observer. A broken promise raises :class:`~kafkalab.sim.invariants.InvariantViolation` with a
one-line replay command::

    python -m kafkalab.sim.quorum_campaign --seed 12 --steps 25

Worked example: seed 0 over 25 steps draws 2 crashes, 3 restarts, 2 isolations, 3 heals, 5
snapshots, 2 waits and 8 writes; 13 batches commit (LEADER_CHANGE and bootstrap records
included) and the checker looks 278 times.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from kafkalab.controller.local import TopicError
from kafkalab.controller.quorum_controller import QuorumController
from kafkalab.controller.raft.node import RaftConfig
from kafkalab.metadata.image import BrokerRegistration, MetadataImage
from kafkalab.metadata.record_log import replay_batches
from kafkalab.records.codec import iter_batches
from kafkalab.records.header import HeaderWalker
from kafkalab.sim.campaign_cli import seeds_main
from kafkalab.sim.controller_quorum import SimControllerQuorum
from kafkalab.sim.invariants import InvariantViolation
from kafkalab.sim.network import LinkFaults

STEPS_DEFAULT = 25
CONTROLLERS, OBSERVER, BROKERS = 3, 101, (101, 102, 103)
CHECK_EVERY_MS = 100
HEAL_MS = 15_000  # after healing: elections settle, restarted nodes catch up
CONVERGE_CHECKS_MAX = 50  # then up to 5 s more for the last fetch rounds (a parked fetch waits 500 ms)
FAULTS = LinkFaults(delay_min_ms=1, delay_max_ms=10, loss=0.01)
# A lost message stands for a dropped connection, noticed well before the 2 s request timeout.
CONFIG = RaftConfig(request_timeout_ms=750)
ACTIONS = ("write", "write", "write", "write", "crash", "restart", "isolate", "heal", "snapshot", "wait", "wait")
LOG_READ_BYTES = 64 * 1024 * 1024  # a campaign's whole metadata log, read for comparison


def replay_command(seed: int, steps: int) -> str:
    return f"python -m kafkalab.sim.quorum_campaign --seed {seed} --steps {steps}"


@dataclass
class QuorumChecker:
    """The committed log as seen so far, and the images it implies. Not thread-safe."""

    replay: str
    ledger: list[bytes] = field(default_factory=list)  # committed batches, in offset order
    index_of: dict[int, int] = field(default_factory=dict)  # a committed batch's base offset -> ledger index
    seen_in_epoch: list[int] = field(default_factory=list)  # the epoch in which each was first seen committed
    ledger_end: int = 0  # one past the last committed offset seen
    images: dict[int, MetadataImage] = field(default_factory=lambda: {-1: MetadataImage()})
    active_by_epoch: dict[int, int] = field(default_factory=dict)
    leader_by_epoch: dict[int, int] = field(default_factory=dict)
    events_seen: int = 0
    checks: int = 0

    def fail(self, what: str) -> None:
        raise InvariantViolation(f"{what} -- replay: {self.replay}")

    def check(self, quorum: SimControllerQuorum) -> None:
        self.checks += 1
        self._one_leader_per_epoch(quorum)
        for controller in quorum.controllers.values():
            if controller is not None:
                self._committed_prefix(controller)
        for controller in quorum.controllers.values():
            if controller is not None:
                self._nothing_lost(controller)
        for broker_id, observer in quorum.observers.items():
            self._image_matches(f"observer {broker_id}", observer.image)

    def _one_leader_per_epoch(self, quorum: SimControllerQuorum) -> None:
        for event in quorum.events[self.events_seen:]:
            if event.state == "LEADER" and self.leader_by_epoch.setdefault(event.epoch, event.node_id) != event.node_id:
                self.fail(f"two Raft leaders in epoch {event.epoch}")
        self.events_seen = len(quorum.events)
        for controller in quorum.controllers.values():
            if controller is not None and controller.is_active:
                first = self.active_by_epoch.setdefault(controller.epoch, controller.node.local_id)
                if first != controller.node.local_id:
                    self.fail(f"controllers {first} and {controller.node.local_id} both active in epoch {controller.epoch}")

    def _committed_prefix(self, controller: QuorumController) -> None:
        """Batches below this controller's high watermark agree with the ledger (and extend it)."""
        log = controller.node.log
        data = log.read(log.log_start_offset, LOG_READ_BYTES)
        for header in HeaderWalker(data):
            if header.last_offset >= log.high_watermark:
                break
            batch = bytes(data[header.position:header.position + header.size_bytes])
            index = self.index_of.get(header.base_offset)
            if index is not None:
                if self.ledger[index] != batch:
                    self.fail(f"controller {controller.node.local_id}'s committed batch at offset "
                              f"{header.base_offset} differs from the one committed before")
            else:
                self._extend(batch, header.base_offset, header.last_offset)
                self.seen_in_epoch.append(controller.epoch)

    def _extend(self, batch: bytes, base_offset: int, last_offset: int) -> None:
        if base_offset != self.ledger_end:
            self.fail(f"committed batch at offset {base_offset} leaves a gap after {self.ledger_end}")
        self.images[last_offset] = replay_batches(self.images[self.ledger_end - 1], batch)
        self.index_of[base_offset] = len(self.ledger)
        self.ledger.append(batch)
        self.ledger_end = last_offset + 1

    def _nothing_lost(self, controller: QuorumController) -> None:
        log = controller.node.log
        if controller.node.leader is not None:  # Raft's leader completeness
            # A leader of epoch E holds every batch committed before E began (a deposed leader
            # of an older epoch need not hold what was committed after it) -- in its log, or,
            # below its log start, in its snapshot.
            count = sum(1 for epoch in self.seen_in_epoch if epoch < controller.epoch)
            first = next((i for i, b in enumerate(self.ledger) if _base_offset(b) >= log.log_start_offset), count)
            data = bytes(log.read(log.log_start_offset, LOG_READ_BYTES))
            if first < count and not data.startswith(b"".join(self.ledger[first:count])):
                self.fail(f"leader {controller.node.local_id} of epoch {controller.epoch} lacks batches "
                          f"committed before its epoch")
        if log.log_start_offset > 0 and log.latest_snapshot_image() != self.images.get(log.log_start_offset - 1):
            self.fail(f"controller {controller.node.local_id}'s snapshot ending at {log.log_start_offset} "
                      f"is not the committed log replayed")
        self._image_matches(f"controller {controller.node.local_id}", controller.image)

    def _image_matches(self, who: str, image: MetadataImage) -> None:
        expected = self.images.get(image.offset)
        if expected is None:
            self.fail(f"{who}'s image has offset {image.offset}, not the end of a committed batch "
                      f"(committed up to {self.ledger_end - 1})")
        elif expected != image:
            self.fail(f"{who}'s image at offset {image.offset} is not the committed log replayed")


def _base_offset(batch: bytes) -> int:
    return int.from_bytes(batch[:8], "big")


@dataclass
class CampaignResult:
    actions: Counter[str] = field(default_factory=Counter)
    writes: int = 0
    epochs: int = 0
    committed_batches: int = 0
    checks: int = 0


class _Run:
    """One seed's run. Not thread-safe; owned by :func:`run`."""

    def __init__(self, seed: int, data_dir: Path, steps: int) -> None:
        self.rng = random.Random(seed)
        self.quorum = SimControllerQuorum(data_dir, voters=CONTROLLERS, observers=(OBSERVER,), seed=seed,
                                          config=CONFIG, faults=FAULTS)
        self.checker = QuorumChecker(replay_command(seed, steps))
        self.result = CampaignResult()
        self.topics = 0
        self.broker_epochs = dict.fromkeys(BROKERS, 0)

    def wait(self, duration_ms: int) -> None:
        while duration_ms > 0:
            step_ms = min(CHECK_EVERY_MS, duration_ms)
            self.quorum.run_for(step_ms)
            duration_ms -= step_ms
            self.checker.check(self.quorum)

    def write(self) -> None:
        if self.quorum.active() is None:
            return
        self.result.writes += 1
        choice = self.rng.randrange(4)
        try:
            if choice == 0 or self.result.writes <= len(BROKERS):
                self._register(BROKERS[self.result.writes % len(BROKERS)])
            elif choice == 1:
                self.topics += 1
                name, partitions, factor = f"t{self.topics}", self.rng.randint(1, 3), self.rng.randint(1, 3)
                self.quorum.write(lambda c: c.create_topic(name, partitions, factor))
            elif choice == 2:
                self.quorum.write(lambda c: c.allocate_producer_ids(BROKERS[0], 1))
            else:
                broker = self.rng.choice(BROKERS)
                self.quorum.write(lambda c: c.fence_broker(broker))
        except TopicError:
            pass  # e.g. too few unfenced brokers for the replication factor: refused, nothing written

    def _register(self, broker_id: int) -> None:
        self.broker_epochs[broker_id] += 1
        registration = BrokerRegistration(broker_id, self.broker_epochs[broker_id], "localhost", 9000 + broker_id)
        self.quorum.write(lambda c: c.register_broker(registration))

    def act(self, action: str) -> None:
        quorum, rng = self.quorum, self.rng
        running = [i for i, n in quorum.nodes.items() if n is not None]
        crashed = [i for i, n in quorum.nodes.items() if n is None]
        if action == "write":
            self.write()
        elif action == "crash" and running:
            quorum.crash(rng.choice(running))
        elif action == "restart" and crashed:
            quorum.start(rng.choice(crashed))
        elif action == "isolate" and running:
            node = rng.choice(running)
            quorum.network.isolate(node, [i for i in [*quorum.ids, OBSERVER] if i != node])
        elif action == "heal":
            quorum.network.heal()
        elif action == "snapshot" and running:  # right after a check: the ledger holds all it covers
            controller = quorum.controllers[rng.choice(running)]
            assert controller is not None
            if controller.image.offset + 1 > controller.node.log.log_start_offset:
                controller.snapshot(quorum.clock.milliseconds())
        self.result.actions[action] += 1
        self.wait(rng.randint(100, 4_000) if action == "wait" else CHECK_EVERY_MS)

    def finish(self) -> CampaignResult:
        quorum = self.quorum
        quorum.network.heal()
        for node_id, node in quorum.nodes.items():
            if node is None:
                quorum.start(node_id)
        self.wait(HEAL_MS)
        if quorum.active() is None:
            self.checker.fail(f"no active controller {HEAL_MS} ms after every fault healed")
        self._register(BROKERS[0])
        self.wait(3_000)
        for _ in range(CONVERGE_CHECKS_MAX):  # a follower learns the last high watermark on its next fetch
            if self._replayed_everything():
                break
            self.wait(CHECK_EVERY_MS)
        self._converged()
        self.result.epochs = max(c.epoch for c in quorum.controllers.values() if c is not None)
        self.result.committed_batches = len(self.checker.ledger)
        self.result.checks = self.checker.checks
        return self.result

    def _replayed_everything(self) -> bool:
        images = [c.image for c in self.quorum.controllers.values() if c is not None]
        return all(image.offset == self.checker.ledger_end - 1
                   for image in [*images, self.quorum.observers[OBSERVER].image])

    def _converged(self) -> None:
        images = {i: c.image for i, c in self.quorum.controllers.items() if c is not None}
        observer = self.quorum.observers[OBSERVER].image
        end = self.checker.ledger_end - 1
        for who, image in [*images.items(), (OBSERVER, observer)]:
            if image.offset != end:
                self.checker.fail(f"node {who} replayed up to offset {image.offset}, the quorum committed up to {end}")
        for controller in self.quorum.controllers.values():
            assert controller is not None
            log = controller.node.log
            data = bytes(log.read(log.log_start_offset, LOG_READ_BYTES))
            held = [b for b in self.checker.ledger if _base_offset(b) >= log.log_start_offset]
            if not data.startswith(b"".join(held)) or len(list(iter_batches(data))) < len(held):
                self.checker.fail(f"controller {controller.node.local_id}'s log does not hold the committed log")


def run(seed: int, data_dir: Path, steps: int = STEPS_DEFAULT) -> CampaignResult:
    """Run one seed; raises InvariantViolation (with its replay command) on a broken promise."""
    campaign = _Run(seed, data_dir, steps)
    try:
        campaign.wait(1_000)
        for _ in range(steps):
            campaign.act(campaign.rng.choice(ACTIONS))
        return campaign.finish()
    finally:
        campaign.quorum.close()


def describe(result: CampaignResult) -> str:
    actions = ", ".join(f"{count} {name}" for name, count in sorted(result.actions.items()))
    return (f"{actions}; {result.writes} writes, {result.committed_batches} committed batches, "
            f"last epoch {result.epochs}, {result.checks} checks")


def main(argv: list[str] | None = None) -> int:
    return seeds_main("kafkalab.sim.quorum_campaign", run, describe, default_seeds=20,
                      default_steps=STEPS_DEFAULT, argv=argv)


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["CampaignResult", "QuorumChecker", "describe", "main", "replay_command", "run"]
