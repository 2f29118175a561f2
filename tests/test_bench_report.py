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
    assert not Figure("timer.flatness", 2.0, "x", 1.0, "<=1.5").met
    assert not Figure("records.encode", 1.0, "records/s", 1.0, ">=1.5").met


def test_target_must_have_a_direction() -> None:
    with pytest.raises(AssertionError):
        Reporter(echo=lambda _: None).report("x", 1, "u", 1, "3.0")


def test_best_rate_counts_items() -> None:
    assert best_rate(lambda: 1000, repeat=2) > 0
