"""The command line every seeded campaign shares: replay one seed, or run seeds 0..N-1.

A campaign is a function ``run(seed, data_dir, steps)`` that raises on the first broken
invariant and otherwise returns what it did. :func:`seeds_main` gives it Kafka-free plumbing:
``--seed N`` replays one seed (the line a failure prints), ``--seeds N`` runs the first N, each
in a fresh temporary directory, and one line per seed says what happened. Example::

    python -m kafkalab.sim.txn_campaign --seed 27
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

Result = TypeVar("Result")


def seeds_main(prog: str, run: Callable[[int, Path, int], Result], describe: Callable[[Result], str], *,
               default_seeds: int, default_steps: int, argv: list[str] | None = None) -> int:
    """Parse ``--seed``/``--seeds``/``--steps``, run each seed, print ``seed N: describe(result)``."""
    parser = argparse.ArgumentParser(prog=f"python -m {prog}")
    parser.add_argument("--seed", type=int, help="replay one seed")
    parser.add_argument("--seeds", type=int, default=default_seeds, help="run seeds 0..N-1")
    parser.add_argument("--steps", type=int, default=default_steps)
    args = parser.parse_args(argv)
    for seed in [args.seed] if args.seed is not None else list(range(args.seeds)):
        with tempfile.TemporaryDirectory(prefix=f"{prog.rsplit('.', 1)[-1]}-") as tmp:
            result = run(seed, Path(tmp), args.steps)
        print(f"seed {seed}: {describe(result)}")
    return 0
