"""Drive a real JupyterLab in headless Chromium: start the server, open a chapter, run it.

The rendering tests use this to check that a chapter's *live* widgets (not the static figures
nbval compares) actually draw in a browser. Every wait is bounded; the JupyterLab process group
is always killed, and autosave is switched off so running a chapter never rewrites the stored
notebook.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

REPO_DIR = Path(__file__).resolve().parents[2]
BOOK_DIR = REPO_DIR / "book"
CHROMIUM_PATH = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
SERVER_START_TIMEOUT_S = 40.0  # JupyterLab cold start on a busy 2-core machine takes ~5-15 s
SERVER_STOP_TIMEOUT_S = 10.0
POLL_INTERVAL_S = 0.25


@dataclass(frozen=True, slots=True)
class LabServer:
    """A running JupyterLab: where it listens and the token that opens it."""

    base_url: str
    token: str

    def url(self, path: str) -> str:
        return f"{self.base_url}{path}?token={self.token}"


def chromium_missing_reason() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    if not CHROMIUM_PATH.exists():
        return (
            f"Chromium not found at {CHROMIUM_PATH}: install Debian's package "
            "(apt-get install -y chromium; .ci/run does this in CI) to run the rendering test"
        )
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the Python package playwright is not installed (pip install playwright)"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _write_settings(settings_dir: Path) -> None:
    """User settings for the test server: no autosave, no news or update pop-ups, and every cell
    kept in the page (JupyterLab 4 otherwise detaches cells scrolled out of view)."""
    overrides = {
        "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
        "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
        "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
            "fetchNews": "false",
            "checkForUpdates": False,
        },
    }
    for relative, values in overrides.items():
        path = settings_dir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values), encoding="utf-8")


def _wait_until_up(server: LabServer, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with {process.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(server.url("/api/status"), timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(POLL_INTERVAL_S)
    raise TimeoutError(f"JupyterLab did not answer within {SERVER_START_TIMEOUT_S} s:\n{log.read_text()}")


@contextmanager
def jupyterlab(scratch_dir: Path) -> Iterator[LabServer]:
    """Start ``jupyter lab`` on ``book/`` at a free port; kill its process group on exit."""
    port = _free_port()
    server = LabServer(f"http://127.0.0.1:{port}", secrets.token_hex(16))
    settings_dir = scratch_dir / "lab-settings"
    _write_settings(settings_dir)
    env = dict(os.environ)
    env.pop("KAFKALAB_STATIC_WIDGETS", None)  # the point of this test is the live widgets
    env.update(
        JUPYTERLAB_SETTINGS_DIR=str(settings_dir),
        JUPYTERLAB_WORKSPACES_DIR=str(scratch_dir / "lab-workspaces"),
        JUPYTER_RUNTIME_DIR=str(scratch_dir / "runtime"),
    )
    jupyter = Path(sys.executable).with_name("jupyter")
    command = [
        str(jupyter), "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
        f"--IdentityProvider.token={server.token}", f"--ServerApp.root_dir={BOOK_DIR}",
        "--ServerApp.open_browser=False", "--LabApp.expose_app_in_browser=True",
        "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",  # no PyPI queries from a test
    ]
    if os.geteuid() == 0:  # CI containers run as root; JupyterLab refuses that unless told
        command.append("--allow-root")
    log = scratch_dir / "jupyterlab.log"
    with log.open("wb") as log_file:
        process = subprocess.Popen(
            command, cwd=REPO_DIR, env=env, stdout=log_file, stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so kernels die with it
        )
        try:
            _wait_until_up(server, process, log)
            yield server
        finally:
            _stop(process)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=SERVER_STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=SERVER_STOP_TIMEOUT_S)


def copy_artifact(source: Path, name: str) -> Path:
    """Copy a file into ``test-artifacts/`` at the repository root (kept out of git)."""
    target_dir = REPO_DIR / "test-artifacts"
    target_dir.mkdir(exist_ok=True)
    target = target_dir / name
    shutil.copyfile(source, target)
    return target


# --- driving the page -------------------------------------------------------------------------

PAGE_LOAD_TIMEOUT_MS = 30_000
RUN_ALL_TIMEOUT_MS = 120_000  # chapter 13 alone takes ~30 s headless on a busy 2-core machine

_CURRENT_NOTEBOOK_JS = "window.jupyterapp && window.jupyterapp.shell.currentWidget"
_KERNEL_IDLE_JS = f"""() => {{
    const panel = {_CURRENT_NOTEBOOK_JS};
    const kernel = panel && panel.sessionContext && panel.sessionContext.session
        && panel.sessionContext.session.kernel;
    return !!(kernel && kernel.status === 'idle' && panel.content && panel.content.widgets.length);
}}"""
# A cell tagged ``raises-exception`` (a "change the engine" check that fails until the learner
# edits the engine) is expected to raise; JupyterLab runs on past it, and so does the test.
_EXPECTED_ERROR_JS = "const _expected = c => ((c.metadata || {}).tags || []).includes('raises-exception');"
_ALL_EXECUTED_JS = f"""() => {{
    {_EXPECTED_ERROR_JS}
    const panel = {_CURRENT_NOTEBOOK_JS};
    const kernel = panel.sessionContext.session.kernel;
    const cells = panel.content.model.toJSON().cells.filter(c => c.cell_type === 'code');
    const failed = cells.some(c => !_expected(c) && (c.outputs || []).some(o => o.output_type === 'error'));
    return kernel.status === 'idle' && (failed || cells.every(c => c.execution_count !== null));
}}"""
_ERRORS_JS = f"""() => {{
    {_EXPECTED_ERROR_JS}
    const cells = {_CURRENT_NOTEBOOK_JS}.content.model.toJSON().cells;
    return cells.filter(c => !_expected(c)).flatMap(c => (c.outputs || []).filter(o => o.output_type === 'error')
        .map(o => o.ename + ': ' + o.evalue));
}}"""


def open_and_run_all(page: "playwright.sync_api.Page", server: LabServer, notebook: str) -> list[str]:  # noqa: F821
    """Open ``notebook`` in JupyterLab, run every cell, and return the error outputs (if any)."""
    page.goto(server.url(f"/lab/tree/{notebook}"), timeout=PAGE_LOAD_TIMEOUT_MS)
    page.wait_for_function(_KERNEL_IDLE_JS, timeout=PAGE_LOAD_TIMEOUT_MS, polling=250)
    # Clearing first drops the stored static figures and execution counts, so what the test sees
    # afterwards was drawn by this run's live widgets.
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function(_ALL_EXECUTED_JS, timeout=RUN_ALL_TIMEOUT_MS, polling=250)
    return list(page.evaluate(_ERRORS_JS))
