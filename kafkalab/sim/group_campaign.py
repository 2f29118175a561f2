"""A consumer group fault campaign: members come, go, die and get cut off; ownership is checked.

Theory of operation
-------------------
One run is a function of its seed. A one-broker :class:`~kafkalab.sim.cluster.SimCluster` (the
group coordinator) hosts ``orders`` with 12 partitions over links of 1-20 ms that lose 1% of
messages. Kafka's group members (:mod:`kafkalab.client.membership`), all with one assignor the
seed picks, join and leave the group; ``steps`` times the seed's generator picks an action:

=============  ======================================================================
action         what happens
=============  ======================================================================
join           a new member starts (at most ``MEMBERS_MAX`` at a time)
leave          a running member closes and sends LeaveGroup
kill           a running member dies silently; the coordinator waits out its session
isolate        a running member is cut off from the broker (a zombie, if it lasts)
heal           every cut is healed
wait           100 ms to 20 s of simulated time pass
=============  ======================================================================

After every action (and every 50 ms of simulated time within it) the
:class:`GroupChecker` checks the promise the generation id exists to keep: **within one
generation, a partition has at most one owner**. A zombie may still believe it owns partitions
of an older generation while their new owner works in a newer one -- that is allowed, and is
why the coordinator refuses commits from old generations. A broken promise raises with a
one-line replay command::

    python -m kafkalab.sim.group_campaign --seed 1234

Worked example: seed 0 picks ``sticky`` and over 30 steps draws 6 joins, 2 leaves, 5 kills, 6
isolations, 2 heals and 9 waits (an action with nobody to act on does nothing); the group goes
through 6 generations and the checker looks 2,103 times.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kafkalab.client.assignors import ASSIGNORS
from kafkalab.client.membership import MemberConfig, MemberState
from kafkalab.sim.campaign_cli import seeds_main
from kafkalab.sim.cluster import SimCluster
from kafkalab.sim.invariants import InvariantViolation
from kafkalab.sim.network import LinkFaults
from kafkalab.storage.checkpoints import TopicPartition

STEPS_DEFAULT = 30
TOPIC, PARTITIONS, BROKER = "orders", 12, 1
MEMBERS_MAX = 6
CHECK_EVERY_MS = 50
FAULTS = LinkFaults(delay_min_ms=1, delay_max_ms=20, loss=0.01)
ACTIONS = ("join", "join", "leave", "kill", "isolate", "heal", "wait", "wait")


@dataclass(slots=True)
class GroupChecker:
    """Remembers who owned what in which generation. Not thread-safe; owned by one run."""

    cluster: SimCluster
    seed: int
    owners: dict[tuple[int, TopicPartition], str] = field(default_factory=dict)  # (generation, tp)
    checks: int = 0

    def check(self) -> None:
        self.checks += 1
        for name, member in self.cluster.members.items():
            for tp in member.owned:
                owner = self.owners.setdefault((member.generation_id, tp), name)
                if owner != name:
                    raise InvariantViolation(
                        f"seed {self.seed}: {tp[0]}-{tp[1]} has two owners in generation "
                        f"{member.generation_id}: {owner} and {name}; replay with "
                        f"python -m kafkalab.sim.group_campaign --seed {self.seed}")


@dataclass(frozen=True, slots=True)
class GroupRunResult:
    seed: int
    assignor: str
    actions: Counter[str]
    checks: int
    generations: int


def run(seed: int, data_dir: Path, steps: int = STEPS_DEFAULT) -> GroupRunResult:
    """One campaign run; raises :class:`InvariantViolation` on a partition with two owners."""
    rng = random.Random(seed)
    assignor = rng.choice(sorted(ASSIGNORS))
    config = MemberConfig("campaign", (TOPIC,), assignors=(assignor,), session_timeout_ms=6_000,
                          heartbeat_interval_ms=500, rebalance_timeout_ms=10_000, request_timeout_ms=5_000)
    cluster = SimCluster(data_dir, nodes=1, seed=seed, faults=FAULTS,
                         properties={"group.initial.rebalance.delay.ms": "0", "group.min.session.timeout.ms": "1000"})
    checker = GroupChecker(cluster, seed)
    actions: Counter[str] = Counter()
    names = (f"m{i}" for i in range(10_000))
    try:
        cluster.create_topic(TOPIC, PARTITIONS, 1)
        for _ in range(steps):
            action = rng.choice(ACTIONS)
            actions[action] += 1
            _act(cluster, rng, action, config, names)
            _run_checking(cluster, checker, rng.randint(100, 20_000) if action == "wait" else 1_000)
        return GroupRunResult(seed, assignor, actions, checker.checks, len({g for g, _ in checker.owners}))
    finally:
        cluster.close()


def _running(cluster: SimCluster) -> list[str]:
    return sorted(n for n, m in cluster.members.items() if m.state not in (MemberState.LEFT, MemberState.FATAL))


def _act(cluster: SimCluster, rng: random.Random, action: str, config: MemberConfig, names: Iterator[str]) -> None:
    running = _running(cluster)
    if action == "join" and len(running) < MEMBERS_MAX:
        cluster.add_member(next(names), config)
    elif action in ("leave", "kill", "isolate") and running:
        name = rng.choice(running)
        if action == "isolate":
            cluster.network.isolate(name, [BROKER])
        else:
            cluster.stop_member(name, leave=action == "leave")
    elif action == "heal":
        cluster.network.heal()


def _run_checking(cluster: SimCluster, checker: GroupChecker, duration_ms: int) -> None:
    for _ in range(max(1, duration_ms // CHECK_EVERY_MS)):
        cluster.run_for(CHECK_EVERY_MS)
        checker.check()


def main(argv: list[str] | None = None) -> int:
    return seeds_main("kafkalab.sim.group_campaign", run, lambda result: (
        f"{result.assignor}, {result.generations} generations, {result.checks} checks, {dict(result.actions)}"),
                      default_seeds=20, default_steps=STEPS_DEFAULT, argv=argv)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
