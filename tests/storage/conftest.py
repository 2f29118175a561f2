"""Fixtures for the storage tests; helpers live in ``storage_helpers`` (put on sys.path here
because the suite runs with ``--import-mode=importlib``)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kafkalab.clock import ManualClock  # noqa: E402
from kafkalab.storage import Log, LogConfig  # noqa: E402


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(now_ms=1_000_000)


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / "orders-0"


@pytest.fixture
def open_log(log_dir: Path, clock: ManualClock) -> Iterator[Callable[..., Log]]:
    opened: list[Log] = []

    def opener(config: LogConfig | None = None, **kwargs: object) -> Log:
        log = Log.open(log_dir, config or LogConfig(), clock, **kwargs)  # type: ignore[arg-type]
        opened.append(log)
        return log

    yield opener
    for log in opened:
        log.close()
