"""The simulated cluster most tests here start from: three brokers, seed 7 (broker 3 leads
``orders-0``, as :mod:`kafkalab.sim.cluster`'s worked example says)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalab.sim.cluster import SimCluster


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[SimCluster]:
    sim = SimCluster(tmp_path, nodes=3, seed=7)
    yield sim
    sim.close()
