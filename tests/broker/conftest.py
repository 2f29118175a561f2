"""Every broker a test opens is shut down when the test ends, so no descriptors leak."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.broker._harness import Harness, close_harnesses_opened_since


@pytest.fixture(autouse=True)
def _close_harnesses() -> Iterator[None]:
    already_open = len(Harness.OPEN)
    yield
    close_harnesses_opened_since(already_open)
