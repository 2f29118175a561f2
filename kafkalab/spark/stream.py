"""Tailing a live log with Spark Structured Streaming, a bounded number of records per trigger.

Theory of operation
-------------------
A streaming source speaks in *offsets*: at each trigger Spark asks for the latest offset, reads
the range ``(previous end, latest]`` and commits it. For ``kafkalog`` the offset is what a Kafka
consumer tracks -- the next offset to read in each partition::

    {"orders-0": 5310, "orders-1": 4987}

The log end offset of a partition is found from its active segment: walk the batch headers and
take the last batch's ``lastOffset + 1`` (the file name gives the base offset of an empty one).
A per-trigger limit like the consumer's ``max.poll.records`` (option ``maxRecordsPerTrigger`` or
``max.poll.records``; on Spark >= 4.2 also Spark's ``ReadMaxRows``) caps how far the end moves:
the budget is shared out partition by partition in order. When producers append faster than the
budget allows, the gap between the log end offset and the stream's offset -- consumer lag --
grows, which is what a lab about lag wants to show.

Worked example: two partitions with log end offsets 900 and 300, the stream at ``{0: 0, 1: 0}``
and a limit of 1000 records: the next end is ``{0: 900, 1: 100}``; the trigger after that reads
``{0: 900, 1: 300}``.

Only records inside ``[start, end)`` are returned: batches straddling the boundary are decoded and
the rows outside are filtered out, so every record is delivered exactly once.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from kafkalab.errors import ConfigError
from kafkalab.spark import planning
from kafkalab.spark.files import Location
from kafkalab.spark.planning import ScanBounds

LIMIT_OPTIONS = ("maxRecordsPerTrigger", "max.poll.records")


@dataclass(frozen=True, slots=True)
class OffsetRange:
    """Records ``[start, end)`` of one partition. Picklable."""

    topic: str
    partition: int
    directory: str
    start: int
    end: int


class RangePartition(InputPartition):
    def __init__(self, offset_range: OffsetRange) -> None:
        super().__init__(offset_range)
        self.range = offset_range


def _key(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def log_end_offset(directory: Path | Location) -> int:
    """Next offset to be written in a partition directory (0 for an empty one)."""
    from kafkalab.spark import arrow

    segments = planning.list_segments(directory)
    if not segments:
        return 0
    base, path = segments[-1]
    if path.size() == 0:
        return base
    buf = np.memmap(path.path, dtype=np.uint8, mode="r")
    positions, _sizes, magics = arrow.walk(buf, 0, len(buf), str(path))
    if len(positions) == 0:
        return base
    from kafkalab.records.header import read_header

    return read_header(buf.data, int(positions[-1])).last_offset + 1


def log_start_offset(directory: Path | Location) -> int:
    segments = planning.list_segments(directory)
    return segments[0][0] if segments else 0


def apply_limit(start: dict[str, int], latest: dict[str, int], limit: int | None) -> dict[str, int]:
    """Move from ``start`` towards ``latest`` by at most ``limit`` records in total."""
    if limit is None:
        return dict(latest)
    budget = limit
    end = {}
    for key in sorted(latest):
        begin = start.get(key, 0)
        step = max(0, min(latest[key] - begin, budget))
        end[key] = begin + step
        budget -= step
    return end


def _parse_limit(options: dict[str, str]) -> int | None:
    lowered = {k.lower(): v for k, v in options.items()}  # Spark lower-cases option names
    for name in LIMIT_OPTIONS:
        if name.lower() in lowered:
            raw = lowered[name.lower()]
            try:
                value = int(raw)
            except ValueError:
                value = 0
            if value < 1:
                raise ConfigError(f"kafkalog option {name}={raw!r} must be an integer >= 1")
            return value
    return None


class KafkaLogStreamReader(DataSourceStreamReader):
    """Streams the records of a data directory, topic or partition as they are appended."""

    def __init__(self, options: dict[str, str]) -> None:
        self.path = options.get("path") or ""
        if self.path and not Location.of(self.path).is_local:
            raise ConfigError(f"kafkalog streams tail a local data directory, not {self.path}")
        if not self.path:
            raise ConfigError("kafkalog streaming needs a path")
        self.topic = options.get("topic")
        self.limit = _parse_limit(options)
        self.starting = {k.lower(): v for k, v in options.items()}.get("startingoffsets", "earliest")
        if self.starting not in ("earliest", "latest"):
            raise ConfigError(f"startingOffsets={self.starting!r} must be 'earliest' or 'latest'")
        self._last_end: dict[str, int] | None = None

    def _dirs(self) -> dict[str, tuple[str, int, Location]]:
        return {_key(t, p): (t, p, d) for t, p, d in planning.find_partition_dirs(self.path, self.topic)}

    def initialOffset(self) -> dict[str, int]:
        pick = log_start_offset if self.starting == "earliest" else log_end_offset
        return {key: pick(d) for key, (_t, _p, d) in self._dirs().items()}

    def getDefaultReadLimit(self) -> Any:
        from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

        return ReadAllAvailable() if self.limit is None else ReadMaxRows(self.limit)

    def latestOffset(self, start: dict[str, int] | None = None, limit: Any = None) -> dict[str, int]:
        """Spark >= 4.2 passes the current offset and a ReadLimit; older versions pass nothing,
        so the reader remembers the end it returned last time (it lives as long as the query)."""
        latest = {key: log_end_offset(d) for key, (_t, _p, d) in self._dirs().items()}
        max_rows = getattr(limit, "max_rows", None) if limit is not None else self.limit
        if start is None:
            start = self._last_end if self._last_end is not None else self.initialOffset()
        self._last_end = apply_limit(start, latest, max_rows)
        return self._last_end

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        dirs = self._dirs()
        ranges: list[InputPartition] = []
        for key, last in sorted(end.items()):
            first = start.get(key, 0)
            if last > first and key in dirs:
                topic, partition, directory = dirs[key]
                ranges.append(RangePartition(OffsetRange(topic, partition, str(directory), first, last)))
        return ranges

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, RangePartition)
        return read_range(partition.range)

    def commit(self, end: dict[str, int]) -> None:
        """Nothing to do: the log is the source of truth and Spark checkpoints the offsets."""


def read_range(r: OffsetRange) -> Iterator[Any]:
    """Arrow record batches holding exactly the records ``[r.start, r.end)``."""
    import pyarrow.compute as pc

    from kafkalab.spark.datasource import read_split

    bounds = ScanBounds(offset_min=r.start, offset_max=r.end - 1)
    dirs = [(r.topic, r.partition, Path(r.directory))]
    for split in planning.plan_splits(dirs, bounds):
        for batch in read_split(split, "records", bounds):
            offsets = batch.column(batch.schema.get_field_index("offset"))
            mask = pc.and_(pc.greater_equal(offsets, r.start), pc.less(offsets, r.end))
            selected = batch.filter(mask)
            if selected.num_rows:
                yield selected
