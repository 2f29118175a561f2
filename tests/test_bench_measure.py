"""The measurements behind chapter 15 (kafkalab.bench.measure) and their figures, on small sizes.

Timings are never asserted (they depend on the machine); what each measurement counts -- bytes
on disk, bytes scanned, bytes sent, records decoded, pages cached -- is, against kafka-python's
batch builder or the kernel where there is an oracle outside kafkalab.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkalab.bench import measure
from kafkalab.records import build_batch
from kafkalab.viz import fast


def _kafka_python_batch_bytes(records: list) -> int:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for delta, record in enumerate(records):
        builder.append(delta, record.timestamp, record.key, record.value, [])
    return len(builder.build())


def test_batching_counts_the_bytes_kafka_python_would_write(tmp_path: Path) -> None:
    points = measure.batching(tmp_path, records_total=200, batch_sizes=(1, 100), repeats=1)
    records = measure.sample_records(200)
    alone, batched = points
    assert alone.bytes_on_disk == sum(_kafka_python_batch_bytes([r]) for r in records) == 200 * 170
    assert batched.bytes_on_disk == sum(_kafka_python_batch_bytes(records[i:i + 100]) for i in (0, 100))
    assert alone.encode_seconds > 0 and alone.append_seconds > 0
    assert batched.bytes_per_record < alone.bytes_per_record


def test_compression_ratio_is_the_uncompressed_size_over_the_batch_size() -> None:
    runs = {run.codec: run for run in measure.compression(records_total=200, records_per_batch=100)}
    assert set(runs) == {"none", "gzip", "snappy", "lz4", "zstd"}
    assert runs["none"].ratio == 1.0
    plain = sum(len(build_batch(measure.sample_records(200)[i:i + 100])) for i in (0, 100))
    assert runs["gzip"].uncompressed_bytes == plain
    assert all(run.ratio > 1.5 for name, run in runs.items() if name != "none")  # JSON-like text


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mincore and DONTNEED as Linux has them")
def test_page_cache_holds_a_fresh_write_and_drops_it_when_asked(tmp_path: Path) -> None:
    path = measure.write_file(tmp_path / "f.bin", 2 * measure.MIB)
    assert measure.resident_share(path) == 1.0
    assert measure.drop_from_page_cache(path)
    after_drop = measure.resident_share(path)
    assert measure.read_sequentially(path) == 2 * measure.MIB
    assert measure.resident_share(path) == 1.0
    if after_drop == 1.0:
        pytest.skip("the kernel kept the pages (a memory file system such as tmpfs)")
    assert after_drop < 0.5


def test_read_pages_reads_each_page_named(tmp_path: Path) -> None:
    path = measure.write_file(tmp_path / "f.bin", 64 * 1024)
    assert measure.read_pages(path, [3, 0, 15]) == 3 * measure.PAGE_BYTES
    assert measure.read_pages(path, [16]) == 0  # past the end: an empty read


def test_sendfile_and_read_write_send_the_whole_file(tmp_path: Path) -> None:
    if not hasattr(os, "sendfile"):
        pytest.skip("no os.sendfile on this platform")
    runs = {run.method: run for run in measure.sendfile_vs_read_write(tmp_path, measure.MIB + 5, repeats=1)}
    assert {run.file_bytes for run in runs.values()} == {measure.MIB + 5}
    assert runs["sendfile"].user_space_bytes == 0
    assert runs["read+write"].user_space_bytes == measure.MIB + 5
    assert not list(tmp_path.iterdir())


def test_scan_for_offset_walks_batch_headers() -> None:
    records = measure.sample_records(30)
    batches = [build_batch(records[i:i + 10]) for i in (0, 10, 20)]
    data = b"".join(batches)
    first, second = len(batches[0]), len(batches[0]) + len(batches[1])
    assert [measure.scan_for_offset(data, o) for o in (0, 9, 10, 29)] == [0, 0, first, second]
    assert measure.scan_for_offset(data, 30) == -1


@pytest.mark.parametrize(("interval", "most_batches"), [(4096, 6), (1024, 2)])
def test_index_reads_a_few_batches_where_a_scan_reads_half_the_segment(
        tmp_path: Path, interval: int, most_batches: int) -> None:
    run = measure.index_vs_scan(tmp_path, records_total=5_000, lookups=20, index_interval_bytes=interval)
    batch_bytes = len(build_batch(measure.sample_records(10)))
    assert run.segment_bytes == 500 * batch_bytes
    assert run.lookups * batch_bytes <= run.index_bytes_scanned <= run.lookups * most_batches * batch_bytes
    assert run.scan_bytes_scanned > 20 * run.index_bytes_scanned


def test_partitions_in_parallel_decodes_every_record(tmp_path: Path) -> None:
    run = measure.partitions_in_parallel(tmp_path, partitions=2, records_per_partition=200, processes=1, repeats=1)
    assert (run.partitions, run.records, run.processes) == (2, 400, 1)
    assert run.threads_cores > 0


@pytest.mark.parametrize(("ratio", "edges", "unit", "expected"), [
    (1.99, (2, 5), "x", "under 2x"), (2.0, (2, 5), "x", "2x to 5x"), (5.0, (2, 5), "x", "at least 5x"),
    (1.2, (1.5,), " cores", "under 1.5 cores"), (1.5, (1.5,), " cores", "at least 1.5 cores"),
])
def test_bracket_names_the_range(ratio: float, edges: tuple, unit: str, expected: str) -> None:
    assert measure.bracket(ratio, edges, unit) == expected


def test_bracket_refuses_unsorted_edges() -> None:
    with pytest.raises(ValueError):
        measure.bracket(3, (5, 2))


def test_best_seconds_refuses_zero_repeats() -> None:
    with pytest.raises(ValueError):
        measure.best_seconds(lambda: None, repeats=0)


def test_every_figure_comes_with_a_summary_of_its_numbers(capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    mib = measure.MIB
    figures = [
        fast.batching_figure([measure.BatchingPoint(1, 100, 0.002, 0.001, 17_000),
                              measure.BatchingPoint(100, 100, 0.001, 0.0001, 11_100)]),
        fast.compression_figure([measure.CodecRun("none", 1000, 1000, 0.01, 0.02),
                                 measure.CodecRun("gzip", 1000, 200, 0.02, 0.02)]),
        fast.page_cache_figure(measure.PageCacheRun(64 * mib, 0.01, 0.1, 0.01, True)),
        fast.access_pattern_figure(measure.AccessPatternRun(16 * mib, 4096, 0.004, 0.004, 0.02, 0.2, True)),
        fast.copy_figure([measure.CopyRun("sendfile", 64 * mib, 0.01, 0.01, 0),
                          measure.CopyRun("read+write", 64 * mib, 0.02, 0.02, 64 * mib)]),
        fast.lookup_figure(measure.LookupRun(10 * mib, 20, 0.0001, 0.1, 80_000, 100 * mib)),
        fast.parallel_figure(measure.ParallelRun(4, 20_000, 2, 0.2, 0.2, 0.1, 0.19)),
        fast.request_path_figure([measure.RequestPathPoint(1, 2000, 2000, 0.4),
                                  measure.RequestPathPoint(1000, 2000, 2, 0.004)]),
    ]
    summaries = [summary for _, summary in figures]
    assert "(10x less)" in summaries[0] and "170 bytes per record against 111" in summaries[0]
    assert "gzip 5.0x smaller" in summaries[1]
    assert "after asking the kernel to drop its pages: 640 MiB/s" in summaries[2]
    assert "(10x slower)" in summaries[3]
    assert "0 MiB through user space" in summaries[4]
    assert "keeping 0.95 cores busy" in summaries[6]
    assert "100x the throughput" in summaries[7]
    monkeypatch.setenv("KAFKALAB_STATIC_WIDGETS", "1")
    for figure, summary in figures:
        fast.show_measurement(figure, summary)
    printed = capsys.readouterr().out
    assert all(summary in printed for summary in summaries)
