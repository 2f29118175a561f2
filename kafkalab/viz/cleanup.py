"""Widget 4: a log before and after one cleanup run -- retention or compaction.

Theory of operation
-------------------
Kafka removes old data in two ways, chosen per topic by ``cleanup.policy``:

* ``delete`` -- retention drops **whole segments** from the front of the log: those whose
  newest record is older than ``retention.ms``, those that take the log over
  ``retention.bytes``, and those wholly below the log start offset (DeleteRecords). Offsets
  never change; the log simply starts later.
* ``compact`` -- the cleaner keeps the **latest record of every key** in the segments below
  the active one and rewrites them. Kept records keep their offsets, so gaps appear; a
  tombstone (null value) survives one clean and is dropped by a clean after its
  ``delete.retention.ms`` has passed.

:func:`run_cleanup` builds a real :class:`~kafkalab.storage.log.Log` on a
:class:`~kafkalab.clock.ManualClock`, takes a :func:`snapshot` of every record on disk,
runs the engine's retention (:func:`kafkalab.storage.retention.delete_old_segments`) and/or
cleaner (:class:`kafkalab.storage.cleaner.LogCleaner`), snapshots again, and hands both
snapshots and the log's :class:`~kafkalab.storage.events.SegmentsDeleted` events to the pure
function :func:`cleanup_state`. :func:`figure` draws both rows on one offset axis, so
compaction's gaps and retention's later start are visible side by side.

Worked example (the defaults): 24 records, keys drawn by ``random.Random(0)`` as
``k3 k3 k0 k2 k3 k3 | k2 k3 k2 k1 k1 k2 | k1 k0 k2 k1 k2 k0 | k0 k2 k3 k0 k2 k3``, one segment per
six (0, 6, 12 and the active 18). Compaction maps offsets 0..17 (the active segment is never
cleaned) and keeps the last of each key there: k3@7, k1@15, k2@16, k0@17 -- offsets 8..14 become
a gap, and k3@7 stays although k3 is written again at 20, in the active segment. With
``policy="delete"``, ``retention.ms = 10_000`` and a check 3 s after the last append (now =
start + 27 s), segments 0 and 6 (newest records 21 s and 15 s old) go and segment 12 (9 s)
stays; the log start offset becomes 12.
"""

from __future__ import annotations

import random
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkalab.clock import ManualClock
from kafkalab.errors import ConfigError
from kafkalab.records.codec import iter_batches
from kafkalab.records.model import Record
from kafkalab.records.v2 import build_v2_batch
from kafkalab.storage import events as ev
from kafkalab.storage.cleaner import LogCleaner
from kafkalab.storage.log import Log
from kafkalab.storage.log_config import LogConfig
from kafkalab.storage.retention import delete_old_segments

START_MS = 1_557_554_753_000
RECORDS_MAX = 2_000  # one figure row stays readable, one run stays well under a second
KEYS_MAX = 20
CLEANER_PASSES_MAX = 5  # enough to show a tombstone kept, then dropped  # distinct colours the figure can tell apart
DEDUPE_BUFFER_BYTES = 1024 * 1024  # ~43k keys: far more than a widget log holds
KEY_COLOURS = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#eeca3b", "#b279a2",
               "#ff9da6", "#9d755d", "#bab0ac")
POLICIES = ("delete", "compact", "compact,delete")


@dataclass(frozen=True, slots=True)
class RecordCell:
    """One record on disk: its offset, key (text), whether it is a tombstone, its timestamp."""

    offset: int
    key: str | None
    tombstone: bool
    timestamp_ms: int


@dataclass(frozen=True, slots=True)
class SegmentSnapshot:
    base_offset: int
    size_bytes: int
    active: bool
    records: tuple[RecordCell, ...]


@dataclass(frozen=True, slots=True)
class LogSnapshot:
    """Every record of every segment, plus the offsets that bound the log."""

    segments: tuple[SegmentSnapshot, ...]
    log_start_offset: int
    log_end_offset: int

    @property
    def records(self) -> tuple[RecordCell, ...]:
        return tuple(r for s in self.segments for r in s.records)

    @property
    def size_bytes(self) -> int:
        return sum(s.size_bytes for s in self.segments)

    def latest_per_key(self) -> dict[str, RecordCell]:
        """The last record of each key at or above the log start offset."""
        latest: dict[str, RecordCell] = {}
        for record in self.records:
            if record.key is not None and record.offset >= self.log_start_offset:
                latest[record.key] = record
        return latest


def snapshot(log: Log) -> LogSnapshot:
    """Decode every batch of every segment of ``log`` (small logs: the widget's and the book's)."""
    active = log.active_segment
    segments = []
    for segment in log.segments:
        data = segment.log_path.read_bytes()
        cells = tuple(
            RecordCell(r.offset, r.key.decode("utf-8", "replace") if r.key is not None else None,
                       r.value is None, r.timestamp)
            for batch in iter_batches(data) for r in batch.records
        )
        segments.append(SegmentSnapshot(segment.base_offset, segment.size_bytes, segment is active, cells))
    return LogSnapshot(tuple(segments), log.log_start_offset, log.log_end_offset)


@dataclass(frozen=True, slots=True)
class CleanupState:
    """What one cleanup run did, computed by :func:`cleanup_state`."""

    before: LogSnapshot
    after: LogSnapshot
    deleted_segments: tuple[int, ...]  # base offsets retention (or DeleteRecords) removed
    replaced_segments: tuple[int, ...]  # base offsets the cleaner rewrote
    removed_offsets: tuple[int, ...]  # on disk before, gone after

    @property
    def kept_offsets(self) -> tuple[int, ...]:
        return tuple(r.offset for r in self.after.records)

    @property
    def gaps(self) -> tuple[tuple[int, int], ...]:
        """Ranges ``[first, last]`` of missing offsets between kept records (compaction's gaps)."""
        kept = self.kept_offsets
        return tuple((a + 1, b - 1) for a, b in zip(kept, kept[1:]) if b - a > 1)

    def fate(self, offset: int) -> str:
        """``kept``, ``removed`` or ``unknown`` for an offset of the *before* snapshot."""
        if offset in set(self.kept_offsets):
            return "kept"
        return "removed" if offset in set(self.removed_offsets) else "unknown"


def cleanup_state(before: LogSnapshot, after: LogSnapshot, events: Sequence[ev.LogEvent]) -> CleanupState:
    """Compare two snapshots of one log taken around a cleanup run and name what changed.

    ``events`` are the log's events during the run; :class:`SegmentsDeleted` events with reason
    ``replaced`` come from the cleaner's swap, every other reason from retention.
    """
    deleted: list[int] = []
    replaced: list[int] = []
    for event in events:
        if isinstance(event, ev.SegmentsDeleted):
            (replaced if event.reason == "replaced" else deleted).extend(event.base_offsets)
    after_offsets = {r.offset for r in after.records}
    removed = tuple(sorted(r.offset for r in before.records if r.offset not in after_offsets))
    missing_new = [r.offset for r in after.records if r.offset >= before.log_end_offset]
    if missing_new:
        raise ValueError(f"after-snapshot holds offsets {missing_new[:3]} the before-snapshot never had")
    return CleanupState(before, after, tuple(deleted), tuple(replaced), removed)


# --- running a cleanup on a real log ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CleanupParams:
    """A log of ``records`` one-record batches, ``gap_ms`` apart, keys ``k0..k{keys-1}`` drawn
    by ``random.Random(seed)``, rolled every ``records_per_segment``; every
    ``tombstone_every``-th record is a tombstone (0: none). Then, ``cleaner_passes`` times, the
    clock moves ``age_ms`` and one cleanup runs under ``policy`` and the retention settings (a
    second pass is how tombstones past ``delete.retention.ms`` leave)."""

    policy: str = "compact"
    records: int = 24
    keys: int = 4
    records_per_segment: int = 6
    tombstone_every: int = 0
    gap_ms: int = 1000
    age_ms: int = 0
    retention_ms: int = -1
    retention_bytes: int = -1
    delete_records_offset: int = 0
    delete_retention_ms: int = 86_400_000
    cleaner_passes: int = 1
    seed: int = 0

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ConfigError(f"cleanup.policy={self.policy!r} must be one of {POLICIES}")
        if not 1 <= self.records <= RECORDS_MAX:
            raise ConfigError(f"records={self.records} must be in [1, {RECORDS_MAX}]")
        if not 1 <= self.keys <= KEYS_MAX:
            raise ConfigError(f"keys={self.keys} must be in [1, {KEYS_MAX}]")
        if not 1 <= self.records_per_segment <= self.records:
            raise ConfigError(f"records_per_segment={self.records_per_segment} must be in [1, records={self.records}]")
        for name in ("tombstone_every", "gap_ms", "age_ms", "delete_records_offset"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name}={getattr(self, name)} must be >= 0")
        if not 1 <= self.cleaner_passes <= CLEANER_PASSES_MAX:
            raise ConfigError(f"cleaner_passes={self.cleaner_passes} must be in [1, {CLEANER_PASSES_MAX}]")
        if self.delete_records_offset > self.records:
            raise ConfigError(f"delete_records_offset={self.delete_records_offset} is past the log end offset {self.records}")

    def log_config(self) -> LogConfig:
        return LogConfig(cleanup_policy=self.policy, retention_ms=self.retention_ms,
                         retention_bytes=self.retention_bytes, delete_retention_ms=self.delete_retention_ms)


def fill_log(log: Log, clock: ManualClock, params: CleanupParams) -> None:
    """Append ``params.records`` keyed one-record batches, rolling every ``records_per_segment``."""
    rng = random.Random(params.seed)
    for offset in range(params.records):
        if offset and offset % params.records_per_segment == 0:
            log.roll("manual")
        clock.advance_ms(params.gap_ms)
        tombstone = params.tombstone_every > 0 and (offset + 1) % params.tombstone_every == 0
        key = f"k{rng.randrange(params.keys)}".encode()
        value = None if tombstone else f"v{offset}".encode()
        log.append_as_leader(build_v2_batch([Record(0, clock.milliseconds(), key, value)]), leader_epoch=0)


def run_cleanup(params: CleanupParams) -> CleanupState:
    """Build the log, run one cleanup (retention first, then the cleaner), compare."""
    scratch = Path(tempfile.mkdtemp(prefix="kafkalab-cleanup-"))
    clock = ManualClock(START_MS)
    log = Log.open(scratch / "cleanup-0", params.log_config(), clock)
    try:
        fill_log(log, clock, params)
        before = snapshot(log)
        events: list[ev.LogEvent] = []
        log.subscribe(events.append)
        if params.delete_records_offset:
            log.increment_log_start_offset(params.delete_records_offset)
        cleaner = LogCleaner(scratch, clock.milliseconds, dedupe_buffer_bytes=DEDUPE_BUFFER_BYTES)
        for _ in range(params.cleaner_passes):
            clock.advance_ms(params.age_ms)
            delete_old_segments(log, clock.milliseconds())
            if "compact" in params.policy:
                cleaner.force_clean(log)
        return cleanup_state(before, snapshot(log), events)
    finally:
        log.close()
        shutil.rmtree(scratch, ignore_errors=True)


# --- drawing --------------------------------------------------------------------------------------


def key_colour(key: str | None) -> str:
    if key is None or not key[1:].isdigit():
        return "#888888"
    return KEY_COLOURS[int(key[1:]) % len(KEY_COLOURS)]


def _draw_row(ax: Any, snap: LogSnapshot, y: float, fates: dict[int, str], doomed: set[int]) -> None:
    for index, segment in enumerate(snap.segments):
        end = snap.segments[index + 1].base_offset if index + 1 < len(snap.segments) else snap.log_end_offset
        style = {"edgecolor": "#e45756", "linestyle": "--"} if segment.base_offset in doomed else {"edgecolor": "black"}
        ax.add_patch(_rect(segment.base_offset - 0.5, y - 0.45, max(end - segment.base_offset, 0.3), 0.9,
                           facecolor="#f3f3f3" if not segment.active else "#e6e6e6", linewidth=1, **style))
        ax.text(segment.base_offset - 0.4, y + 0.5, f"{segment.base_offset}" + (" (active)" if segment.active else ""),
                fontsize=7, va="bottom")
    for record in snap.records:
        faded = fates.get(record.offset) == "removed"
        ax.add_patch(_rect(record.offset - 0.4, y - 0.3, 0.8, 0.6, facecolor="white" if faded else key_colour(record.key),
                           edgecolor=key_colour(record.key), hatch="///" if faded else None, linewidth=0.8))
        if record.tombstone:
            ax.plot(record.offset, y, "x", color="black", markersize=6)
    if snap.log_start_offset > 0:
        ax.plot([snap.log_start_offset - 0.5] * 2, [y - 0.6, y + 0.6], color="#e45756", linewidth=2)


def _rect(x: float, y: float, w: float, h: float, **style: Any) -> Any:
    from matplotlib.patches import Rectangle

    return Rectangle((x, y), w, h, **style)


def figure(state: CleanupState, title: str = "") -> Any:
    """Before (top) and after (bottom) on one offset axis; colour = key, x = tombstone,
    hatched = removed by this run, dashed red = segment deleted, red bar = log start offset."""
    import matplotlib.pyplot as plt

    fates = {r.offset: state.fate(r.offset) for r in state.before.records}
    fig, ax = plt.subplots(figsize=(11, 3.2))
    _draw_row(ax, state.before, 1.5, fates, set(state.deleted_segments))
    _draw_row(ax, state.after, 0.0, {}, set())
    ax.set_xlim(-1, max(state.before.log_end_offset, 1) + 0.5)
    ax.set_ylim(-0.8, 2.4)
    ax.set_yticks([0.0, 1.5], ["after", "before"])
    ax.set_xlabel("offset (boxes: segments, labelled with base offsets; colour: key)")
    gaps = len(state.gaps)
    ax.set_title(
        (title + " -- " if title else "")
        + f"{len(state.before.records)} -> {len(state.after.records)} records, "
        f"{state.before.size_bytes} -> {state.after.size_bytes} bytes; "
        f"segments deleted {list(state.deleted_segments)}, rewritten {list(state.replaced_segments)}; "
        f"{gaps} offset gap{'s' if gaps != 1 else ''}", fontsize=9)
    fig.tight_layout()
    return fig


def summary(state: CleanupState, policy: str) -> str:
    """The cleanup in words: what the figure's title says."""
    gaps = len(state.gaps)
    return (f"cleanup.policy={policy}: {len(state.before.records)} -> {len(state.after.records)} records, "
            f"{state.before.size_bytes} -> {state.after.size_bytes} bytes; "
            f"segments deleted {list(state.deleted_segments)}, rewritten {list(state.replaced_segments)}; "
            f"{gaps} offset gap{'s' if gaps != 1 else ''}.")


def _slider(kind: Any, name: str, value: int, low: int, high: int, step: int) -> Any:
    return kind(value=value, min=low, max=high, step=step, description=name, continuous_update=False,
                style={"description_width": "170px"}, layout={"width": "520px"})


def live(params: CleanupParams) -> Any:
    """A policy choice and sliders for the log and the cleanup settings; redraws on change."""
    import dataclasses

    import ipywidgets as widgets

    from kafkalab.viz._display import FigurePanel

    policy = widgets.Dropdown(options=list(POLICIES), value=params.policy, description="cleanup.policy",
                              style={"description_width": "170px"})
    sliders = {
        "keys": _slider(widgets.IntSlider, "keys", params.keys, 1, 10, 1),
        "tombstone_every": _slider(widgets.IntSlider, "tombstone every n-th", params.tombstone_every, 0, 12, 1),
        "age_ms": _slider(widgets.IntSlider, "age at cleanup (ms)", params.age_ms, 0, 120_000, 1000),
        "retention_ms": _slider(widgets.IntSlider, "retention.ms", params.retention_ms, -1, 60_000, 1000),
        "retention_bytes": _slider(widgets.IntSlider, "retention.bytes", params.retention_bytes, -1, 3000, 50),
        "delete_records_offset": _slider(widgets.IntSlider, "DeleteRecords offset", params.delete_records_offset,
                                         0, params.records, 1),
        "cleaner_passes": _slider(widgets.IntSlider, "cleanup passes", params.cleaner_passes, 1,
                                  CLEANER_PASSES_MAX, 1),
        "delete_retention_ms": _slider(widgets.IntSlider, "delete.retention.ms", min(params.delete_retention_ms, 60_000),
                                       0, 60_000, 1000),
    }
    panel = FigurePanel(dpi=90)

    def redraw(_change: object = None) -> None:
        chosen = dataclasses.replace(params, policy=policy.value, **{n: s.value for n, s in sliders.items()})
        state = run_cleanup(chosen)
        panel.show(figure(state, f"cleanup.policy={chosen.policy}"), summary(state, chosen.policy))

    for control in (policy, *sliders.values()):
        control.observe(redraw, names="value")
    redraw()
    box = widgets.VBox([policy, *sliders.values(), panel.widget])
    box.add_class("kafkalab-cleanup-widget")
    return box


def show_cleanup(params: CleanupParams | None = None) -> Any:
    """Display the widget (or, with ``KAFKALAB_STATIC_WIDGETS=1``, its initial figure)."""
    from kafkalab.viz import show

    chosen = params or CleanupParams()
    return show(lambda: live(chosen), lambda: figure(run_cleanup(chosen), f"cleanup.policy={chosen.policy}"))
