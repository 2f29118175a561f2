"""The group campaign: ownership holds over seeds (every assignor gets picked), and the checker
does report a partition with two owners in one generation."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab.client.membership import MemberConfig
from kafkalab.sim.cluster import SimCluster
from kafkalab.sim.group_campaign import GroupChecker, main, run
from kafkalab.sim.invariants import InvariantViolation


def test_one_owner_per_partition_per_generation_over_6_seeds(tmp_path: Path) -> None:
    assignors = set()
    for seed in range(6):
        result = run(seed, tmp_path / str(seed))
        assignors.add(result.assignor)
        assert result.checks > 500 and result.generations >= 2
    assert assignors == {"range", "roundrobin", "sticky", "cooperative-sticky"}  # seeds 0-5 pick all four


@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(4))
def test_one_owner_per_partition_per_generation_over_100_seeds(tmp_path: Path, chunk: int) -> None:
    for seed in range(6 + chunk * 25, 6 + (chunk + 1) * 25):
        run(seed, tmp_path / str(seed))  # raises InvariantViolation with a replay line


def test_the_checker_reports_two_owners_in_one_generation(tmp_path: Path) -> None:
    sim = SimCluster(tmp_path, nodes=1, seed=1, properties={"group.initial.rebalance.delay.ms": "0"})
    try:
        sim.create_topic("orders", 2, 1)
        config = MemberConfig("g", ("orders",), assignors=("range",), session_timeout_ms=6_000,
                              heartbeat_interval_ms=500)
        a, b = sim.add_member("a", config), sim.add_member("b", config)
        sim.run_for(1_000)
        checker = GroupChecker(sim, seed=1)
        checker.check()
        b.owned = b.owned + a.owned  # what a broken assignor or coordinator would cause
        with pytest.raises(InvariantViolation, match="two owners in generation 1.*--seed 1"):
            checker.check()
    finally:
        sim.close()


def test_replay_command_runs_one_seed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--seed", "3", "--steps", "5"]) == 0
    assert capsys.readouterr().out.startswith("seed 3: ")
