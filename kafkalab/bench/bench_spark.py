"""Benchmarks for the ``kafkalog`` Spark data source (``python -m kafkalab.bench spark``).

Three figures, all on ``local[2]`` with a ``noop`` sink (Spark reads every row and discards it):

* ``spark_record_scan`` -- records/s of a record-level scan; target >= 3 M records/s;
* ``spark_record_scan_vs_python`` -- the same rate against kafkalab's per-record pure-Python
  reference decoder (:func:`kafkalab.records.codec.decode_records`) measured in this process on
  one core and doubled, as if it scaled perfectly to both cores; target >= 4x;
* ``spark_batch_scan`` -- bytes/s of a batch-level scan (headers only); target >= 1 GB/s.

Default size: 1 M records of 100-byte values (~130 MB, generated in ~20 s). ``--full`` uses the
lab's full scale, 10 M records (~1.3 GB), which takes a few minutes to generate.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from kafkalab.bench.report import Reporter

RECORDS_DEFAULT = 1_000_000
RECORDS_FULL = 10_000_000
PYTHON_SAMPLE_SEGMENTS = 2  # the reference decoder is slow: time it on a sample
REPEAT = 2


def _scan_seconds(df) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(REPEAT):
        start = time.perf_counter()
        df.write.format("noop").mode("overwrite").save()
        best = min(best, time.perf_counter() - start)
    return best


def _python_rate(data_dir: Path) -> float:
    from kafkalab.records.codec import decode_records

    logs = sorted(data_dir.rglob("*.log"))[:PYTHON_SAMPLE_SEGMENTS]
    count, start = 0, time.perf_counter()
    for log in logs:
        count += len(decode_records(log.read_bytes()))
    return count / (time.perf_counter() - start)


def run(reporter: Reporter, full: bool = False) -> None:
    import kafkalab.spark
    from kafkalab.tools.gen_log import GenSpec, generate

    records = RECORDS_FULL if full else RECORDS_DEFAULT
    data_dir = Path(tempfile.mkdtemp(prefix="bench-spark-"))
    try:
        spec = GenSpec(str(data_dir), "bench", 2, records, 100_000, 1.1, 100, "none", 0,
                       1_700_000_000_000, 100_000, config=(("segment.bytes", str(64 * 1024 * 1024)),))
        generate(spec, show_progress=False)
        log_bytes = sum(p.stat().st_size for p in data_dir.rglob("*.log"))
        spark = kafkalab.spark.session(app_name="bench-spark")
        record_df = spark.read.format("kafkalog").load(str(data_dir))
        batch_df = spark.read.format("kafkalog").option("level", "batches").load(str(data_dir))
        record_df.write.format("noop").mode("overwrite").save()  # warm workers and numba caches
        record_rate = records / _scan_seconds(record_df)
        batch_rate = log_bytes / _scan_seconds(batch_df)
        python_two_cores = 2 * _python_rate(data_dir)
        reporter.report("spark_record_scan", record_rate, "records/s", 3_000_000, ">=1.0")
        reporter.report("spark_record_scan_vs_python", record_rate, "records/s", python_two_cores, ">=4.0")
        reporter.report("spark_batch_scan", batch_rate, "bytes/s", 1e9, ">=1.0")
        spark.stop()
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
