"""The time index (``.timeindex``): timestamp -> the offset to start looking from.

Mirrors Kafka's ``TimeIndex``. Each 12-byte entry is ``timestamp int64, relativeOffset int32``,
big-endian, meaning "the largest timestamp seen up to and including this offset". Timestamps
in a log need not grow (producers set CreateTime), so the segment appends an entry only when
the maximum timestamp grows: the column is strictly increasing and a binary search works.

Worked example (chapter 04): entries ``(1557554753400, 0)``, ``(1557554753420, 430)`` in
segment 0. ``lookup(1557554753430)`` returns ``(1557554753420, 430)``; the reader then looks up
offset 430 in the offset index and scans for the first record with timestamp >= the target.
``lookup(5)`` returns ``(-1, base_offset)``.

The last slot is reserved: ``is_full`` is true one entry early so the final entry appended
when the segment rolls (``maybe_append(..., skip_full_check=True)``) always fits.
"""

from __future__ import annotations

import struct
from bisect import bisect_left
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from kafkalab.errors import CorruptIndexError, InvalidRecordError, StorageError
from kafkalab.storage.index_file import IndexFile
from kafkalab.storage.log_files import TIME_INDEX_SUFFIX, file_name
from kafkalab.storage.offset_index import RELATIVE_OFFSET_MAX

ENTRY = struct.Struct(">qi")
NO_TIMESTAMP = -1  # Kafka's RecordBatch.NO_TIMESTAMP


@dataclass(frozen=True, slots=True)
class TimestampOffset:
    """A timestamp and the absolute offset at which the log's max timestamp reached it."""

    timestamp: int
    offset: int


class TimeIndex(IndexFile):
    """A segment's ``.timeindex``. Not thread-safe; owned by one :class:`LogSegment`."""

    ENTRY_SIZE: ClassVar[int] = ENTRY.size  # 12
    ENTRY: ClassVar[struct.Struct] = ENTRY
    DTYPE: ClassVar[np.dtype] = np.dtype([("key", ">i8"), ("value", ">i4")])  # the same, for numpy
    KEY_TYPECODE: ClassVar[str] = "q"  # timestamps are int64
    KIND: ClassVar[str] = "time index"

    def is_full(self) -> bool:
        # One slot is kept back for the entry written when the segment rolls.
        return self._count >= self._max_entries - 1

    def last_entry(self) -> TimestampOffset:
        if self._count == 0:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return TimestampOffset(self._last_key, self.base_offset + self._last_value)

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> bool:
        """Append ``(timestamp, offset)`` if ``timestamp`` is larger than the last one.

        Returns whether an entry was written. Mirrors ``TimeIndex.maybeAppend``.
        """
        count = self._count
        if count and timestamp == self._last_key and offset >= self.base_offset + self._last_value:
            return False  # the common case: the max timestamp did not grow
        if not skip_full_check and self.is_full():
            raise StorageError(
                f"attempt to append to a full time index {self.path} "
                f"({self._count} of {self.max_entries} entries, last slot reserved)"
            )
        last = self.last_entry()
        if self._count and offset < last.offset:
            raise InvalidRecordError(
                f"attempt to append offset {offset} to slot {self._count} of {self.path}, "
                f"smaller than the last offset appended ({last.offset})"
            )
        if self._count and timestamp < last.timestamp:
            raise InvalidRecordError(
                f"attempt to append timestamp {timestamp} to slot {self._count} of {self.path}, "
                f"smaller than the last timestamp appended ({last.timestamp})"
            )
        if timestamp <= last.timestamp:
            return False
        relative = offset - self.base_offset
        if not 0 <= relative <= RELATIVE_OFFSET_MAX:
            raise InvalidRecordError(
                f"offset {offset} cannot be stored relative to base offset {self.base_offset} "
                f"in {self.path}"
            )
        if self._count >= self.max_entries:
            raise StorageError(f"time index {self.path} has no room for its final entry")
        self._append_entry(timestamp, relative)
        return True

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """The largest entry with timestamp <= target, else ``(-1, base_offset)``."""
        return self.floor_entry(self.floor_slot(target_timestamp))

    def floor_entry(self, slot: int) -> TimestampOffset:
        """The entry a :meth:`floor_slot` answer names; slot -1 means ``(-1, base_offset)``."""
        if slot < 0:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return TimestampOffset(self.key_at(slot), self.base_offset + self.value_at(slot))

    def entry(self, slot: int) -> TimestampOffset:
        if not 0 <= slot < self._count:
            raise IndexError(f"slot {slot} is outside [0, {self._count}) in {self.path}")
        return TimestampOffset(self.key_at(slot), self.base_offset + self.value_at(slot))

    def truncate_to(self, offset: int) -> None:
        """Remove every entry whose offset is >= ``offset`` (``TimeIndex.truncateTo``)."""
        self.truncate_to_entries(bisect_left(self._values, offset - self.base_offset))

    def sanity_check(self) -> None:
        self.check_length()
        last = self.last_entry()
        if self._count and last.offset < self.base_offset:
            raise CorruptIndexError(
                f"corrupt time index {self.path}: last offset {last.offset} is below the base "
                f"offset {self.base_offset}"
            )
        if self._count and last.timestamp < self.key_at(0):
            raise CorruptIndexError(
                f"corrupt time index {self.path}: last timestamp {last.timestamp} is below the "
                f"first timestamp {self.key_at(0)}"
            )
        self.check_sorted(self._keys, "timestamp", strict=True)
        self.check_sorted(self._values, "relative offset", strict=False)


def time_index_file_name(directory: Path, base_offset: int) -> Path:
    return Path(directory) / file_name(base_offset, TIME_INDEX_SUFFIX)
