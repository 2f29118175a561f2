"""Analysis helpers the Spark labs call (the labs' notebooks keep no library code in cells).

Theory of operation
-------------------
Each helper is a small, testable function over Spark or numpy data that answers one of the
labs' questions, plus :func:`check`, which compares a learner's prediction with a measured value
and explains the difference instead of failing with a bare ``AssertionError``.

* :func:`predicted_index_entries` replays Kafka's offset-index rule (``LogSegment.append``: an
  entry goes in *before* a batch when more than ``index.interval.bytes`` were appended since the
  last entry; the first batch of a segment never gets one) over a segment's batch sizes.
  Worked example: batches of 1780, 160, 2790 and 500 bytes with the default interval 4096
  get one entry, before the fourth batch (at position 4730, since 4730 > 4096 bytes).
* :func:`actual_index_entries` counts the valid entries in each ``.index`` file of a partition.
* :func:`with_kafka_partition` adds the partition Kafka's murmur2 partitioner picks for each
  key, computed in the Spark workers with the vectorised :func:`kafkalab.partitioner.partitions_for_keys`.
* :func:`moved_share` is the share of keys whose partition changes when a topic grows.
* :func:`open_partition_log` opens a generated partition as the broker would (a single replica,
  so the high watermark is the log end offset) with topic-level overrides, for the cleaner and
  retention labs to run the real engine on the data Spark analysed.
* :func:`first_clean_prediction` marks the records the first clean of a compacted log keeps:
  every record at or above the active segment's base offset, and below it the latest record
  of each key (a window over the key ordered by offset, newest first). Worked example: a
  partition whose active segment starts at offset 100 and key ``k`` at offsets 5, 40 and 120
  keeps 40 and 120 and drops 5.
* :func:`predicted_retention` replays Kafka's retention rules (``UnifiedLog.deleteOldSegments``:
  size first, then time, oldest segment first, stopping at the first survivor, never the
  active segment's data beyond the high watermark) over a per-segment table.
  Worked example: segments of 400, 400 and 300 bytes (the last one active) with
  ``retention.bytes = 600``: the log holds 1100 bytes, 500 too many; deleting the first segment
  leaves 700 >= 600, deleting the second too would leave 300 < 600, so one segment goes.
* :func:`linked_copy` copies a data directory for a destructive what-if (retention deletes
  segments) at the cost of its small files only: each ``.log`` file is a hard link to the
  original. That is safe because retention and the cleaner never write into an existing
  ``.log`` file -- they rename it to ``.deleted`` and unlink it, which removes only the copy's
  name -- while index files, which an opened log may resize in place, are copied byte for byte.
  A 1.2 GB partition directory copies in milliseconds instead of seconds.
* :func:`scratch_dir` gives a lab a fresh directory in the system temp directory for the logs it
  generates; the lab's last cell calls :func:`remove_scratch_dirs`, and a kernel that exits
  before reaching it removes them at exit, so no ``lab01-*`` directory outlives its lab.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kafkalab.partitioner import partitions_for_keys
from kafkalab.spark.key_skew import key_buffers
from kafkalab.spark.planning import list_segments, read_offset_index
from kafkalab.book import NotAnswered, WrongPrediction
from kafkalab.book import remove_scratch_dirs as remove_book_scratch_dirs
from kafkalab.book import scratch_dir as scratch_dir  # the labs call labs.scratch_dir
from kafkalab.spark.session import remove_scratch_dir

RELATIVE_TOLERANCE_DEFAULT = 0.0


def remove_scratch_dirs() -> None:
    """Delete every directory :func:`scratch_dir` made in this process, and the Spark JVM's
    temporary files (a lab's last cell, after ``spark.stop()``)."""
    remove_book_scratch_dirs()
    remove_scratch_dir()


def linked_copy(source: str | Path, destination: str | Path) -> Path:
    """Copy the data directory ``source`` to ``destination`` (which must not exist), hard-linking
    ``.log`` files and copying everything else; a file system without hard links gets plain
    copies."""
    def link_or_copy(src: str, dst: str) -> object:
        if src.endswith(".log"):
            try:
                os.link(src, dst)
                return dst
            except OSError:
                pass  # another device, or a file system without hard links
        return shutil.copy2(src, dst)

    return Path(shutil.copytree(source, destination, copy_function=link_or_copy))


@dataclass(frozen=True, slots=True)
class SegmentStat:
    """What retention needs to know about one segment, as Spark computes it from batch headers."""

    base_offset: int
    size_bytes: int
    max_timestamp_ms: int


def predicted_retention(segments: Sequence[SegmentStat], now_ms: int, retention_ms: int,
                        retention_bytes: int) -> dict[str, int]:
    """Segments deleted by size, then by time, in one retention check of one log (oldest
    first). ``retention_* = -1`` disables that rule. The last segment is the active one: it
    goes only when every segment goes (the log then rolls a fresh one first)."""
    remaining = list(segments)
    by_size = 0
    total = sum(s.size_bytes for s in remaining)
    if retention_bytes >= 0 and total >= retention_bytes:
        excess = total - retention_bytes
        while remaining and remaining[0].size_bytes > 0 and excess - remaining[0].size_bytes >= 0:
            excess -= remaining.pop(0).size_bytes
            by_size += 1
    by_time = 0
    if retention_ms >= 0:
        while remaining and remaining[0].size_bytes > 0 and now_ms - remaining[0].max_timestamp_ms > retention_ms:
            remaining.pop(0)
            by_time += 1
    return {"size": by_size, "time": by_time}


def first_clean_prediction(records: Any) -> Any:
    """``records`` (a kafkalog DataFrame with ``partition``, ``offset``, ``key`` and ``segment``)
    plus ``first_uncleanable`` (the active segment's base offset) and ``kept``."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    active = records.groupBy("partition").agg(F.max("segment").alias("active_segment"))
    rows = records.join(active, "partition").withColumn(
        "first_uncleanable", F.substring("active_segment", 1, 20).cast("bigint"))
    below = F.col("offset") < F.col("first_uncleanable")
    newest_first = Window.partitionBy("partition", "key", below).orderBy(F.desc("offset"))
    return rows.withColumn("kept", ~below | (F.row_number().over(newest_first) == 1))


def open_partition_log(partition_dir: str | Path, overrides: dict[str, str], now_ms: int) -> Any:
    """The partition in ``partition_dir`` as a :class:`~kafkalab.storage.log.Log` with
    topic-level ``overrides`` (e.g. ``{"cleanup.policy": "compact"}``) on a ManualClock at
    ``now_ms``. One replica: the high watermark is the log end offset."""
    from kafkalab.clock import ManualClock
    from kafkalab.storage.log import Log
    from kafkalab.storage.log_config import LogConfig

    log = Log.open(Path(partition_dir), LogConfig.from_properties(overrides), ManualClock(now_ms),
                   had_clean_shutdown=True)
    log.high_watermark = log.log_end_offset
    return log


def predicted_index_entries(batch_sizes: Sequence[int], index_interval_bytes: int) -> int:
    """How many ``.index`` entries Kafka writes for a segment with these batch sizes, in order."""
    entries = 0
    since_last = 0
    for size in batch_sizes:
        if since_last > index_interval_bytes:
            entries += 1
            since_last = 0
        since_last += size
    return entries


def actual_index_entries(partition_dir: str | Path) -> dict[str, int]:
    """Valid entries per ``.index`` file of a partition directory, keyed by ``.log`` name."""
    counts = {}
    for base, log_path in list_segments(partition_dir):
        entries = read_offset_index(log_path.with_suffix(".index"), base, log_path.size())
        counts[log_path.name] = len(entries)
    return counts


def _kafka_partition_batches(batches: Iterable[Any], num_partitions: int) -> Iterator[Any]:
    import pyarrow as pa

    for batch in batches:
        data, offsets = key_buffers(batch)
        placed = partitions_for_keys(data, offsets, num_partitions)
        yield batch.append_column("kafka_partition", pa.array(placed, type=pa.int32()))


def with_kafka_partition(df: Any, num_partitions: int) -> Any:
    """``df`` (with a binary ``key`` column) plus ``kafka_partition``: murmur2 placement."""
    from pyspark.sql.types import IntegerType, StructField, StructType

    schema = StructType(df.schema.fields + [StructField("kafka_partition", IntegerType())])
    return df.mapInArrow(lambda it: _kafka_partition_batches(it, num_partitions), schema)


def moved_share(keys: Sequence[bytes], old_partitions: int, new_partitions: int) -> float:
    """Share of ``keys`` whose murmur2 partition differs between the two partition counts."""
    if not keys:
        return 0.0
    offsets = np.zeros(len(keys) + 1, dtype=np.int64)
    np.cumsum([len(k) for k in keys], out=offsets[1:])
    data = np.frombuffer(b"".join(keys), dtype=np.uint8)
    before = partitions_for_keys(data, offsets, old_partitions)
    after = partitions_for_keys(data, offsets, new_partitions)
    return float(np.mean(before != after))


def check(name: str, predicted: Any, actual: Any, *, rel_tol: float = RELATIVE_TOLERANCE_DEFAULT,
          hint: str = "re-read the cells above and try again -- the difference is the lesson.") -> str:
    """Compare a prediction with the engine's answer. A blank one raises ``NotAnswered``, a wrong
    one ``WrongPrediction`` with ``hint`` (both from :mod:`kafkalab.book`, both
    ``AssertionError``s); neither message gives the engine's answer away."""
    if predicted is None or predicted is ...:
        raise NotAnswered(f"{name}: write your prediction first (replace the ... with a value)")
    if isinstance(actual, (int, float)) and isinstance(predicted, (int, float)):
        ok = abs(predicted - actual) <= rel_tol * max(abs(actual), 1e-12)
    else:
        ok = predicted == actual
    if not ok:
        raise WrongPrediction(f"{name}: {predicted!r} is not the engine's answer. Hint: {hint}")
    return f"{name}: correct ({actual!r})"
