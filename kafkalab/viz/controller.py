"""Widget: the controller's metadata log over time, with each partition's leader and ISR.

Theory of operation
-------------------
A :class:`ControllerLab` runs a real three-broker :class:`~kafkalab.sim.cluster.SimCluster`
with one topic of three partitions (replication factor 3). It subscribes to the controller's
image publications: each publication follows one committed batch of metadata records, so the
lab reads the records appended since the last one off the controller's log and stamps them with
the simulated time -- a list of :class:`LogEntry`, each the record's offset, its type and the
line ``kafkalab dump-log --cluster-metadata-decoder`` prints for it. Every ``SAMPLE_MS`` it also
takes a :class:`PartitionSample` of each partition's leader, leader epoch and ISR from the
controller's image. The learner kills or restarts a broker, cuts it off or heals the network,
triggers a preferred leader election, reassigns partition 0 (a broker off its replicas, or
back on), and advances simulated time.

:func:`timeline` gathers entries and samples into a :class:`Timeline` (pure data, tested);
:func:`figure` draws it: above, every metadata record as a mark at its time, one row per record
type; below, one band per partition coloured by its leader, with the ISR written at each
change.

Worked example (:func:`scenario`, seed 7: leaders 3, 1, 2 for partitions 0, 1, 2)::

    t=0       offsets 0-10: feature level, three registrations (fenced), three unfencings,
              topic and partitions
    t=5 s     broker 3 is killed
    t=13 s    broker 3 is fenced (9 s after its last heartbeat): a PartitionChangeRecord per partition (3 leaves every
              ISR; partition 0 elects 1) and a BrokerRegistrationChangeRecord (fenced 1)
    t=20 s    broker 3 restarts: RegisterBrokerRecord; it catches up and the leaders'
              AlterPartition adds it back (PartitionChangeRecords with a bigger ISR)
    t=40 s    preferred leader election: partition 0 goes back to broker 3

(The exact seconds and offsets are the engine's; the chapter prints them.)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkalab.controller.partition_change import Election
from kafkalab.metadata.image import MetadataImage
from kafkalab.metadata.record_log import MemoryRecordLog
from kafkalab.metadata.records import decode_record
from kafkalab.sim.cluster import SimCluster
from kafkalab.tools.decoders.metadata import decode_metadata_record

TOPIC = "orders"
PARTITIONS = 3
SAMPLE_MS = 500
ADVANCE_MS_MAX = 600_000  # one advance: ten simulated minutes keep a redraw under a few seconds
SAMPLES_MAX = 20_000  # a bug guard on the timeline's length
FIGURE_DPI = 100
RECORD_ROWS = ("FeatureLevelRecord", "RegisterBrokerRecord", "BrokerRegistrationChangeRecord", "TopicRecord",
               "PartitionRecord", "PartitionChangeRecord", "RemoveTopicRecord", "ProducerIdsRecord")
BROKER_COLOURS = {1: "#4c78a8", 2: "#f58518", 3: "#54a24b", 4: "#b279a2", 5: "#e45756"}
NO_LEADER_COLOUR = "#bbbbbb"
ACTION_COLOUR = "#444444"


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One metadata record: its offset in ``__cluster_metadata``, when it was committed
    (milliseconds since the simulation started), its type and its dump-log text."""

    offset: int
    time_ms: int
    kind: str
    text: str


@dataclass(frozen=True, slots=True)
class PartitionSample:
    """One partition at ``time_ms``, as the controller's image says."""

    time_ms: int
    partition: int
    leader: int
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Action:
    """What the learner did at ``time_ms``: ``kill 3``, ``restart 3``, ``cut off 2``, ``heal``,
    ``preferred election``."""

    time_ms: int
    label: str


@dataclass(frozen=True, slots=True)
class Timeline:
    """Everything the figure shows."""

    entries: tuple[LogEntry, ...]
    samples: tuple[PartitionSample, ...]
    now_ms: int
    actions: tuple[Action, ...] = ()

    def counts(self) -> dict[str, int]:
        """How many records of each type the log holds."""
        return dict(Counter(entry.kind for entry in self.entries))

    def leader_spans(self, partition: int) -> list[tuple[int, int, int]]:
        """``(from_ms, to_ms, leader)`` runs of one partition's leader (-1: no leader)."""
        spans: list[tuple[int, int, int]] = []
        for sample in (s for s in self.samples if s.partition == partition):
            if spans and spans[-1][2] == sample.leader:
                spans[-1] = (spans[-1][0], sample.time_ms, sample.leader)
            else:
                if spans:
                    spans[-1] = (spans[-1][0], sample.time_ms, spans[-1][2])
                spans.append((sample.time_ms, sample.time_ms, sample.leader))
        if spans:
            spans[-1] = (spans[-1][0], max(spans[-1][1], self.now_ms), spans[-1][2])
        return spans

    def isr_changes(self, partition: int) -> list[PartitionSample]:
        """The samples at which the partition's ISR or leader differ from the sample before."""
        changes: list[PartitionSample] = []
        for sample in (s for s in self.samples if s.partition == partition):
            if not changes or (changes[-1].isr, changes[-1].leader) != (sample.isr, sample.leader):
                changes.append(sample)
        return changes

    def latest(self, partition: int) -> PartitionSample | None:
        return next((s for s in reversed(self.samples) if s.partition == partition), None)


def log_entries(values: Sequence[bytes], first_offset: int, time_ms: int) -> list[LogEntry]:
    """Entries for encoded metadata records that start at ``first_offset``, committed at ``time_ms``."""
    return [LogEntry(first_offset + i, time_ms, type(decode_record(value)).__name__, decode_metadata_record(value))
            for i, value in enumerate(values)]


def partition_samples(image: MetadataImage, time_ms: int, topic: str = TOPIC) -> list[PartitionSample]:
    found = image.topics.get(topic)
    if found is None:
        return []
    return [PartitionSample(time_ms, index, p.leader, p.leader_epoch, p.partition_epoch, tuple(p.isr))
            for index, p in sorted(found.partitions.items())]


class ControllerLab:
    """A three-broker cluster whose controller the widget or a notebook watches.

    Not thread-safe; owned by one widget."""

    def __init__(self, data_dir: Path, *, seed: int = 7, properties: dict[str, str] | None = None) -> None:
        self.cluster = SimCluster(data_dir, nodes=3, seed=seed, properties=properties)
        self._origin_ms = self.cluster.clock.milliseconds()  # time 0: the brokers are up and registered
        log = self.cluster.controller.log
        assert isinstance(log, MemoryRecordLog), "the simulation's controller keeps its log in memory"
        self._log = log
        self.entries: list[LogEntry] = []
        self.samples: list[PartitionSample] = []
        self.actions: list[Action] = []
        self._collect(self.cluster.controller.image)
        self.cluster.controller.subscribe(self._collect)
        self.cluster.create_topic(TOPIC, PARTITIONS, 3)
        self._sample()

    @property
    def now_ms(self) -> int:
        return self.cluster.clock.milliseconds() - self._origin_ms

    def _collect(self, image: MetadataImage) -> None:
        seen = len(self.entries)
        self.entries.extend(log_entries(self._log.values[seen:], seen, self.now_ms))

    def _sample(self) -> None:
        if len(self.samples) >= SAMPLES_MAX * PARTITIONS:
            raise OverflowError(f"the timeline holds {len(self.samples)} samples, the limit is {SAMPLES_MAX}")
        self.samples.extend(partition_samples(self.cluster.controller.image, self.now_ms))

    # --- what the buttons do ---------------------------------------------------------------------

    def kill(self, node_id: int) -> None:
        if self.cluster.nodes[node_id].alive:
            self.cluster.crash(node_id)
            self.actions.append(Action(self.now_ms, f"kill {node_id}"))

    def restart(self, node_id: int) -> None:
        if not self.cluster.nodes[node_id].alive:
            self.cluster.restart(node_id)
            self.actions.append(Action(self.now_ms, f"restart {node_id}"))
            self._sample()

    def cut_off(self, node_id: int) -> None:
        """Cut every link between ``node_id`` and the other brokers (its link to the controller
        stays up, so its heartbeats keep it unfenced; its followers fall out of the ISR)."""
        self.cluster.network.isolate(node_id, list(self.cluster.nodes))
        self.actions.append(Action(self.now_ms, f"cut off {node_id}"))

    def heal(self) -> None:
        self.cluster.network.heal()
        self.actions.append(Action(self.now_ms, "heal"))

    def elect_preferred(self) -> list[tuple[str, int, str]]:
        """ElectLeaders(PREFERRED) for every partition; ``(topic, partition, error name)`` for
        each partition that was not already led by its preferred replica."""
        results = self.cluster.controller.elect_leaders(Election.PREFERRED, None)
        self.actions.append(Action(self.now_ms, "preferred election"))
        self._sample()
        return [(topic, index, error.name) for topic, index, error, _ in results]

    def move_replica(self, node_id: int, partition: int = 0) -> list[tuple[str, int, str]]:
        """Reassign ``partition`` (AlterPartitionReassignments): take ``node_id`` off its
        replicas, or add it back last if it holds none. A removal completes at once; an added
        replica is a follower that catches up and joins the ISR, and that change completes the
        reassignment. ``(topic, partition, error name)`` of the answer."""
        registration = self.cluster.controller.image.partition(TOPIC, partition)
        assert registration is not None, f"no partition {TOPIC}-{partition}"
        if node_id in registration.replicas:
            target, label = [r for r in registration.replicas if r != node_id], f"reassign -{node_id}"
        else:
            target, label = [*registration.replicas, node_id], f"reassign +{node_id}"
        results = self.cluster.controller.alter_partition_reassignments([(TOPIC, partition, target)])
        self.actions.append(Action(self.now_ms, label))
        self._sample()
        return [(topic, index, error.name) for topic, index, error, _ in results]

    def advance(self, duration_ms: int) -> Timeline:
        """Run ``duration_ms`` of simulated time, sampling every ``SAMPLE_MS``."""
        if not 0 < duration_ms <= ADVANCE_MS_MAX:
            raise ValueError(f"advance of {duration_ms} ms is outside (0, {ADVANCE_MS_MAX}]")
        end_ms = self.now_ms + duration_ms
        while self.now_ms < end_ms:
            self.cluster.run_for(min(SAMPLE_MS, end_ms - self.now_ms))
            self._sample()
        return self.timeline()

    def timeline(self) -> Timeline:
        return Timeline(tuple(self.entries), tuple(self.samples), self.now_ms, tuple(self.actions))

    def close(self) -> None:
        self.cluster.close()


def scenario(data_dir: Path, seed: int = 7) -> ControllerLab:
    """The fixed story of the module docstring: kill partition 0's leader, bring it back, then
    run a preferred leader election."""
    lab = ControllerLab(data_dir, seed=seed)
    victim = lab.cluster.leader(TOPIC, 0)
    lab.advance(5_000)
    lab.kill(victim)
    lab.advance(15_000)
    lab.restart(victim)
    lab.advance(20_000)
    lab.elect_preferred()
    lab.advance(5_000)
    return lab


def figure(line: Timeline, title: str = "") -> Any:
    """Metadata records by type over time (above); each partition's leader and ISR (below)."""
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(12, 5.6), sharex=True,
                                      gridspec_kw={"height_ratios": [1.6, 1]})
    kinds = [k for k in RECORD_ROWS if any(e.kind == k for e in line.entries)]
    kinds += sorted({e.kind for e in line.entries} - set(kinds))
    for row, kind in enumerate(kinds):
        at = [e for e in line.entries if e.kind == kind]
        top.plot([e.time_ms / 1000 for e in at], [row] * len(at), "o", markersize=6, alpha=0.6)
        if at:
            top.annotate(f"{len(at)}", (at[-1].time_ms / 1000, row), xytext=(6, -3),
                         textcoords="offset points", fontsize=7)
    top.set_yticks(range(len(kinds)), kinds, fontsize=8)
    top.set_ylim(-0.6, len(kinds) + 0.9)  # headroom for the action labels
    last = line.entries[-1].offset if line.entries else -1
    top.set_title(title or f"__cluster_metadata: {last + 1} records (offsets 0-{last}), by type", fontsize=10)
    _draw_partitions(bottom, line)
    for action in line.actions:
        for ax in (top, bottom):
            ax.axvline(action.time_ms / 1000, color=ACTION_COLOUR, linewidth=0.8, linestyle=":")
        top.annotate(action.label, (action.time_ms / 1000, 1.0), xycoords=("data", "axes fraction"),
                     rotation=90, fontsize=7, va="top", ha="right", color=ACTION_COLOUR)
    bottom.set_xlabel("simulated time (s)")
    bottom.set_xlim(-0.5, max(line.now_ms / 1000, 1) + 0.5)
    fig.tight_layout()
    return fig


def _draw_partitions(ax: Any, line: Timeline) -> None:
    partitions = sorted({s.partition for s in line.samples})
    for row, partition in enumerate(partitions):
        for start_ms, end_ms, leader in line.leader_spans(partition):
            ax.broken_barh([(start_ms / 1000, max(end_ms - start_ms, 1) / 1000)], (row - 0.35, 0.7),
                           color=BROKER_COLOURS.get(leader, NO_LEADER_COLOUR), alpha=0.85)
        for change in line.isr_changes(partition):
            ax.annotate(f"L{change.leader} ISR {list(change.isr)}", (change.time_ms / 1000, row + 0.38),
                        fontsize=7, va="bottom", rotation=0)
    ax.set_yticks(range(len(partitions)), [f"{TOPIC}-{p}" for p in partitions])
    ax.set_ylim(-0.6, len(partitions) - 0.1)
    handles = [ax.bar(0, 0, color=c, label=f"leader {b}") for b, c in BROKER_COLOURS.items() if b <= 3]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7)
    ax.set_title("partition leaders (colour) and ISR at each change", fontsize=9)


def summary(line: Timeline) -> str:
    """The latest moment in words: the log's size by type, and each partition's leader and ISR."""
    counts = ", ".join(f"{n} {kind}" for kind, n in sorted(line.counts().items()))
    parts = []
    for partition in sorted({s.partition for s in line.samples}):
        latest = line.latest(partition)
        assert latest is not None
        parts.append(f"{TOPIC}-{partition}: leader {latest.leader} (epoch {latest.leader_epoch}), "
                     f"ISR {list(latest.isr)}")
    end = line.entries[-1].offset + 1 if line.entries else 0
    return f"t = {line.now_ms / 1000:.1f} s: the metadata log ends at offset {end} ({counts}); " + "; ".join(parts) + "."


# --- the live widget -------------------------------------------------------------------------


def live(lab: ControllerLab) -> Any:
    """Buttons to kill, restart or cut off a broker, heal, elect preferred leaders, take the
    broker off partition 0's replicas or add it back (a reassignment), and advance."""
    import ipywidgets as widgets

    from kafkalab.book import keep_for_widgets
    from kafkalab.viz._display import FigurePanel, action_buttons

    keep_for_widgets(lab.cluster.data_dir)  # a reader may come back to the widget after the last cell
    broker = widgets.Dropdown(options=sorted(lab.cluster.nodes), value=lab.cluster.leader(TOPIC, 0),
                              description="broker")
    seconds = widgets.IntSlider(value=10, min=1, max=120, description="advance (s)", continuous_update=False)
    panel = FigurePanel(dpi=FIGURE_DPI)

    def redraw() -> None:
        line = lab.timeline()
        panel.show(figure(line), summary(line))

    actions: dict[str, Callable[[], object]] = {
        "kill": lambda: lab.kill(broker.value),
        "restart": lambda: lab.restart(broker.value),
        "cut off": lambda: lab.cut_off(broker.value),
        "heal": lab.heal,
        "preferred election": lab.elect_preferred,
        "move p0 replica": lambda: lab.move_replica(broker.value),
        "advance": lambda: lab.advance(seconds.value * 1000),
    }

    buttons = action_buttons(actions, redraw)
    redraw()
    box = widgets.VBox([widgets.HBox([broker, seconds]), widgets.HBox(buttons), panel.widget])
    box.add_class("kafkalab-controller-widget")
    return box


def show_controller(data_dir: Path, seed: int = 7) -> Any:
    """Display the widget (or, with ``KAFKALAB_STATIC_WIDGETS=1``, the :func:`scenario` figure)."""
    from kafkalab.viz._display import show_lab

    def start() -> Any:
        lab = ControllerLab(data_dir, seed=seed)
        lab.advance(2_000)
        return live(lab)

    return show_lab(start, lambda: scenario(data_dir, seed), lambda lab: figure(lab.timeline()))


__all__ = ["Action", "ControllerLab", "LogEntry", "PartitionSample", "Timeline", "figure", "live", "log_entries",
           "partition_samples", "scenario", "show_controller", "summary"]
