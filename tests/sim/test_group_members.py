"""kafkalab's own group members in the simulated cluster: every request crosses the network to a
real coordinator (the broker's), so these check the member and the coordinator against each other
over Kafka's wire format. Independent oracles are in tests/interop (real clients in one group
with kafkalab's member) and tests/client/membership (kafka-python's ConsumerProtocol codec).

One broker here; tests/sim/test_group_coordinator_cluster.py runs groups on three, where the
coordinator is the leader of the group's ``__consumer_offsets`` partition."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalab.client.membership import GroupMember, MemberConfig, MemberState
from kafkalab.sim.cluster import SimCluster
from kafkalab.storage.checkpoints import TopicPartition

PARTITIONS = 12


@pytest.fixture
def groups_cluster(tmp_path: Path) -> Iterator[SimCluster]:
    sim = SimCluster(tmp_path, nodes=1, seed=11, properties={"group.initial.rebalance.delay.ms": "0"})
    sim.create_topic("orders", PARTITIONS, 1)
    sim.run_for(100)
    yield sim
    sim.close()


def config(assignor: str) -> MemberConfig:
    return MemberConfig("g", ("orders",), assignors=(assignor,), session_timeout_ms=6_000,
                        heartbeat_interval_ms=1_000, rebalance_timeout_ms=10_000)


def owners(members: dict[str, GroupMember]) -> dict[TopicPartition, list[str]]:
    result: dict[TopicPartition, list[str]] = {}
    for name, member in members.items():
        for tp in member.owned:
            result.setdefault(tp, []).append(name)
    return result


def run_checking_single_owner(sim: SimCluster, duration_ms: int, step_ms: int = 5) -> None:
    """Run, checking after every step that no partition has two owners at once."""
    for _ in range(duration_ms // step_ms):
        sim.run_for(step_ms)
        doubled = {tp: names for tp, names in owners(sim.members).items() if len(names) > 1}
        assert not doubled, f"seed {sim.seed} at {sim.clock.milliseconds()}: {doubled}"


def balanced(sim: SimCluster, count: int) -> bool:
    sizes = sorted(len(m.owned) for m in sim.members.values())
    return (len(sizes) == count and all(m.state is MemberState.STABLE for m in sim.members.values())
            and sum(sizes) == PARTITIONS and sizes[-1] - sizes[0] <= 1)


@pytest.mark.parametrize("assignor", ["range", "roundrobin", "sticky", "cooperative-sticky"])
def test_three_members_split_twelve_partitions_and_never_share_one(groups_cluster: SimCluster, assignor: str) -> None:
    for name in ("a", "b", "c"):
        groups_cluster.add_member(name, config(assignor))
    run_checking_single_owner(groups_cluster, 3_000)
    assert balanced(groups_cluster, 3), {n: m.owned for n, m in groups_cluster.members.items()}
    generations = {m.generation_id for m in groups_cluster.members.values()}
    assert len(generations) == 1 and len({m.leader_id for m in groups_cluster.members.values()}) == 1


def test_killed_members_partitions_move_after_its_session_timeout(groups_cluster: SimCluster) -> None:
    for name in ("a", "b", "c"):
        groups_cluster.add_member(name, config("range"))
    groups_cluster.run_for(3_000)
    assert balanced(groups_cluster, 3)
    groups_cluster.stop_member("c", leave=False)
    groups_cluster.run_for(5_000)  # less than session.timeout.ms: c still holds its share
    assert sum(len(m.owned) for m in groups_cluster.members.values()) == 8
    groups_cluster.run_for(4_000)
    assert balanced(groups_cluster, 2)


def test_leave_group_moves_partitions_at_once(groups_cluster: SimCluster) -> None:
    for name in ("a", "b"):
        groups_cluster.add_member(name, config("range"))
    groups_cluster.run_for(2_000)
    groups_cluster.stop_member("b")
    groups_cluster.run_until(lambda: len(groups_cluster.members["a"].owned) == PARTITIONS, 2_500)
    assert groups_cluster.members["b"].state is MemberState.LEFT
    assert len(groups_cluster.members["a"].owned) == PARTITIONS


def _revoked_count(members: dict[str, GroupMember], after_ms: int) -> int:
    return sum(len(n.partitions) for m in members.values() for n in m.notifications
               if n.kind == "revoked" and n.at_ms >= after_ms)


def test_cooperative_revokes_only_what_moves_eager_revokes_everything(tmp_path: Path) -> None:
    revoked = {}
    for assignor in ("sticky", "cooperative-sticky"):
        sim = SimCluster(tmp_path / assignor, nodes=1, seed=3, properties={"group.initial.rebalance.delay.ms": "0"})
        sim.create_topic("orders", PARTITIONS, 1)
        for name in ("a", "b", "c"):
            sim.add_member(name, config(assignor))
        sim.run_for(3_000)
        start_ms = sim.clock.milliseconds()
        sim.add_member("d", config(assignor))
        run_checking_single_owner(sim, 4_000)
        assert balanced(sim, 4)
        revoked[assignor] = _revoked_count(sim.members, start_ms)
        sim.close()
    assert revoked == {"sticky": PARTITIONS, "cooperative-sticky": 3}  # 12/3 -> 12/4: one from each


def test_cut_off_member_is_fenced_then_rejoins_as_a_new_member(groups_cluster: SimCluster) -> None:
    for name in ("a", "b"):
        groups_cluster.add_member(name, config("range"))
    groups_cluster.run_for(2_000)
    zombie = groups_cluster.members["b"]
    old_id, old_generation = zombie.member_id, zombie.generation_id
    groups_cluster.network.isolate("b", [1])
    groups_cluster.run_for(10_000)
    assert len(groups_cluster.members["a"].owned) == PARTITIONS  # the coordinator dropped b
    assert len(zombie.owned) == PARTITIONS // 2  # b does not know yet
    groups_cluster.network.heal()
    groups_cluster.run_for(40_000)  # b's lost FindCoordinator times out after request.timeout.ms
    assert [n.kind for n in zombie.notifications] == ["assigned", "lost", "assigned"]
    finds = [t for t in zombie.transitions if t.event.value == "coordinator found, resume"]
    assert len(finds) == 1  # a regression guard: one search, not a search per poll
    assert zombie.member_id != old_id and zombie.generation_id > old_generation
    assert balanced(groups_cluster, 2)
