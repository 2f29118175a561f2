"""Figures for chapter 15, "Why Kafka is fast (measured)": one figure per measurement.

Theory of operation
-------------------
:mod:`kafkalab.bench.measure` takes the measurements and returns plain data; this module turns
each result into a matplotlib figure *and* a one-sentence summary computed from the same data.
:func:`show_measurement` displays the pair the way every kafkalab figure is displayed: live, as
a :class:`~kafkalab.viz._display.FigurePanel` whose image carries the summary as its alt text
and shows it as a caption; static (``KAFKALAB_STATIC_WIDGETS=1``, as under nbval), as the
figure followed by the summary printed beneath it. A reader who cannot see the plot reads the
same numbers the plot shows.

Worked example: ``batching_figure`` of four :class:`~kafkalab.bench.measure.BatchingPoint`
runs (1, 10, 100 and 1,000 records per batch) draws microseconds per record against records
per batch on log axes, one line for encoding and one for appending, beside a bar chart of bytes
per record (170 alone in a batch, about 111 in a batch of 1,000), and summarises, with one
run's numbers: "Appending: 7.28 µs per record in batches of 1, 0.20 µs in batches of 1,000
(37x less); encoding: 8.90 µs per record in batches of 1, 2.90 µs in batches of 1,000 (3x
less). On disk: 170 bytes per record against 111."

Summaries print measured numbers, which differ from run to run, so the book tags the cells
that show them ``nbval-ignore-output``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kafkalab.bench.measure import (
    MIB,
    AccessPatternRun,
    BatchingPoint,
    CodecRun,
    CopyRun,
    LookupRun,
    PageCacheRun,
    ParallelRun,
    RequestPathPoint,
)

FIGURE_SIZE = (9.0, 3.4)  # two panels side by side, readable in a notebook column
FIGURE_DPI = 90


def show_measurement(figure: Any, summary: str) -> Any:
    """Display ``figure`` with ``summary``: a FigurePanel live, the figure and the printed
    summary in static mode. Returns what was displayed."""
    from IPython.display import display

    from kafkalab.viz._display import FigurePanel, static_widgets

    if static_widgets():
        import matplotlib.pyplot as plt

        display(figure)
        plt.close(figure)
        print(summary)
        return figure
    panel = FigurePanel(dpi=FIGURE_DPI)
    panel.show(figure, summary)
    display(panel.widget)
    return panel.widget


def _axes(panels: int = 2) -> tuple[Any, Any]:
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, panels, figsize=FIGURE_SIZE, layout="constrained")
    return figure, axes


def _bars(ax: Any, labels: Sequence[str], values: Sequence[float], ylabel: str, title: str,
          fmt: str = "{:.3g}") -> None:
    bars = ax.bar(labels, values, color=[f"C{i}" for i in range(len(labels))])
    ax.bar_label(bars, labels=[fmt.format(v) for v in values], fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.margins(y=0.15)


def _log_axes(ax: Any, sizes: Sequence[int], **labels: str) -> None:
    """Log scales on both axes, a tick at each measured size, and ticks written as plain
    numbers (1,000 rather than 10^3); minor ticks unlabelled."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set(xscale="log", yscale="log", **labels)
    ax.set_xticks(list(sizes))
    ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    plain = FuncFormatter(lambda value, _position: f"{value:,g}")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(plain)
        axis.set_minor_formatter(NullFormatter())


def _mb_s(file_bytes: int, seconds: float) -> float:
    return file_bytes / MIB / seconds


def batching_figure(points: Sequence[BatchingPoint]) -> tuple[Any, str]:
    figure, (left, right) = _axes()
    sizes = [point.records_per_batch for point in points]
    for share in ("encode", "append"):
        left.plot(sizes, [p.microseconds_per_record(share) for p in points], marker="o", label=share)
    _log_axes(left, sizes, xlabel="records per batch", ylabel="µs per record")
    left.set_title("time per record", fontsize=10)
    left.legend()
    _bars(right, [str(s) for s in sizes], [p.bytes_per_record for p in points], "bytes per record",
          "bytes on disk per record", "{:.0f}")
    right.set_xlabel("records per batch")
    first, last = points[0], points[-1]
    shares = []
    for share, verb in (("append", "Appending"), ("encode", "encoding")):
        alone, batched = first.microseconds_per_record(share), last.microseconds_per_record(share)
        shares.append(f"{verb}: {alone:.2f} µs per record in batches of {first.records_per_batch}, "
                      f"{batched:.2f} µs in batches of {last.records_per_batch:,} ({alone / batched:.0f}x less)")
    summary = ("; ".join(shares) + f". On disk: {first.bytes_per_record:.0f} bytes per record against "
               f"{last.bytes_per_record:.0f}.")
    return figure, summary


def compression_figure(runs: Sequence[CodecRun]) -> tuple[Any, str]:
    figure, (left, right) = _axes()
    names = [run.codec for run in runs]
    _bars(left, names, [run.ratio for run in runs], "times smaller", "compression ratio", "{:.1f}x")
    width = 0.4
    xs = range(len(runs))
    right.bar([x - width / 2 for x in xs], [run.build_seconds * 1e3 for run in runs], width, label="build batches")
    right.bar([x + width / 2 for x in xs], [run.decode_seconds * 1e3 for run in runs], width, label="decode")
    right.set_xticks(list(xs), names)
    right.set_ylabel("ms for all records")
    right.set_title("CPU time (same records)", fontsize=10)
    right.legend(fontsize=8)
    best = max(runs, key=lambda run: run.ratio)
    plain = next((run for run in runs if run.codec == "none"), runs[0])
    summary = (f"{plain.uncompressed_bytes:,} bytes of batches; " + ", ".join(
        f"{run.codec} {run.ratio:.1f}x smaller, built in {run.build_seconds * 1e3:.1f} ms, "
        f"decoded in {run.decode_seconds * 1e3:.1f} ms" for run in runs)
        + f". Smallest: {best.codec}.")
    return figure, summary


def page_cache_figure(run: PageCacheRun) -> tuple[Any, str]:
    figure, ax = _axes(1)
    labels = ["right after writing", "after DONTNEED", "read again"]
    rates = [_mb_s(run.file_bytes, s) for s in (run.after_write_seconds, run.after_drop_seconds, run.reread_seconds)]
    _bars(ax, labels, rates, "MiB/s", f"reading one {run.file_bytes // MIB} MiB file three times", "{:,.0f}")
    dropped = "" if run.dropped else " (posix_fadvise is not available here: nothing was dropped)"
    summary = (f"Reading {run.file_bytes // MIB} MiB right after writing it: {rates[0]:,.0f} MiB/s; "
               f"after asking the kernel to drop its pages: {rates[1]:,.0f} MiB/s; read again: "
               f"{rates[2]:,.0f} MiB/s{dropped}.")
    return figure, summary


def access_pattern_figure(run: AccessPatternRun) -> tuple[Any, str]:
    figure, (left, right) = _axes()
    size = run.file_bytes
    cached = [_mb_s(size, run.sequential_cached_seconds), _mb_s(size, run.random_cached_seconds)]
    cold = [_mb_s(size, run.sequential_cold_seconds), _mb_s(size, run.random_cold_seconds)]
    _bars(left, ["in order", "shuffled"], cached, "MiB/s", "pages in the page cache", "{:,.0f}")
    _bars(right, ["in order", "shuffled"], cold, "MiB/s", "pages dropped first (cold)", "{:,.0f}")
    summary = (f"{size // MIB} MiB read as {run.page_bytes:,}-byte preads. Cached: in order "
               f"{cached[0]:,.0f} MiB/s, shuffled {cached[1]:,.0f} MiB/s. Cold: in order {cold[0]:,.0f} "
               f"MiB/s, shuffled {cold[1]:,.0f} MiB/s ({cold[0] / cold[1]:.0f}x slower).")
    return figure, summary


def copy_figure(runs: Sequence[CopyRun]) -> tuple[Any, str]:
    figure, (left, right) = _axes()
    names = [run.method for run in runs]
    _bars(left, names, [_mb_s(run.file_bytes, run.seconds) for run in runs], "MiB/s", "into a socket", "{:,.0f}")
    _bars(right, names, [run.user_space_bytes / MIB for run in runs], "MiB",
          "bytes through the sender's memory", "{:,.0f}")
    summary = f"Sending a cached {runs[0].file_bytes // MIB} MiB file into a local socket: " + "; ".join(
        f"{run.method} {_mb_s(run.file_bytes, run.seconds):,.0f} MiB/s, {run.cpu_seconds * 1e3:.0f} ms "
        f"of CPU, {run.user_space_bytes // MIB} MiB through user space" for run in runs) + "."
    return figure, summary


def lookup_figure(run: LookupRun) -> tuple[Any, str]:
    figure, (left, right) = _axes()
    per_lookup_us = [run.index_seconds * 1e6 / run.lookups, run.scan_seconds * 1e6 / run.lookups]
    scanned_kib = [run.index_bytes_scanned / 1024 / run.lookups, run.scan_bytes_scanned / 1024 / run.lookups]
    _bars(left, ["offset index", "scan"], per_lookup_us, "µs per lookup", "time", "{:,.1f}")
    _bars(right, ["offset index", "scan"], scanned_kib, "KiB per lookup", "batch bytes read", "{:,.0f}")
    for ax in (left, right):
        ax.set_yscale("log")
    summary = (f"{run.lookups} random offsets in a {run.segment_bytes / MIB:.1f} MiB segment: the index "
               f"answers in {per_lookup_us[0]:,.1f} µs reading {scanned_kib[0]:,.1f} KiB per lookup; "
               f"a scan from byte 0 takes {per_lookup_us[1]:,.0f} µs and reads {scanned_kib[1]:,.0f} KiB.")
    return figure, summary


def parallel_figure(run: ParallelRun) -> tuple[Any, str]:
    figure, ax = _axes(1)
    labels = ["one after another", f"{run.partitions} threads", f"{run.processes} processes"]
    seconds = [run.serial_seconds, run.threads_seconds, run.processes_seconds]
    _bars(ax, labels, [s * 1e3 for s in seconds], "ms", f"decoding {run.partitions} partitions "
          f"({run.records:,} records)", "{:,.0f}")
    summary = (f"Decoding {run.records:,} records in {run.partitions} partitions: one after another "
               f"{seconds[0] * 1e3:,.0f} ms, {run.partitions} threads {seconds[1] * 1e3:,.0f} ms "
               f"({seconds[0] / seconds[1]:.1f}x), keeping {run.threads_cores:.2f} cores busy; "
               f"{run.processes} processes {seconds[2] * 1e3:,.0f} ms ({seconds[0] / seconds[2]:.1f}x).")
    return figure, summary


def request_path_figure(points: Sequence[RequestPathPoint]) -> tuple[Any, str]:
    figure, (left, right) = _axes()
    sizes = [point.records_per_request for point in points]
    left.plot(sizes, [p.records_per_second for p in points], marker="o")
    _log_axes(left, sizes, xlabel="records per ProduceRequest", ylabel="records per second")
    left.set_title("throughput", fontsize=10)
    right.plot(sizes, [p.microseconds_per_request for p in points], marker="o", color="C1")
    _log_axes(right, sizes, xlabel="records per ProduceRequest", ylabel="µs per request")
    right.set_title("round trip per request", fontsize=10)
    first, last = points[0], points[-1]
    summary = (f"{first.records:,} records, one request in flight: {first.records_per_second:,.0f} records/s "
               f"at {first.records_per_request} per request ({first.microseconds_per_request:,.0f} µs each), "
               f"{last.records_per_second:,.0f} records/s at {last.records_per_request:,} per request "
               f"({last.microseconds_per_request:,.0f} µs each): "
               f"{last.records_per_second / first.records_per_second:.0f}x the throughput.")
    return figure, summary
