"""The sticky assignors' user data against the bytes Kafka's Java assignors write."""

from __future__ import annotations

import random

import pytest

from kafkalab.client.assignors.user_data import (
    decode_sticky_user_data, encode_cooperative_user_data, encode_sticky_user_data, member_view,
)
from kafkalab.client.consumer_protocol import Subscription
from tests.java_client import java_client


def test_worked_example() -> None:
    data = encode_sticky_user_data([("t", 0), ("t", 2)], 3)
    assert data.hex() == "00000001" "000174" "00000002" "00000000" "00000002" "00000003"
    assert decode_sticky_user_data(data) == ((("t", 0), ("t", 2)), 3)


def _random_owned(rng: random.Random) -> list[tuple[str, int]]:
    topics = [f"topic-{i}" for i in range(rng.randint(1, 30))]
    owned = sorted({(rng.choice(topics), rng.randint(0, 200)) for _ in range(rng.randint(0, 40))})
    rng.shuffle(owned)
    return owned


def test_bytes_equal_kafkas_java_assignors() -> None:
    """Topics come out in the order of Java's HashMap filled by computeIfAbsent; 300 random
    assignments of 1-30 topics (so the table grows, or does not, at every size), one JVM."""
    client = java_client()
    rng = random.Random(881)
    cases = [(_random_owned(rng), rng.randint(-1, 10_000)) for _ in range(300)]
    lines = [f"STICKY {g} {','.join(f'{t}:{p}' for t, p in owned) or '-'}" for owned, g in cases]
    lines += [f"COOPERATIVE {g}" for _, g in cases]
    java = client.run("UserDataOracle", "\n".join(lines) + "\n").split()
    ours = [encode_sticky_user_data(owned, g).hex() for owned, g in cases]
    ours += [encode_cooperative_user_data(g).hex() for _, g in cases]
    assert ours == java
    for (owned, g), data in zip(cases, java):
        partitions, generation = decode_sticky_user_data(bytes.fromhex(data))
        assert sorted(partitions) == sorted(owned) and generation == g


@pytest.mark.parametrize("data, expected", [
    (None, ((), -1)),
    (b"", ((), -1)),
    (bytes.fromhex("00000001000174000000010000000500000009"), ((("t", 5),), 9)),  # v1
    (bytes.fromhex("000000010001740000000100000005"), ((("t", 5),), -1)),  # v0: no generation
    (bytes.fromhex("7fffffff"), ((), -1)),  # a hostile count: neither v1 nor v0
    (bytes.fromhex("000000010001"), ((), -1)),  # truncated
])
def test_decode_is_lenient_like_kafka(data: bytes | None, expected: tuple) -> None:
    assert decode_sticky_user_data(data) == expected


def test_member_view_per_assignor() -> None:
    sticky_data = encode_sticky_user_data([("t", 1), ("t", -3)], 4)
    sub = Subscription(("t",), (("t", 0),), -1, user_data=sticky_data)
    assert member_view("sticky", sub).owned_partitions == (("t", 1),)
    assert member_view("sticky", sub).generation_id == 4
    assert member_view("range", sub) == sub
    coop = Subscription(("t",), (("t", 0),), -1, user_data=encode_cooperative_user_data(6))
    assert member_view("cooperative-sticky", coop).generation_id == 6
    assert member_view("cooperative-sticky", Subscription(("t",), (), 2, user_data=b"\x00")).generation_id == 2
    assert member_view("cooperative-sticky", Subscription(("t",), (), -1, user_data=b"\x00")).generation_id == -1


def test_leader_reading_subscription_bytes_equals_kafkas_java() -> None:
    """The path a kafkalab leader takes with Java members: subscription bytes (v0, ownership in
    StickyAssignor user data) -> decode -> member_view -> assignor, against Java's answer."""
    import dataclasses

    from kafkalab.client.assignors import ASSIGNORS, Member
    from kafkalab.client.consumer_protocol import decode_subscription, encode_subscription
    from tests.client.assignors.oracle import decode, encode, random_problem

    client = java_client()
    rng = random.Random(429)
    problems = [random_problem(rng, "sticky") for _ in range(200)]
    java, _ = decode(client.run("AssignorOracle", encode(problems)))
    for problem, theirs in zip(problems, java):
        members = []
        for m in problem.members:
            s = m.subscription
            data = encode_sticky_user_data(s.owned_partitions, s.generation_id) \
                if s.owned_partitions or s.generation_id >= 0 else None
            wire = encode_subscription(dataclasses.replace(s, owned_partitions=(), user_data=data), version=0)
            members.append(Member(m.member_id, member_view("sticky", decode_subscription(wire)), m.group_instance_id))
        if isinstance(theirs, str):
            continue
        ours = ASSIGNORS["sticky"](problem.partitions_per_topic, members)
        assert {k: sorted(v) for k, v in ours.items()} == {k: sorted(v) for k, v in theirs.items()}
