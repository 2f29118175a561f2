"""Benchmarks for the ``kafkalog`` Spark data source (``python -m kafkalab.bench spark``).

All on ``local[2]`` with a ``noop`` sink (Spark reads every row and discards it), over a topic
written by ``gen-log`` (2 partitions, 100-byte values, 64 MiB segments):

* ``spark.record_scan`` -- records/s of a record-level scan of all 17 columns; target >= 3 M/s;
* ``spark.record_scan_vs_python`` -- the same rate against kafkalab's per-record pure-Python
  reference decoder (:func:`kafkalab.records.codec.decode_records`) run over the same segment
  files in two processes (the same two cores Spark gets); target >= 4x;
* ``spark.projected_scan`` -- records/s when the query names four columns
  (``.schema("offset bigint, timestamp bigint, key binary, value binary")``), against the
  same 3 M/s; a context line;
* ``spark.batch_scan`` -- log bytes/s of a batch-level scan (headers only); target >= 1 GB/s;
* ``*_vs_ceiling`` -- each scan against ``format("kafkalog_ceiling")``
  (:mod:`kafkalab.spark.ceiling`): the same schema, the same rows per task and the same bytes
  per row, repeated from one decoded chunk, so its rate is what Spark's Arrow hand-off and row
  conversion allow on this machine at this moment. Context lines (``target=none``): a ratio
  near 1 says nearly all of the scan's time is Spark's own. Each scan and its ceiling are
  timed alternately (best of 3).

* ``spark.s3_scan`` -- seconds of a record-level scan of the same log uploaded to an S3 API
  server (moto's server mode, in its own process, over loopback HTTP), against the
  same scan of the local directory; target <= 1.5x. Three runs side by side, median run.

Why the ceiling lines: a Python data source pays, per row, a socket copy of the Arrow buffers
and the JVM's conversion of every column into Spark's row format. Measured on 2 shared cores,
the ceiling for all 17 record columns is ~2-2.5 M rows/s -- below the 3 M target, so that line
cannot pass here whatever the decoder does; the ratio to the ceiling is the part we control.
For the batch level, planning and task start-up (~0.3 s per query) dominate: the ceiling moves
~1.3 GB/s at the default size and more at ``--full``.

Fixed per-query costs dominate small logs, so the default run uses 3 M records (~330 MB,
~50-90 s in all); ``--full`` uses 10 M records (~1.1 GB, generated in ~15 s), the size the
targets are stated for: ``.venv/bin/python -m kafkalab.bench spark --full``.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from kafkalab.bench.report import Reporter

RECORDS_DEFAULT = 3_000_000
RECORDS_FULL = 10_000_000
REPEAT = 3
PYTHON_PROCESSES = 2  # local[2]: the baseline gets the same two cores
S3_SERVER_START_S = 30.0
PROJECTED_SCHEMA = "offset bigint, timestamp bigint, key binary, value binary"


def _scan_seconds(df, repeat: int = REPEAT) -> float:
    """Best wall seconds of a ``noop`` write: Spark converts every column of every row into
    its internal row format and discards it (``count()`` would let it skip the columns)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        df.write.format("noop").mode("overwrite").save()
        best = min(best, time.perf_counter() - start)
    return best


def _decode_file(path: str) -> int:
    from kafkalab.records.codec import decode_records

    return len(decode_records(Path(path).read_bytes()))


def _python_rate(data_dir: Path) -> float:
    """Records/s of the pure-Python decoder over every segment, two processes."""
    logs = [str(p) for p in sorted(data_dir.rglob("*.log"))]
    with multiprocessing.get_context("fork").Pool(PYTHON_PROCESSES) as pool:
        start = time.perf_counter()
        count = sum(pool.map(_decode_file, logs, chunksize=1))
        return count / (time.perf_counter() - start)


def _ceiling_df(spark, data_dir: Path, rows: int, partitions: int, level: str = "records",
                user_schema: str | None = None):
    reader = spark.read.format("kafkalog_ceiling").option("level", level)
    if user_schema is not None:
        reader = reader.schema(user_schema)
    return reader.options(rows=str(rows), partitions=str(partitions)).load(str(data_dir))


def _alternate(first, second) -> tuple[float, float]:
    """Best seconds of two scans measured alternately, so both see the same machine load."""
    best = [float("inf"), float("inf")]
    for _ in range(REPEAT):
        for i, df in enumerate((first, second)):
            best[i] = min(best[i], _scan_seconds(df, repeat=1))
    return best[0], best[1]


def _object_store_line(reporter: Reporter, spark, data_dir: Path) -> None:
    """The same record-level scan from an S3 API server and from the directory."""
    from kafkalab.bench.report import alternate
    from kafkalab.spark.files import Location, copy_tree

    try:
        import moto.server  # noqa: F401  (the server runs in its own process below)
    except ImportError:
        reporter.echo("# spark.s3_scan: skipped, moto is not installed (pip install 'moto[server]')")
        return
    with _s3_server() as endpoint:
        url = f"s3://bench:bench@bench/logs?endpoint_override={endpoint}&scheme=http"
        Location.of(url + "&allow_bucket_creation=true").filesystem.create_dir("bench")
        copy_tree(Location.of(data_dir), Location.of(url), show_progress=False)
        remote = spark.read.format("kafkalog").load(url)
        local = spark.read.format("kafkalog").load(str(data_dir))
        _scan_seconds(remote, repeat=1)  # warm the S3 client in every worker
        runs = alternate({"s3": lambda: _scan_seconds(remote, 1), "local": lambda: _scan_seconds(local, 1)}, runs=3)
        reporter.report_runs("spark.s3_scan", runs["s3"], "s", runs["local"], "<=1.5")


@contextlib.contextmanager
def _s3_server() -> Iterator[str]:
    """moto's S3 server in a child process, as a real object store is another process; yields
    ``host:port`` once it answers."""
    import socket
    import subprocess
    import sys

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + S3_SERVER_START_S
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("the S3 test server did not start") from None
                time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=10)


def run(reporter: Reporter, full: bool = False) -> None:
    import kafkalab.spark
    from kafkalab.spark import planning
    from kafkalab.spark.ceiling import CeilingDataSource
    from kafkalab.tools.gen_log import GenSpec, generate

    records = RECORDS_FULL if full else RECORDS_DEFAULT
    data_dir = Path(tempfile.mkdtemp(prefix="bench-spark-"))
    try:
        spec = GenSpec(str(data_dir), "bench", 2, records, 100_000, 1.1, 100, "none", 0,
                       1_700_000_000_000, 100_000, config=(("segment.bytes", str(64 * 1024 * 1024)),))
        generate(spec, show_progress=False)
        log_bytes = sum(p.stat().st_size for p in data_dir.rglob("*.log"))
        splits = len(planning.plan_splits(planning.find_partition_dirs(data_dir)))
        python_rate = _python_rate(data_dir)
        spark = kafkalab.spark.session(app_name="bench-spark")
        spark.dataSource.register(CeilingDataSource)
        record_df = spark.read.format("kafkalog").load(str(data_dir))
        projected_df = spark.read.format("kafkalog").schema(PROJECTED_SCHEMA).load(str(data_dir))
        batch_df = spark.read.format("kafkalog").option("level", "batches").load(str(data_dir))
        batch_rows = batch_df.count()
        record_df.write.format("noop").mode("overwrite").save()  # warm workers and numba caches
        record_s, record_ceiling_s = _alternate(record_df, _ceiling_df(spark, data_dir, records, splits))
        projected_s, projected_ceiling_s = _alternate(
            projected_df, _ceiling_df(spark, data_dir, records, splits, user_schema=PROJECTED_SCHEMA))
        batch_s, batch_ceiling_s = _alternate(
            batch_df, _ceiling_df(spark, data_dir, batch_rows, splits, level="batches"))
        record_rate = records / record_s
        reporter.report("spark.record_scan", record_rate, "records/s", 3_000_000, ">=1.0")
        reporter.report("spark.record_scan_vs_python", record_rate, "records/s", python_rate, ">=4.0")
        reporter.report("spark.record_scan_vs_ceiling", record_rate, "records/s", records / record_ceiling_s, "none")
        reporter.report("spark.projected_scan", records / projected_s, "records/s", 3_000_000, "none")
        reporter.report("spark.projected_scan_vs_ceiling", records / projected_s, "records/s",
                        records / projected_ceiling_s, "none")
        reporter.report("spark.batch_scan", log_bytes / batch_s, "bytes/s", 1e9, ">=1.0")
        reporter.report("spark.batch_scan_vs_ceiling", log_bytes / batch_s, "bytes/s",
                        log_bytes / batch_ceiling_s, "none")
        _object_store_line(reporter, spark, data_dir)
        spark.stop()
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
