"""Widget: a rebalance timeline, drawn from the group messages of a simulated consumer group.

Theory of operation
-------------------
A :class:`RebalanceLab` runs a one-broker :class:`~kafkalab.sim.cluster.SimCluster` with a topic
and kafkalab's own group members (:mod:`kafkalab.client.membership`), whose every request and
answer crosses the simulated network. The :class:`~kafkalab.sim.events.EventRecorder` keeps one
row per message (``group-request`` / ``group-response``), and every ``SAMPLE_MS`` the lab notes
how many partitions each member owns. :func:`timeline` turns rows and samples into a
:class:`Timeline` (pure data, tested): each member's messages, the spans in which it was
rebalancing (from the JoinGroup it sent to the SyncGroup answer that gave it partitions), and
the moments a new generation began. :func:`figure` draws one lane per member -- join ``o``,
sync ``s``, heartbeat ``|`` (red when it says REBALANCE_IN_PROGRESS), leave ``X`` -- with the
rebalance spans shaded, and below it one row per partition coloured by its owner, blank while
nobody owns it.

Worked example (:func:`scenario`, ``range``, 6 partitions, ``group.initial.rebalance.delay.ms``
3000 as Kafka's default)::

    t=0 s      c1, c2, c3 send JoinGroup     the group is new: the coordinator waits 3 s, and
                                             3 s more because members joined meanwhile
    t=6 s      generation 1                  c1 leads: Metadata, then SyncGroup 2/2/2
    t=8 s      c4 joins                      the others learn it from their next Heartbeat
                                             (REBALANCE_IN_PROGRESS), rejoin: generation 2
    t=16 s     c2 leaves (LeaveGroup)        generation 3 at once
    t=24 s     c3 is killed                  nothing happens until its session times out
                                             (10 s here), then generation 4

(The exact milliseconds are the engine's; the chapter prints them.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkalab.client.membership import MemberConfig
from kafkalab.errors import ErrorCode
from kafkalab.sim.cluster import START_MS, SimCluster
from kafkalab.sim.events import EventRecorder, EventRow

TOPIC = "orders"
GROUP = "orders-app"
SAMPLE_MS = 250
ADVANCE_MS_MAX = 600_000  # one advance: ten simulated minutes keep a redraw quick
SAMPLES_MAX = 20_000  # a bug guard on the timeline's length
MEMBERS_MAX = 12  # lanes a figure can show legibly
FIGURE_DPI = 100
API_STYLES = {  # API -> (marker, colour)
    "FindCoordinator": ("^", "#9d9da1"), "JoinGroup": ("o", "#4c78a8"), "Metadata": ("d", "#b279a2"),
    "SyncGroup": ("s", "#54a24b"), "Heartbeat": ("|", "#9d9da1"), "LeaveGroup": ("X", "#000000"),
}
ERROR_COLOUR = "#e45756"
MEMBER_COLOURS = ("#4c78a8", "#f58518", "#54a24b", "#b279a2", "#e45756", "#72b7b2", "#eeca3b", "#ff9da6")


@dataclass(frozen=True, slots=True)
class GroupMessage:
    """One request (``kind="request"``) or answer (``"response"``) of one member, at ``time_ms``
    since the simulation started; ``error`` is the answer's error name (None for a request)."""

    time_ms: int
    member: str
    api: str
    kind: str
    error: str | None
    generation: int | None


@dataclass(frozen=True, slots=True)
class OwnershipSample:
    """Who owned each partition at ``time_ms``: ``(partition, owner)``, owner None when nobody
    did (revoked and not yet assigned), or ``"c1+c2"`` if two members did (never, if the
    protocol holds)."""

    time_ms: int
    owners: tuple[tuple[int, str | None], ...]


@dataclass(frozen=True, slots=True)
class Timeline:
    """Everything the figure shows, computed from recorded rows and ownership samples."""

    members: tuple[str, ...]
    messages: tuple[GroupMessage, ...]
    samples: tuple[OwnershipSample, ...]
    generations: tuple[tuple[int, int], ...]  # (time_ms, generation) when each began

    def of(self, member: str) -> list[GroupMessage]:
        return [m for m in self.messages if m.member == member]

    def rebalance_spans(self, member: str) -> list[tuple[int, int]]:
        """When ``member`` was rebalancing: from a JoinGroup it sent to the next successful
        SyncGroup answer (or the end of the timeline)."""
        spans, start = [], None
        for m in self.of(member):
            if m.api == "JoinGroup" and m.kind == "request" and start is None:
                start = m.time_ms
            elif m.api == "SyncGroup" and m.kind == "response" and m.error == "NONE" and start is not None:
                spans.append((start, m.time_ms))
                start = None
        if start is not None:
            spans.append((start, self.end_ms))
        return spans

    @property
    def end_ms(self) -> int:
        times = [m.time_ms for m in self.messages] + [s.time_ms for s in self.samples]
        return max(times, default=0)

    def count(self, start_ms: int = 0, end_ms: int | None = None, kind: str = "request") -> dict[str, int]:
        """Messages of ``kind`` per API in ``[start_ms, end_ms)``."""
        counts: dict[str, int] = {}
        for m in self.messages:
            if m.kind == kind and start_ms <= m.time_ms and (end_ms is None or m.time_ms < end_ms):
                counts[m.api] = counts.get(m.api, 0) + 1
        return counts


def group_messages(rows: Sequence[EventRow]) -> tuple[GroupMessage, ...]:
    """The recorder's group rows as messages, times relative to the simulation's start."""
    found = []
    for row in rows:
        if row.kind not in ("group-request", "group-response"):
            continue
        assert row.member is not None and row.api is not None, "a group row names its member and API"
        error = None if row.error_code is None else _error_name(row.error_code)
        found.append(GroupMessage(row.time_ms - START_MS, row.member, row.api, row.kind.removeprefix("group-"),
                                  error, row.generation_id))
    return tuple(found)


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


def generations(messages: Sequence[GroupMessage]) -> tuple[tuple[int, int], ...]:
    """``(time_ms, generation)`` of the first successful JoinGroup answer of each generation."""
    seen: dict[int, int] = {}
    for m in messages:
        if m.api == "JoinGroup" and m.kind == "response" and m.error == "NONE" and m.generation is not None:
            seen.setdefault(m.generation, m.time_ms)
    return tuple(sorted((t, g) for g, t in seen.items()))


def timeline(rows: Sequence[EventRow], samples: Sequence[OwnershipSample]) -> Timeline:
    messages = group_messages(rows)
    members: list[str] = []
    for m in messages:
        if m.member not in members:
            members.append(m.member)
    return Timeline(tuple(members), messages, tuple(samples), generations(messages))


class RebalanceLab:
    """A broker, a topic and a consumer group of kafkalab members, driven by the widget or a
    notebook. Not thread-safe; owned by one widget."""

    def __init__(self, data_dir: Path, *, assignor: str = "range", partitions: int = 6, seed: int = 7,
                 session_timeout_ms: int = 10_000, heartbeat_interval_ms: int = 1_000,
                 properties: dict[str, str] | None = None) -> None:
        self.cluster = SimCluster(data_dir, nodes=1, seed=seed, properties=properties)
        self.recorder = EventRecorder(self.cluster)
        self.config = MemberConfig(GROUP, (TOPIC,), assignors=(assignor,), session_timeout_ms=session_timeout_ms,
                                   heartbeat_interval_ms=heartbeat_interval_ms, rebalance_timeout_ms=30_000)
        self.cluster.create_topic(TOPIC, partitions, 1)
        self.partitions = partitions
        self.samples: list[OwnershipSample] = []
        self._names = 0

    @property
    def now_ms(self) -> int:
        return self.cluster.clock.milliseconds() - START_MS

    def members(self) -> list[str]:
        """Members still running (not left, not killed)."""
        return [n for n, m in self.cluster.members.items() if m.state.value not in ("left", "fatal")]

    def add(self) -> str:
        if len(self.cluster.members) >= MEMBERS_MAX:
            raise ValueError(f"the figure shows at most {MEMBERS_MAX} members")
        self._names += 1
        name = f"c{self._names}"
        self.cluster.add_member(name, self.config)
        return name

    def leave(self, name: str) -> None:
        """The consumer closes: LeaveGroup."""
        self.cluster.stop_member(name)

    def kill(self, name: str) -> None:
        """The consumer's process dies: silence until the coordinator's session timeout."""
        self.cluster.stop_member(name, leave=False)

    def advance(self, duration_ms: int) -> Timeline:
        if not 0 < duration_ms <= ADVANCE_MS_MAX:
            raise ValueError(f"advance of {duration_ms} ms is outside (0, {ADVANCE_MS_MAX}]")
        end_ms = self.now_ms + duration_ms
        while self.now_ms < end_ms:
            self.cluster.run_for(min(SAMPLE_MS, end_ms - self.now_ms))
            if len(self.samples) >= SAMPLES_MAX:
                raise OverflowError(f"the timeline holds {len(self.samples)} samples, the limit is {SAMPLES_MAX}")
            self.samples.append(self._sample())
        return self.timeline()

    def _sample(self) -> OwnershipSample:
        owners: dict[int, list[str]] = {p: [] for p in range(self.partitions)}
        for name, member in self.cluster.members.items():
            for topic, partition in member.owned:
                if topic == TOPIC:
                    owners[partition].append(name)
        return OwnershipSample(self.now_ms, tuple((p, "+".join(names) or None) for p, names in owners.items()))

    def timeline(self) -> Timeline:
        return timeline(self.recorder.rows, self.samples)

    def close(self) -> None:
        self.cluster.close()


def scenario(data_dir: Path, assignor: str = "range", seed: int = 7) -> RebalanceLab:
    """The story of the module docstring: three join, a fourth joins, one leaves, one dies."""
    lab = RebalanceLab(data_dir, assignor=assignor, seed=seed)
    for _ in range(3):
        lab.add()
    lab.advance(8_000)
    lab.add()
    lab.advance(8_000)
    lab.leave("c2")
    lab.advance(8_000)
    lab.kill("c3")
    lab.advance(16_000)
    return lab


def figure(line: Timeline, title: str = "") -> Any:
    """One lane per member with its messages and rebalance spans; partitions owned below."""
    import matplotlib.pyplot as plt

    lanes = max(len(line.members), 1)
    partitions = len(line.samples[0].owners) if line.samples else 0
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(12, 1.5 + 0.5 * lanes + 0.3 * partitions), sharex=True,
                                      gridspec_kw={"height_ratios": [lanes, max(partitions, 1) * 0.6]})
    least_ms = max(1, line.end_ms // 200)  # a rebalance of a few ms stays visible at any zoom
    for row, member in enumerate(line.members):
        for start_ms, end_ms in line.rebalance_spans(member):
            top.broken_barh([(start_ms / 1000, max(end_ms - start_ms, least_ms) / 1000)], (row - 0.35, 0.7),
                            color="#f2cf5b", alpha=0.6)
        _draw_lane(top, row, line.of(member))
    for at_ms, generation in line.generations:
        for ax in (top, bottom):
            ax.axvline(at_ms / 1000, color="#888888", linewidth=0.8, linestyle=":")
        top.annotate(f"gen {generation}", (at_ms / 1000, 1.0), xycoords=("data", "axes fraction"),
                     fontsize=7, va="bottom", ha="center", color="#555555")
    top.set_yticks(range(len(line.members)), list(line.members))
    top.set_ylim(len(line.members) - 0.5, -0.5)
    handles = [top.plot([], [], marker, color=colour, linestyle="", label=api)[0]
               for api, (marker, colour) in API_STYLES.items()]
    handles.append(top.plot([], [], "|", color=ERROR_COLOUR, linestyle="", label="error answer")[0])
    top.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7)
    top.set_title(title or "group messages per member (shaded: rebalancing, from JoinGroup to its SyncGroup answer)",
                  fontsize=10)
    _draw_owners(bottom, line)
    bottom.set_xlabel("simulated time (s)")
    fig.tight_layout()
    return fig


def _draw_lane(ax: Any, row: int, messages: list[GroupMessage]) -> None:
    for m in messages:
        marker, colour = API_STYLES.get(m.api, ("*", "#888888"))
        if m.kind == "response":
            colour = colour if m.error in (None, "NONE", "MEMBER_ID_REQUIRED") else ERROR_COLOUR
            ax.plot(m.time_ms / 1000, row + 0.22, marker, color=colour, markersize=4, alpha=0.8)
        else:
            ax.plot(m.time_ms / 1000, row - 0.12, marker, color=colour, markersize=6)


def _draw_owners(ax: Any, line: Timeline) -> None:
    """One row per partition, a bar in its owner's colour for as long as it had that owner."""
    colours = {m: MEMBER_COLOURS[i % len(MEMBER_COLOURS)] for i, m in enumerate(line.members)}
    partitions = [p for p, _ in line.samples[0].owners] if line.samples else []
    for p in partitions:
        for start_ms, end_ms, owner in _owner_spans(line.samples, p):
            if owner is not None:
                ax.broken_barh([(start_ms / 1000, (end_ms - start_ms) / 1000)], (p - 0.4, 0.8),
                               color=colours.get(owner, "#000000"))
    for member, colour in colours.items():
        ax.plot([], [], "s", color=colour, label=member)
    ax.set_yticks(partitions, [f"{TOPIC}-{p}" for p in partitions], fontsize=7)
    ax.set_ylim(len(partitions) - 0.5, -0.5)
    ax.set_title("owner of each partition (blank: nobody)", fontsize=9)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7)


def _owner_spans(samples: Sequence[OwnershipSample], partition: int) -> list[tuple[int, int, str | None]]:
    spans: list[tuple[int, int, str | None]] = []
    for previous, sample in zip(samples, samples[1:]):
        owner = dict(previous.owners).get(partition)
        if spans and spans[-1][2] == owner:
            spans[-1] = (spans[-1][0], sample.time_ms, owner)
        else:
            spans.append((previous.time_ms, sample.time_ms, owner))
    return spans


# --- the live widget -------------------------------------------------------------------------


def live(lab: RebalanceLab) -> Any:
    """Buttons to add a member, close or kill one, and advance time; redraws each time."""
    import ipywidgets as widgets

    from kafkalab.book import keep_for_widgets
    from kafkalab.viz._display import FigurePanel, action_buttons

    keep_for_widgets(lab.cluster.data_dir)  # a reader may come back to the widget after the last cell
    member = widgets.Dropdown(options=lab.members(), description="member")
    seconds = widgets.IntSlider(value=5, min=1, max=60, description="advance (s)", continuous_update=False)
    panel = FigurePanel(dpi=FIGURE_DPI)

    def redraw() -> None:
        panel.show(figure(lab.timeline()), summary(lab))
        member.options = lab.members()

    def on_chosen(action: Callable[[str], None]) -> Callable[[], None]:
        def run() -> None:
            if member.value:
                action(member.value)
        return run

    actions: dict[str, Callable[[], object]] = {
        "add member": lab.add,
        "close (LeaveGroup)": on_chosen(lab.leave),
        "kill": on_chosen(lab.kill),
        "advance": lambda: lab.advance(seconds.value * 1000),
    }

    buttons = action_buttons(actions, redraw)
    redraw()
    box = widgets.VBox([widgets.HBox([member, seconds]), widgets.HBox(buttons), panel.widget])
    box.add_class("kafkalab-rebalance-widget")
    return box


def summary(lab: RebalanceLab) -> str:
    """The group now, in words: each member's state, generation and partition count."""
    parts = [f"{name}: {m.state.value}, generation {m.generation_id}, {len(m.owned)} partitions"
             for name, m in lab.cluster.members.items()]
    return f"t = {lab.now_ms / 1000:.1f} s: " + "; ".join(parts) + "."


def show_rebalance(data_dir: Path, assignor: str = "range", seed: int = 7) -> Any:
    """Display the widget (or, with ``KAFKALAB_STATIC_WIDGETS=1``, the :func:`scenario` figure)."""
    from kafkalab.viz._display import show_lab

    def start() -> Any:
        lab = RebalanceLab(data_dir, assignor=assignor, seed=seed)
        for _ in range(3):
            lab.add()
        lab.advance(5_000)
        return live(lab)

    return show_lab(start, lambda: scenario(data_dir, assignor, seed), lambda lab: figure(lab.timeline()))


__all__ = ["GroupMessage", "OwnershipSample", "RebalanceLab", "Timeline", "figure", "generations",
           "group_messages", "live", "scenario", "show_rebalance", "summary", "timeline"]
