"""A committed-offsets fault campaign: members commit while coordinators die; commits are checked.

Theory of operation
-------------------
One run is a function of its seed. A three-broker :class:`~kafkalab.sim.cluster.SimCluster`
hosts ``orders`` (6 partitions, RF 3) and ``__consumer_offsets`` (RF 3); three of Kafka's group
members (:mod:`kafkalab.client.membership`) consume ``orders`` as group ``campaign``; the first
is a static member (``group.instance.id=static-0``). ``steps`` times the seed's generator picks
an action:

=========  ===========================================================================
action     what happens
=========  ===========================================================================
commit     a Stable member commits the partitions it owns at its generation, with a new,
           larger offset; the same member also sends a commit one generation too old
crash      the group coordinator's broker dies (while all three run)
ack-crash  a commit, and the coordinator's broker dies the moment its acknowledgement
           arrives -- the race an acks=1 coordinator would lose
restart    a dead broker starts again on its directory
kill       a member dies silently; a new one joins in its place (with the same instance id, if
           the dead one was static: that fences the dead one's member id)
wait       100 ms to 10 s of simulated time pass
=========  ===========================================================================

Two promises are checked:

* **a stale generation can never commit**: every commit sent with an old generation is
  refused (ILLEGAL_GENERATION, or an error of a coordinator that does not know the member);
* **a fenced instance can never commit**: once a dead static member's replacement (same
  instance id) has joined, every commit action also replays the dead one's commit (its member
  id, instance id and generation); each must be refused (FENCED_INSTANCE_ID). Before the
  replacement joins, the old member id is still the instance's and may commit -- in Kafka too;
* **an acknowledged commit is never lost**: at the end every broker runs again, and for every
  partition the offset the group's coordinator returns is at least the largest acknowledged one
  -- through coordinator failovers, since ``__consumer_offsets`` has three replicas and a commit
  is acknowledged only once the ISR has it.

A broken promise raises :class:`~kafkalab.sim.invariants.InvariantViolation` with a replay line::

    python -m kafkalab.sim.commit_campaign --seed 1234

Worked example: a run acknowledges commits at generation 1, its coordinator (the leader of
``__consumer_offsets`` partition 38 for ``campaign``) crashes, the controller elects another
replica's broker, which loads the group from its copy of the log; the members find it, rejoin,
and the final OffsetFetch returns every acknowledged offset.
"""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkalab.client.membership import MemberConfig, MemberState
from kafkalab.group.partitioner import OFFSETS_TOPIC, partition_for
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.sim.campaign_cli import seeds_main
from kafkalab.sim.cluster import CLIENT, SimCluster
from kafkalab.sim.invariants import InvariantViolation
from kafkalab.sim.network import LinkFaults

GROUP, TOPIC, PARTITIONS = "campaign", "orders", 6
STEPS_DEFAULT = 30
FAULTS = LinkFaults(delay_min_ms=1, delay_max_ms=10)
ACTIONS = ("commit", "commit", "commit", "ack-crash", "crash", "restart", "kill", "wait", "wait")
COMMIT_VERSION = 8
STATIC_INSTANCE = "static-0"
SETTLE_MS = 40_000  # at the end: brokers fenced, leaders elected, members rejoined
TopicPartition = tuple[str, int]


@dataclass(slots=True)
class Ghost:
    """A dead static member; fenced once ``replacement`` (its successor's name) has joined."""

    member_id: str
    instance: str
    generation: int
    replacement: str
    fenced: bool = False


@dataclass(slots=True)
class CommitLedger:
    """What was acknowledged; what must never be. Not thread-safe; owned by one run."""

    seed: int
    acknowledged: dict[TopicPartition, int] = field(default_factory=dict)
    next_offset: int = 1
    fenced: list[Ghost] = field(default_factory=list)  # dead static members
    stale_refused: int = 0
    fenced_refused: int = 0
    acked: int = 0

    def violation(self, what: str) -> InvariantViolation:
        return InvariantViolation(f"seed {self.seed}: {what}; replay with "
                                  f"python -m kafkalab.sim.commit_campaign --seed {self.seed}")


@dataclass(frozen=True, slots=True)
class CommitRunResult:
    seed: int
    actions: Counter[str]
    acknowledged: int
    stale_refused: int
    fenced_refused: int
    failovers: int  # crash actions drawn (a crash happens only while all brokers run)


def run(seed: int, data_dir: Path, steps: int = STEPS_DEFAULT) -> CommitRunResult:
    """One campaign run; raises :class:`InvariantViolation` when a promise breaks."""
    rng = random.Random(seed)
    config = MemberConfig(GROUP, (TOPIC,), session_timeout_ms=6_000, heartbeat_interval_ms=500,
                          rebalance_timeout_ms=10_000, request_timeout_ms=5_000)
    static = dataclasses.replace(config, group_instance_id=STATIC_INSTANCE)
    cluster = SimCluster(data_dir, nodes=3, seed=seed, faults=FAULTS,
                         properties={"group.initial.rebalance.delay.ms": "0", "group.min.session.timeout.ms": "1000"})
    ledger = CommitLedger(seed)
    actions: Counter[str] = Counter()
    names = iter(f"m{i}" for i in range(10_000))
    try:
        cluster.create_topic(TOPIC, PARTITIONS, 3)
        for member_config in (static, config, config):
            cluster.add_member(next(names), member_config)
        cluster.run_for(5_000)
        for _ in range(steps):
            action = rng.choice(ACTIONS)
            actions[action] += 1
            _act(cluster, rng, action, config, names, ledger)
            cluster.run_for(rng.randint(100, 10_000) if action == "wait" else 1_000)
        for node_id, node in cluster.nodes.items():
            if not node.alive:
                cluster.restart(node_id)
        cluster.run_for(SETTLE_MS)
        _check_nothing_lost(cluster, ledger)
        return CommitRunResult(seed, actions, ledger.acked, ledger.stale_refused, ledger.fenced_refused,
                               actions["crash"])
    finally:
        cluster.close()


def _act(cluster: SimCluster, rng: random.Random, action: str, config: MemberConfig, names: Any,
         ledger: CommitLedger) -> None:
    alive = [n for n, node in cluster.nodes.items() if node.alive]
    if action in ("commit", "ack-crash"):
        stable = sorted(n for n, m in cluster.members.items() if m.state is MemberState.STABLE and m.owned)
        if stable:
            _commit(cluster, rng.choice(stable), ledger, crash_on_ack=action == "ack-crash")
    elif action == "crash" and len(alive) == len(cluster.nodes):
        leader = cluster.leader(OFFSETS_TOPIC, partition_for(GROUP))
        if leader in alive:
            cluster.crash(leader)
    elif action == "restart" and len(alive) < len(cluster.nodes):
        cluster.restart(rng.choice(sorted(set(cluster.nodes) - set(alive))))
    elif action == "kill" and cluster.members:
        name = rng.choice(sorted(cluster.members))
        dead = cluster.members[name]
        instance = dead.config.group_instance_id
        successor = next(names)
        if instance is not None and dead.member_id:
            ledger.fenced.append(Ghost(dead.member_id, instance, dead.generation_id, successor))
        cluster.stop_member(name, leave=False)
        cluster.add_member(successor, config if instance is None else dataclasses.replace(
            config, group_instance_id=instance))


def _commit(cluster: SimCluster, name: str, ledger: CommitLedger, *, crash_on_ack: bool = False) -> None:
    member = cluster.members[name]
    assert member.coordinator is not None
    owned = sorted(member.owned)
    offset, ledger.next_offset = ledger.next_offset, ledger.next_offset + 1
    body = _body(member.generation_id, member.member_id, owned, offset)

    def answered(response: Any) -> None:
        if all(p.error_code == 0 for t in response.topics for p in t.partitions):
            ledger.acked += 1
            for tp in owned:
                ledger.acknowledged[tp] = max(ledger.acknowledged.get(tp, -1), offset)
            if crash_on_ack and all(n.alive for n in cluster.nodes.values()):
                cluster.crash(node)

    def stale_answered(response: Any) -> None:
        if any(p.error_code == 0 for t in response.topics for p in t.partitions):
            raise ledger.violation(f"{name} committed with stale generation {member.generation_id - 1}")
        ledger.stale_refused += 1

    node = member.coordinator.node_id
    cluster._send(CLIENT, node, ApiKey.OFFSET_COMMIT, COMMIT_VERSION, body, answered)
    if member.generation_id > 1:
        stale = _body(member.generation_id - 1, member.member_id, owned, offset + 1_000_000)
        cluster._send(CLIENT, node, ApiKey.OFFSET_COMMIT, COMMIT_VERSION, stale, stale_answered)
    for ghost in ledger.fenced:
        successor = cluster.members.get(ghost.replacement)
        ghost.fenced = ghost.fenced or (successor is not None and successor.state is MemberState.STABLE)
        if not ghost.fenced:
            continue
        body = {**_body(ghost.generation, ghost.member_id, owned, offset + 2_000_000),
                "group_instance_id": ghost.instance}
        cluster._send(CLIENT, node, ApiKey.OFFSET_COMMIT, COMMIT_VERSION, body,
                      _refused(ledger, f"fenced member {ghost.member_id} ({ghost.instance}) committed"))


def _refused(ledger: CommitLedger, what: str) -> Any:
    def answered(response: Any) -> None:
        if any(p.error_code == 0 for t in response.topics for p in t.partitions):
            raise ledger.violation(what)
        ledger.fenced_refused += 1
    return answered


def _body(generation: int, member_id: str, owned: list[TopicPartition], offset: int) -> dict[str, Any]:
    return {"group_id": GROUP, "generation_id_or_member_epoch": generation, "member_id": member_id,
            "topics": [{"name": TOPIC, "partitions": [{"partition_index": p, "committed_offset": offset}
                                                      for _, p in owned]}]}


def _check_nothing_lost(cluster: SimCluster, ledger: CommitLedger) -> None:
    leader = cluster.leader(OFFSETS_TOPIC, partition_for(GROUP))
    answers: list[Any] = []
    body = {"group_id": GROUP, "topics": [{"name": TOPIC, "partition_indexes": list(range(PARTITIONS))}]}
    cluster._send(CLIENT, leader, ApiKey.OFFSET_FETCH, 5, body, answers.append)
    cluster.run_until(lambda: bool(answers), 30_000)
    if not answers or answers[0].error_code:
        raise ledger.violation(f"the coordinator (broker {leader}) did not answer OffsetFetch: {answers}")
    fetched = {(TOPIC, p.partition_index): p.committed_offset for t in answers[0].topics for p in t.partitions}
    for tp, offset in sorted(ledger.acknowledged.items()):
        if fetched.get(tp, -1) < offset:
            raise ledger.violation(f"{tp[0]}-{tp[1]}: commit of {offset} was acknowledged, "
                                   f"the coordinator returns {fetched.get(tp, -1)}")


def main(argv: list[str] | None = None) -> int:
    return seeds_main("kafkalab.sim.commit_campaign", run, lambda result: (
        f"{result.acknowledged} commits acknowledged, {result.stale_refused} stale and "
        f"{result.fenced_refused} fenced refused, {result.failovers} crash actions, {dict(result.actions)}"),
                      default_seeds=10, default_steps=STEPS_DEFAULT, argv=argv)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
