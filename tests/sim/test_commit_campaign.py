"""The committed-offsets campaign: stale generations and fenced instances never commit, and acknowledged commits
survive coordinator crashes on RF=3 ``__consumer_offsets``. The checks fail if a commit is
acknowledged before the ISR has it: with ``BrokerCoordinatorLog.when_committed`` answering at
once (acks=1), seeds 0-5 each lose an acknowledged commit to an ``ack-crash``; they fail too if a
new coordinator does not load the group."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab.sim.commit_campaign import run


def test_commits_survive_coordinator_crashes_and_stale_generations_are_refused(tmp_path: Path) -> None:
    result = run(1, tmp_path)
    assert result.acknowledged > 0 and result.stale_refused > 0 and result.fenced_refused > 0
    assert result.actions["crash"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(2, 12))
def test_commit_campaign_more_seeds(tmp_path: Path, seed: int) -> None:
    run(seed, tmp_path)  # raises InvariantViolation with a replay line
