"""The simulated network: FIFO links, seeded faults, cuts one way and both, replay by seed."""

from __future__ import annotations

import random

import pytest

from kafkalab.sim.network import LinkFaults, Network


def _run(seed: int, faults: LinkFaults, count: int = 200) -> list[tuple[int, int, str, bool]]:
    network = Network(random.Random(seed), faults)
    for i in range(count):
        network.send("a", "b", f"m{i}", now_ms=i)
    return [(d.at_ms, d.seq, d.message, d.duplicate) for d in network.deliver(10**9)]


def test_docstring_example_fifo_raises_the_later_message() -> None:
    network = Network(random.Random(23), LinkFaults(1, 5))
    network.send(1, 2, "a", 0)
    network.send(1, 2, "b", 1)
    assert network.next_delivery_ms() == 3
    assert [(d.message, d.at_ms) for d in network.deliver(3)] == [("a", 3), ("b", 3)]


def test_links_are_fifo_without_the_reorder_fault() -> None:
    delivered = _run(1, LinkFaults(1, 50))
    assert [m for _, _, m, _ in delivered] == [f"m{i}" for i in range(200)]


def test_reorder_lets_messages_overtake() -> None:
    delivered = _run(1, LinkFaults(1, 50, reorder=0.5))
    order = [int(m[1:]) for _, _, m, _ in delivered]
    assert sorted(order) == list(range(200)) and order != sorted(order)


def test_loss_and_duplication_are_counted() -> None:
    network = Network(random.Random(3), LinkFaults(loss=0.2, duplicate=0.1))
    for i in range(1_000):
        network.send("a", "b", i, now_ms=0)
    delivered = network.deliver(10)
    stats = network.stats
    assert 150 < stats.lost < 250 and 50 < stats.duplicated < 130
    assert len(delivered) == stats.delivered == 1_000 - stats.lost + stats.duplicated
    assert sum(d.duplicate for d in delivered) == stats.duplicated


def test_same_seed_same_run_other_seed_other_run() -> None:
    faults = LinkFaults(1, 20, loss=0.1, duplicate=0.1, reorder=0.2)
    assert _run(42, faults) == _run(42, faults)
    assert _run(42, faults) != _run(43, faults)


def test_one_way_cut_lets_the_other_direction_through() -> None:
    network = Network(random.Random(0))
    network.cut("leader", "follower", one_way=True)
    network.send("leader", "follower", "fetch response", 0)
    network.send("follower", "leader", "fetch", 0)
    assert [d.message for d in network.deliver(5)] == ["fetch"]
    assert network.stats.cut == 1


def test_messages_in_flight_are_lost_when_the_link_is_cut_and_heal_restores_it() -> None:
    network = Network(random.Random(0), LinkFaults(5, 5))
    network.send(1, 2, "in flight", 0)
    network.cut(1, 2)
    assert network.deliver(10) == []
    network.heal()
    network.send(1, 2, "after heal", 10)
    assert [d.message for d in network.deliver(20)] == ["after heal"]


def test_a_crashed_node_loses_everything_in_flight() -> None:
    network = Network(random.Random(0), LinkFaults(5, 5))
    network.send(1, 2, "to 2", 0)
    network.send(2, 3, "from 2", 0)
    network.send(1, 3, "unrelated", 0)
    assert network.drop_node(2) == 2
    assert [d.message for d in network.deliver(10)] == ["unrelated"]


def test_ties_come_out_in_send_order() -> None:
    network = Network(random.Random(0), LinkFaults(3, 3))
    for node in ("c", "a", "b"):
        network.send(node, "z", node, 0)
    assert [d.message for d in network.deliver(3)] == ["c", "a", "b"]


@pytest.mark.parametrize("bad", [dict(delay_min_ms=5, delay_max_ms=1), dict(loss=1.5), dict(reorder=-0.1)])
def test_bad_link_settings_are_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        LinkFaults(**bad)  # type: ignore[arg-type]
