"""Each "change the engine" check fails on kafkalab as it is and passes once the exercise's edit
is made -- the edit applied to a copy of the package, checked in a fresh interpreter."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import kafkalab
from kafkalab.classroom.engine_changes import ENGINE_CHANGES, EngineUnchanged, check

PACKAGE_DIR = Path(kafkalab.__file__).resolve().parent
CHECK_TIMEOUT_S = 60  # a check builds one tiny log; a minute means something hung


@pytest.mark.parametrize("name", sorted(ENGINE_CHANGES))
def test_check_fails_on_the_unchanged_engine(name: str) -> None:
    with pytest.raises(EngineUnchanged):
        check(name)


@pytest.mark.parametrize("name", sorted(ENGINE_CHANGES))
def test_check_passes_once_the_edit_is_made(name: str, tmp_path: Path) -> None:
    change = ENGINE_CHANGES[name]
    copy = tmp_path / "kafkalab"
    shutil.copytree(PACKAGE_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    edited = copy / change.path
    text = edited.read_text(encoding="utf-8")
    assert change.old in text, f"{change.path} no longer has the text the exercise edits"
    edited.write_text(text.replace(change.old, change.new, 1), encoding="utf-8")  # the first: as the exercise says
    run = subprocess.run(
        [sys.executable, "-c", f"from kafkalab.classroom.engine_changes import check; print(check({name!r}))"],
        cwd=tmp_path, env={"PYTHONPATH": str(tmp_path), "PATH": ""}, capture_output=True, text=True,
        timeout=CHECK_TIMEOUT_S)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip()
