"""``python -m kafkalab.bench [AREA ...]``: run the benchmarks and print BENCH lines.

With no arguments every ``bench_*.py`` module runs; name areas (``records``, ``storage``) to run
only those. ``--full`` asks each benchmark for its full documented size where it has a smaller
default.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

import kafkalab.bench
from kafkalab.bench.report import Reporter


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkalab.bench")
    parser.add_argument("areas", nargs="*", help="benchmark areas to run (default: all)")
    parser.add_argument("--full", action="store_true", help="use the full documented sizes")
    args = parser.parse_args(argv)
    names = sorted(
        m.name[len("bench_"):]
        for m in pkgutil.iter_modules(kafkalab.bench.__path__)
        if m.name.startswith("bench_")
    )
    unknown = set(args.areas) - set(names)
    if unknown:
        parser.error(f"unknown areas {sorted(unknown)}; choose from {names}")
    reporter = Reporter()
    for name in args.areas or names:
        module = importlib.import_module(f"kafkalab.bench.bench_{name}")
        print(f"# {name}", flush=True)
        module.run(reporter, full=args.full)
    missed = [f.name for f in reporter.figures if f.met is False]
    targeted = sum(f.met is not None for f in reporter.figures)
    print(f"# {targeted} figures with a target, {len(missed)} below it: {' '.join(missed)}"
          f" ({len(reporter.figures) - targeted} context lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
