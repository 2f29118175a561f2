"""The worked examples the book and the module docstrings use, by hand and against Kafka's Java."""

from __future__ import annotations

import pytest

from kafkalab.client.assignors import ASSIGNORS, Member, assign_cooperative_sticky, assign_range, assign_round_robin, assign_sticky
from kafkalab.client.consumer_protocol import Subscription
from kafkalab.errors import InvalidRequestError
from tests.client.assignors.oracle import Problem, decode, encode
from tests.java_client import java_client


def _members(*topic_lists: tuple[str, ...], owned: tuple[tuple[tuple[str, int], ...], ...] = (),
             generation: int = -1) -> list[Member]:
    result = []
    for i, topics in enumerate(topic_lists):
        mine = owned[i] if i < len(owned) else ()
        result.append(Member(f"C{i}", Subscription(topics, mine, generation if mine else -1)))
    return result


def _t(*partitions: int, topic: str = "t") -> tuple[tuple[str, int], ...]:
    return tuple((topic, p) for p in partitions)


THREE = _members(("t",), ("t",), ("t",))
OWNED_433 = (_t(0, 1, 2, 3), _t(4, 5, 6), _t(7, 8, 9))
JOINED = _members(("t",), ("t",), ("t",), ("t",), owned=OWNED_433, generation=1)

# The seeds' consumer threads C1-0, C1-1, C2-0, C2-1 (member ids sort the same way).
THREADS = [Member(name, Subscription(("T1",))) for name in ("C1-0", "C1-1", "C2-0", "C2-1")]

EXAMPLES = [
    # name, assignor, partitions per topic, members, expected (sorted per member)
    ("range 10 over 3 is 4/3/3", "range", {"t": 10}, THREE,
     {"C0": _t(0, 1, 2, 3), "C1": _t(4, 5, 6), "C2": _t(7, 8, 9)}),
    ("seeds: range 11 over 3 is 4/4/3", "range", {"t": 11}, THREE,
     {"C0": _t(0, 1, 2, 3), "C1": _t(4, 5, 6, 7), "C2": _t(8, 9, 10)}),
    ("seeds: range over 2 topics of 10 gives C0 two extra", "range", {"T1": 10, "T2": 10},
     _members(("T1", "T2"), ("T1", "T2"), ("T1", "T2")),
     {"C0": _t(0, 1, 2, 3, topic="T1") + _t(0, 1, 2, 3, topic="T2"),
      "C1": _t(4, 5, 6, topic="T1") + _t(4, 5, 6, topic="T2"),
      "C2": _t(7, 8, 9, topic="T1") + _t(7, 8, 9, topic="T2")}),
    # The seeds sort partitions by hash code (T1-5, T1-3, T1-0, ...); Kafka sorts them by topic
    # and number, so C1-0 gets T1-0, T1-4, T1-8, not T1-5, T1-2, T1-6.
    ("seeds corrected: roundrobin deals partitions in order", "roundrobin", {"T1": 10}, THREADS,
     {"C1-0": _t(0, 4, 8, topic="T1"), "C1-1": _t(1, 5, 9, topic="T1"),
      "C2-0": _t(2, 6, topic="T1"), "C2-1": _t(3, 7, topic="T1")}),
    ("range co-partitions two topics", "range", {"a": 3, "b": 3}, _members(("a", "b"), ("a", "b")),
     {"C0": _t(0, 1, topic="a") + _t(0, 1, topic="b"), "C1": _t(2, topic="a") + _t(2, topic="b")}),
    ("roundrobin deals sorted partitions", "roundrobin", {"a": 3, "b": 2}, _members(("a", "b"), ("a", "b")),
     {"C0": _t(0, 2, topic="a") + _t(1, topic="b"), "C1": _t(1, topic="a") + _t(0, topic="b")}),
    ("roundrobin skips unsubscribed members", "roundrobin", {"a": 2, "b": 2}, _members(("a", "b"), ("b",)),
     {"C0": _t(0, 1, topic="a") + _t(1, topic="b"), "C1": _t(0, topic="b")}),
    ("sticky: a member joins, two partitions move", "sticky", {"t": 10}, JOINED,
     {"C0": _t(0, 1, 2), "C1": _t(4, 5, 6), "C2": _t(7, 8), "C3": _t(3, 9)}),
    ("cooperative: first rebalance only revokes", "cooperative-sticky", {"t": 10}, JOINED,
     {"C0": _t(0, 1, 2), "C1": _t(4, 5, 6), "C2": _t(7, 8), "C3": ()}),
    ("sticky general case", "sticky", {"a": 2, "b": 2}, _members(("a", "b"), ("b",)),
     {"C0": _t(0, 1, topic="a"), "C1": _t(0, 1, topic="b")}),
]


def _sorted(result: dict[str, list[tuple[str, int]]]) -> dict[str, tuple[tuple[str, int], ...]]:
    return {m: tuple(sorted(tps)) for m, tps in result.items()}


@pytest.mark.parametrize("name, assignor, counts, members, expected", EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_worked_example(name: str, assignor: str, counts: dict[str, int], members: list[Member],
                        expected: dict[str, tuple[tuple[str, int], ...]]) -> None:
    assert _sorted(ASSIGNORS[assignor](counts, members)) == expected


def test_worked_examples_equal_kafkas_java_assignors() -> None:
    client = java_client()
    problems = [Problem(a, c, tuple(m)) for _, a, c, m, _ in EXAMPLES]
    java, _ = decode(client.run("AssignorOracle", encode(problems)))
    assert [_sorted(j) if isinstance(j, dict) else j for j in java] == [e[4] for e in EXAMPLES]


def test_cooperative_second_rebalance_hands_out_the_revoked_partitions() -> None:
    first = assign_cooperative_sticky({"t": 10}, JOINED)
    rejoined = [Member(m, Subscription(("t",), tuple(first[m]), 2)) for m in ("C0", "C1", "C2", "C3")]
    second = assign_cooperative_sticky({"t": 10}, rejoined)
    assert _sorted(second)["C3"] == _t(3, 9)
    assert _sorted(second) == _sorted(assign_sticky({"t": 10}, JOINED))


def test_static_members_sort_first_by_instance_id() -> None:
    members = [Member("a", Subscription(("t",))), Member("z", Subscription(("t",)), "static-1")]
    assert assign_range({"t": 3}, members) == {"a": [("t", 2)], "z": [("t", 0), ("t", 1)]}
    assert assign_round_robin({"t": 3}, members) == {"a": [("t", 1)], "z": [("t", 0), ("t", 2)]}


def test_same_generation_double_claim_is_invalid() -> None:
    members = _members(("t",), ("t",), owned=(_t(0, 1), _t(1)), generation=3)
    result = assign_cooperative_sticky({"t": 2}, members)
    # t-1 is claimed twice in generation 3: neither keeps it, and it is handed out only after a
    # revocation round, so t-1 is not assigned yet
    assert _sorted(result) == {"C0": _t(0), "C1": ()}


@pytest.mark.parametrize("assignor", sorted(ASSIGNORS))
def test_duplicate_member_ids_are_rejected(assignor: str) -> None:
    members = [Member("a", Subscription(("t",))), Member("a", Subscription(("t",)))]
    with pytest.raises(InvalidRequestError):
        ASSIGNORS[assignor]({"t": 1}, members)


@pytest.mark.parametrize("assignor", sorted(ASSIGNORS))
def test_unknown_and_empty_topics_are_ignored(assignor: str) -> None:
    members = _members(("t", "missing"), ("t", "empty"))
    result = ASSIGNORS[assignor]({"t": 2, "empty": 0, "other": 5}, members)
    assert sorted(tp for tps in result.values() for tp in tps) == [("t", 0), ("t", 1)]


@pytest.mark.parametrize("assignor", ["sticky", "cooperative-sticky"])
@pytest.mark.parametrize("topics", [(("t",), ("t",)), (("t", "u"), ("t",))])
def test_claims_on_partitions_that_no_longer_exist_are_dropped(assignor: str, topics: tuple) -> None:
    members = _members(*topics, owned=(_t(0, 7, 9), _t(1, 8)), generation=2)
    result = ASSIGNORS[assignor]({"t": 3, "u": 1}, members)
    given = sorted(tp for tps in result.values() for tp in tps)
    assert set(given) <= {("t", 0), ("t", 1), ("t", 2), ("u", 0)} and len(given) == len(set(given))


@pytest.mark.parametrize("assignor", sorted(ASSIGNORS))
def test_hostile_partition_counts_are_rejected_before_allocating(assignor: str) -> None:
    members = _members(("t",))
    with pytest.raises(InvalidRequestError):
        ASSIGNORS[assignor]({"t": 2**31 - 1}, members)
    with pytest.raises(InvalidRequestError):
        ASSIGNORS[assignor]({"t": -1}, members)


@pytest.mark.parametrize("assignor", sorted(ASSIGNORS))
def test_no_members_or_no_subscriptions(assignor: str) -> None:
    assert ASSIGNORS[assignor]({"t": 3}, []) == {}
    assert ASSIGNORS[assignor]({"t": 3}, _members(())) == {"C0": []}


def _racked(racks: tuple[str, ...]) -> list[Member]:
    return [Member(f"C{i}", Subscription(("t",), rack_id=rack)) for i, rack in enumerate(racks)]


RACK_EXAMPLES = [
    # the racks module's worked example: t-0 on (r1, r2), t-1 on (r0, r1); C0 in r0, C1 in r2
    ("range", {("t", 0): ("r1", "r2"), ("t", 1): ("r0", "r1")}, {"C0": [("t", 1)], "C1": [("t", 0)]}),
    ("cooperative-sticky", {("t", 0): ("r1", "r2"), ("t", 1): ("r0", "r1")}, {"C0": [("t", 1)], "C1": [("t", 0)]}),
    # every partition on every rack: rack awareness stays off, plain Range
    ("range", {("t", 0): ("r0", "r2"), ("t", 1): ("r0", "r2")}, {"C0": [("t", 0)], "C1": [("t", 1)]}),
]


@pytest.mark.parametrize("assignor, replicas, expected", RACK_EXAMPLES)
def test_rack_worked_examples(assignor: str, replicas: dict, expected: dict) -> None:
    assert ASSIGNORS[assignor]({"t": 2}, _racked(("r0", "r2")), replicas) == expected


def test_rack_worked_examples_equal_kafkas_java_assignors() -> None:
    client = java_client()
    problems = [Problem(a, {"t": 2}, tuple(_racked(("r0", "r2"))), r) for a, r, _ in RACK_EXAMPLES]
    java, _ = decode(client.run("AssignorOracle", encode(problems)))
    assert java == [e[2] for e in RACK_EXAMPLES]
