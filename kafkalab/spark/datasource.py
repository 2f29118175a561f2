"""The ``kafkalog`` PySpark data source: Kafka segment files as a Spark DataFrame.

Theory of operation
-------------------
``spark.read.format("kafkalog").option("level", "records").load(path)`` plans and reads in three
places:

* the driver's planning worker calls :meth:`KafkaLogReader.partitions`, which lists partition
  directories and segments and cuts them into :class:`~kafkalab.spark.planning.InputSplit`\\ s --
  one per segment, more for segments larger than ``splitBytes`` (cut at offset-index entries);
* with filter pushdown (Spark >= 4.1 and ``spark.sql.python.filterPushdown.enabled=true``),
  :meth:`KafkaLogPushdownReader.pushFilters` first turns ``topic``/``partition``/``offset``/
  ``timestamp`` comparisons into :class:`~kafkalab.spark.planning.ScanBounds`, so whole segments
  are skipped by file name and index. Every filter is still handed back to Spark: pruning is
  conservative and Spark evaluates the exact predicate on the rows that remain;
* each executor worker calls :meth:`KafkaLogReader.read` on one split: it maps the segment (or,
  in an object store, fetches the split's byte range with one ranged read), walks the batches
  of ``[start, end)``, drops batches the bounds exclude by their header alone,
  and yields one Arrow record batch per chunk of ~131k records (:mod:`kafkalab.spark.arrow`).

A reader that defines ``pushFilters`` fails on a session where pushdown is off, so pushdown lives
in a separate class and :func:`register` picks the class that fits the session it registers in.

Worked example: a topic with 3 partitions of 4 segments each, ``partition = 1 AND offset >=
900000`` with segments based at 0, 300000, 600000 and 900000 plans one split instead of twelve.

The path is a local directory or an object-store URL (``s3://``, ``gs://``, ``hdfs://``,
``abfs://``, ``file://``; see :mod:`kafkalab.spark.files`).

Options: ``level`` (``records`` | ``batches``, default ``records``), ``topic`` (limit a data
directory to one topic), ``splitBytes`` (default 128 MiB), ``check.crcs`` (``true`` | ``false``,
default ``true`` as for Kafka's consumer: every record-level batch's CRC-32C is verified).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from kafkalab.errors import ConfigError
from kafkalab.spark import planning, schema
from kafkalab.spark.planning import INT64_MAX, INT64_MIN, InputSplit, ScanBounds

LEVELS = {"records": schema.RECORD_FIELDS, "batches": schema.BATCH_FIELDS}


def parse_level(options: Any) -> str:
    level = str(options.get("level", "records")).lower()
    if level not in LEVELS:
        raise ConfigError(f"kafkalog option level={level!r} is not one of {sorted(LEVELS)}")
    return level


def parse_check_crcs(options: Any) -> bool:
    """Kafka consumer's ``check.crcs`` (default true): verify each batch's CRC-32C before use."""
    lowered = {k.lower(): v for k, v in options.items()}  # Spark lower-cases option names
    raw = str(lowered.get("check.crcs", "true")).lower()
    if raw not in ("true", "false"):
        raise ConfigError(f"kafkalog option check.crcs={raw!r} is not true or false")
    return raw == "true"


def parse_split_bytes(options: Any) -> int:
    lowered = {k.lower(): v for k, v in options.items()}  # Spark lower-cases option names
    raw = lowered.get("splitbytes", str(planning.SPLIT_BYTES_DEFAULT))
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"kafkalog option splitBytes={raw!r} is not an integer") from None
    if value < planning.SPLIT_BYTES_MIN:
        raise ConfigError(f"kafkalog option splitBytes={value} is below {planning.SPLIT_BYTES_MIN}")
    return value


def projected_fields(requested: Any, level: str) -> list[str]:
    """Field names of a user-specified schema (``spark.read.schema("offset bigint, value
    binary")``), each checked against the level's full schema. Python data sources get no
    column pruning from Spark's optimiser, so naming the columns is how a query avoids building
    and shipping the others."""
    full = dict(schema.spark_types(LEVELS[level]))
    names = []
    for field in requested.fields:
        expected = full.get(field.name)
        if expected is None:
            raise ConfigError(f"kafkalog level={level} has no column {field.name!r}; columns: {sorted(full)}")
        if field.dataType.simpleString() != expected:
            raise ConfigError(f"kafkalog column {field.name} is {expected}, "
                              f"not {field.dataType.simpleString()} as the given schema says")
        names.append(field.name)
    return names


class SplitPartition(InputPartition):
    """Spark's handle on one :class:`InputSplit` (picklable)."""

    def __init__(self, split: InputSplit) -> None:
        super().__init__(split)
        self.split = split


class KafkaLogDataSource(DataSource):
    """``format("kafkalog")``: reads segment directories at the record or batch level."""

    @classmethod
    def name(cls) -> str:
        return "kafkalog"

    def schema(self) -> str:
        return schema.ddl(LEVELS[parse_level(self.options)])

    def reader(self, schema: Any) -> DataSourceReader:
        return KafkaLogReader(dict(self.options), schema)

    def streamReader(self, schema: Any) -> Any:
        from kafkalab.spark.stream import KafkaLogStreamReader

        return KafkaLogStreamReader(dict(self.options))


class KafkaLogPushdownDataSource(KafkaLogDataSource):
    """The same source with filter pushdown (Spark >= 4.1 with pushdown enabled)."""

    def reader(self, schema: Any) -> DataSourceReader:
        return KafkaLogPushdownReader(dict(self.options), schema)


class KafkaLogReader(DataSourceReader):
    """Plans splits on the driver and reads them in workers. Picklable; one per query."""

    def __init__(self, options: dict[str, str], requested: Any = None) -> None:
        self.path = options.get("path") or ""
        if not self.path:
            raise ConfigError("kafkalog needs a path: .load('<data dir | data dir/topic | partition dir>')")
        self.topic = options.get("topic")
        self.level = parse_level(options)
        self.split_bytes = parse_split_bytes(options)
        self.check_crcs = parse_check_crcs(options)
        self.fields = projected_fields(requested, self.level) if requested is not None else None
        self.bounds = ScanBounds()

    def partitions(self) -> Sequence[InputPartition]:
        dirs = planning.find_partition_dirs(self.path, self.topic)
        splits = planning.plan_splits(dirs, self.bounds, self.split_bytes)
        return [SplitPartition(split) for split in splits]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, SplitPartition)
        return read_split(partition.split, self.level, self.bounds, self.check_crcs, self.fields)


def read_split(split: InputSplit, level: str, bounds: ScanBounds = ScanBounds(),
               check_crcs: bool = True, fields: list[str] | None = None) -> Iterator[Any]:
    """Arrow record batches for one split at ``level`` with the columns ``fields`` (default:
    all); usable without Spark."""
    from kafkalab.spark import arrow

    full = arrow.RECORD_ARROW_SCHEMA if level == "records" else arrow.BATCH_ARROW_SCHEMA
    target = arrow.project(full, fields) if fields is not None else full

    if split.size_bytes == 0:
        return
    buf, base = _split_bytes(split)
    where = f"{split.topic}-{split.partition}/{split.segment}"
    positions, sizes, magics = arrow.walk(buf, split.start_position - base, min(split.end_position - base, len(buf)), where)
    keep = _batches_in_bounds(buf, positions, magics, bounds)
    positions, sizes, magics = positions[keep], sizes[keep], magics[keep]
    counts = _records_counts(buf, positions, magics)
    for chunk in arrow.chunks(positions, sizes, counts):
        args = (buf, positions[chunk], sizes[chunk], magics[chunk], split.topic, split.partition, split.segment)
        if level == "records":
            yield _shift_positions(arrow.record_level(*args, check_crcs, target), "batch_position", base)
        else:
            yield _shift_positions(arrow.batch_level(*args).select(target.names), "position", base)


def _split_bytes(split: InputSplit) -> tuple[np.ndarray, int]:
    """The bytes to walk and the file position of their first byte: a local segment is mapped
    whole (position 0); a split in an object store is fetched with one ranged read."""
    if split.filesystem is None:
        return np.memmap(split.path, dtype=np.uint8, mode="r"), 0
    data = split.location.read_range(split.start_position, split.end_position)
    return np.frombuffer(data, dtype=np.uint8), split.start_position


def _shift_positions(batch: Any, column: str, base: int) -> Any:
    """Positions computed within a fetched range, moved back to positions in the segment file."""
    index = batch.schema.get_field_index(column)
    if base == 0 or index < 0:
        return batch
    import pyarrow.compute as pc

    return batch.set_column(index, batch.schema.field(index), pc.add(batch.column(index), base))


def _records_counts(buf: np.ndarray, positions: np.ndarray, magics: np.ndarray) -> np.ndarray:
    from kafkalab.records import columnar

    counts = np.ones(len(positions), dtype=np.int64)
    v2 = magics == 2
    if np.any(v2):
        counts[v2] = columnar.decode_v2_headers(buf, positions[v2])["records_count"]
    return counts


def _batches_in_bounds(buf: np.ndarray, positions: np.ndarray, magics: np.ndarray,
                       bounds: ScanBounds) -> np.ndarray:
    """Mask of entries that may hold rows inside ``bounds``, judged by v2 headers alone."""
    from kafkalab.records import columnar

    keep = np.ones(len(positions), dtype=bool)
    no_offset_bound = bounds.offset_min == INT64_MIN and bounds.offset_max == INT64_MAX
    if (no_offset_bound and bounds.timestamp_min == INT64_MIN) or not np.any(magics == 2):
        return keep
    v2 = np.nonzero(magics == 2)[0]
    h = columnar.decode_v2_headers(buf, positions[v2])
    last = h["base_offset"] + h["last_offset_delta"]
    inside = (last >= bounds.offset_min) & (h["base_offset"] <= bounds.offset_max)
    inside &= h["max_timestamp"] >= bounds.timestamp_min
    keep[v2] = inside
    return keep


class KafkaLogPushdownReader(KafkaLogReader):
    """Adds ``pushFilters``: comparisons on topic, partition, offset and timestamp prune splits."""

    def pushFilters(self, filters: list[Any]) -> Iterator[Any]:
        from kafkalab.spark.pushdown import bounds_from_filters

        filters = list(filters)
        self.bounds = bounds_from_filters(filters, self.level)
        yield from filters  # pruning is conservative: Spark still evaluates every filter
