"""The one-line benchmark report format shared by every benchmark."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field


CONTEXT = "none"  # the target of a line that gives context and states no target


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
        return (
            f"BENCH {self.name} {_fmt(self.value)} {self.unit} baseline={_fmt(self.baseline)} "
            f"ratio={self.ratio:.2f} target={self.target}"
        )


def parse_line(line: str) -> Figure | None:
    """The :class:`Figure` a ``BENCH`` line prints, or None for any other line.

    Values come back as printed (four significant digits), enough to say whether a target is met.
    """
    parts = line.split()
    if len(parts) != 7 or parts[0] != "BENCH":
        return None
    fields = dict(part.split("=", 1) for part in parts[4:] if "=" in part)
    if set(fields) != {"baseline", "ratio", "target"}:
        return None
    return Figure(parts[1], float(parts[2]), parts[3], float(fields["baseline"]), fields["target"])


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _fmt(x: float) -> str:
    return f"{x:.4g}" if abs(x) < 1e4 else f"{x:.0f}"


@dataclass
class Reporter:
    """Collects figures and prints each as it is measured."""

    figures: list[Figure] = field(default_factory=list)
    echo: Callable[[str], None] = print

    def report(self, name: str, value: float, unit: str, baseline: float, target: str) -> Figure:
        if target != CONTEXT and (target[:2] not in (">=", "<=") or not _is_number(target[2:])):
            raise ValueError(f"target must be >=N, <=N or {CONTEXT!r}, got {target!r}")
        figure = Figure(name, float(value), unit, float(baseline), target)
        self.figures.append(figure)
        self.echo(figure.line())
        return figure


def best_rate(work: Callable[[], int], *, repeat: int = 3) -> float:
    """Run ``work`` (which returns how many items it processed) ``repeat`` times; return the
    best items-per-second. Best-of-N filters out noise from the other core and the page cache."""
    best = 0.0
    for _ in range(repeat):
        start = time.perf_counter()
        items = work()
        elapsed = time.perf_counter() - start
        best = max(best, items / elapsed if elapsed > 0 else float("inf"))
    return best
