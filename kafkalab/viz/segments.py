"""Widget 1: segments growing and rolling, each roll labelled with the rule that fired.

Theory of operation
-------------------
A partition's log is a row of segments; only the last (the *active* one) is written. Before
each append Kafka's ``LogSegment.shouldRoll`` checks four conditions, and the first that holds
closes the active segment and opens a new one named by its base offset:

* ``segment.bytes`` -- the append would push the segment past its size limit;
* ``segment.ms`` -- the segment's first timestamp is older than ``segment.ms`` (minus jitter);
* ``offset index full`` / ``time index full`` -- the preallocated index (``segment.index.bytes``)
  has no free slot;
* ``relative offset overflow`` -- an offset would not fit the indexes' 4-byte relative offset.

This widget runs a *real* :class:`~kafkalab.storage.log.Log` in a temporary directory on a
:class:`~kafkalab.clock.ManualClock`, appends single-record batches at a chosen rate, and
collects the log's :class:`~kafkalab.storage.events.SegmentRolled` events. The pure function
:func:`rolling_state` turns those events into bars for the strip; :func:`figure` draws them.

Worked example: ``segment.bytes = 4096`` with 300-byte records (batches of 370 bytes on disk)
holds 11 batches per segment (11 × 370 = 4070; a twelfth would reach 4440 > 4096), so 40
appends give segments with base offsets 0, 11, 22, 33, the first three rolled by
``segment.bytes`` and 33 the active segment.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkalab.clock import ManualClock
from kafkalab.errors import ConfigError
from kafkalab.records.model import Record
from kafkalab.records.v2 import build_v2_batch
from kafkalab.storage import events as ev
from kafkalab.storage.log import Log
from kafkalab.storage.log_config import LogConfig

START_MS = 1_557_554_753_000  # a fixed start time so every run draws the same picture
APPENDS_MAX = 2_000  # keeps one redraw under a second; the strip is unreadable beyond that
RECORD_BYTES_MAX = 64 * 1024
FIGURE_DPI = 100
ACTIVE = "active"
REASON_COLOURS = {
    "segment.bytes": "#4c78a8",
    "segment.ms": "#f58518",
    "offset index full": "#54a24b",
    "time index full": "#b279a2",
    "relative offset overflow": "#e45756",
    ACTIVE: "#bab0ac",
}


@dataclass(frozen=True, slots=True)
class RollingParams:
    """What the sliders set. Sizes in bytes, times in milliseconds, rate in records per second."""

    segment_bytes: int = 4096
    segment_ms: int = 60_000
    segment_index_bytes: int = 10 * 1024 * 1024
    index_interval_bytes: int = 4096
    record_bytes: int = 300
    records_per_s: float = 2.0
    appends: int = 40

    def __post_init__(self) -> None:
        if not 1 <= self.appends <= APPENDS_MAX:
            raise ConfigError(f"appends={self.appends} must be in [1, {APPENDS_MAX}]")
        if not 0 <= self.record_bytes <= RECORD_BYTES_MAX:
            raise ConfigError(f"record_bytes={self.record_bytes} must be in [0, {RECORD_BYTES_MAX}]")
        if self.records_per_s <= 0:
            raise ConfigError(f"records_per_s={self.records_per_s} must be > 0")

    def log_config(self) -> LogConfig:
        return LogConfig(
            segment_bytes=self.segment_bytes, segment_ms=self.segment_ms,
            segment_index_bytes=self.segment_index_bytes,
            index_interval_bytes=self.index_interval_bytes,
        )


@dataclass(frozen=True, slots=True)
class SegmentBar:
    """One segment in the strip: where it starts, how big it got, and why it stopped growing."""

    base_offset: int
    size_bytes: int
    record_count: int
    closed_by: str  # a roll reason, or "active"


@dataclass(frozen=True, slots=True)
class RollingState:
    """Everything the strip shows, computed from engine events."""

    bars: tuple[SegmentBar, ...]
    log_end_offset: int

    @property
    def roll_counts(self) -> dict[str, int]:
        return dict(Counter(bar.closed_by for bar in self.bars if bar.closed_by != ACTIVE))


def rolling_state(
    events: Sequence[ev.LogEvent], first_base_offset: int, log_end_offset: int, active_size_bytes: int
) -> RollingState:
    """Bars for a log that started with one segment at ``first_base_offset``.

    Each :class:`SegmentRolled` closes the current segment (its size and reason come with the
    event) and opens the next; the last segment is the active one, whose size the caller reads
    from the log. Other events are ignored.
    """
    bars: list[SegmentBar] = []
    base = first_base_offset
    for event in events:
        if not isinstance(event, ev.SegmentRolled):
            continue
        if event.previous_base_offset != base:
            raise ValueError(
                f"roll event closes segment {event.previous_base_offset}, expected {base}: "
                "events are out of order or from another log"
            )
        bars.append(SegmentBar(base, event.previous_size_bytes, event.base_offset - base, event.reason))
        base = event.base_offset
    bars.append(SegmentBar(base, active_size_bytes, log_end_offset - base, ACTIVE))
    return RollingState(tuple(bars), log_end_offset)


def run_rolling(params: RollingParams) -> RollingState:
    """Append ``params.appends`` one-record batches to a fresh log; return the strip's state.

    Time advances by ``1000 / records_per_s`` ms before each append, and every record carries
    the clock's time as its CreateTime, so ``segment.ms`` sees realistic timestamps.
    """
    scratch = Path(tempfile.mkdtemp(prefix="kafkalab-rolling-"))
    clock = ManualClock(START_MS)
    log = Log.open(scratch / "rolling-0", params.log_config(), clock)
    try:
        events: list[ev.LogEvent] = []
        log.subscribe(events.append)
        first_base = log.active_segment.base_offset
        value = b"x" * params.record_bytes
        gap_ms = max(1, round(1000 / params.records_per_s))
        for _ in range(params.appends):
            clock.advance_ms(gap_ms)
            record = Record(offset=0, timestamp=clock.milliseconds(), key=None, value=value)
            log.append_as_leader(build_v2_batch([record]), leader_epoch=0)
        return rolling_state(events, first_base, log.log_end_offset, log.active_segment.size_bytes)
    finally:
        log.close()
        shutil.rmtree(scratch, ignore_errors=True)


def figure(state: RollingState, params: RollingParams) -> Any:
    """The strip: one box per segment, width proportional to its size, coloured by roll reason."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    fig, ax = plt.subplots(figsize=(11, 2.8))
    left = 0
    for bar in state.bars:
        width = max(bar.size_bytes, 1)
        ax.barh(0, width, left=left, height=0.6, color=REASON_COLOURS.get(bar.closed_by, "#888"),
                edgecolor="black", linewidth=0.6)
        if len(state.bars) <= 24:
            ax.text(left + width / 2, 0, f"{bar.base_offset}", ha="center", va="center", fontsize=8)
        left += width
    ax.set_yticks([])
    ax.set_xlim(0, max(left, 1))
    ax.set_xlabel("bytes on disk (segments in base-offset order; labels are base offsets)")
    counts = state.roll_counts
    ax.set_title(
        f"{len(state.bars)} segments for {state.log_end_offset} records of {params.record_bytes} B "
        f"at {params.records_per_s:g}/s -- rolls: "
        + (", ".join(f"{reason} ×{n}" for reason, n in sorted(counts.items())) or "none"),
        fontsize=10,
    )
    used = sorted(set(counts) | {ACTIVE})
    ax.legend(handles=[Patch(color=REASON_COLOURS.get(r, "#888"), label=r) for r in used],
              loc="upper center", bbox_to_anchor=(0.5, -0.45), ncol=len(used), fontsize=8,
              frameon=False)
    fig.tight_layout()
    return fig


def summary(state: RollingState, params: RollingParams) -> str:
    """The strip in words: what the figure's title says, plus the active segment's size."""
    counts = state.roll_counts
    rolls = ", ".join(f"{reason} x{n}" for reason, n in sorted(counts.items())) or "none"
    active = state.bars[-1].size_bytes if state.bars else 0
    return (f"{len(state.bars)} segments for {state.log_end_offset} records of {params.record_bytes} B; "
            f"rolls: {rolls}; the active segment holds {active} bytes.")


def _slider(kind: Any, name: str, value: float, low: float, high: float, step: float) -> Any:
    return kind(value=value, min=low, max=high, step=step, description=name,
                continuous_update=False, style={"description_width": "150px"},
                layout={"width": "520px"})


def live(params: RollingParams) -> Any:
    """Sliders for the roll settings, redrawing the strip on every change."""
    import ipywidgets as widgets

    from kafkalab.viz._display import FigurePanel

    sliders = {
        "segment_bytes": _slider(widgets.IntSlider, "segment.bytes", params.segment_bytes, 1024, 32768, 512),
        "segment_ms": _slider(widgets.IntSlider, "segment.ms", params.segment_ms, 1000, 120_000, 1000),
        "segment_index_bytes": _slider(widgets.IntSlider, "segment.index.bytes",
                                       min(params.segment_index_bytes, 4096), 16, 4096, 8),
        "record_bytes": _slider(widgets.IntSlider, "record size (B)", params.record_bytes, 10, 4000, 10),
        "records_per_s": _slider(widgets.FloatSlider, "records per second", params.records_per_s, 0.1, 20, 0.1),
    }
    sliders["index_interval_bytes"] = _slider(widgets.IntSlider, "index.interval.bytes",
                                              params.index_interval_bytes, 0, 8192, 64)
    panel = FigurePanel(dpi=FIGURE_DPI)

    def redraw(_change: object = None) -> None:
        values = {name: slider.value for name, slider in sliders.items()}
        chosen = RollingParams(appends=params.appends, **values)
        state = run_rolling(chosen)
        panel.show(figure(state, chosen), summary(state, chosen))

    for slider in sliders.values():
        slider.observe(redraw, names="value")
    redraw()
    box = widgets.VBox([*sliders.values(), panel.widget])
    box.add_class("kafkalab-segments-widget")
    return box


def show_segment_rolling(params: RollingParams | None = None) -> Any:
    """Display the widget (or, with ``KAFKALAB_STATIC_WIDGETS=1``, its initial figure)."""
    from kafkalab.viz import show

    chosen = params or RollingParams()
    return show(lambda: live(chosen), lambda: figure(run_rolling(chosen), chosen))
