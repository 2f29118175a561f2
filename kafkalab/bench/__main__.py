"""``python -m kafkalab.bench [AREA ...]``: run the benchmarks and print BENCH lines.

With no arguments every ``bench_*.py`` module runs; name areas (``records``, ``storage``) to run
only those. ``--full`` asks each benchmark for its full documented size where it has a smaller
default.

When several areas run, each runs in a fresh Python process, one after the other: an area's
figures must not depend on what ran before it in the same interpreter (a heap grown by an
earlier benchmark makes every garbage collection slower, compiled kernels leave threads behind,
and the server benchmark's client shares its process with librdkafka's mock cluster).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import subprocess
import sys

import kafkalab.bench
from kafkalab.bench.report import Reporter, parse_line


# Areas whose aftermath outlives their process (a JVM shutting down, a gigabyte of generated log
# leaving the page cache) run after the others, so they cannot skew another area's figures.
RUN_LAST = frozenset({"spark"})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkalab.bench")
    parser.add_argument("areas", nargs="*", help="benchmark areas to run (default: all)")
    parser.add_argument("--full", action="store_true", help="use the full documented sizes")
    args = parser.parse_args(argv)
    names = sorted(
        (m.name[len("bench_"):] for m in pkgutil.iter_modules(kafkalab.bench.__path__)
         if m.name.startswith("bench_")),
        key=lambda name: (name in RUN_LAST, name),
    )
    unknown = set(args.areas) - set(names)
    if unknown:
        parser.error(f"unknown areas {sorted(unknown)}; choose from {names}")
    areas = args.areas or names
    reporter = Reporter()
    for name in areas:
        if len(areas) == 1:
            print(f"# {name}", flush=True)
            importlib.import_module(f"kafkalab.bench.bench_{name}").run(reporter, full=args.full)
        else:
            _run_isolated(name, args.full, reporter)  # the child prints the "# area" line
    missed = [f.name for f in reporter.figures if f.met is False]
    targeted = sum(f.met is not None for f in reporter.figures)
    print(f"# {targeted} figures with a target, {len(missed)} below it: {' '.join(missed)}"
          f" ({len(reporter.figures) - targeted} context lines)")
    return 0


def _run_isolated(area: str, full: bool, reporter: Reporter) -> None:
    """Run one area in a child interpreter; echo its output and collect its figures."""
    command = [sys.executable, "-m", "kafkalab.bench", area] + (["--full"] if full else [])
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as child:
        assert child.stdout is not None  # stdout=PIPE guarantees it
        for line in child.stdout:
            if line.startswith("# ") and "figures with a target" in line:
                continue  # the child's own summary; the parent prints one for all areas
            figure = parse_line(line)
            if figure is not None:
                reporter.figures.append(figure)
            print(line, end="", flush=True)
    if child.returncode != 0:
        raise SystemExit(f"benchmark area {area!r} failed with exit status {child.returncode}")


if __name__ == "__main__":
    sys.exit(main())
