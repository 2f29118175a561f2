from __future__ import annotations

import pytest

from kafkalab.bench.report import Figure, Reporter, best_rate


def test_line_format() -> None:
    lines: list[str] = []
    reporter = Reporter(echo=lines.append)
    figure = reporter.report("records.decode", 1_500_000, "records/s", 410_000, ">=3.0")
    assert lines == [
        "BENCH records.decode 1500000 records/s baseline=410000 ratio=3.66 target=>=3.0"
    ]
    assert figure.met


def test_upper_bound_targets() -> None:
    assert Figure("timer.flatness", 1.2, "x", 1.0, "<=1.5").met
    assert Figure("timer.flatness", 2.0, "x", 1.0, "<=1.5").met is False
    assert Figure("records.encode", 1.0, "records/s", 1.0, ">=1.5").met is False


def test_target_must_have_a_direction() -> None:
    for bad in ("3.0", ">=", "<=fast", "None"):
        with pytest.raises(ValueError):
            Reporter(echo=lambda _: None).report("x", 1, "u", 1, bad)


def test_context_lines_state_no_target() -> None:
    lines: list[str] = []
    figure = Reporter(echo=lines.append).report("cleaner.small_records", 2.0, "MB/s", 8.0, "none")
    assert lines == ["BENCH cleaner.small_records 2 MB/s baseline=8 ratio=0.25 target=none"]
    assert figure.met is None


def test_best_rate_counts_items() -> None:
    assert best_rate(lambda: 1000, repeat=2) > 0
