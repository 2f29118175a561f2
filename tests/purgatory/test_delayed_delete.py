"""DelayedDelete: segment files go file.delete.delay.ms after retention drops them, once."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab.clock import ManualClock
from kafkalab.errors import TimerError
from kafkalab.purgatory import FILE_DELETE_DELAY_MS_DEFAULT, DelayedDelete, DelayedOperationPurgatory
from kafkalab.timer import Timer


def deleted_segment(tmp_path: Path) -> list[Path]:
    files = [tmp_path / f"00000000000000000000.{ext}.deleted" for ext in ("log", "index", "timeindex")]
    for f in files:
        f.write_bytes(b"x")
    return files


def remover(files: list[Path], calls: list[int]):  # type: ignore[no-untyped-def]
    def delete() -> None:
        calls.append(1)
        for f in files:
            f.unlink()

    return delete


def test_files_deleted_after_default_delay(tmp_path: Path) -> None:
    files = deleted_segment(tmp_path)
    calls: list[int] = []
    clock = ManualClock(5_000)
    timer = Timer(clock)
    op = DelayedDelete(FILE_DELETE_DELAY_MS_DEFAULT, remover(files, calls), name="seg-0")
    timer.add(op)
    timer.advance_clock(5_000 + 59_999)
    assert all(f.exists() for f in files)
    timer.advance_clock(5_000 + 60_000)
    assert not any(f.exists() for f in files)
    assert calls == [1] and op.expired and op.is_completed


def test_force_complete_deletes_now_and_only_once(tmp_path: Path) -> None:
    files = deleted_segment(tmp_path)
    calls: list[int] = []
    clock = ManualClock(0)
    timer = Timer(clock)
    op = DelayedDelete(60_000, remover(files, calls))
    timer.add(op)
    assert op.force_complete() is True  # e.g. broker shutdown
    assert not any(f.exists() for f in files) and timer.size == 0
    timer.advance_clock(120_000)
    assert calls == [1] and not op.expired


def test_events_do_not_complete_a_delete(tmp_path: Path) -> None:
    calls: list[int] = []
    clock = ManualClock(0)
    purgatory: DelayedOperationPurgatory[DelayedDelete] = DelayedOperationPurgatory("delete", clock)
    op = DelayedDelete(1_000, lambda: calls.append(1))
    assert purgatory.try_complete_else_watch(op, ["t-0"]) is False
    assert purgatory.check_and_complete("t-0") == 0
    assert calls == []
    purgatory.advance_clock(1_000)
    assert calls == [1]


def test_cancelled_delete_never_runs() -> None:
    calls: list[int] = []
    timer = Timer(ManualClock(0))
    op = DelayedDelete(10, lambda: calls.append(1))
    timer.add(op)
    op.cancel()
    timer.advance_clock(100)
    assert calls == []


def test_not_callable_is_a_typed_error() -> None:
    with pytest.raises(TimerError, match="not callable"):
        DelayedDelete(10, "rm -rf")  # type: ignore[arg-type]
