"""The sparse offset index (``.index``): relative offset -> byte position in the ``.log`` file.

Mirrors Kafka's ``OffsetIndex``. Each 8-byte entry is ``relativeOffset int32, position int32``,
big-endian, where ``relativeOffset = offset - baseOffset`` of the segment. Entries are sparse:
the segment adds one only after more than ``index.interval.bytes`` of log have been written
since the previous one, so a lookup answers "where to *start scanning*", not "where it is".

Worked example (the book's chapter 04): segment 0 with entries ``(20, 320)`` and ``(43, 1220)``.
``lookup(23)`` returns the largest entry <= 23, i.e. offset 20 at position 320; the log is then
scanned from byte 320 to the batch holding offset 23. ``lookup(5)`` returns ``(0, 0)``: with
no entry at or below the target, the scan starts at the front of the segment.

All public methods speak absolute offsets; relative offsets stay inside this file.
"""

from __future__ import annotations

import struct
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from kafkalab.errors import CorruptIndexError, InvalidRecordError, StorageError
from kafkalab.storage.index_file import IndexFile
from kafkalab.storage.log_files import INDEX_SUFFIX, file_name

ENTRY = struct.Struct(">ii")
RELATIVE_OFFSET_MAX = 2**31 - 1  # relative offsets are stored as int32


@dataclass(frozen=True, slots=True)
class OffsetPosition:
    """An absolute offset and the byte position in the segment's ``.log`` to scan from."""

    offset: int
    position: int


class OffsetIndex(IndexFile):
    """A segment's ``.index``. Not thread-safe; owned by one :class:`LogSegment`."""

    ENTRY_SIZE: ClassVar[int] = ENTRY.size  # 8
    ENTRY: ClassVar[struct.Struct] = ENTRY
    DTYPE: ClassVar[np.dtype] = np.dtype([("key", ">i4"), ("value", ">i4")])  # the same, for numpy
    KEY_TYPECODE: ClassVar[str] = "i"  # relative offsets are int32
    KIND: ClassVar[str] = "offset index"

    @property
    def last_offset(self) -> int:
        """The largest offset indexed, or the base offset when empty (Kafka's ``lastOffset``)."""
        return self.base_offset + self._last_key

    def append(self, offset: int, position: int) -> None:
        """Add ``offset -> position``; offsets must strictly increase (``OffsetIndex.append``)."""
        count, relative = self._count, offset - self.base_offset
        # One test on the hot path (an entry per ~4 KiB appended); _reject says what failed.
        if not (count < self._max_entries and (count == 0 or relative > self._last_key)
                and 0 <= relative <= RELATIVE_OFFSET_MAX):
            self._reject(offset)
        self._append_entry(relative, position)

    def append_many(self, offsets: list[int], positions: list[int]) -> None:
        """:meth:`append` for many entries (a cleaned segment's), written into the map in one
        step; any entry breaking a rule is appended one by one up to it and named."""
        if not offsets:
            return
        relative = np.array(offsets, np.int64) - self.base_offset
        if not (self._count + len(offsets) <= self._max_entries and 0 <= relative[0] <= relative[-1] <= RELATIVE_OFFSET_MAX
                and (self._count == 0 or relative[0] > self._last_key) and bool(np.all(np.diff(relative) > 0))):
            for offset, position in zip(offsets, positions):
                self.append(offset, position)  # raises at the first entry breaking a rule
            return
        self._append_entries(relative.tolist(), positions)

    def _reject(self, offset: int) -> None:
        if self._count >= self._max_entries:
            raise StorageError(
                f"attempt to append to a full offset index {self.path} "
                f"({self._count} of {self.max_entries} entries)"
            )
        if self._count > 0 and offset <= self.base_offset + self._last_key:
            raise InvalidRecordError(
                f"attempt to append offset {offset} to slot {self._count} of {self.path}, "
                f"no larger than the last offset appended ({self.last_offset})"
            )
        self.relative_offset(offset)  # raises for an offset outside the int32 range

    def relative_offset(self, offset: int) -> int:
        relative = offset - self.base_offset
        if not 0 <= relative <= RELATIVE_OFFSET_MAX:
            raise InvalidRecordError(
                f"offset {offset} cannot be stored relative to base offset {self.base_offset} "
                f"in {self.path}: {relative} is outside [0, {RELATIVE_OFFSET_MAX}]"
            )
        return relative

    def lookup(self, target_offset: int) -> OffsetPosition:
        """The largest entry with offset <= ``target_offset``, else ``(base_offset, 0)``."""
        return self.floor_entry(self.floor_slot(target_offset - self.base_offset))

    def floor_entry(self, slot: int) -> OffsetPosition:
        """The entry a :meth:`floor_slot` answer names; slot -1 (no entry is low enough) means
        "scan from the front of the segment"."""
        if slot < 0:
            return OffsetPosition(self.base_offset, 0)
        return OffsetPosition(self.base_offset + self._keys[slot], self._values[slot])

    def floor_position(self, target_offset: int) -> int:
        """Just the position of :meth:`lookup` (0 when no entry is <= the target): the hot
        path of every fetch, one ``bisect`` over the in-memory keys."""
        slot = bisect_right(self._keys, target_offset - self.base_offset) - 1
        return self._values[slot] if slot >= 0 else 0

    def entry(self, slot: int) -> OffsetPosition:
        if not 0 <= slot < self._count:
            raise IndexError(f"slot {slot} is outside [0, {self._count}) in {self.path}")
        return OffsetPosition(self.base_offset + self.key_at(slot), self.value_at(slot))

    def truncate_to(self, offset: int) -> None:
        """Remove every entry whose offset is >= ``offset`` (``OffsetIndex.truncateTo``)."""
        self.truncate_to_entries(bisect_left(self._keys, offset - self.base_offset))

    def sanity_check(self) -> None:
        """Kafka's checks plus ordering: raises :class:`CorruptIndexError` when they fail."""
        self.check_length()
        if self._count and self.last_offset < self.base_offset:
            raise CorruptIndexError(
                f"corrupt offset index {self.path}: last offset {self.last_offset} is below "
                f"the base offset {self.base_offset}"
            )
        self.check_sorted(self._keys, "relative offset", strict=True)
        self.check_sorted(self._values, "position", strict=False)


def index_file_name(directory: Path, base_offset: int) -> Path:
    return Path(directory) / file_name(base_offset, INDEX_SUFFIX)
