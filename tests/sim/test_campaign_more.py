"""The second half of the replication campaign's 200 CI seeds, in a file of its own so that
``make test``'s workers (one per file) share the seeds."""

from __future__ import annotations

import pytest

from tests.sim.test_campaign import CHUNKS, run_chunk


@pytest.mark.parametrize("chunk", range(CHUNKS // 2, CHUNKS))
def test_every_invariant_holds_over_the_second_100_seeds(chunk: int) -> None:
    run_chunk(chunk)
