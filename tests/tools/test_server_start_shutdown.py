"""server-start always ends: a stuck shutdown is halted after SHUTDOWN_TIMEOUT_S, and a second
signal halts at once. ``_halt`` (which calls ``os._exit``) is replaced by a recorder here; the
real process is exercised in tests/server/test_server_log_dir_failure.py."""

from __future__ import annotations

import asyncio
import signal
import threading

import pytest

from kafkalab.tools import server_start


class StuckServer:
    """A server whose stop() never finishes (a disk that stopped answering)."""

    def __init__(self) -> None:
        self.stop_calls = 0

    async def stop(self) -> None:
        self.stop_calls += 1
        await asyncio.Event().wait()


@pytest.fixture
def halts(monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], threading.Event]:
    reasons: list[str] = []
    halted = threading.Event()

    def record(reason: str) -> None:
        reasons.append(reason)
        halted.set()

    monkeypatch.setattr(server_start, "_halt", record)
    return reasons, halted


def test_a_shutdown_that_never_finishes_is_halted_after_the_timeout(halts, monkeypatch) -> None:
    reasons, halted = halts
    monkeypatch.setattr(server_start, "SHUTDOWN_TIMEOUT_S", 0.05)

    async def scenario() -> int:
        server = StuckServer()
        guard = server_start._ShutdownGuard(server, asyncio.get_running_loop())  # type: ignore[arg-type]
        guard.on_signal(signal.SIGTERM, None)
        await asyncio.sleep(0.01)  # the loop starts the stop, which never returns
        await asyncio.get_running_loop().run_in_executor(None, halted.wait, 5.0)
        guard.disarm()
        return server.stop_calls

    assert asyncio.run(scenario()) == 1
    assert reasons == ["the shutdown did not finish within SHUTDOWN_TIMEOUT_S=0.05 s"]


def test_a_second_signal_halts_at_once(halts) -> None:
    reasons, _ = halts

    async def scenario() -> None:
        guard = server_start._ShutdownGuard(StuckServer(), asyncio.get_running_loop())  # type: ignore[arg-type]
        guard.on_signal(signal.SIGTERM, None)
        guard.on_signal(signal.SIGINT, None)
        guard.disarm()

    asyncio.run(scenario())
    assert reasons[0] == "a second signal (SIGINT) during shutdown"
