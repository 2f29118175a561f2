"""Apache Kafka's own Java client 3.9.1 as a test oracle.

The jar comes from PyPI: the wheel ``shigawire-apache-flink-libraries`` (a redistribution of
Flink's Kafka connector, ~92 MB) carries ``pyflink/lib/kafka-clients.jar`` and its companions. It
is fetched once per machine with ``pip download --no-deps`` into a cache outside the repository,
``$KAFKALAB_JAVA_CLIENT_CACHE`` or ``~/.cache/kafkalab/java-client``; only the jars are kept
(``jars/``). Small Java programs kept in ``tests/java/*.java`` (kafkalab's own code) are compiled
with ``javac`` into ``classes/`` there, again only when their source changed.

:func:`java_client` returns a :class:`JavaClient`, or skips the calling test with the reason
when Java, ``javac`` or the wheel cannot be had; :func:`find_java_client` returns the reason
instead of skipping (for benchmarks). Every test that needs the Java client goes through here.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

WHEEL_NAME = "shigawire-apache-flink-libraries"
JARS = ("kafka-clients.jar", "slf4j-api.jar", "lz4-java.jar", "snappy-java.jar", "zstd-jni.jar")
JAR_PREFIX = "pyflink/lib/"
SOURCES = Path(__file__).parent / "java"
DOWNLOAD_TIMEOUT_S = 600  # a 92 MB wheel; far less from a PyPI mirror
COMPILE_TIMEOUT_S = 300
RUN_TIMEOUT_S = 600


def cache_dir() -> Path:
    return Path(os.environ.get("KAFKALAB_JAVA_CLIENT_CACHE", Path.home() / ".cache/kafkalab/java-client"))


@dataclass(frozen=True)
class JavaClient:
    """Compiled oracle programs on a classpath with Kafka's client jars. Stateless."""

    java: str
    classpath: str

    def run(self, main_class: str, stdin: str, *args: str, timeout_s: float = RUN_TIMEOUT_S) -> str:
        """Run ``main_class`` with ``stdin``; return its stdout or raise with its stderr."""
        done = subprocess.run(
            [self.java, "-Xss16m", "-cp", self.classpath, main_class, *args],
            input=stdin, capture_output=True, text=True, timeout=timeout_s,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{main_class} exited {done.returncode}: {done.stderr[-4000:]}")
        return done.stdout


def _fetch_jars(cache: Path) -> Path | str:
    jars = cache / "jars"
    if all((jars / name).exists() for name in JARS[:2]):
        return jars
    # Per-process scratch directories, renamed into place at the end: test workers running in
    # parallel may all find the cache empty, and none may see another's half-written files.
    wheels = cache / f"wheel.{os.getpid()}"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", WHEEL_NAME, "-d", str(wheels)],
        capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT_S,
    )
    if done.returncode != 0:
        return f"pip download {WHEEL_NAME} failed: {done.stderr.strip()[-500:]}"
    wheel = sorted(wheels.glob("*.whl"))[-1]
    tmp = cache / f"jars.{os.getpid()}"
    tmp.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as archive:
        for name in JARS:
            if JAR_PREFIX + name in archive.namelist():
                (tmp / name).write_bytes(archive.read(JAR_PREFIX + name))
    shutil.rmtree(wheels, ignore_errors=True)  # the jars are all we keep
    if not (tmp / JARS[0]).exists():
        return f"{wheel.name} has no {JAR_PREFIX}{JARS[0]}"
    _move_into_place(tmp, jars)
    return jars


def _move_into_place(tmp: Path, final: Path) -> None:
    """Rename a finished scratch directory to its final name; if another process got there
    first, keep theirs."""
    try:
        tmp.rename(final)
    except OSError:
        if not final.exists():
            raise
        shutil.rmtree(tmp, ignore_errors=True)


def _compile(cache: Path, classpath: str, javac: str) -> Path | str:
    sources = sorted(SOURCES.glob("*.java"))
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sources)).hexdigest()[:16]
    classes = cache / f"classes-{digest}"
    if classes.exists():
        return classes
    tmp = cache / f"classes-{digest}.{os.getpid()}"
    tmp.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([javac, "-d", str(tmp), "-cp", classpath, *map(str, sources)],
                          capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
    if done.returncode != 0:
        return f"javac failed: {done.stderr[-2000:]}"
    _move_into_place(tmp, classes)
    return classes


_found: JavaClient | str | None = None


def find_java_client() -> JavaClient | str:
    """The Java client, or the reason it cannot be had (computed once per process)."""
    global _found
    if _found is None:
        _found = _find()
    return _found


def _find() -> JavaClient | str:
    java, javac = shutil.which("java"), shutil.which("javac")
    if java is None or javac is None:
        return "Kafka's Java client needs java and javac on PATH"
    cache = cache_dir()
    try:
        cache.mkdir(parents=True, exist_ok=True)
        jars = _fetch_jars(cache)
        if isinstance(jars, str):
            return jars
        jar_path = os.pathsep.join(str(p) for p in sorted(jars.glob("*.jar")))
        classes = _compile(cache, jar_path, javac)
    except (OSError, subprocess.TimeoutExpired, zipfile.BadZipFile) as error:
        return f"cannot prepare Kafka's Java client in {cache}: {error}"
    if isinstance(classes, str):
        return classes
    return JavaClient(java, os.pathsep.join([str(classes), jar_path]))


def java_client() -> JavaClient:
    """The Java client, or skip the calling test with the reason."""
    import pytest

    found = find_java_client()
    if isinstance(found, str):
        pytest.skip(found)
    return found
