"""Planning a scan of Kafka log directories: which byte ranges of which segments to read.

Theory of operation
-------------------
A Kafka data directory holds one directory per topic-partition, named ``<topic>-<partition>``,
and each holds segments named by their base offset padded to 20 digits::

    data/
      orders-0/  00000000000000000000.log  .index  .timeindex
                 00000000000000052317.log  .index  .timeindex     <- active segment
      orders-1/  ...

Spark runs one task per *input split*. A split is a byte range ``[start, end)`` of one ``.log``
file that begins and ends on batch boundaries. Small segments are one split each; a segment larger
than ``split_bytes`` is cut at positions taken from its sparse offset index (``.index``): every
index entry ``(relative offset, position)`` points at the start of a batch, so cutting there
never splits a batch, and no byte of the log has to be read to plan the scan.

Worked example: a 300 MiB segment with base offset 1000 and ``split_bytes`` = 128 MiB, whose
index has an entry ``(offset 1_400_000, position 134_000_000)`` and one ``(2_800_000,
268_200_000)``, becomes three splits ``[0, 134_000_000)``, ``[134_000_000, 268_200_000)`` and
``[268_200_000, 314_572_800)``.

The directory can be local or in an object store (``s3://bucket/logs``, see
:mod:`kafkalab.spark.files`): planning goes through a :class:`~kafkalab.spark.files.Location`, so
the same listing, size and index reads work on both.

Pruning uses only names and indexes, never the log itself. A segment's offsets lie in
``[base offset, next segment's base offset - 1]``; a split that starts at an index entry holds no
offset at or below the *previous* entry's offset, and none above the offset of the entry that
ends it. A rolled segment's largest timestamp is the last entry of its ``.timeindex`` (Kafka
appends one on roll); the active segment is never pruned by time, because its time index may lag.
Bounds are conservative: a kept split may still contain rows outside the range, which the reader
and Spark then filter, but a pruned split never contains a matching row.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kafkalab.errors import StorageError
from kafkalab.spark.files import Location
from kafkalab.storage.log_files import INDEX_SUFFIX, TIME_INDEX_SUFFIX
from kafkalab.storage.offset_index import OffsetIndex
from kafkalab.storage.time_index import TimeIndex

SPLIT_BYTES_DEFAULT = 128 * 1024 * 1024  # like Spark's spark.sql.files.maxPartitionBytes
SPLIT_BYTES_MIN = 1024 * 1024  # smaller splits cost more in task overhead than they save
SEGMENTS_PER_PARTITION_MAX = 1_000_000  # a partition with more segments is not a Kafka log
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_SEGMENT_NAME = re.compile(r"^(\d{20})\.log$")
_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")


@dataclass(frozen=True, slots=True)
class ScanBounds:
    """Inclusive ranges a query keeps; None means unbounded. Immutable; picklable."""

    topics: frozenset[str] | None = None
    partitions: frozenset[int] | None = None
    offset_min: int = INT64_MIN
    offset_max: int = INT64_MAX
    timestamp_min: int = INT64_MIN
    timestamp_max: int = INT64_MAX

    def keeps_partition(self, topic: str, partition: int) -> bool:
        return (self.topics is None or topic in self.topics) and (
            self.partitions is None or partition in self.partitions
        )

    def keeps_offsets(self, low: int, high: int) -> bool:
        """True when ``[low, high]`` overlaps the offset range."""
        return low <= self.offset_max and high >= self.offset_min


@dataclass(frozen=True, slots=True)
class InputSplit:
    """One Spark task's work: bytes ``[start_position, end_position)`` of one segment file.

    ``offset_low``/``offset_high`` are conservative bounds on the offsets inside the split.
    ``filesystem`` is the pyarrow filesystem of a split in an object store, None for a local
    file. Immutable; picklable (Spark ships it to a worker).
    """

    topic: str
    partition: int
    path: str
    base_offset: int
    start_position: int
    end_position: int
    offset_low: int
    offset_high: int
    filesystem: Any = None

    @property
    def segment(self) -> str:
        return os.path.basename(self.path)

    @property
    def location(self) -> Location:
        return Location.of(self.path) if self.filesystem is None else Location(self.filesystem, self.path)

    @property
    def size_bytes(self) -> int:
        return self.end_position - self.start_position


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """``"orders-12"`` -> ``("orders", 12)``; None when the name is not ``<topic>-<n>``."""
    match = _PARTITION_DIR.match(name)
    if match is None:
        return None
    return match.group("topic"), int(match.group("partition"))


def find_partition_dirs(path: str | Path | Location, topic: str | None = None) -> list[tuple[str, int, Location]]:
    """Resolve a data directory, a topic (``<data dir>/<topic>``) or one partition directory,
    local or in an object store.

    Returns ``(topic, partition, directory)`` sorted by topic then partition. Raises
    :class:`StorageError` when nothing under ``path`` looks like a Kafka partition.
    """
    root = Location.of(path)
    root_is_dir = root.is_dir()
    entries = root.children() if root_is_dir else []
    if any(_SEGMENT_NAME.match(child.name) for child, is_dir in entries if not is_dir):
        parsed = parse_partition_dir(root.name)
        if parsed is None:
            raise StorageError(f"segment directory {root} is not named <topic>-<partition>")
        found = [(parsed[0], parsed[1], root)]
    else:
        parent, wanted = (root, topic) if root_is_dir else (root.parent, root.name)
        if not root_is_dir:
            if not parent.is_dir():
                raise StorageError(f"cannot scan {root}: neither a directory nor <data dir>/<topic>")
            entries = parent.children()
        found = []
        for child, is_dir in entries:
            parsed = parse_partition_dir(child.name)
            if parsed is not None and is_dir and wanted in (None, parsed[0]):
                found.append((parsed[0], parsed[1], child))
    if not found:
        raise StorageError(f"no Kafka partition directories (<topic>-<partition>) under {root}")
    return sorted(found, key=lambda item: (item[0], item[1]))


def list_segments(directory: str | Path | Location) -> list[tuple[int, Location]]:
    """``(base offset, .log location)`` of every segment in a partition directory, by base offset."""
    segments = []
    for entry, is_dir in Location.of(directory).children():
        match = _SEGMENT_NAME.match(entry.name)
        if match is not None and not is_dir:
            segments.append((int(match.group(1)), entry))
            if len(segments) > SEGMENTS_PER_PARTITION_MAX:
                raise StorageError(
                    f"{directory} holds more than {SEGMENTS_PER_PARTITION_MAX} segments"
                )
    return sorted(segments, key=lambda item: item[0])


def read_offset_index(index_path: str | Path | Location, base_offset: int, log_size_bytes: int) -> np.ndarray:
    """Valid entries of a ``.index`` file as an ``(n, 2)`` int64 array of (absolute offset,
    position). Preallocated trailing zeros are dropped; an index that breaks Kafka's sanity
    rules (not increasing, position past the log) yields no entries, because the index is only
    a planning hint and the log itself is authoritative."""
    index = Location.of(index_path)
    if not index.exists():
        return np.zeros((0, 2), dtype=np.int64)
    rows = _index_rows(index, OffsetIndex.DTYPE)
    entries = np.stack((rows["key"], rows["value"]), axis=1).astype(np.int64)
    zero = np.nonzero((entries[:, 0] == 0) & (entries[:, 1] == 0))[0]
    if len(zero):
        entries = entries[: zero[0]]  # the first batch is never indexed, so (0, 0) is padding
    if len(entries) and (
        np.any(np.diff(entries[:, 0]) <= 0)
        or np.any(np.diff(entries[:, 1]) <= 0)
        or entries[0, 1] <= 0
        or entries[-1, 1] >= log_size_bytes
    ):
        return np.zeros((0, 2), dtype=np.int64)
    entries[:, 0] += base_offset
    return entries


def largest_timestamp(time_index_path: str | Path | Location) -> int | None:
    """The last entry's timestamp of a ``.timeindex`` (the segment's max timestamp once rolled)."""
    time_index = Location.of(time_index_path)
    if not time_index.exists():
        return None
    timestamps = _index_rows(time_index, TimeIndex.DTYPE)["key"]
    nonzero = np.nonzero(timestamps)[0]
    return int(timestamps[nonzero[-1]]) if len(nonzero) else None


def _index_rows(index: Location, dtype: np.dtype) -> np.ndarray:
    """The whole entries of an index file, in the storage layer's on-disk layout ``dtype``;
    a partial entry at the end is ignored."""
    raw = np.frombuffer(index.read_bytes(), dtype=np.uint8)
    return raw[: len(raw) - len(raw) % dtype.itemsize].view(dtype)


def _cut_points(entries: np.ndarray, size_bytes: int, split_bytes: int) -> list[int]:
    """Indexes into ``entries`` where a new split starts, at most one per ``split_bytes``."""
    cuts: list[int] = []
    next_cut = split_bytes
    for i, position in enumerate(entries[:, 1].tolist()):
        if position >= next_cut and size_bytes - position >= SPLIT_BYTES_MIN:
            cuts.append(i)
            next_cut = position + split_bytes
    return cuts


def split_segment(
    topic: str, partition: int, path: Location, base_offset: int, next_base_offset: int | None,
    split_bytes: int,
) -> list[InputSplit]:
    """Cut one segment into splits at offset-index entries (see the module docstring)."""
    size_bytes = path.size()
    high = INT64_MAX if next_base_offset is None else next_base_offset - 1
    filesystem = None if path.is_local else path.filesystem
    if size_bytes <= split_bytes:
        return [InputSplit(topic, partition, path.path, base_offset, 0, size_bytes, base_offset, high, filesystem)]
    entries = read_offset_index(path.with_suffix(INDEX_SUFFIX), base_offset, size_bytes)
    cuts = _cut_points(entries, size_bytes, split_bytes)
    starts = [0] + [int(entries[i, 1]) for i in cuts]
    lows = [base_offset] + [int(entries[i - 1, 0]) + 1 if i > 0 else base_offset for i in cuts]
    ends = starts[1:] + [size_bytes]
    highs = [int(entries[i, 0]) for i in cuts] + [high]
    return [
        InputSplit(topic, partition, path.path, base_offset, s, e, lo, hi, filesystem)
        for s, e, lo, hi in zip(starts, ends, lows, highs)
    ]


def _segment_kept_by_time(bounds: ScanBounds, path: Location, is_active: bool) -> bool:
    if is_active or bounds.timestamp_min == INT64_MIN:
        return True
    largest = largest_timestamp(path.with_suffix(TIME_INDEX_SUFFIX))
    return largest is None or largest >= bounds.timestamp_min


def plan_splits(
    partition_dirs: Iterable[tuple[str, int, str | Path | Location]],
    bounds: ScanBounds = ScanBounds(),
    split_bytes: int = SPLIT_BYTES_DEFAULT,
) -> list[InputSplit]:
    """Every split needed to answer a query with ``bounds``, in topic/partition/offset order."""
    if split_bytes < SPLIT_BYTES_MIN:
        raise StorageError(f"split size {split_bytes} bytes is below the minimum {SPLIT_BYTES_MIN}")
    splits: list[InputSplit] = []
    for topic, partition, directory in partition_dirs:
        if not bounds.keeps_partition(topic, partition):
            continue
        segments = list_segments(directory)
        for i, (base_offset, path) in enumerate(segments):
            is_active = i == len(segments) - 1
            next_base = None if is_active else segments[i + 1][0]
            high = INT64_MAX if next_base is None else next_base - 1
            if not bounds.keeps_offsets(base_offset, high):
                continue
            if not _segment_kept_by_time(bounds, path, is_active):
                continue
            for split in split_segment(topic, partition, path, base_offset, next_base, split_bytes):
                if bounds.keeps_offsets(split.offset_low, split.offset_high):
                    splits.append(split)
    return splits
