"""The one-line benchmark report format shared by every benchmark.

A figure measured once prints::

    BENCH <name> <value> <unit> baseline=<value> ratio=<r> target=<t>

A figure measured over an odd number of runs, each run timing the subject and its baseline
side by side, prints the *median run* -- the run whose ratio is the median of the per-run
ratios -- and adds the lowest and highest per-run ratio::

    BENCH storage.append 1249 MiB/s baseline=2618 ratio=0.48 target=>=0.5 min=0.46 max=0.48 runs=5

The ratio is taken within each run, never between runs, because that is what running the two
sides side by side buys: a burst of load from another job slows both sides of one run, and
their ratio barely moves, while a median of each side taken separately would pair a subject
from a quiet moment with a baseline from a busy one.

Worked example: runs of (subject, baseline) = (4, 10), (6, 10), (5, 9) have ratios 0.40, 0.60
and 0.56; the median run is (5, 9), so the line prints value=5 baseline=9 ratio=0.56 min=0.40
max=0.60 runs=3. The target is judged on that ratio; the min-max says how far one unlucky or
lucky run on a shared machine could have moved it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field


CONTEXT = "none"  # the target of a line that gives context and states no target
SPREAD_FIELDS = ("min", "max", "runs")  # the optional fields after target=, in this order


@dataclass(frozen=True, slots=True)
class Spread:
    """The lowest and highest per-run ratio of a figure measured over ``runs`` runs."""

    low: float
    high: float
    runs: int

    @classmethod
    def of(cls, values: Sequence[float], baselines: Sequence[float]) -> Spread:
        """The spread of ``values[i] / baselines[i]``, the ratio each run measured."""
        if not values or len(values) != len(baselines):
            raise ValueError(
            f"need one baseline per run, got {len(values)} runs and {len(baselines)} baselines")
        ratios = [v / b if b else float("inf") for v, b in zip(values, baselines)]
        return cls(min(ratios), max(ratios), len(ratios))


@dataclass(frozen=True, slots=True)
class Figure:
    """One measured figure: ``value`` against ``baseline`` with a target for their ratio.

    ``target`` is written as the benchmark states it, e.g. ``">=3.0"`` or ``"<=1.5"``, or is
    ``"none"`` for a context line: a figure printed beside a target line to explain it (a
    variant workload, a second baseline, a ceiling) that promises nothing by itself.
    """

    name: str
    value: float
    unit: str
    baseline: float
    target: str
    spread: Spread | None = None

    @property
    def ratio(self) -> float:
        return self.value / self.baseline if self.baseline else float("inf")

    @property
    def met(self) -> bool | None:
        """Whether the ratio meets the target; ``None`` for a context line."""
        if self.target == CONTEXT:
            return None
        op, bound = self.target[:2], float(self.target[2:])
        return self.ratio >= bound if op == ">=" else self.ratio <= bound

    def line(self) -> str:
        line = (
            f"BENCH {self.name} {_fmt(self.value)} {self.unit} baseline={_fmt(self.baseline)} "
            f"ratio={_fmt_ratio(self.ratio)} target={self.target}"
        )
        if self.spread is None:
            return line
        spread = self.spread
        return f"{line} min={_fmt_ratio(spread.low)} max={_fmt_ratio(spread.high)} runs={spread.runs}"


def parse_line(line: str) -> Figure | None:
    """The :class:`Figure` a ``BENCH`` line prints, or None for any other line.

    Values come back as printed (four significant digits), enough to say whether a target is met.
    """
    parts = line.split()
    if len(parts) not in (7, 7 + len(SPREAD_FIELDS)) or parts[0] != "BENCH":
        return None
    names = [part.split("=", 1)[0] for part in parts[4:]]
    if names not in (["baseline", "ratio", "target"], ["baseline", "ratio", "target", *SPREAD_FIELDS]):
        return None
    fields = dict(part.split("=", 1) for part in parts[4:])
    try:
        spread = None
        if "runs" in fields:
            spread = Spread(float(fields["min"]), float(fields["max"]), int(fields["runs"]))
        return Figure(parts[1], float(parts[2]), parts[3], float(fields["baseline"]), fields["target"], spread)
    except ValueError:
        return None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _fmt_ratio(r: float) -> str:
    """Two decimals, or two significant digits below 0.1 (so 0.0042 does not print as 0.00)."""
    return f"{r:.2f}" if abs(r) >= 0.1 or r == 0 else f"{r:.2g}"


def _fmt(x: float) -> str:
    return f"{x:.4g}" if abs(x) < 1e4 else f"{x:.0f}"


@dataclass
class Reporter:
    """Collects figures and prints each as it is measured."""

    figures: list[Figure] = field(default_factory=list)
    echo: Callable[[str], None] = print

    def report(self, name: str, value: float, unit: str, baseline: float, target: str,
               spread: Spread | None = None) -> Figure:
        if target != CONTEXT and (target[:2] not in (">=", "<=") or not _is_number(target[2:])):
            raise ValueError(f"target must be >=N, <=N or {CONTEXT!r}, got {target!r}")
        figure = Figure(name, float(value), unit, float(baseline), target, spread)
        self.figures.append(figure)
        self.echo(figure.line())
        return figure

    def report_runs(self, name: str, values: Sequence[float], unit: str,
                    baselines: Sequence[float] | float, target: str) -> Figure:
        """Report the median run of ``values[i]`` against ``baselines[i]`` (one baseline per
        run, measured side by side with its value; a single number for a fixed requirement),
        with the spread of the per-run ratios. The number of runs must be odd, so that one run
        is the median."""
        if isinstance(baselines, (int, float)):
            baselines = [float(baselines)] * len(values)
        spread = Spread.of(values, baselines)
        value, baseline = median_run(values, baselines)
        return self.report(name, value, unit, baseline, target, spread)


def median_run(values: Sequence[float], baselines: Sequence[float]) -> tuple[float, float]:
    """The ``(values[i], baselines[i])`` whose ratio is the median of the per-run ratios."""
    if len(values) % 2 == 0 or len(values) != len(baselines):
        raise ValueError(f"need an odd number of runs with one baseline each, got {len(values)} "
                         f"runs and {len(baselines)} baselines")
    ratios = [v / b if b else float("inf") for v, b in zip(values, baselines)]
    ranked = sorted(range(len(values)), key=ratios.__getitem__)
    middle = ranked[len(ranked) // 2]
    return values[middle], baselines[middle]


def alternate(steps: dict[str, Callable[[], float]], runs: int) -> dict[str, list[float]]:
    """Call each step ``runs`` times, round by round, reversing their order every round; return
    each step's results in run order.

    Side by side rounds let a subject and its baseline see the same machine: a burst of load from
    another job lands on both sides of one run instead of on all the runs of one side, and
    reversing the order keeps either side from always meeting the warmer page cache or the
    cooler CPU.
    """
    results: dict[str, list[float]] = {name: [] for name in steps}
    order = list(steps)
    for _ in range(runs):
        for name in order:
            results[name].append(steps[name]())
        order.reverse()
    return results
