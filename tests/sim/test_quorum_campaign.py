"""The KRaft controller campaign: a few seeds here, many under ``make campaign``; and the
checker catches a broken promise (an image that is not the committed log replayed)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from kafkalab.sim.controller_quorum import SimControllerQuorum
from kafkalab.sim.invariants import InvariantViolation
from kafkalab.sim.quorum_campaign import QuorumChecker, describe, main, replay_command, run


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fast_campaign(tmp_path: Path, seed: int) -> None:
    result = run(seed, tmp_path, steps=12)
    assert result.committed_batches >= 3 and result.checks > 50, describe(result)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3, 103))
def test_slow_campaign(tmp_path: Path, seed: int) -> None:
    run(seed, tmp_path, steps=40)


def test_the_checker_catches_an_uncommitted_image(tmp_path: Path) -> None:
    quorum = SimControllerQuorum(tmp_path, voters=3, observers=(101,), seed=4)
    try:
        active = quorum.run_until_active()
        assert active is not None
        quorum.run_for(500)
        checker = QuorumChecker(replay_command(4, 1))
        checker.check(quorum)
        active.image = replace(active.image, next_producer_id=5_000)  # as if it published a guess
        with pytest.raises(InvariantViolation, match=r"not the committed log replayed -- replay: python -m"):
            checker.check(quorum)
    finally:
        quorum.close()


def test_one_seed_replays_from_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--seed", "5", "--steps", "4"]) == 0
    assert capsys.readouterr().out.startswith("seed 5: ")
