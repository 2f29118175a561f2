from __future__ import annotations

import pytest

from kafkalab.bench.report import Figure, Reporter, best_rate, parse_line


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


def test_a_printed_line_parses_back_to_its_figure() -> None:
    lines: list[str] = []
    reporter = Reporter(echo=lines.append)
    reporter.report("server.consume", 487.8, "MB/s", 898.8, ">=0.7")
    reporter.report("timer.insert_expire.n1000", 695344, "ops/s", 2623634, "none")
    parsed = [parse_line(line) for line in lines]
    assert [(f.name, f.unit, f.target, f.met) for f in parsed if f] == [
        ("server.consume", "MB/s", ">=0.7", False), ("timer.insert_expire.n1000", "ops/s", "none", None)]
    assert parse_line("# storage benchmarks took 4.3 s") is None
    assert parse_line("BENCH x 1 u baseline=2 ratio=0.5") is None
