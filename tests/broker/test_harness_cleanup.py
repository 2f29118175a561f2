"""The broker tests' fixture shuts down every broker a test leaves open: no descriptor leaks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.broker._harness import Harness, batch, close_harnesses_opened_since

FD_DIR = Path("/proc/self/fd")


def _open_descriptors() -> int:
    return len(os.listdir(FD_DIR))


@pytest.mark.skipif(not FD_DIR.exists(), reason="counts descriptors through /proc")
def test_closing_the_harnesses_a_test_opened_releases_their_descriptors(tmp_path):
    already_open = len(Harness.OPEN)
    before = _open_descriptors()
    for index in range(3):
        h = Harness(tmp_path / f"b{index}")
        h.create_topic("t", partitions=2)
        h.produce("t", 0, batch([b"a", b"b"]))
    assert _open_descriptors() > before  # segments and indexes are open while the brokers run
    close_harnesses_opened_since(already_open)
    assert _open_descriptors() == before  # without relying on the garbage collector
    assert len(Harness.OPEN) == already_open


def test_close_is_idempotent_and_leaves_the_harness_list(tmp_path):
    h = Harness(tmp_path)
    h.close()
    h.close()
    assert h not in Harness.OPEN
