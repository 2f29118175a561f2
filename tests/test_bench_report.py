from __future__ import annotations

from collections.abc import Callable

import pytest

from kafkalab.bench.report import Figure, Reporter, Spread, alternate, median_run, parse_line


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


def test_runs_report_the_median_run_and_the_spread_of_per_run_ratios() -> None:
    lines: list[str] = []
    figure = Reporter(echo=lines.append).report_runs("storage.append", [4, 6, 5], "MiB/s", [10, 10, 9], ">=0.5")
    # ratios 0.40, 0.60, 0.56: the median run is (5, 9); min/max are the ratios single runs measured
    assert lines == ["BENCH storage.append 5 MiB/s baseline=9 ratio=0.56 target=>=0.5 min=0.40 max=0.60 runs=3"]
    assert figure.met and figure.spread == Spread(0.4, 0.6, 3)


def test_the_ratio_is_taken_within_runs_not_between_medians() -> None:
    # Load slows both sides in runs 1-2 and the subject alone in run 3; four runs of five say 0.5.
    # Separate medians (4 against 16) would pair run 3's busy subject with a quiet baseline: 0.25.
    values, baselines = [4, 4, 4, 8, 8], [8, 8, 16, 16, 16]
    figure = Reporter(echo=lambda _: None).report_runs("x", values, "u", baselines, ">=0.5")
    assert figure.ratio == 0.5 and figure.met
    assert figure.spread == Spread(0.25, 0.5, 5)
    assert median_run(values, baselines) in {(4, 8), (8, 16)}


def test_runs_against_a_fixed_requirement() -> None:
    figure = Reporter(echo=lambda _: None).report_runs("timer.flatness_bound", [1.2, 1.8, 1.4], "x", 1.5, "<=1.0")
    assert figure.value == 1.4 and figure.baseline == 1.5 and figure.met
    assert figure.spread == Spread(1.2 / 1.5, 1.8 / 1.5, 3)


def test_runs_need_one_baseline_each_and_an_odd_count() -> None:
    with pytest.raises(ValueError):
        Spread.of([1.0, 2.0], [1.0])
    with pytest.raises(ValueError):
        Spread.of([], [])
    with pytest.raises(ValueError):
        median_run([1.0, 2.0], [1.0, 1.0])
    with pytest.raises(ValueError):
        median_run([1.0, 2.0, 3.0], [1.0, 1.0])


def test_a_line_with_a_spread_parses_back() -> None:
    lines: list[str] = []
    reporter = Reporter(echo=lines.append)
    reporter.report_runs("server.produce", [55.0, 61.0, 58.0, 40.0, 70.0], "MB/s", [100.0] * 5, ">=0.5")
    reporter.report_runs("cleaner.throughput_vs_raw_read", [10.0, 12.0, 11.0], "MB/s", [40.0, 41.0, 39.0], "none")
    parsed = [parse_line(line) for line in lines]
    assert [(f.name, f.value, f.baseline, f.target, f.met, f.spread) for f in parsed if f] == [
        ("server.produce", 58.0, 100.0, ">=0.5", True, Spread(0.4, 0.7, 5)),
        ("cleaner.throughput_vs_raw_read", 11.0, 39.0, "none", None, Spread(0.25, 0.29, 3)),  # 10/40 and 12/41
    ]


def test_malformed_spread_fields_are_not_figures() -> None:
    head = "BENCH x 1 u baseline=2 ratio=0.5 target=>=0.4"
    assert parse_line(head) is not None
    for tail in ("min=0.4 max=0.6", "max=0.6 min=0.4 runs=3", "min=0.4 max=0.6 runs=three",
                 "min=0.4 max=0.6 runs=3 extra=1", "min=low max=0.6 runs=3"):
        assert parse_line(f"{head} {tail}") is None, tail
    assert parse_line("BENCH x 1 u ratio=0.5 baseline=2 target=>=0.4") is None


def test_alternate_reverses_the_order_every_round() -> None:
    calls: list[str] = []

    def step(name: str, value: float) -> Callable[[], float]:
        def run() -> float:
            calls.append(name)
            return value + len(calls)
        return run

    results = alternate({"raw": step("raw", 0), "log": step("log", 100)}, runs=3)
    assert calls == ["raw", "log", "log", "raw", "raw", "log"]
    assert results == {"raw": [1, 4, 5], "log": [102, 103, 106]}


def test_small_ratios_keep_two_significant_digits() -> None:
    lines: list[str] = []
    Reporter(echo=lines.append).report_runs("cleaner.lz4_throughput_vs_raw_read", [75.0, 80.0, 120.0], "MB/s",
                                            [7900.0, 2000.0, 7500.0], "none")
    assert lines == ["BENCH cleaner.lz4_throughput_vs_raw_read 120 MB/s baseline=7500 ratio=0.016 "
                     "target=none min=0.0095 max=0.04 runs=3"]
