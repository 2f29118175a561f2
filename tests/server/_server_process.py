"""Start ``kafkalab server-start`` in a subprocess on port 0 and talk to it over raw sockets."""

from __future__ import annotations

import os
import re
import selectors
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from kafkalab.protocol.header import decode_response, encode_request

STARTED = re.compile(r"^kafkalab server started on (?P<host>[\d.]+):(?P<port>\d+)$")
START_TIMEOUT_S = 20.0


class ServerProcess:
    """One server subprocess; always stopped by the fixture that made it."""

    def __init__(self, data_dir: Path, *extra: str) -> None:
        self.data_dir = data_dir
        self.extra = extra
        self.process: subprocess.Popen[str] | None = None
        self.port = 0

    def start(self) -> ServerProcess:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "kafkalab.tools.cli", "server-start", "--data-dir", str(self.data_dir),
             "--port", "0", *self.extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        assert self.process.stdout is not None
        # selectors (epoll), not select.select: a pytest worker that has run many tests may hold
        # descriptors numbered past select()'s limit of 1024.
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            ready = selector.select(START_TIMEOUT_S)
        line = self.process.stdout.readline().strip() if ready else ""
        match = STARTED.match(line)
        if match is None:
            self.kill()
            raise AssertionError(f"server did not start: {line!r}")
        self.port = int(match["port"])
        return self

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self, signum: int = signal.SIGTERM, timeout_s: float = 15.0) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            os.kill(self.process.pid, signum)
        try:
            return self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            raise

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(5)

    def connect(self) -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        return sock


def read_frame(sock: socket.socket) -> bytes | None:
    """One response frame (without its size), or None if the server closed the connection."""
    header = _read_exactly(sock, 4)
    if header is None:
        return None
    size = int.from_bytes(header, "big")
    return _read_exactly(sock, size)


def _read_exactly(sock: socket.socket, count: int) -> bytes | None:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def call(sock: socket.socket, api_key: int, version: int, body: Any, correlation_id: int = 1) -> Any:
    sock.sendall(encode_request(api_key, version, correlation_id, "raw", body))
    frame = read_frame(sock)
    assert frame is not None, "server closed the connection"
    got, decoded = decode_response(api_key, version, frame)
    assert got == correlation_id
    return decoded


def api_versions_works(server: ServerProcess) -> bool:
    with server.connect() as sock:
        return call(sock, 18, 3, {"client_software_name": "t", "client_software_version": "1"}).error_code == 0


def wait_closed(sock: socket.socket, timeout_s: float = 10.0) -> bool:
    """True when the server closes ``sock`` within the timeout."""
    sock.settimeout(timeout_s)
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            if not sock.recv(4096):
                return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False
    return False
