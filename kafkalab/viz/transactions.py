"""Widget: one transaction's timeline -- the coordinator's state, markers landing, LSO and HW.

Theory of operation
-------------------
A :class:`TxnLab` runs one kafkalab broker in this process
(:class:`~kafkalab.client.in_process.InProcessBroker`, a manual clock) with a topic of
``PARTITIONS`` partitions and one transactional producer
(:class:`~kafkalab.client.in_process_txn.TxnProducer`). The learner begins a transaction, sends
to a partition, commits or aborts, crashes the producer (it stops sending; the coordinator does
not know), restarts the broker and with it the coordinator (which reloads its state from
``__transaction_state``), restarts the producer (a new instance with the same ``transactional.id``: InitProducerId
fences the old epoch and aborts its open transaction) and advances time past
``transaction.timeout.ms`` (the coordinator aborts on its own). After each step the lab takes a
:class:`Sample`: the coordinator's state for the transactional id, and per partition the high
watermark and the last stable offset (ListOffsets with each isolation level) and the markers
found in the log. :func:`timeline` is pure data (tested); :func:`figure` draws it: the
coordinator's state as a band along the top, HW (solid) and LSO (dashed) per partition below,
each marker as a triangle at the step it landed.

Worked example (:func:`scenario`): send 2 records to partition 0 and 1 to partition 1, so the HWs
are 2 and 1 and both LSOs stay 0 (the open transaction's first offsets); commit: a COMMIT marker
lands in each partition (offsets 2 and 1), and both LSOs jump to the HWs, 3 and 2. The next
transaction sends to partition 0, the producer crashes, and after the timeout the coordinator
writes an ABORT marker at offset 4: HW and LSO 5.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkalab.client.in_process import InProcessBroker
from kafkalab.client.in_process_txn import READ_COMMITTED, READ_UNCOMMITTED, TxnProducer, fetch, list_offset
from kafkalab.errors import ErrorCode

TOPIC = "orders"
PARTITIONS = 2
TRANSACTIONAL_ID = "app-1"
TIMEOUT_MS = 10_000  # transaction.timeout.ms, short so "advance" shows the abort
START_MS = 1_700_000_000_000
STEPS_MAX = 500  # a bug guard on the timeline's length
STATE_COLOURS = {"Empty": "#bab0ac", "Ongoing": "#4c78a8", "PrepareCommit": "#72b7b2",
                 "PrepareAbort": "#ff9da6", "CompleteCommit": "#54a24b", "CompleteAbort": "#e45756",
                 "PrepareEpochFence": "#f58518", "Dead": "#000000", "none": "#ffffff"}
PARTITION_COLOURS = ("#4c78a8", "#f58518", "#54a24b", "#b279a2")


@dataclass(frozen=True, slots=True)
class PartitionSample:
    partition: int
    high_watermark: int
    last_stable_offset: int


@dataclass(frozen=True, slots=True)
class MarkerLanded:
    """A COMMIT or ABORT marker at ``offset`` of ``partition``, first seen at step ``step``."""

    step: int
    partition: int
    offset: int
    kind: str


@dataclass(frozen=True, slots=True)
class Sample:
    """The state after one step: what was done, its answer, the coordinator's state, partitions."""

    step: int
    time_ms: int
    action: str
    answer: str
    coordinator_state: str
    partitions: tuple[PartitionSample, ...]


@dataclass(frozen=True, slots=True)
class Timeline:
    samples: tuple[Sample, ...]
    markers: tuple[MarkerLanded, ...]

    def states(self) -> list[str]:
        return [s.coordinator_state for s in self.samples]


def timeline(samples: Sequence[Sample], markers: Sequence[MarkerLanded]) -> Timeline:
    return Timeline(tuple(samples), tuple(sorted(markers, key=lambda m: (m.step, m.partition))))


class TxnLab:
    """A broker, a topic and one transactional producer, stepped by hand. Not thread-safe."""

    def __init__(self, data_dir: Path, *, timeout_ms: int = TIMEOUT_MS) -> None:
        self.data_dir = data_dir
        self.broker = InProcessBroker(data_dir, start_ms=START_MS)
        self.broker.create_topic(TOPIC, PARTITIONS)
        self.timeout_ms = timeout_ms
        self.producer = TxnProducer(self.broker, TRANSACTIONAL_ID, timeout_ms=timeout_ms)
        self.crashed = False
        self.in_txn: set[int] = set()
        self._samples: list[Sample] = []
        self._markers: dict[tuple[int, int], MarkerLanded] = {}
        self._record("InitProducerId", self.producer.init())

    def coordinator_state(self) -> str:
        _, metadata = self.broker.broker.txn_coordinator.describe(TRANSACTIONAL_ID)
        return "none" if metadata is None else metadata.state.value

    def begin(self) -> None:
        """``beginTransaction()``: the producer only notes it; nothing is sent, the coordinator
        learns of the transaction at the first AddPartitionsToTxn."""
        self._record("begin (nothing sent)" if not self.crashed else "begin (producer crashed)", None)

    def send(self, partition: int, count: int = 1) -> None:
        """AddPartitionsToTxn (first write to the partition), then one batch of ``count`` records."""
        if self.crashed:
            return self._record("send (producer crashed)", None)
        if partition not in self.in_txn:
            added = self.producer.add_partitions(TOPIC, [partition])
            if added:
                return self._record(f"AddPartitionsToTxn p{partition}", added)
            self.in_txn.add(partition)
        values = [f"{self.producer.epoch}-{i}".encode() for i in range(count)]
        self._record(f"Produce {count} to p{partition}", self.producer.produce(TOPIC, partition, values).error)

    def end(self, *, commit: bool) -> None:
        if self.crashed:
            return self._record("EndTxn (producer crashed)", None)
        self.in_txn.clear()
        self._record("EndTxn(commit)" if commit else "EndTxn(abort)", self.producer.end(commit=commit))

    def crash(self) -> None:
        """The producer process dies: it sends nothing more; the coordinator is not told."""
        self.crashed = True
        self._record("producer crashes", None)

    def restart(self) -> None:
        """A new producer with the same transactional.id: InitProducerId until it is answered
        (CONCURRENT_TRANSACTIONS while the old transaction's abort completes)."""
        self.producer = TxnProducer(self.broker, TRANSACTIONAL_ID, timeout_ms=self.timeout_ms)
        self.crashed = False
        self.in_txn.clear()
        answer = self.producer.init()
        for _ in range(10):
            if answer != ErrorCode.CONCURRENT_TRANSACTIONS:
                break
            self.broker.advance(100)  # the client's retry.backoff.ms
            answer = self.producer.init()
        self._record(f"InitProducerId (epoch {self.producer.epoch})", answer)

    def restart_broker(self) -> None:
        """The broker -- and with it the coordinator -- stops and starts again on the same
        directory: the coordinator reloads ``__transaction_state``, each partition rebuilds its
        producer state and LSO from the log. The producer keeps its id and epoch."""
        now_ms = self.broker.now_ms()
        self.broker.close()
        self.broker = InProcessBroker(self.data_dir, start_ms=now_ms)
        self.producer.broker = self.broker
        self._record("broker restarts", None)

    def advance(self, delta_ms: int) -> None:
        self.broker.advance(delta_ms)
        self._record(f"advance {delta_ms / 1000:g} s", None)

    def _record(self, action: str, answer: ErrorCode | None) -> None:
        if len(self._samples) >= STEPS_MAX:
            raise RuntimeError(f"the transaction lab stops at {STEPS_MAX} steps")
        step = len(self._samples)
        partitions = []
        for p in range(PARTITIONS):
            partitions.append(PartitionSample(p, list_offset(self.broker, TOPIC, p, READ_UNCOMMITTED),
                                              list_offset(self.broker, TOPIC, p, READ_COMMITTED)))
            for record in fetch(self.broker, TOPIC, p).records:
                if record.marker is not None and (p, record.offset) not in self._markers:
                    self._markers[(p, record.offset)] = MarkerLanded(step, p, record.offset, record.marker)
        self._samples.append(Sample(step, self.broker.now_ms(), action, "-" if answer is None else answer.name,
                                    self.coordinator_state(), tuple(partitions)))

    def timeline(self) -> Timeline:
        return timeline(self._samples, list(self._markers.values()))

    def close(self) -> None:
        self.broker.close()


def scenario(data_dir: Path) -> TxnLab:
    """The worked example: a committed transaction over two partitions, then one that hangs
    because its producer crashed, aborted by the coordinator after the timeout."""
    lab = TxnLab(data_dir)
    lab.send(0, 2)
    lab.send(1, 1)
    lab.end(commit=True)
    lab.send(0, 1)
    lab.crash()
    lab.advance(TIMEOUT_MS + 1_000)
    return lab


def figure(line: Timeline, title: str = "") -> Any:
    """The coordinator's state per step (top band); HW (solid) and LSO (dashed) per partition."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(11, 5.2), sharex=True,
                                      gridspec_kw={"height_ratios": [1, 3]})
    steps = [s.step for s in line.samples]
    for sample in line.samples:
        top.broken_barh([(sample.step - 0.5, 1)], (0, 1), color=STATE_COLOURS[sample.coordinator_state])
        top.text(sample.step, 0.5, sample.coordinator_state, ha="center", va="center", fontsize=7, rotation=20)
    top.set_yticks([])
    top.set_title(title or f"transactional.id {TRANSACTIONAL_ID!r}: the coordinator's state after each step",
                  fontsize=10)
    partitions = [p.partition for p in line.samples[0].partitions] if line.samples else []
    for index, partition in enumerate(partitions):
        colour = PARTITION_COLOURS[index % len(PARTITION_COLOURS)]
        bottom.step(steps, [s.partitions[index].high_watermark for s in line.samples], where="mid",
                    color=colour, label=f"p{partition} HW")
        bottom.step(steps, [s.partitions[index].last_stable_offset for s in line.samples], where="mid",
                    color=colour, linestyle="--", label=f"p{partition} LSO")
        for marker in (m for m in line.markers if m.partition == partition):
            bottom.plot(marker.step, marker.offset, "^" if marker.kind == "COMMIT" else "v", color=colour,
                        markersize=10, markeredgecolor="black")
            bottom.annotate(f"{marker.kind} @{marker.offset}", (marker.step, marker.offset),
                            textcoords="offset points", xytext=(6, -10), fontsize=7)
    bottom.set_xticks(steps, [s.action for s in line.samples], rotation=35, ha="right", fontsize=7)
    bottom.yaxis.set_major_locator(MaxNLocator(integer=True))
    bottom.set_ylabel("offset")
    bottom.legend(loc="upper left", fontsize=7)
    fig.tight_layout()
    return fig


def summary(line: Timeline) -> str:
    """The latest step in words: action, answer, the coordinator's state, HW and LSO, markers."""
    last = line.samples[-1]
    parts = "; ".join(f"p{p.partition}: HW {p.high_watermark}, LSO {p.last_stable_offset}" for p in last.partitions)
    markers = ", ".join(f"{m.kind} in p{m.partition} at {m.offset}" for m in line.markers) or "none"
    return (f"step {last.step} ({last.action}, answer {last.answer}): coordinator {last.coordinator_state}; "
            f"{parts}; markers so far: {markers}.")


def live(lab: TxnLab) -> Any:
    """Buttons for each step; redraws the timeline after each."""
    import ipywidgets as widgets

    from kafkalab.book import keep_for_widgets
    from kafkalab.viz._display import FigurePanel, action_buttons

    keep_for_widgets(lab.data_dir)  # a reader may come back to the widget after the last cell
    partition = widgets.Dropdown(options=list(range(PARTITIONS)), value=0, description="partition")
    panel = FigurePanel()

    def redraw() -> None:
        line = lab.timeline()
        panel.show(figure(line), summary(line))

    actions: dict[str, Callable[[], object]] = {
        "begin": lab.begin,
        "send": lambda: lab.send(partition.value),
        "commit": lambda: lab.end(commit=True),
        "abort": lambda: lab.end(commit=False),
        "crash producer": lab.crash,
        "restart producer": lab.restart,
        "restart broker": lab.restart_broker,
        "advance past timeout": lambda: lab.advance(lab.timeout_ms + 1_000),
    }

    buttons = action_buttons(actions, redraw)
    redraw()
    controls = widgets.HBox([partition, *buttons], layout=widgets.Layout(flex_flow="row wrap"))
    box = widgets.VBox([controls, panel.widget])
    box.add_class("kafkalab-transactions-widget")
    return box


def show_transactions(data_dir: Path) -> Any:
    """Display the widget (or, with ``KAFKALAB_STATIC_WIDGETS=1``, the :func:`scenario` figure)."""
    from kafkalab.viz._display import show_lab

    return show_lab(lambda: live(TxnLab(data_dir)), lambda: scenario(data_dir), lambda lab: figure(lab.timeline()))


__all__ = ["MarkerLanded", "PartitionSample", "Sample", "Timeline", "TxnLab", "figure", "live", "scenario",
           "show_transactions", "summary", "timeline"]
