"""The KRaft fault campaign (see simulation.py): many seeds, 3 and 5 voters."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from simulation import run  # noqa: E402

FAST_SEEDS = 200
SLOW_SEEDS = 1000


@pytest.mark.parametrize("voters", [3, 5])
def test_fast_campaign(voters: int) -> None:
    epochs = 0
    for seed in range(FAST_SEEDS // 2):
        sim = run(seed, voters, duration_ms=2_500, heal_ms=7_000)
        epochs += len(sim.checker.leaders)
        assert sim.checker.committed_offset > 0
    assert epochs > FAST_SEEDS // 2  # elections happened beyond the first one


@pytest.mark.slow
@pytest.mark.parametrize("voters", [3, 5])
def test_slow_campaign(voters: int) -> None:
    for seed in range(10_000, 10_000 + SLOW_SEEDS):
        run(seed, voters, duration_ms=20_000, heal_ms=15_000)
