"""Widget: batches fill per partition under ``linger.ms`` and ``batch.size``; the sender drains them.

Theory of operation
-------------------
:func:`simulate` runs kafkalab's real producer (:class:`~kafkalab.sim.producer.SimProducer`)
against a three-broker :class:`~kafkalab.sim.cluster.SimCluster` with a three-partition topic
(one leader per broker), sending records at a steady rate, keyed or keyless. It steps the
simulation one millisecond at a time and looks into the producer's
:class:`~kafkalab.client.producer.accumulator.RecordAccumulator`: a batch seen in a partition's
queue is *open*; when it leaves the queue the sender has *drained* it into a Produce request.
The result is an :class:`AccumulatorTimeline` (pure data, tested): one :class:`BatchSpan` per
batch -- partition, open and drain times, bytes, records, and whether it left full or because
``linger.ms`` ran out -- and the Produce requests, each with its time and broker.
:func:`figure` draws a bar per batch per partition (the darker, the fuller) and a tick per
request below.

Worked example (keyless, 1 KiB values, 2,000 records/s, ``batch.size`` 16384): with
``linger.ms`` 0 every batch leaves after one or two records, the moment the sender looks
(about one request per two records); with ``linger.ms`` 20 a batch collects 15 records,
fills, and leaves early; the 16th record opens a new batch and the sticky partitioner moves to
another partition (KIP-794), so the bars take turns across partitions, and that 16th record
waits out the whole ``linger.ms`` alone in its batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkalab.client.producer.producer import ProducerRecord
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.sim.cluster import SimCluster
from kafkalab.sim.producer import SimProducer

TOPIC = "clicks"
PARTITIONS = 3
DURATION_MS_MAX = 2_000  # one run is stepped a millisecond at a time: keep a redraw quick
RATE_MAX = 20_000  # records per second: beyond it a run builds too many Python objects to be snappy
FIGURE_DPI = 100
PARTITION_COLOURS = ("#4c78a8", "#f58518", "#54a24b")


@dataclass(frozen=True, slots=True)
class BatchSpan:
    """One batch: open from ``opened_ms`` until the sender drained it (None: still open)."""

    partition: int
    opened_ms: int
    drained_ms: int | None
    size_bytes: int
    records: int
    full: bool


@dataclass(frozen=True, slots=True)
class AccumulatorTimeline:
    """What :func:`simulate` saw; times are milliseconds since the first record."""

    linger_ms: int
    batch_size: int
    records_per_s: int
    keyed: bool
    spans: tuple[BatchSpan, ...]
    requests: tuple[tuple[int, int, int], ...]  # (time ms, broker, batches in the request)

    def drained(self) -> list[BatchSpan]:
        return [s for s in self.spans if s.drained_ms is not None]

    def mean_records_per_batch(self) -> float:
        drained = self.drained()
        return sum(s.records for s in drained) / len(drained) if drained else 0.0


def _workload(records_per_s: int, now_ms: int) -> int:
    """How many records the steady workload sends in millisecond ``now_ms``."""
    return (records_per_s * (now_ms + 1)) // 1000 - (records_per_s * now_ms) // 1000


def simulate(data_dir: Path, *, linger_ms: int, batch_size: int = 16_384, records_per_s: int = 2_000,
             value_bytes: int = 1024, keyed: bool = False, duration_ms: int = 200, seed: int = 7
             ) -> AccumulatorTimeline:
    """Run the workload for ``duration_ms`` and record every batch's life (see the module doc)."""
    duration_ms = min(duration_ms, DURATION_MS_MAX)
    records_per_s = min(records_per_s, RATE_MAX)
    cluster = SimCluster(data_dir, nodes=3, seed=seed)
    try:
        cluster.create_topic(TOPIC, PARTITIONS, 1)
        producer = SimProducer(cluster, {"linger.ms": linger_ms, "batch.size": batch_size, "acks": "1"}, seed=seed)
        producer.send(ProducerRecord(TOPIC, b"warm-up", partition=0)).get()
        start_ms, first_request = cluster.clock.milliseconds(), len(producer.sent)
        value = bytes(value_bytes)
        seen: dict[int, _Seen] = {}  # by id(batch)
        drained: list[BatchSpan] = []
        for now_ms in range(duration_ms):
            for index in range(_workload(records_per_s, now_ms)):
                key = f"user-{(now_ms * 7 + index) % 50}".encode() if keyed else None
                producer.send(ProducerRecord(TOPIC, value, key=key))
            _look(producer, seen, drained, now_ms, batch_size)
            cluster.run_for(1)
        _look(producer, seen, drained, duration_ms, batch_size)
        still_open = [_span(entry, None) for entry in seen.values()]
        requests = tuple((r_ms, node, count) for r_ms, node, count in _requests(producer, first_request, start_ms))
        return AccumulatorTimeline(linger_ms, batch_size, records_per_s, keyed,
                                   tuple(sorted(drained + still_open, key=lambda s: (s.opened_ms, s.partition))),
                                   requests)
    finally:
        cluster.close()


@dataclass(slots=True)
class _Seen:
    """A batch as last seen in its queue: when it appeared, and whether it was full by then."""

    opened_ms: int
    batch: Any
    full: bool = False


def _look(producer: SimProducer, seen: dict[int, _Seen], drained: list[BatchSpan], now_ms: int,
          batch_size: int) -> None:
    """Note batches that appeared in the queues, and turn those that left into spans."""
    queues = producer.core.accumulator.batches.values()
    queued = {id(b): (b, b.is_full(batch_size) or b is not queue[-1])
              for queue in queues for b in queue if b.attempts == 0}
    for key in [k for k in seen if k not in queued]:
        drained.append(_span(seen.pop(key), now_ms))
    for key, (batch, full) in queued.items():
        entry = seen.setdefault(key, _Seen(now_ms, batch))
        entry.full = full


def _span(entry: _Seen, drained_ms: int | None) -> BatchSpan:
    batch = entry.batch
    return BatchSpan(batch.partition, entry.opened_ms, drained_ms, batch.size_bytes, batch.record_count, entry.full)


def _requests(producer: SimProducer, first: int, start_ms: int) -> list[tuple[int, int, int]]:
    """(time, broker, batches) of each Produce request, from the producer's log of requests."""
    out = []
    for request, sent_ms in zip(producer.sent[first:], producer.sent_ms[first:]):
        if request.api_key == ApiKey.PRODUCE:
            batches = sum(len(t["partition_data"]) for t in request.body["topic_data"])
            out.append((sent_ms - start_ms, request.node_id, batches))
    return out


def figure(line: AccumulatorTimeline, title: str = "") -> Any:
    """A bar per batch per partition, darker when fuller; a tick per Produce request below."""
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(12, 4.8), sharex=True,
                                      gridspec_kw={"height_ratios": [3, 1]})
    end_ms = max([s.drained_ms or 0 for s in line.spans] + [r[0] for r in line.requests] + [1])
    lanes: dict[int, int] = {}
    for span in line.spans:  # consecutive batches of a partition alternate between two lanes
        lane = lanes[span.partition] = 1 - lanes.get(span.partition, 1)
        finish = span.drained_ms if span.drained_ms is not None else end_ms
        fill = min(1.0, span.size_bytes / line.batch_size)
        bottom_y = span.partition - 0.38 + lane * 0.4
        top.broken_barh([(span.opened_ms, max(finish - span.opened_ms, 0.6))], (bottom_y, 0.36),
                        color=PARTITION_COLOURS[span.partition % len(PARTITION_COLOURS)],
                        alpha=0.25 + 0.75 * fill, edgecolor="black" if span.full else "white", linewidth=0.8)
        if finish - span.opened_ms >= 0.012 * end_ms:
            top.text((span.opened_ms + finish) / 2, bottom_y + 0.18, str(span.records), va="center",
                     ha="center", fontsize=7)
    top.set_yticks(range(PARTITIONS), [f"{TOPIC}-{p}" for p in range(PARTITIONS)])
    top.set_ylim(-0.6, PARTITIONS - 0.4)
    top.set_title(title or (f"batches per partition: linger.ms={line.linger_ms}, batch.size={line.batch_size}, "
                            f"{line.records_per_s} records/s, {'keyed' if line.keyed else 'keyless'} "
                            f"(numbers: records; outlined: left full)"), fontsize=10)
    for time_ms, _node, batches in line.requests:
        bottom.vlines(time_ms, 0, batches, color="#555555")
    bottom.set_ylim(0, max([b for _, _, b in line.requests] + [1]) + 0.5)
    bottom.set_ylabel("batches\nper request", fontsize=8)
    bottom.set_xlabel("simulated time since the first record (ms)")
    fig.tight_layout()
    return fig


def summary(line: AccumulatorTimeline, linger_ms: int, batch_size: int) -> str:
    """The run in words: requests sent and records per batch."""
    return (f"linger.ms={linger_ms}, batch.size={batch_size}: {len(line.requests)} Produce requests, "
            f"{line.mean_records_per_batch():.1f} records per batch on average.")


def live(data_dir: Path) -> Any:
    """Sliders for ``linger.ms``, ``batch.size`` and the rate; each change runs the simulation again."""
    import ipywidgets as widgets

    from kafkalab.book import keep_for_widgets
    from kafkalab.viz._display import FigurePanel

    keep_for_widgets(data_dir)  # a reader may come back to the widget after the last cell
    linger = widgets.IntSlider(value=5, min=0, max=100, description="linger.ms", continuous_update=False)
    batch_size = widgets.IntSlider(value=16_384, min=1_024, max=65_536, step=1_024, description="batch.size",
                                   continuous_update=False)
    rate = widgets.IntSlider(value=2_000, min=100, max=RATE_MAX, step=100, description="records/s",
                             continuous_update=False)
    keyed = widgets.Checkbox(value=False, description="keyed records")
    panel = FigurePanel(dpi=FIGURE_DPI)
    runs = iter(range(1_000_000))

    def redraw(_change: object = None) -> None:
        line = simulate(data_dir / f"run-{next(runs)}", linger_ms=linger.value, batch_size=batch_size.value,
                        records_per_s=rate.value, keyed=keyed.value)
        panel.show(figure(line), summary(line, linger.value, batch_size.value))

    for control in (linger, batch_size, rate, keyed):
        control.observe(redraw, names="value")
    redraw()
    box = widgets.VBox([widgets.HBox([linger, batch_size]), widgets.HBox([rate, keyed]), panel.widget])
    box.add_class("kafkalab-accumulator-widget")
    return box


def show_accumulator(data_dir: Path) -> Any:
    """Display the widget (or, with ``KAFKALAB_STATIC_WIDGETS=1``, ``linger.ms`` 0 beside 20)."""
    from kafkalab.viz import show

    def static() -> Any:
        return figure(simulate(data_dir / "static", linger_ms=20))

    def start() -> Any:
        return live(data_dir)

    return show(start, static)


__all__ = ["AccumulatorTimeline", "BatchSpan", "figure", "live", "show_accumulator", "simulate"]
