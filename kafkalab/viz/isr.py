"""Widget: a follower leaves and rejoins the ISR, while the high watermark stalls and moves.

Theory of operation
-------------------
An :class:`IsrLab` runs a real three-broker :class:`~kafkalab.sim.cluster.SimCluster` with one
partition (replication factor 3, ``min.insync.replicas`` 2) and a producer that sends one batch
a second. The learner picks a follower and slows its links, kills it, cuts it off or heals it,
and advances simulated time; every ``SAMPLE_MS`` the lab takes a :class:`Sample` -- each
replica's log end offset (LEO) and high watermark (HW) as its own log knows them, and the ISR
and leader from the controller's metadata image. The recorder
(:class:`~kafkalab.sim.events.EventRecorder`) supplies what happened between samples: ISR
shrinks and expands, elections, crashes and each produce's answer. :func:`timeline` turns the
samples and rows into a :class:`Timeline` (pure data, tested); :func:`figure` draws it: LEO
(solid) and HW (dashed) per replica above, the ISR as one band per broker below.

Worked example (:func:`scenario`, seed 7: leader 3, ISR [1, 2, 3], min.insync.replicas 2)::

    t=5 s     follower 1 is cut off   the HW stops at 5: acks=all produces wait for broker 1
    t=45 s    the leader's ISR check  broker 1 last caught up at 5 s, 40 s > 30 s ago: shrink
                                      to [2, 3]; the HW jumps to the LEO, waiting produces return
    t=50 s    follower 2 is killed    the HW stalls at 50
    t=57 s    2 is fenced             (broker.session.timeout.ms, 9 s after its last heartbeat)
                                      and leaves the ISR: [3] is
                                      below min.insync.replicas, acks=all gets NOT_ENOUGH_REPLICAS
    t=100 s   2 restarts, 1 healed    2 fetches to the HW at once and rejoins; 1's fetch lost in
                                      the cut is given up after 30 s, so it rejoins at 124.5 s

(The exact seconds are the engine's; the chapter prints them.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkalab.errors import ErrorCode
from kafkalab.records.model import Record
from kafkalab.records.v2 import build_v2_batch
from kafkalab.sim.cluster import START_MS, SimCluster
from kafkalab.sim.events import EventRecorder, EventRow
from kafkalab.sim.network import LinkFaults

TOPIC = "orders"
SAMPLE_MS = 500
PRODUCE_EVERY_MS = 1_000
PRODUCE_TIMEOUT_MS = 30_000  # the producer's request.timeout.ms default
ADVANCE_MS_MAX = 600_000  # one advance: ten simulated minutes keep a redraw under a few seconds
SAMPLES_MAX = 20_000  # a bug guard on the timeline's length
FIGURE_DPI = 100
MARKER_COLOURS = {"shrink": "#e45756", "expand": "#54a24b", "election": "#b279a2",
                  "crash": "#000000", "restart": "#4c78a8"}
ANSWER_STYLES = {"NONE": ("|", "#54a24b"), "NOT_ENOUGH_REPLICAS": ("x", "#e45756"),
                 "REQUEST_TIMED_OUT": ("x", "#f58518")}
REPLICA_COLOURS = ("#4c78a8", "#f58518", "#54a24b", "#b279a2", "#e45756")


@dataclass(frozen=True, slots=True)
class ReplicaSample:
    """One replica at one instant: its own LEO and HW, or None while its broker is down."""

    node_id: int
    log_end_offset: int | None
    high_watermark: int | None


@dataclass(frozen=True, slots=True)
class Sample:
    """The partition at ``time_ms`` (milliseconds since the simulation started)."""

    time_ms: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[ReplicaSample, ...]


@dataclass(frozen=True, slots=True)
class Marker:
    """Something that happened: an ISR ``shrink`` or ``expand``, an ``election``, a
    ``crash`` or ``restart``, at ``time_ms`` on ``node_id``."""

    time_ms: int
    kind: str
    node_id: int
    label: str


@dataclass(frozen=True, slots=True)
class ProduceOutcome:
    """A produce answered at ``time_ms`` with ``error_code`` (0: acknowledged)."""

    time_ms: int
    error_code: int

    @property
    def error_name(self) -> str:
        return ErrorCode(self.error_code).name


@dataclass(frozen=True, slots=True)
class Timeline:
    """Everything the figure shows, computed from samples and recorded events."""

    samples: tuple[Sample, ...]
    markers: tuple[Marker, ...]
    produces: tuple[ProduceOutcome, ...]
    min_insync_replicas: int

    def isr_spans(self, node_id: int) -> list[tuple[int, int]]:
        """The ``(from_ms, to_ms)`` intervals during which ``node_id`` was in the ISR."""
        spans: list[tuple[int, int]] = []
        start: int | None = None
        for sample in self.samples:
            if node_id in sample.isr and start is None:
                start = sample.time_ms
            elif node_id not in sample.isr and start is not None:
                spans.append((start, sample.time_ms))
                start = None
        if start is not None and self.samples:
            spans.append((start, self.samples[-1].time_ms))
        return spans


def take_sample(cluster: SimCluster, topic: str = TOPIC, partition: int = 0) -> Sample:
    """The partition as the controller and each broker's own log see it now."""
    registration = cluster.controller.image.partition(topic, partition)
    assert registration is not None, f"no such partition {topic}-{partition}"
    replicas = []
    for node_id in sorted(registration.replicas):
        node = cluster.nodes[node_id]
        log = node.broker.topics.log(topic, partition) if node.alive else None
        replicas.append(ReplicaSample(node_id, None if log is None else log.log_end_offset,
                                      None if log is None else log.high_watermark))
    return Sample(cluster.clock.milliseconds() - START_MS, registration.leader, registration.leader_epoch,
                  tuple(sorted(registration.isr)), tuple(replicas))


def markers(rows: Sequence[EventRow], topic: str = TOPIC, partition: int = 0) -> tuple[Marker, ...]:
    """ISR shrinks and expands, elections (a leader in a leader epoch not seen before),
    crashes and restarts, from an :class:`EventRecorder`'s rows."""
    found: list[Marker] = []
    epochs_seen: set[int] = set()
    for row in rows:
        at_ms = row.time_ms - START_MS
        if row.kind in ("crash", "restart"):
            found.append(Marker(at_ms, row.kind, row.node_id, f"{row.kind} {row.node_id}"))
        if (row.topic, row.partition) != (topic, partition):
            continue
        if row.kind == "isr-changed" and row.isr is not None and row.new_isr is not None:
            kind = "shrink" if len(row.new_isr) < len(row.isr) else "expand"
            found.append(Marker(at_ms, kind, row.node_id, f"ISR {list(row.new_isr)}"))
        elif row.kind == "became-leader" and row.leader_epoch is not None and row.leader_epoch not in epochs_seen:
            epochs_seen.add(row.leader_epoch)
            if row.leader_epoch > 0:  # epoch 0 is the topic's creation, not an election
                found.append(Marker(at_ms, "election", row.node_id,
                                    f"leader {row.node_id}, epoch {row.leader_epoch}"))
    return tuple(found)


def timeline(samples: Sequence[Sample], rows: Sequence[EventRow], min_insync_replicas: int,
             topic: str = TOPIC, partition: int = 0) -> Timeline:
    produces = tuple(ProduceOutcome(r.time_ms - START_MS, r.error_code) for r in rows
                     if r.kind == "produce-answer" and r.error_code is not None
                     and (r.topic, r.partition) == (topic, partition))
    return Timeline(tuple(samples), markers(rows, topic, partition), produces, min_insync_replicas)


class IsrLab:
    """A three-broker cluster, a producer and a recorder, driven by the widget or a notebook.

    Not thread-safe; owned by one widget."""

    def __init__(self, data_dir: Path, *, seed: int = 7, min_insync_replicas: int = 2, acks: int = -1) -> None:
        self.cluster = SimCluster(data_dir, nodes=3, seed=seed,
                                  properties={"min.insync.replicas": str(min_insync_replicas)})
        self.recorder = EventRecorder(self.cluster)
        self.min_insync_replicas = min_insync_replicas
        self.acks = acks
        self.cluster.create_topic(TOPIC, 1, 3)
        self.samples: list[Sample] = [take_sample(self.cluster)]
        self._next_produce_ms = 0
        self._sent = 0

    @property
    def now_ms(self) -> int:
        return self.cluster.clock.milliseconds() - START_MS

    def followers(self) -> list[int]:
        leader = self.cluster.leader(TOPIC, 0)
        return [n for n in sorted(self.cluster.nodes) if n != leader]

    # --- what the buttons do ---------------------------------------------------------------------

    def slow(self, node_id: int, delay_ms: int) -> None:
        """Every message to and from ``node_id`` takes ``delay_ms`` (0: back to normal)."""
        faults = LinkFaults(delay_min_ms=max(delay_ms, 1), delay_max_ms=max(delay_ms, 1))
        for other in self.cluster.nodes:
            if other != node_id:
                self.cluster.network.set_link(node_id, other, faults)
                self.cluster.network.set_link(other, node_id, faults)

    def kill(self, node_id: int) -> None:
        if self.cluster.nodes[node_id].alive:
            self.cluster.crash(node_id)

    def restart(self, node_id: int) -> None:
        if not self.cluster.nodes[node_id].alive:
            self.cluster.restart(node_id)

    def partition(self, node_id: int) -> None:
        self.cluster.network.isolate(node_id, list(self.cluster.nodes))

    def heal(self, node_id: int) -> None:
        """Remove every cut and ``node_id``'s slowness; a killed broker is started again."""
        self.cluster.network.heal()
        self.slow(node_id, 0)
        self.restart(node_id)

    def advance(self, duration_ms: int) -> Timeline:
        """Run ``duration_ms`` of simulated time, producing and sampling as it goes."""
        if not 0 < duration_ms <= ADVANCE_MS_MAX:
            raise ValueError(f"advance of {duration_ms} ms is outside (0, {ADVANCE_MS_MAX}]")
        end_ms = self.now_ms + duration_ms
        while self.now_ms < end_ms:
            if self.now_ms >= self._next_produce_ms:
                self._produce()
                self._next_produce_ms += PRODUCE_EVERY_MS
            self.cluster.run_for(min(SAMPLE_MS, end_ms - self.now_ms))
            if len(self.samples) >= SAMPLES_MAX:
                raise OverflowError(f"the timeline holds {len(self.samples)} samples, the limit is {SAMPLES_MAX}")
            self.samples.append(take_sample(self.cluster))
        return self.timeline()

    def _produce(self) -> None:
        leader = self.cluster.leader(TOPIC, 0)
        if leader not in self.cluster.nodes:  # no leader at all: a client would wait for metadata
            return
        self._sent += 1
        record = Record(offset=0, timestamp=self.cluster.clock.milliseconds(), key=None,
                        value=f"order-{self._sent}".encode())
        self.cluster.send_produce(TOPIC, 0, build_v2_batch([record]), lambda answer: None,
                                  acks=self.acks, timeout_ms=PRODUCE_TIMEOUT_MS)

    def timeline(self) -> Timeline:
        return timeline(self.samples, self.recorder.rows, self.min_insync_replicas)

    def close(self) -> None:
        self.cluster.close()


def scenario(data_dir: Path, seed: int = 7) -> IsrLab:
    """The fixed story of the module docstring: cut a follower off, kill the other, bring both back."""
    lab = IsrLab(data_dir, seed=seed)
    first, second = lab.followers()
    lab.advance(5_000)
    lab.partition(first)
    lab.advance(45_000)
    lab.kill(second)
    lab.advance(50_000)
    lab.heal(first)
    lab.restart(second)
    lab.advance(50_000)
    return lab


def figure(line: Timeline, title: str = "") -> Any:
    """LEO (solid) and HW (dashed) per replica over time; the ISR as a band per broker."""
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(12, 5.6), sharex=True,
                                      gridspec_kw={"height_ratios": [3, 1.3]})
    nodes = [r.node_id for r in line.samples[0].replicas] if line.samples else []
    seconds = [s.time_ms / 1000 for s in line.samples]
    for index, node_id in enumerate(nodes):
        colour = REPLICA_COLOURS[index % len(REPLICA_COLOURS)]
        leo = [s.replicas[index].log_end_offset for s in line.samples]
        hw = [s.replicas[index].high_watermark for s in line.samples]
        top.plot(seconds, [float("nan") if v is None else v for v in leo], color=colour,
                 label=f"broker {node_id} LEO")
        top.plot(seconds, [float("nan") if v is None else v for v in hw], color=colour, linestyle="--",
                 label=f"broker {node_id} HW")
    _draw_produces(top, line)
    _draw_isr_bands(bottom, line, nodes)
    for marker in line.markers:
        for ax in (top, bottom):
            ax.axvline(marker.time_ms / 1000, color=MARKER_COLOURS[marker.kind], linewidth=0.9, alpha=0.7)
        top.annotate(marker.label, (marker.time_ms / 1000, 1.0), xycoords=("data", "axes fraction"),
                     rotation=90, fontsize=7, va="top", ha="right", color=MARKER_COLOURS[marker.kind])
    top.set_ylabel("offset")
    top.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7)
    top.set_title(title or f"LEO and HW per replica; min.insync.replicas = {line.min_insync_replicas}",
                  fontsize=10)
    bottom.set_xlabel("simulated time (s)")
    fig.tight_layout()
    return fig


def _draw_produces(ax: Any, line: Timeline) -> None:
    """A mark along the bottom edge per produce answer, by error: a green tick acknowledged."""
    for name in sorted({p.error_name for p in line.produces}):
        at_s = [p.time_ms / 1000 for p in line.produces if p.error_name == name]
        style, colour = ANSWER_STYLES.get(name, ("x", "#888888"))
        ax.plot(at_s, [0] * len(at_s), style, color=colour, markersize=7,
                label="acknowledged" if name == "NONE" else name)


def _draw_isr_bands(ax: Any, line: Timeline, nodes: list[int]) -> None:
    for row, node_id in enumerate(nodes):
        for start_ms, end_ms in line.isr_spans(node_id):
            ax.broken_barh([(start_ms / 1000, max(end_ms - start_ms, 1) / 1000)], (row - 0.35, 0.7),
                           color=REPLICA_COLOURS[row % len(REPLICA_COLOURS)], alpha=0.8)
        down = [s.time_ms / 1000 for s in line.samples
                if s.replicas[row].log_end_offset is None]
        ax.plot(down, [row] * len(down), "_", color="black", markersize=4)
    ax.set_yticks(range(len(nodes)), [f"broker {n}" for n in nodes])
    ax.set_ylim(-0.6, len(nodes) - 0.4)
    ax.set_title("ISR membership (bar: in the ISR; black: broker down)", fontsize=9)


# --- the live widget -------------------------------------------------------------------------


def live(lab: IsrLab) -> Any:
    """Buttons to slow, kill, cut off or heal a follower and to advance time; redraws each time."""
    import ipywidgets as widgets

    from kafkalab.book import keep_for_widgets
    from kafkalab.viz._display import FigurePanel, action_buttons

    keep_for_widgets(lab.cluster.data_dir)  # a reader may come back to the widget after the last cell
    follower = widgets.Dropdown(options=sorted(lab.cluster.nodes), value=lab.followers()[0], description="broker")
    delay = widgets.IntSlider(value=200, min=0, max=40_000, step=100, description="delay (ms)",
                              continuous_update=False)
    seconds = widgets.IntSlider(value=15, min=1, max=120, description="advance (s)", continuous_update=False)
    panel = FigurePanel(dpi=FIGURE_DPI)

    def redraw() -> None:
        line = lab.timeline()
        panel.show(figure(line), summary(line))

    actions = {
        "slow": lambda: lab.slow(follower.value, delay.value),
        "kill": lambda: lab.kill(follower.value),
        "partition": lambda: lab.partition(follower.value),
        "heal": lambda: lab.heal(follower.value),
        "advance": lambda: lab.advance(seconds.value * 1000),
    }
    buttons = action_buttons(actions, redraw)
    redraw()
    box = widgets.VBox([widgets.HBox([follower, delay, seconds]), widgets.HBox(buttons), panel.widget])
    box.add_class("kafkalab-isr-widget")
    return box


def summary(line: Timeline) -> str:
    """The latest moment in words: leader, ISR, each replica's LEO and HW, the last answer."""
    last = line.samples[-1]
    answer = line.produces[-1].error_name if line.produces else "none yet"
    replicas = "; ".join(
        f"broker {r.node_id}: " + ("down" if r.log_end_offset is None else f"LEO {r.log_end_offset}, HW {r.high_watermark}")
        for r in last.replicas)
    return (f"t = {last.time_ms / 1000:.1f} s: leader {last.leader} (epoch {last.leader_epoch}), "
            f"ISR {list(last.isr)}; {replicas}; last produce answer: {answer}.")


def show_isr(data_dir: Path, seed: int = 7) -> Any:
    """Display the widget (or, with ``KAFKALAB_STATIC_WIDGETS=1``, the :func:`scenario` figure)."""
    from kafkalab.viz._display import show_lab

    def start() -> Any:
        lab = IsrLab(data_dir, seed=seed)
        lab.advance(5_000)
        return live(lab)

    return show_lab(start, lambda: scenario(data_dir, seed), lambda lab: figure(lab.timeline()))


__all__ = ["IsrLab", "Marker", "ProduceOutcome", "ReplicaSample", "Sample", "Timeline", "figure", "live",
           "markers", "scenario", "show_isr", "summary", "take_sample", "timeline"]
