"""The server-side assignors: uniform is balanced and sticky; range is the classic RangeAssignor.

Kafka's server assignors (``UniformAssignor``, ``RangeAssignor``) live in its group-coordinator
jar, which the Java client wheel does not carry. Range's semantics are the client RangeAssignor's
(per topic, contiguous ranges over members sorted static-first), so range is checked against
kafkalab's client RangeAssignor and, as an oracle kafkalab did not write, Kafka's Java client
RangeAssignor 3.9.1 (``tests/java/AssignorOracle.java``) on the same random problems. Uniform has
no such twin (Kafka's tie-breaking differs), so it is held to its properties: every partition
once, only to subscribers, counts within one of each other for equal subscriptions, and a new
member takes no more than its share.
"""

from __future__ import annotations

import random
import uuid

import pytest

from kafkalab.client.assignors import Member
from kafkalab.client.assignors.range import assign_range as client_range
from kafkalab.client.consumer_protocol import Subscription
from kafkalab.group.consumer.assignors import MemberSpec, assign_range, assign_uniform
from tests.client.assignors.oracle import Problem, decode, encode
from tests.java_client import java_client

SEED = 848
CASES = 300


def _ids(names: list[str]) -> dict[str, uuid.UUID]:
    return {name: uuid.UUID(int=index + 1) for index, name in enumerate(names)}


def random_group(rng: random.Random) -> tuple[dict[str, int], list[tuple[str, str | None, list[str]]]]:
    topics = {f"topic-{i}": rng.choice([0, 1, 2, 3, 5, 8, 13, 40]) for i in range(rng.randint(1, 4))}
    names = list(topics)
    equal = rng.random() < 0.5
    members = []
    instances = rng.sample(range(100), 20)
    for i in range(rng.randint(1, 9)):
        subscribed = names if equal else rng.sample(names, rng.randint(1, len(names)))
        instance = f"instance-{instances[i]}" if rng.random() < 0.2 else None
        members.append((f"member-{rng.getrandbits(40):010x}", instance, subscribed))
    return topics, members


def _specs(topics: dict[str, int], members, previous=None) -> tuple[list[MemberSpec], dict[uuid.UUID, int]]:
    ids = _ids(list(topics))
    specs = [MemberSpec(m, i, frozenset(ids[t] for t in subscribed), (previous or {}).get(m, {}))
             for m, i, subscribed in members]
    return specs, {ids[t]: n for t, n in topics.items()}


def _named(result, topics: dict[str, int]) -> dict[str, list[tuple[str, int]]]:
    names = {v: k for k, v in _ids(list(topics)).items()}
    return {m: sorted((names[t], p) for t, parts in assigned.items() for p in parts) for m, assigned in result.items()}


def _check_valid(topics, members, result) -> None:
    named = _named(result, topics)
    given = [tp for tps in named.values() for tp in tps]
    assert len(given) == len(set(given)), "a partition assigned twice"
    subscribed = {m: set(s) for m, _, s in members}
    assert all(t in subscribed[m] for m, tps in named.items() for t, _ in tps)
    wanted = {(t, p) for s in subscribed.values() for t in s for p in range(topics[t])}
    assert set(given) == wanted


def test_range_equals_the_classic_client_range_assignor():
    rng = random.Random(SEED)
    for case in range(CASES):
        topics, members = random_group(rng)
        specs, partitions = _specs(topics, members)
        ours = _named(assign_range(specs, partitions), topics)
        _check_valid(topics, members, assign_range(specs, partitions))
        classic = client_range(topics, [Member(m, Subscription(tuple(s)), i) for m, i, s in members])
        assert {m: tps for m, tps in ours.items() if tps} == \
            {m: sorted(tps) for m, tps in classic.items() if tps}, f"seed {SEED} case {case}"


def test_range_equals_kafkas_java_range_assignor():
    client = java_client()
    rng = random.Random(SEED + 1)
    groups = [random_group(rng) for _ in range(CASES)]
    problems = [Problem("range", topics, tuple(Member(m, Subscription(tuple(s)), i) for m, i, s in members))
                for topics, members in groups]
    java, _ = decode(client.run("AssignorOracle", encode(problems)))
    assert len(java) == CASES
    for case, ((topics, members), theirs) in enumerate(zip(groups, java)):
        assert isinstance(theirs, dict), theirs
        specs, partitions = _specs(topics, members)
        ours = _named(assign_range(specs, partitions), topics)
        assert {m: tps for m, tps in ours.items() if tps} == \
            {m: sorted(tps) for m, tps in theirs.items() if tps}, f"seed {SEED + 1} case {case}"


def test_uniform_is_valid_and_balanced():
    rng = random.Random(SEED + 2)
    for case in range(CASES):
        topics, members = random_group(rng)
        specs, partitions = _specs(topics, members)
        result = assign_uniform(specs, partitions)
        _check_valid(topics, members, result)
        counts = {m: sum(map(len, a.values())) for m, a in result.items()}
        if len({frozenset(s) for _, _, s in members}) == 1:
            assert max(counts.values()) - min(counts.values()) <= 1, f"case {case}: {counts}"
        else:  # no member could take a partition from one holding two or more than it
            subscribed = {m: set(s) for m, _, s in members}
            named = _named(result, topics)
            for giver, tps in named.items():
                for taker in named:
                    if counts[taker] <= counts[giver] - 2:
                        assert not any(t in subscribed[taker] for t, _ in tps), f"case {case}"


@pytest.mark.parametrize("before,after", [(1, 3), (3, 4), (4, 3), (2, 5), (5, 2)])
def test_uniform_moves_only_what_balance_needs(before, after):
    """Members come and go over 40 partitions: each survivor keeps min(its old share, its new
    share), so only the difference moves."""
    topics = {"t": 40}
    names = [f"m{i}" for i in range(max(before, after))]
    old_specs, partitions = _specs(topics, [(m, None, ["t"]) for m in names[:before]])
    old = assign_uniform(old_specs, partitions)
    new_specs, _ = _specs(topics, [(m, None, ["t"]) for m in names[:after]], previous=old)
    new = assign_uniform(new_specs, partitions)
    kept = sum(len(old.get(m, {}).get(t, frozenset()) & parts) for m in new for t, parts in new[m].items())
    survivors = names[:min(before, after)]
    assert kept == sum(min(len(next(iter(old[m].values()), ())), len(next(iter(new[m].values()), ())))
                       for m in survivors)


def test_uniform_worked_example():
    specs, partitions = _specs({"t": 6}, [("m1", None, ["t"])])
    alone = assign_uniform(specs, partitions)
    specs, _ = _specs({"t": 6}, [("m1", None, ["t"]), ("m2", None, ["t"]), ("m3", None, ["t"])], previous=alone)
    three = _named(assign_uniform(specs, partitions), {"t": 6})
    assert three == {"m1": [("t", 0), ("t", 1)], "m2": [("t", 2), ("t", 4)], "m3": [("t", 3), ("t", 5)]}
