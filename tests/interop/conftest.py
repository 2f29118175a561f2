"""Fixtures for the interop tests: a real ``kafkalab server-start`` process per module.

The server runs as a child process on port 0 in a temporary data directory; the fixture reads
the port from its "server started on" line and stops it (SIGTERM, then SIGKILL) at teardown,
so a failing test can never leave a server behind.

Set ``KAFKALAB_INTEROP_BOOTSTRAP=host:port`` to run the same tests against another broker (a
real Apache Kafka, or librdkafka's mock cluster): that checks the tests themselves against an
independent implementation. Tests that restart the server skip in that mode.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kafkalab.client.launcher import ServerProcess, start_server

EXTERNAL_BOOTSTRAP = os.environ.get("KAFKALAB_INTEROP_BOOTSTRAP")
_topic_numbers = itertools.count()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.interop)


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``bootstrap.servers`` of a kafkalab server shared by one test module."""
    if EXTERNAL_BOOTSTRAP:
        yield EXTERNAL_BOOTSTRAP
        return
    server = start_server(tmp_path_factory.mktemp("server") / "data")
    try:
        yield server.bootstrap
    finally:
        server.stop()


@pytest.fixture
def server_factory(tmp_path: Path) -> Iterator[Callable[[Path], ServerProcess]]:
    """Start servers on chosen data directories; every one is stopped at teardown."""
    if EXTERNAL_BOOTSTRAP:
        pytest.skip("restart tests need a kafkalab server they can start and stop")
    started: list[ServerProcess] = []

    def start(data_dir: Path) -> ServerProcess:
        server = start_server(data_dir)
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            server.stop()


@pytest.fixture
def topic_name(request: pytest.FixtureRequest) -> str:
    """A topic name unique within the session, readable in the server's data directory."""
    base = "".join(c if c.isalnum() else "-" for c in request.node.name)[:120].strip("-")
    return f"{base}-{next(_topic_numbers)}"
