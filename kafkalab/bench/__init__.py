"""Benchmarks run by ``make bench``.

Each figure is a ratio against a baseline measured in the same process, never a wall-clock
threshold, so the numbers mean the same on a fast laptop and a slow CI machine. Every module
``kafkalab/bench/bench_<area>.py`` defines ``run(reporter: Reporter) -> None`` and calls
:meth:`Reporter.report` once per figure, which prints one line::

    BENCH <name> <value> <unit> baseline=<value> ratio=<r> target=<t>

A figure measured over several side-by-side runs (:meth:`Reporter.report_runs`) prints the
median run and adds the spread of the per-run ratios: ``... min=<r> max=<r> runs=<n>``.
"""
