"""Widget 2: finding an offset or a timestamp -- floor segment, index probes, scan.

Theory of operation
-------------------
A lookup in a partition's log runs three steps, and this widget draws each of them from the
engine's own work:

1. **Floor segment.** For an offset, the segment with the largest base offset <= the target
   (Kafka keeps segments in a skip-list map; kafkalab bisects a sorted list). For a timestamp,
   the first segment whose *largest timestamp* is >= the target.
2. **Index search.** Kafka's warm-section binary search over the segment's sparse index
   (:mod:`kafkalab.storage.index_search`): it reads the first slot of the warm section (the
   last 8 KiB of the file), then binary-searches only the half that can hold the answer. A
   timestamp lookup searches the ``.timeindex`` first, then the ``.index`` with the offset it
   found.
3. **Scan.** From the byte position the index gave, batch headers are read forward until one
   holds the target. Its bytes, and every batch before it since that position, are the bytes
   scanned: the price of a sparse index.

Both kinds of lookup are traced from the :class:`~kafkalab.storage.events.LookupStep` events a
real :class:`~kafkalab.storage.log.Log` emits while it answers (``Log.lookup`` for an offset,
``Log.offset_for_timestamp`` for a timestamp): the widget shows the engine's own search, never
a re-enactment. :func:`lookup_state` is the pure function from those steps to what the figure
shows.

Worked example (chapter 04): :func:`build_worked_example_log` writes batches of 160, 160, 300,
600 and 100 bytes with ``index.interval.bytes = 300``, so segment 0's ``.index`` holds
``offset 20 -> position 320`` and ``offset 43 -> position 1220``. Looking up offset 23 probes
slot 0 (offset 20, the warm section's first slot, < 23) and slot 1 (offset 43, too big), lands
on slot 0, and scans from byte 320: the 300-byte batch holding offset 20, then the 600-byte
batch holding offsets 21..42 -- 900 bytes scanned.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkalab.clock import ManualClock
from kafkalab.errors import ConfigError, OffsetOutOfRangeError
from kafkalab.records.model import Record
from kafkalab.records.v2 import build_v2_batch
from kafkalab.storage import events as ev
from kafkalab.storage import index_search
from kafkalab.storage.log import Log
from kafkalab.storage.log_config import LogConfig
from kafkalab.storage.offset_index import OffsetIndex
from kafkalab.storage.positions import EntryPosition
from kafkalab.storage.segment import LogSegment
from kafkalab.storage.time_index import TimeIndex

START_MS = 1_557_554_753_400  # the worked example's first timestamp
PAGE_BYTES = 4096  # a typical page-cache page: what "touching" an index entry costs
EXACT_BATCH_SEARCH_MAX = 4096  # value sizes tried when building a batch of an exact size
SCAN_BATCHES_DRAWN_MAX = 400  # beyond this the segment strip draws the scanned range only
DEMO_BATCHES_MAX = 20_000  # keeps a widget redraw around a second
DEMO_VALUE_BYTES_MAX = 64 * 1024
WORKED_EXAMPLE_BATCHES = (  # (records, bytes, first timestamp offset from START_MS)
    (10, 160, 0), (10, 160, 10), (1, 300, 20), (22, 600, 21), (1, 100, 43),
)
SECTION_COLOURS = {"warm": "#f58518", "cold": "#4c78a8"}


# --- the steps of one lookup -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TraceStep:
    """One step of a lookup.

    ``kind`` is ``segment`` (a segment considered: ``key`` is its base offset, ``value`` its
    largest timestamp in timestamp lookups), ``probe`` (an index slot read), ``result`` (the
    entry an index search returned; slot -1 means "none, start at the segment's front") or
    ``scan`` (``value`` is the position the found batch starts at, ``bytes_scanned`` the bytes
    read from the index position to that batch's end). ``index`` is ``offset`` or ``time``.
    """

    kind: str
    index: str = ""
    slot: int = -1
    key: int = -1
    value: int = -1
    section: str = ""
    bytes_scanned: int = 0


@dataclass(frozen=True, slots=True)
class Probe:
    """One index slot read by the search, in reading order (``step`` counts from 1)."""

    step: int
    index: str
    slot: int
    key: int
    section: str


@dataclass(frozen=True, slots=True)
class LookupTrace:
    """Everything the widget shows about one lookup, computed by :func:`lookup_state`."""

    mode: str  # "offset" or "timestamp"
    target: int
    segments_considered: tuple[tuple[int, int], ...]  # (base offset, largest timestamp or -1)
    segment_base_offset: int
    probes: tuple[Probe, ...]
    time_entry: tuple[int, int] | None  # (timestamp, offset) the time index returned
    index_slot: int
    start_offset: int
    start_position: int
    found_position: int  # -1 when no batch at or after the target exists
    bytes_scanned: int
    scanned: tuple[EntryPosition, ...]
    found_offset: int  # the batch's last offset (offset mode) or the record's offset (timestamp)
    found_timestamp: int  # the found record's timestamp in timestamp mode, else -1

    def probes_of(self, index: str) -> tuple[Probe, ...]:
        return tuple(p for p in self.probes if p.index == index)


def steps_from_events(events: Sequence[ev.LogEvent]) -> list[TraceStep]:
    """The engine's :class:`LookupStep` events of one lookup (offset or timestamp), as trace
    steps. A time-index probe's key is a timestamp; its result is (timestamp, offset)."""
    converters: dict[str, Callable[[ev.LookupStep], TraceStep]] = {
        "segment": lambda e: TraceStep("segment", key=e.segment_base_offset, value=e.timestamp),
        "index_probe": lambda e: TraceStep(
            "probe", e.index, e.slot, e.timestamp if e.index == "time" else e.offset, section=e.section),
        "index_result": lambda e: (
            TraceStep("result", "time", e.slot, e.timestamp, e.offset) if e.index == "time"
            else TraceStep("result", "offset", e.slot, e.offset, e.position)),
        "scan": lambda e: TraceStep("scan", key=e.offset, value=e.position, bytes_scanned=e.bytes_scanned),
    }
    return [converters[e.kind](e) for e in events if isinstance(e, ev.LookupStep)]


def lookup_state(
    mode: str, target: int, steps: Sequence[TraceStep], scanned: Sequence[EntryPosition] = (),
    found_offset: int | None = None, found_timestamp: int = -1,
) -> LookupTrace:
    """Fold the steps of one lookup into a :class:`LookupTrace`.

    A lookup may move on to the next segment when a segment holds nothing at or after the
    target; only the steps after the *last* ``segment`` step describe the search that answered.
    ``scanned`` lists the batches read from the index position (the caller reads them from the
    segment); ``found_offset`` overrides the scan's batch offset (a timestamp lookup answers
    with a record's offset).
    """
    if mode not in ("offset", "timestamp"):
        raise ValueError(f"lookup mode {mode!r} is neither 'offset' nor 'timestamp'")
    segment_steps = [i for i, s in enumerate(steps) if s.kind == "segment"]
    if not segment_steps:
        raise ValueError("a lookup's steps must start with the segment it searched")
    considered = tuple((s.key, s.value) for s in steps if s.kind == "segment")
    last = steps[segment_steps[-1] + 1:]
    probes = tuple(
        Probe(n, s.index, s.slot, s.key, s.section)
        for n, s in enumerate((s for s in last if s.kind == "probe"), start=1)
    )
    results = {s.index: s for s in last if s.kind == "result"}
    scans = [s for s in last if s.kind == "scan"]
    if "offset" not in results or len(scans) != 1:
        raise ValueError("a lookup's steps must end with an offset-index result and one scan")
    offset_result, scan = results["offset"], scans[0]
    time_result = results.get("time")
    return LookupTrace(
        mode=mode, target=target, segments_considered=considered,
        segment_base_offset=steps[segment_steps[-1]].key, probes=probes,
        time_entry=(time_result.key, time_result.value) if time_result else None,
        index_slot=offset_result.slot, start_offset=offset_result.key,
        start_position=offset_result.value, found_position=scan.value,
        bytes_scanned=scan.bytes_scanned, scanned=tuple(scanned),
        found_offset=scan.key if found_offset is None else found_offset,
        found_timestamp=found_timestamp,
    )


# --- tracing a real log ---------------------------------------------------------------------------


def _scanned_batches(segment: LogSegment, start_position: int, found_position: int) -> tuple[EntryPosition, ...]:
    end = found_position if found_position >= 0 else segment.size_bytes
    batches = []
    for entry in segment.entries_from(start_position):
        batches.append(entry)
        if entry.position >= end:
            break
    return tuple(batches)


def trace_offset_lookup(log: Log, offset: int) -> LookupTrace:
    """Look ``offset`` up in ``log`` (``Log.lookup``) and trace it from the log's events."""
    events: list[ev.LogEvent] = []
    unsubscribe = log.subscribe(events.append)
    try:
        log.lookup(offset)
    finally:
        unsubscribe()
    steps = steps_from_events(events)
    trace = lookup_state("offset", offset, steps)
    segment = next(s for s in log.segments if s.base_offset == trace.segment_base_offset)
    scanned = _scanned_batches(segment, trace.start_position, trace.found_position)
    return lookup_state("offset", offset, steps, scanned)


def trace_timestamp_lookup(log: Log, timestamp_ms: int) -> LookupTrace:
    """Look ``timestamp_ms`` up in ``log`` (``Log.offset_for_timestamp``, Kafka's
    ``LogSegment.findOffsetByTimestamp``) and trace it from the log's events.

    Segments are compared by largest timestamp; the time index gives ``(timestamp, offset)``;
    the offset index gives the position to scan from; the first batch whose max timestamp
    reaches the target is decoded and its first record at or after the target is the answer.
    """
    if not any(s.max_timestamp_so_far >= timestamp_ms for s in log.segments):
        raise OffsetOutOfRangeError(
            f"no record of {log.directory.name} has a timestamp >= {timestamp_ms} "
            f"(largest is {max(s.max_timestamp_so_far for s in log.segments)})"
        )
    events: list[ev.LogEvent] = []
    unsubscribe = log.subscribe(events.append)
    try:
        answer = log.offset_for_timestamp(timestamp_ms)
    finally:
        unsubscribe()
    steps = steps_from_events(events)
    trace = lookup_state("timestamp", timestamp_ms, steps)
    segment = next(s for s in log.segments if s.base_offset == trace.segment_base_offset)
    scanned = _scanned_batches(segment, trace.start_position, trace.found_position)
    return lookup_state(
        "timestamp", timestamp_ms, steps, scanned,
        found_offset=answer.offset if answer else -1, found_timestamp=answer.timestamp if answer else -1,
    )


def plain_binary_search(keys: Sequence[int], target: int) -> tuple[int, list[int]]:
    """A textbook binary search over *all* entries (no warm section): the last slot whose key
    is <= ``target`` (-1 if none), and the slots it read, in order."""
    if not keys:
        return -1, []
    slots = [0]
    if keys[0] > target:
        return -1, slots
    lo, hi = 0, len(keys) - 1
    while lo < hi:  # halves [lo, hi] every step: at most log2(len(keys)) + 1 reads
        mid = (lo + hi + 1) >> 1
        slots.append(mid)
        if keys[mid] > target:
            hi = mid - 1
        else:
            lo = mid
    return lo, slots


def pages_touched(slots: Sequence[int], entry_size: int) -> set[int]:
    """The index-file pages (``PAGE_BYTES`` each) the given slots live on."""
    return {slot * entry_size // PAGE_BYTES for slot in slots}


# --- logs to search ----------------------------------------------------------------------------


def exact_batch(records: int, total_bytes: int, first_timestamp_ms: int) -> bytes:
    """A v2 batch of ``records`` one-byte-valued records, the last padded so the batch is
    exactly ``total_bytes`` long; timestamps are consecutive milliseconds."""
    for last_bytes in range(min(total_bytes, EXACT_BATCH_SEARCH_MAX)):
        batch = build_v2_batch([
            Record(offset=i, timestamp=first_timestamp_ms + i, key=None,
                   value=b"v" * (last_bytes if i == records - 1 else 1))
            for i in range(records)
        ])
        if len(batch) == total_bytes:
            return batch
        if len(batch) > total_bytes:
            break
    raise ConfigError(f"{records} records cannot make a batch of exactly {total_bytes} bytes")


def build_worked_example_log(directory: Path, clock: ManualClock) -> Log:
    """Chapter 04's log: segment 0 with index entries (20, 320) and (43, 1220), rolled, and an
    active segment 44 with five later batches (so timestamp lookups compare two segments)."""
    log = Log.open(Path(directory), LogConfig(index_interval_bytes=300), clock)
    for records, size_bytes, delta_ms in WORKED_EXAMPLE_BATCHES:
        log.append_as_leader(exact_batch(records, size_bytes, START_MS + delta_ms), leader_epoch=0)
    log.roll("manual")
    for n in range(5):
        log.append_as_leader(exact_batch(2, 160, START_MS + 100 + 10 * n), leader_epoch=0)
    return log


@dataclass(frozen=True, slots=True)
class DemoParams:
    """A log of ``batches`` one-record batches of ``value_bytes``, one ms apart."""

    batches: int = 3000
    value_bytes: int = 20
    index_interval_bytes: int = 0

    def __post_init__(self) -> None:
        if not 1 <= self.batches <= DEMO_BATCHES_MAX:
            raise ConfigError(f"batches={self.batches} must be in [1, {DEMO_BATCHES_MAX}]")
        if not 0 <= self.value_bytes <= DEMO_VALUE_BYTES_MAX:
            raise ConfigError(f"value_bytes={self.value_bytes} must be in [0, {DEMO_VALUE_BYTES_MAX}]")
        if self.index_interval_bytes < 0:
            raise ConfigError(f"index.interval.bytes={self.index_interval_bytes} must be >= 0")


def build_demo_log(directory: Path, params: DemoParams, clock: ManualClock) -> Log:
    """One big segment, so the index is long enough to have a cold and a warm section."""
    config = LogConfig(index_interval_bytes=params.index_interval_bytes)
    log = Log.open(Path(directory), config, clock)
    value = b"x" * params.value_bytes
    for n in range(params.batches):
        record = Record(offset=0, timestamp=START_MS + n, key=None, value=value)
        log.append_as_leader(build_v2_batch([record]), leader_epoch=0)
    return log


def mean_bytes_scanned(log: Log, offsets: Sequence[int]) -> float:
    """Average bytes scanned per offset lookup over ``offsets`` (the index's price tag)."""
    if not offsets:
        raise ValueError("mean_bytes_scanned needs at least one offset")
    return sum(trace_offset_lookup(log, o).bytes_scanned for o in offsets) / len(offsets)


# --- drawing ---------------------------------------------------------------------------------------


def _draw_index(ax: Any, name: str, entries: list[tuple[int, int]], probes: tuple[Probe, ...],
                found_slot: int, entry_size: int) -> None:
    count = len(entries)
    first_hot = index_search.first_hot_slot(count, entry_size)
    if count:
        ax.axvspan(first_hot - 0.5, count - 0.5, color=SECTION_COLOURS["warm"], alpha=0.12)
        ax.plot(range(count), [k for k, _ in entries], ".", color="#999", markersize=3 if count > 60 else 7)
    for probe in probes:
        ax.plot(probe.slot, probe.key, "o", color=SECTION_COLOURS[probe.section], markersize=9)
        ax.annotate(str(probe.step), (probe.slot, probe.key), textcoords="offset points",
                    xytext=(6, 6), fontsize=8)
    if 0 <= found_slot < count:
        ax.plot(found_slot, entries[found_slot][0], "*", color="#e45756", markersize=15)
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    unit = "timestamp (ms)" if name == "time" else "offset"
    ax.set_ylabel(unit, fontsize=8)
    ax.set_xlabel(f".{'timeindex' if name == 'time' else 'index'} slot "
                  f"({count} entries of {entry_size} B; shaded: warm section from slot {first_hot})", fontsize=8)
    ax.ticklabel_format(useOffset=False, style="plain", axis="y")
    ax.set_title(f"{len(probes)} probes of the {name} index (orange: warm section, blue: cold)", fontsize=9)


def _draw_scan(ax: Any, trace: LookupTrace, segment: LogSegment) -> None:
    size = max(segment.size_bytes, 1)
    ax.barh(0, size, height=0.5, color="#eee", edgecolor="#999")
    batches = list(segment.entries_from(0)) if segment.size_bytes and len(trace.scanned) < SCAN_BATCHES_DRAWN_MAX else []
    if len(batches) <= SCAN_BATCHES_DRAWN_MAX:
        for entry in batches:
            ax.barh(0, entry.size_bytes, left=entry.position, height=0.5, color="none", edgecolor="#bbb", linewidth=0.5)
    ax.barh(0, trace.bytes_scanned, left=trace.start_position, height=0.5, color="#54a24b", alpha=0.6)
    if trace.found_position >= 0:
        found = trace.scanned[-1] if trace.scanned else None
        width = found.size_bytes if found else 1
        ax.barh(0, width, left=trace.found_position, height=0.5, color="#e45756", alpha=0.7)
    ax.axvline(trace.start_position, color="black", linewidth=1)
    ax.set_xlim(0, size)
    ax.set_yticks([])
    ax.set_xlabel(f"{segment.log_path.name} bytes (green: scanned from position {trace.start_position}, "
                  f"red: the batch found)", fontsize=8)
    ax.set_title(f"scan: {trace.bytes_scanned} bytes in {len(trace.scanned)} batches", fontsize=9)


def figure(trace: LookupTrace, log: Log) -> Any:
    """One panel per index searched (time index first), then the scan over the segment."""
    import matplotlib.pyplot as plt

    segment = next(s for s in log.segments if s.base_offset == trace.segment_base_offset)
    panels = (["time"] if trace.mode == "timestamp" else []) + ["offset"]
    fig, axes = plt.subplots(len(panels) + 1, 1, figsize=(11, 2.6 * len(panels) + 1.6),
                             gridspec_kw={"height_ratios": [3] * len(panels) + [1]})
    for ax, name in zip(axes, panels):
        index: OffsetIndex | TimeIndex = segment.time_index if name == "time" else segment.offset_index
        entries = [(k if name == "time" else k + segment.base_offset, v) for k, v in index.raw_entries()]
        found_slot = -1
        if name == "offset":
            found_slot = trace.index_slot
        elif trace.time_entry is not None:
            found_slot = next((i for i, (k, _v) in enumerate(entries) if k == trace.time_entry[0]), -1)
        _draw_index(ax, name, entries, trace.probes_of(name), found_slot, index.ENTRY_SIZE)
    _draw_scan(axes[-1], trace, segment)
    answer = (f"offset {trace.found_offset}" + (f" (timestamp {trace.found_timestamp})" if trace.mode == "timestamp" else ""))
    fig.suptitle(f"{trace.mode} {trace.target}: segment {trace.segment_base_offset}, index entry "
                 f"offset {trace.start_offset} -> position {trace.start_position}, found {answer}", fontsize=10)
    fig.tight_layout()
    return fig


def trace(log: Log, mode: str, target: int) -> LookupTrace:
    """Dispatch to the offset or timestamp tracer."""
    tracers: dict[str, Callable[[Log, int], LookupTrace]] = {
        "offset": trace_offset_lookup, "timestamp": trace_timestamp_lookup,
    }
    if mode not in tracers:
        raise ValueError(f"lookup mode {mode!r} is neither 'offset' nor 'timestamp'")
    return tracers[mode](log, target)


def summary(lookup: LookupTrace) -> str:
    """The lookup in words: the segment chosen, each index probe, and the bytes scanned."""
    probes = ", ".join(f"{p.index} slot {p.slot} (key {p.key})" for p in lookup.probes) or "none"
    found = ("no batch at or after the target" if lookup.found_position < 0
             else f"found at position {lookup.found_position}, offset {lookup.found_offset}")
    return (f"{lookup.mode} {lookup.target}: segment {lookup.segment_base_offset}; "
            f"{len(lookup.probes)} index probes: {probes}; scan starts at position {lookup.start_position}, "
            f"{lookup.bytes_scanned} bytes scanned; {found}.")


def live(log: Log, mode: str = "offset", target: int = 0) -> Any:
    """A mode toggle and a target slider over ``log``, redrawing the lookup on every change."""
    import ipywidgets as widgets

    from kafkalab.book import keep_for_widgets
    from kafkalab.viz._display import FigurePanel

    keep_for_widgets(log.directory)  # a reader may come back to the widget after the last cell
    first_batch = log.segments[0].entry_at(0)
    first_ts = first_batch.max_timestamp if first_batch is not None else 0
    last_ts = max(s.max_timestamp_so_far for s in log.segments)
    ranges = {"offset": (log.log_start_offset, log.log_end_offset - 1), "timestamp": (first_ts, last_ts)}
    toggle = widgets.ToggleButtons(options=["offset", "timestamp"], value=mode, description="find")
    low, high = ranges[mode]
    slider = widgets.IntSlider(value=min(max(target, low), high), min=low, max=high, description="target",
                               continuous_update=False, layout={"width": "620px"})
    panel = FigurePanel(dpi=90)

    def redraw(_change: object = None) -> None:
        lookup = trace(log, toggle.value, slider.value)
        panel.show(figure(lookup, log), summary(lookup))

    def on_mode(_change: object) -> None:
        low, high = ranges[toggle.value]
        slider.unobserve(redraw, names="value")
        if low > slider.max:  # keep min <= max while the range moves
            slider.max, slider.min = high, low
        else:
            slider.min, slider.max = low, high
        slider.value = (low + high) // 2
        slider.observe(redraw, names="value")
        redraw()

    toggle.observe(on_mode, names="value")
    slider.observe(redraw, names="value")
    redraw()
    box = widgets.VBox([toggle, slider, panel.widget])
    box.add_class("kafkalab-index-search-widget")
    return box


def show_index_search(log: Log, mode: str = "offset", target: int = 0) -> Any:
    """Display the widget (or, with ``KAFKALAB_STATIC_WIDGETS=1``, the lookup's figure)."""
    from kafkalab.viz import show

    return show(lambda: live(log, mode, target), lambda: figure(trace(log, mode, target), log))

