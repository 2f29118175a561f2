"""A crash at any step of a clean leaves the old segments or the new ones, never a mix.

A clean swaps one group of segments at a time, so after a crash each group is wholly old or
wholly new: the log equals the finished clean below some group boundary and the original
above it.

Each file rename of the clean (``.cleaned`` -> ``.swap`` -> final, old -> ``.deleted``) and
the checkpoint write is made to fail in turn, as a kill would stop the process there; the
partition is then reopened through recovery and its records compared with the state before
the clean and the state after a clean that completed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kafkalab.storage.cleaner import LogCleaner

from .conftest import LogFixture, records_on_disk


RECORDS = 13  # four records per 300-byte segment: three groups and the active segment


class Crash(Exception):
    pass


def build(root: Path) -> LogFixture:
    fx = LogFixture(root, **{"segment.bytes": "300", "delete.retention.ms": "0"})
    for i in range(RECORDS):
        fx.append([(b"k%d" % (i % 4), None if i % 9 == 8 else b"v%d" % i)])
    fx.clock.advance_ms(10)
    return fx


def snapshot(fx: LogFixture) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for r in records_on_disk(fx.log)]


def count_renames(tmp_path: Path) -> int:
    fx = build(tmp_path / "count")
    calls = [0]
    real = os.replace

    def counting(src, dst):  # type: ignore[no-untyped-def]
        calls[0] += 1
        return real(src, dst)

    os.replace = counting  # type: ignore[assignment]
    try:
        LogCleaner(fx.root, fx.clock.milliseconds).force_clean(fx.log)
    finally:
        os.replace = real  # type: ignore[assignment]
    return calls[0]


def test_crash_at_every_rename_recovers_old_or_new(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reference = build(tmp_path / "reference")
    old_state = snapshot(reference)
    outcome = LogCleaner(reference.root, reference.clock.milliseconds).force_clean(reference.log)
    new_state = snapshot(reference)
    assert new_state != old_state
    boundaries = [group[0] for group in outcome.result.stats.groups] + [outcome.result.end_offset, 10**9]
    assert len(outcome.result.stats.groups) > 1
    allowed = {
        b: [r for r in new_state if r[0] < b] + [r for r in old_state if r[0] >= b] for b in boundaries
    }
    renames = count_renames(tmp_path)
    assert renames >= 6
    outcomes = set()
    orphans: set[str] = set()
    for crash_at in range(renames):
        fx = build(tmp_path / f"crash{crash_at}")
        calls = [0]
        real = os.replace

        def failing(src, dst, _calls=calls, _at=crash_at, _real=real):  # type: ignore[no-untyped-def]
            if _calls[0] == _at:
                raise Crash(f"killed at rename {_at}: {src} -> {dst}")
            _calls[0] += 1
            return _real(src, dst)

        monkeypatch.setattr(os, "replace", failing)
        with pytest.raises(Crash):
            LogCleaner(fx.root, fx.clock.milliseconds).force_clean(fx.log)
        monkeypatch.setattr(os, "replace", real)
        recovered = snapshot(LogFixture(fx.root, **fx.props))
        matches = [b for b, state in allowed.items() if state == recovered]
        assert matches, f"a group mixed old and new segments after a crash at rename {crash_at}"
        outcomes.add(min(matches))
        leftovers = [p.name for p in fx.directory.iterdir() if p.name.endswith((".log.cleaned", ".log.swap"))]
        assert not leftovers, leftovers
        orphans.update(p.name for p in fx.directory.iterdir() if p.suffix in (".cleaned", ".swap"))
    full_clean = min(b for b, state in allowed.items() if state == new_state)
    assert 0 in outcomes and full_clean in outcomes and len(outcomes) > 2  # old, partial and new all seen
    ORPHAN_INDEX_SWAPS.update(orphans)


ORPHAN_INDEX_SWAPS: set[str] = set()


def test_recovery_leaves_no_orphan_index_swap_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    test_crash_at_every_rename_recovers_old_or_new(tmp_path, monkeypatch)
    assert not ORPHAN_INDEX_SWAPS, sorted(ORPHAN_INDEX_SWAPS)


def test_crash_after_cleaned_written_keeps_old(tmp_path: Path) -> None:
    fx = build(tmp_path)
    before = snapshot(fx)

    def fault(step: str) -> None:
        if step == "cleaned-written":
            raise Crash(step)

    cleaner = LogCleaner(fx.root, fx.clock.milliseconds)
    cleaner.cleaner._fault = fault
    with pytest.raises(Crash):
        cleaner.force_clean(fx.log)
    assert any(p.name.endswith(".cleaned") for p in fx.directory.iterdir())
    recovered = LogFixture(fx.root, **fx.props)
    assert snapshot(recovered) == before
    assert not any(p.name.endswith(".cleaned") for p in fx.directory.iterdir())
    # The next clean starts again from the checkpoint, which never moved.
    assert LogCleaner(fx.root, fx.clock.milliseconds).checkpoint.get("t", 0) is None
