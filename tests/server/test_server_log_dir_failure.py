"""A real server process whose data directory fails still stops: promptly, non-zero, saying why.

Regression: with its data directory deleted, ``kafkalab server-start`` ignored SIGTERM (the
checkpoint write raised FileNotFoundError inside the shutdown and the process stayed up).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time

import pytest

from kafkalab.errors import ErrorCode
from kafkalab.protocol.header import decode_response, encode_request
from kafkalab.tools.server_start import EXIT_FAILURE, SHUTDOWN_TIMEOUT_S
from tests.broker._harness import batch
from tests.server._server_process import ServerProcess, call, read_frame

pytestmark = pytest.mark.timeout(60)

ALL_DIRS_FAILED = "Shutdown broker because all log dirs in {data_dir} have failed"
EXIT_MARGIN_S = 5.0  # a Python process's own start-up and teardown on a busy, shared machine


@pytest.fixture
def server(tmp_path):
    process = ServerProcess(tmp_path / "data").start()
    yield process
    process.kill()


def create_topic(sock: socket.socket, name: str, configs: dict[str, str]) -> None:
    topic = {"name": name, "num_partitions": 1, "replication_factor": 1,
             "configs": [{"name": k, "value": v} for k, v in configs.items()]}
    assert call(sock, 19, 7, {"topics": [topic], "timeout_ms": 1000}).topics[0].error_code == 0


def produce_error(sock: socket.socket, topic: str, value: bytes, correlation_id: int) -> int | None:
    """The partition's error code, or None if the server closed the connection instead."""
    body = {"acks": -1, "timeout_ms": 1000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": batch([value])}]}]}
    sock.sendall(encode_request(0, 9, correlation_id, "raw", body))
    try:
        frame = read_frame(sock)
    except (ConnectionResetError, socket.timeout):
        return None
    if frame is None:
        return None
    _, response = decode_response(0, 9, frame)
    return int(response.responses[0].partition_responses[0].error_code)


def exit_within(server: ServerProcess, timeout_s: float) -> tuple[int, float, str]:
    """(exit status, seconds waited, stderr) once the process ends within ``timeout_s``."""
    assert server.process is not None
    started = time.monotonic()
    try:
        status = server.process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the server was still running {timeout_s} s later")
    assert server.process.stderr is not None
    return status, time.monotonic() - started, server.process.stderr.read()


def test_produce_after_the_data_dir_is_deleted_fails_and_the_server_exits(server):
    with server.connect() as sock:
        create_topic(sock, "t", {"segment.bytes": "200"})  # the next batch must roll a new file
        assert produce_error(sock, "t", b"x" * 80, 2) == 0
        shutil.rmtree(server.data_dir)
        assert produce_error(sock, "t", b"y" * 80, 3) in (ErrorCode.KAFKA_STORAGE_ERROR, None)
    status, _, stderr = exit_within(server, SHUTDOWN_TIMEOUT_S + EXIT_MARGIN_S)
    assert status == EXIT_FAILURE
    assert ALL_DIRS_FAILED.format(data_dir=server.data_dir) in stderr
    assert "Error while rolling log segment for t-0" in stderr


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_after_the_data_dir_is_deleted_ends_the_server(server, signum):
    with server.connect() as sock:
        create_topic(sock, "t", {})
        assert produce_error(sock, "t", b"x", 2) == 0  # the open segment survives the unlink
    shutil.rmtree(server.data_dir)
    assert server.process is not None
    os.kill(server.process.pid, signum)
    status, waited_s, stderr = exit_within(server, SHUTDOWN_TIMEOUT_S + EXIT_MARGIN_S)
    assert status == EXIT_FAILURE and waited_s < SHUTDOWN_TIMEOUT_S
    assert ALL_DIRS_FAILED.format(data_dir=server.data_dir) in stderr
    assert "FileNotFoundError" not in stderr  # handled, not a stray traceback


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions, so chmod cannot make "
                    "the data directory unwritable; the deleted-directory tests cover the same path")
def test_signal_with_an_unwritable_data_dir_ends_the_server(server):
    with server.connect() as sock:
        create_topic(sock, "t", {})
    server.data_dir.chmod(0o500)
    try:
        assert server.process is not None
        os.kill(server.process.pid, signal.SIGTERM)
        status, _, stderr = exit_within(server, SHUTDOWN_TIMEOUT_S + EXIT_MARGIN_S)
    finally:
        server.data_dir.chmod(0o700)
    assert status == EXIT_FAILURE
    assert ALL_DIRS_FAILED.format(data_dir=server.data_dir) in stderr


def test_sigterm_on_a_healthy_server_still_exits_cleanly(server):
    with server.connect() as sock:
        create_topic(sock, "t", {})
        assert produce_error(sock, "t", b"x", 2) == 0
    assert server.stop() == 0
    assert (server.data_dir / ".kafka_cleanshutdown").exists()
