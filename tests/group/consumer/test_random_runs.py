"""Seeded random runs of members that follow the protocol, against two invariants.

Simulated clients behave as Kafka's Java consumer does: each heartbeat reports what it owns;
an answer with an assignment replaces what it owns at once (revoking what is missing, taking
what is new); an error (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID) makes it drop everything and
rejoin. Between steps, time moves by up to 4 s, members join, leave, or die silently.

* Safety: no partition is owned by two members whose commits the coordinator would accept
  (a member fenced behind its back may still think it owns partitions -- Kafka's "zombie" --
  but its commits are refused, which is the guarantee that matters).
* Liveness: once everybody alive heartbeats for a while, the group is Stable, every partition is
  owned exactly once, and counts differ by at most one.

A failing run prints its seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest

from kafkalab.errors import ErrorCode as E
from kafkalab.group.consumer.group import ConsumerGroupState
from tests.group.consumer._harness import Cluster, T

SEEDS = range(40)
STEPS = 250
PARTITIONS = set(range(6))


@dataclass
class Client:
    member_id: str = ""
    epoch: int = 0
    owned: set[int] = field(default_factory=set)
    joined: bool = False


def _heartbeat(c: Cluster, client: Client) -> None:
    if not client.joined:
        result = c.heartbeat(epoch=0)
    else:
        result = c.heartbeat(member_id=client.member_id, epoch=client.epoch, owned={T: frozenset(client.owned)})
    if result.error_code in (E.FENCED_MEMBER_EPOCH, E.UNKNOWN_MEMBER_ID):
        client.owned, client.joined, client.epoch = set(), False, 0  # drop everything, rejoin
        return
    assert result.error_code == E.NONE, result
    client.member_id, client.epoch, client.joined = result.member_id or client.member_id, result.member_epoch, True
    if result.assignment is not None:
        client.owned = set(result.assignment.get(T, frozenset()))


def _check_safety(c: Cluster, clients: list[Client], seed: int, step: int) -> None:
    group = c.consumer.groups.get("g")
    trusted = [x for x in clients if x.joined and group is not None and x.member_id in group.members
               and c.consumer.validate_offset_commit(group, x.member_id, x.epoch, 9) == E.NONE]
    seen: set[int] = set()
    for client in trusted:
        assert not (client.owned & seen), f"seed {seed} step {step}: two trusted owners of {client.owned & seen}"
        seen |= client.owned


@pytest.mark.parametrize("seed", SEEDS)
def test_random_run(seed):
    rng = random.Random(seed)
    c = Cluster(seed=seed)
    alive: list[Client] = [Client()]
    for step in range(STEPS):
        roll = rng.random()
        if roll < 0.08 and len(alive) < 6:
            alive.append(Client())
        elif roll < 0.12 and len(alive) > 1:
            leaving = alive.pop(rng.randrange(len(alive)))
            if leaving.joined:
                c.heartbeat(member_id=leaving.member_id, epoch=-1)
        elif roll < 0.15 and len(alive) > 1:
            alive.pop(rng.randrange(len(alive)))  # dies without a word
        elif roll < 0.35:
            c.advance(rng.randint(0, 4000), step_ms=500)
        else:
            _heartbeat(c, rng.choice(alive))
        _check_safety(c, alive, seed, step)
    for _ in range(60):  # everybody alive heartbeats for a while
        for client in alive:
            _heartbeat(c, client)
            _check_safety(c, alive, seed, STEPS)
        c.advance(1000, step_ms=500)
    group = c.consumer.groups["g"]
    assert group.state is ConsumerGroupState.STABLE, f"seed {seed}"
    owned = [x.owned for x in alive]
    assert sorted(p for o in owned for p in o) == sorted(PARTITIONS), f"seed {seed}: {owned}"
    assert max(map(len, owned)) - min(map(len, owned)) <= 1, f"seed {seed}: {owned}"
