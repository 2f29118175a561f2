"""Start and stop a kafkalab server in a child process, the way a learner does from a shell.

Theory of operation
-------------------
``kafkalab server-start --port 0`` asks the operating system for a free port, binds it, and
prints one line saying where it listens::

    kafkalab server started on 127.0.0.1:40123

:func:`start_server` runs that command with its output redirected to a log file (a file, not a
pipe, so a chatty server can never block on a full pipe buffer), then polls the file until the
line appears or ``start_timeout_s`` runs out. The returned :class:`ServerProcess` knows the
bootstrap address (``"127.0.0.1:40123"``) and stops the server with SIGTERM -- the signal an
operator's ``kill`` sends, which a broker answers with a clean shutdown -- falling back to SIGKILL
when the clean shutdown takes longer than ``stop_timeout_s``.

Worked example: the interop tests start a server on ``tmp_path / "data"``, produce 30 records,
call ``server.stop()``, start a *new* server on the same data directory (it gets a new port) and
read all 30 records back: a restart test in five lines.

Used by the interop tests, the server benchmark and the book; the broker itself never imports it.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kafkalab.errors import KafkaError

STARTED_LINE = re.compile(r"kafkalab server started on (?P<host>[^\s:]+):(?P<port>\d+)")
START_TIMEOUT_S = 30.0  # a cold Python start plus log recovery on a slow, shared CI core
STOP_TIMEOUT_S = 10.0  # a clean shutdown flushes and closes every segment
POLL_INTERVAL_S = 0.02
LOG_TAIL_BYTES = 4000  # how much of the server's log an error message quotes


class ServerStartError(KafkaError):
    """The server process exited or stayed silent instead of announcing its port."""


@dataclass(slots=True)
class ServerProcess:
    """A running ``kafkalab server-start`` child process.

    Owned by whoever started it; not thread-safe. ``stop`` is idempotent.
    """

    process: subprocess.Popen[bytes]
    host: str
    port: int
    data_dir: Path
    log_path: Path

    @property
    def bootstrap(self) -> str:
        """The ``bootstrap.servers`` string a client needs, e.g. ``"127.0.0.1:40123"``."""
        return f"{self.host}:{self.port}"

    def stop(self, *, stop_timeout_s: float = STOP_TIMEOUT_S) -> int:
        """Send SIGTERM, wait up to ``stop_timeout_s``, then SIGKILL; return the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=stop_timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=stop_timeout_s)
        return int(self.process.returncode)

    def kill(self) -> None:
        """Stop the server abruptly, as a crash or power cut would (SIGKILL)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=STOP_TIMEOUT_S)

    def log_tail(self) -> str:
        """The last few thousand characters the server printed, for error messages."""
        return _tail(self.log_path)


def start_server(
    data_dir: Path,
    *,
    overrides: Sequence[str] = (),
    log_path: Path | None = None,
    start_timeout_s: float = START_TIMEOUT_S,
    config: Path | None = None,
    port: int | None = 0,
) -> ServerProcess:
    """Start ``kafkalab server-start`` on ``data_dir`` and a free port; wait for its port line.

    ``overrides`` are ``key=value`` broker settings passed as ``--override key=value``. With
    ``config``, a KRaft ``server.properties`` whose first log dir is ``data_dir`` (formatted by
    ``kafkalab storage format``), the node starts from that file. ``port`` overrides the broker
    listener's port (0: the operating system picks one; None: the one the config names).
    Raises :class:`ServerStartError` (quoting the server's log) when no port line appears
    within ``start_timeout_s`` or the process exits first.
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_path or data_dir.parent / f"{data_dir.name}.server.log"
    command = [sys.executable, "-m", "kafkalab", "server-start",
               *([str(config)] if config is not None else ["--data-dir", str(data_dir)]),
               *(["--port", str(port)] if port is not None else [])]
    for override in overrides:
        command += ["--override", override]
    with open(log_path, "ab") as log_file:
        # The log may hold earlier runs on the same data directory: read only what this run adds.
        start_position = log_file.tell()
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    deadline_s = time.monotonic() + start_timeout_s
    while time.monotonic() < deadline_s:
        match = STARTED_LINE.search(_read_from(log_path, start_position))
        if match:
            return ServerProcess(process, match["host"], int(match["port"]), data_dir, log_path)
        if process.poll() is not None:
            raise ServerStartError(
                f"kafkalab server-start on {data_dir} exited with status {process.returncode} "
                f"before announcing a port; log:\n{_tail(log_path)}"
            )
        time.sleep(POLL_INTERVAL_S)
    process.kill()
    process.wait(timeout=STOP_TIMEOUT_S)
    raise ServerStartError(
        f"kafkalab server-start on {data_dir} printed no 'server started on HOST:PORT' line "
        f"within {start_timeout_s} s; log:\n{_tail(log_path)}"
    )


def unused_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` where nothing listens right now: the operating system picks a free
    one for a socket that is closed again at once. Another process may take it later, so use it
    straight away -- e.g. as an ``advertised.listeners`` port where no broker answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def _read_from(path: Path, position: int) -> str:
    with open(path, "rb") as log_file:
        log_file.seek(position)
        return log_file.read().decode(errors="replace")


def _tail(path: Path) -> str:
    try:
        return path.read_text(errors="replace")[-LOG_TAIL_BYTES:]
    except OSError as error:
        return f"(no log at {path}: {error})"
