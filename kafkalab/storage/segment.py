"""One log segment: a ``.log`` file of record batches plus its ``.index`` and ``.timeindex``.

Mirrors Kafka's ``LogSegment``. A segment is named by its *base offset*, the first offset it
can hold, zero-padded to 20 digits; only the newest (active) segment of a log is written::

    00000000000000000000.log        batches with offsets 0..41
    00000000000000000000.index      sparse: relative offset -> byte position
    00000000000000000000.timeindex  sparse: max timestamp so far -> relative offset
    00000000000000000042.log        the active segment, base offset 42
    ...

Index rule (``LogSegment.append``): before adding a batch, if *more than*
``index.interval.bytes`` were written since the last index entry, the batch's last offset and
its starting position go into ``.index`` and the max timestamp so far into ``.timeindex``;
then the batch's size is added to the running count. The first batch is therefore never
indexed. Worked example, ``index.interval.bytes = 4096`` and single-record batches of 1780,
160, 2790 and 500 bytes: the counts before each batch are 0, 1780, 1940 and 4730, so only the
fourth batch (offset 3) is indexed, as ``offset 3 -> position 4730``.

A lookup (``translate_offset``) asks the offset index for the last entry at or below the
target and scans batch headers forward from that position to the first batch whose last
offset reaches the target. Headers are read with ``os.pread`` and every step is bounded by the
file size, so a corrupt length can never send a scan past the end.
"""

from __future__ import annotations

import dataclasses
import mmap
import os
import struct
import weakref
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Iterator, Sequence
from typing import Any

from kafkalab.errors import CorruptRecordError, InvalidRecordError, StorageError
from kafkalab.records.header import (
    LOG_OVERHEAD,
    LEGACY_TIMESTAMP_OFFSET,
    MAGIC_OFFSET,
    V2_HEADER_SIZE,
    V2_PREFIX,
    V2_PREFIX_SIZE,
    BatchHeader,
)
from kafkalab.storage import events as ev
from kafkalab.storage import index_search
from kafkalab.storage.log_files import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX, file_name
from kafkalab.storage.offset_index import RELATIVE_OFFSET_MAX, OffsetIndex
from kafkalab.storage.segment_validation import validate_entries
from kafkalab.storage.positions import EntryPosition, FileSlice, _new_entry
from kafkalab.storage.time_index import NO_TIMESTAMP, TimeIndex, TimestampOffset
from kafkalab.storage.txn_index import TransactionIndex

_PREFIX_LEGACY = struct.Struct(">qi")  # offset, size: all a v0/v1 entry's position needs
_INT64 = struct.Struct(">q")
# A segment file is addressed with int32 positions in the offset index.
SEGMENT_FILE_BYTES_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class RecoveryResult:
    valid_bytes: int
    truncated_bytes: int
    reason: str
    headers: tuple[BatchHeader, ...]


class LogSegment:
    """A segment's files and in-memory state. Not thread-safe; owned by one :class:`Log`.

    ``listeners`` is the owning log's subscriber list (shared, not copied), tested before any
    event is built.
    """

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        *,
        index_interval_bytes: int,
        max_index_bytes: int,
        roll_jitter_ms: int,
        created_ms: int,
        suffix: str = "",
        listeners: list[ev.Listener] | None = None,
    ) -> None:
        self.directory = Path(directory)
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.roll_jitter_ms = roll_jitter_ms
        self.created_ms = created_ms
        self.listeners: list[ev.Listener] = listeners if listeners is not None else []
        self.log_path = self.directory / (file_name(base_offset, LOG_SUFFIX) + suffix)
        try:
            self._fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StorageError(f"cannot open segment file {self.log_path}: {exc}") from exc
        self._close_fd = weakref.finalize(self, os.close, self._fd)  # see IndexFile.__init__
        self._size_bytes = os.fstat(self._fd).st_size
        # Bytes known to be on the disk: what a power loss cannot take (see storage.power_loss).
        # An existing file is taken as durable; appends are not until the next flush.
        self._durable_bytes = self._size_bytes
        self._map: mmap.mmap | None = None
        self._map_bytes = 0
        self.offset_index = OffsetIndex(
            self.directory / (file_name(base_offset, INDEX_SUFFIX) + suffix), base_offset, max_index_bytes
        )
        self.time_index = TimeIndex(
            self.directory / (file_name(base_offset, TIME_INDEX_SUFFIX) + suffix), base_offset, max_index_bytes
        )
        self.txn_index = TransactionIndex(
            self.directory / (file_name(base_offset, TXN_INDEX_SUFFIX) + suffix), base_offset
        )
        self._bytes_since_last_index_entry = 0
        # Loaded lazily (it may need a scan) unless the segment is new.
        self._max_timestamp_and_offset: TimestampOffset | None = (
            TimestampOffset(NO_TIMESTAMP, base_offset) if self._size_bytes == 0 else None
        )
        self.rolling_based_timestamp: int | None = None

    # -- sizes and timestamps ----------------------------------------------------------------

    @property
    def size_bytes(self) -> int:
        return self._size_bytes

    @property
    def durable_bytes(self) -> int:
        """The file's length at its last fsync (or when it was opened), at most its length now."""
        return self._durable_bytes

    @property
    def fd(self) -> int:
        return self._fd

    @property
    def max_timestamp_so_far(self) -> int:
        return self._max_timestamp().timestamp

    @property
    def offset_of_max_timestamp_so_far(self) -> int:
        return self._max_timestamp().offset

    def _max_timestamp(self) -> TimestampOffset:
        # Kafka's loadLargestTimestamp: start from the last time-index entry, then scan the
        # batches after its offset-index position for anything larger.
        if self._max_timestamp_and_offset is None:
            last = self.time_index.last_entry()
            best = last
            start = self.offset_index.lookup(last.offset).position
            for entry in self.entries_from(start):
                if entry.max_timestamp > best.timestamp:
                    best = TimestampOffset(entry.max_timestamp, entry.last_offset)
            self._max_timestamp_and_offset = best
        return self._max_timestamp_and_offset

    def can_convert_to_relative_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= RELATIVE_OFFSET_MAX

    # -- appending ---------------------------------------------------------------------------

    def append(
        self, largest_offset: int, largest_timestamp: int, data: bytes | bytearray | memoryview,
        headers: Sequence[BatchHeader],
    ) -> None:
        """Write already-validated batches (``headers`` describe ``data``) and index them."""
        if not data:
            return
        position = self._write(largest_offset, largest_timestamp, data)
        for header in headers:
            self._index_batch(header.last_offset, header.max_timestamp, position, header.size_bytes)
            position += header.size_bytes

    def append_batches(self, data: bytes | bytearray | memoryview, last_offsets: list[int],
                       max_timestamps: list[int], sizes: list[int]) -> None:
        """:meth:`append` for batches given as columns (the cleaner's output): one write, the
        rule of :meth:`_index_batch` run over plain ints, the offset-index entries added in one
        step. With listeners, batch by batch, so that each entry is reported."""
        if not sizes:
            return
        position = self._write(last_offsets[-1], max(max_timestamps), data)
        if self.listeners:
            for last_offset, max_timestamp, size_bytes in zip(last_offsets, max_timestamps, sizes):
                self._index_batch(last_offset, max_timestamp, position, size_bytes)
                position += size_bytes
            return
        best = self._max_timestamp_and_offset
        assert best is not None, "loaded by _write before the data went in"
        best_ts, best_offset, since = best.timestamp, best.offset, self._bytes_since_last_index_entry
        offsets: list[int] = []
        positions: list[int] = []
        stamps: list[tuple[int, int]] = []
        for last_offset, max_timestamp, size_bytes in zip(last_offsets, max_timestamps, sizes):
            if max_timestamp > best_ts:
                best_ts, best_offset = max_timestamp, last_offset
            if since > self.index_interval_bytes:  # the rule of _index_batch
                offsets.append(last_offset)
                positions.append(position)
                if not stamps or stamps[-1][0] < best_ts:  # an equal stamp adds no time entry
                    stamps.append((best_ts, best_offset))
                since = 0
            since += size_bytes
            position += size_bytes
        self._bytes_since_last_index_entry = since
        if best_ts > best.timestamp:
            self._max_timestamp_and_offset = TimestampOffset(best_ts, best_offset)
        self.offset_index.append_many(offsets, positions)
        for timestamp, offset in stamps:
            self.time_index.maybe_append(timestamp, offset)

    def append_batch(self, last_offset: int, max_timestamp: int, data: bytes | bytearray | memoryview) -> None:
        """:meth:`append` for ``data`` holding exactly one validated batch (the common produce
        request), without a header object: the same checks, write and index rule."""
        size_bytes = len(data)
        self._index_batch(last_offset, max_timestamp, self._write(last_offset, max_timestamp, data), size_bytes)

    def _write(self, largest_offset: int, largest_timestamp: int, data: bytes | bytearray | memoryview) -> int:
        """Write ``data`` at the end of the file; return the position it starts at."""
        position = self._size_bytes
        if not (0 <= largest_offset - self.base_offset <= RELATIVE_OFFSET_MAX
                and position + len(data) <= SEGMENT_FILE_BYTES_MAX):
            self._reject_append(largest_offset, len(data))
        if position == 0:
            self.rolling_based_timestamp = largest_timestamp
        if self._max_timestamp_and_offset is None:
            self._max_timestamp()  # before writing: the lazy load must not see new batches
        written = os.pwrite(self._fd, data, position)
        if written != len(data):
            raise StorageError(f"short write to {self.log_path}: {written} of {len(data)} bytes")
        self._size_bytes = position + written
        return position

    def _reject_append(self, largest_offset: int, size_bytes: int) -> None:
        if not self.can_convert_to_relative_offset(largest_offset):
            raise InvalidRecordError(
                f"offset {largest_offset} does not fit segment {self.log_path} "
                f"(base offset {self.base_offset}, relative offsets up to {RELATIVE_OFFSET_MAX})"
            )
        raise StorageError(f"append of {size_bytes} bytes would pass 2 GiB in {self.log_path}")

    def _index_batch(self, last_offset: int, max_timestamp: int, position: int, size_bytes: int) -> None:
        """Kafka's index rule for one appended batch at ``position`` (see the module docstring)."""
        max_ts = self._max_timestamp_and_offset
        assert max_ts is not None, "loaded by _write before the data went in"
        if max_timestamp > max_ts.timestamp:
            max_ts = self._max_timestamp_and_offset = TimestampOffset(max_timestamp, last_offset)
        if self._bytes_since_last_index_entry > self.index_interval_bytes:
            self._add_index_entries(last_offset, position, max_ts)
        self._bytes_since_last_index_entry += size_bytes

    def _add_index_entries(self, last_offset: int, position: int, max_ts: TimestampOffset) -> None:
        self.offset_index.append(last_offset, position)
        appended_time = self.time_index.maybe_append(max_ts.timestamp, max_ts.offset)
        self._bytes_since_last_index_entry = 0
        if self.listeners:
            ev.emit(self.listeners, ev.IndexEntryAppended("offset", self.base_offset, last_offset, position))
            if appended_time:
                ev.emit(
                    self.listeners,
                    ev.IndexEntryAppended("time", self.base_offset, max_ts.offset, max_ts.timestamp),
                )

    # -- reading -----------------------------------------------------------------------------

    def _view(self) -> mmap.mmap:
        """A read-only map of the valid bytes, remapped when appends have grown the file."""
        view = self._map
        if view is None or self._map_bytes < self._size_bytes:
            self._unmap()
            view = self._map = mmap.mmap(self._fd, self._size_bytes, access=mmap.ACCESS_READ)
            self._map_bytes = self._size_bytes
        return view

    def _unmap(self) -> None:
        # Called before the file shrinks: touching a map past the end of a file is SIGBUS.
        if self._map is not None:
            self._map.close()
            self._map = None
            self._map_bytes = 0

    def entry_at(self, position: int) -> EntryPosition | None:
        """The entry starting at ``position``, or None at (or past) the end of the valid data."""
        found = self._entry_tuple(position)
        return EntryPosition(*found) if found is not None else None

    def _entry_tuple(self, position: int) -> tuple[int, int, int, int, int] | None:
        # (base offset, last offset, position, size, max timestamp) from the entry's prefix.
        end = self._size_bytes
        if end - position < MAGIC_OFFSET + 1:
            return None
        view = self._view()
        magic = view[position + MAGIC_OFFSET]
        if magic == 2 and end - position >= V2_PREFIX_SIZE:
            base_offset, size, _m, delta, max_ts = V2_PREFIX.unpack_from(view, position)
            last_offset = base_offset + delta
        else:
            last_offset, size = _PREFIX_LEGACY.unpack_from(view, position)
            base_offset = last_offset
            has_ts = magic == 1 and end - position >= LEGACY_TIMESTAMP_OFFSET + 8
            max_ts = _INT64.unpack_from(view, position + LEGACY_TIMESTAMP_OFFSET)[0] if has_ts else NO_TIMESTAMP
        size_bytes = LOG_OVERHEAD + size
        if size < 0 or magic > 2 or position + size_bytes > end:
            raise CorruptRecordError(
                f"entry at byte {position} of {self.log_path} claims {size_bytes} bytes "
                f"(magic {magic}) but the file ends at byte {end}",
                position=position,
            )
        return base_offset, last_offset, position, size_bytes, max_ts

    def entries_from(self, position: int) -> Iterator[EntryPosition]:
        """Yield every entry from ``position`` to the end of the segment."""
        while True:
            entry = self.entry_at(position)
            if entry is None:
                return
            yield entry
            position += entry.size_bytes

    def translate_offset(self, offset: int, start_position: int = 0) -> EntryPosition | None:
        """The first entry whose last offset is >= ``offset`` (``LogSegment.translateOffset``).
        With listeners, each index probe, the entry found and the scan are reported as
        ``LookupStep`` events; without, the lookup pays one test for them."""
        listeners = self.listeners
        if not listeners:
            position = self.offset_index.floor_position(offset)
            return self.scan_for_offset(offset, position if position > start_position else start_position)

        step = ev.LookupStep("", offset, self.base_offset)
        slot = self.offset_index.floor_slot(offset - self.base_offset, self._probe_reporter(step, "offset"))
        mapping = self.offset_index.floor_entry(slot)
        ev.emit(listeners, dataclasses.replace(
            step, kind="index_result", slot=slot, offset=mapping.offset, position=mapping.position))
        entry = self.scan_for_offset(offset, max(mapping.position, start_position))
        self._emit_scan(dataclasses.replace(step, kind="scan"), mapping.position, entry)
        return entry

    def _emit_scan(self, step: ev.LookupStep, start_position: int, entry: EntryPosition | None) -> None:
        """Report the scan ending a lookup: the entry found (or none), bytes read to its end."""
        scanned = (entry.position + entry.size_bytes if entry else self._size_bytes) - start_position
        ev.emit(self.listeners, dataclasses.replace(
            step, offset=entry.last_offset if entry else -1,
            position=entry.position if entry else -1, bytes_scanned=scanned,
        ))

    def scan_for_offset(self, offset: int, position: int) -> EntryPosition | None:
        """Walk entries from ``position`` to the first whose last offset is >= ``offset``.

        The common v2 case is unrolled here (one ``unpack_from`` per batch on the mapped file);
        anything else goes through :meth:`_entry_tuple`. Each step moves forward by a positive
        entry size and stops at the end of the file, so the loop is bounded.
        """
        end = self._size_bytes
        view = self._map
        if view is None or self._map_bytes < end:
            view = self._view() if end else None
        unpack = V2_PREFIX.unpack_from
        while end - position >= V2_PREFIX_SIZE and view is not None:
            base_offset, size, magic, delta, max_ts = unpack(view, position)
            size_bytes = LOG_OVERHEAD + size
            if magic != 2 or size < V2_HEADER_SIZE - LOG_OVERHEAD or position + size_bytes > end:
                break  # a legacy entry, or let _entry_tuple raise the typed error
            if base_offset + delta >= offset:
                return _new_entry(EntryPosition, (base_offset, base_offset + delta, position, size_bytes, max_ts))
            position += size_bytes
        found = self._entry_tuple(position)
        while found is not None:
            if found[1] >= offset:
                return EntryPosition(*found)
            found = self._entry_tuple(found[2] + found[3])
        return None

    def read(
        self, start_offset: int, max_bytes: int, max_offset: int | None, min_one_message: bool,
        start: EntryPosition | None = None,
    ) -> FileSlice | None:
        """Whole batches from the one holding ``start_offset``: at most ``max_bytes`` (but at
        least one batch when ``min_one_message``), none holding an offset >= ``max_offset``."""
        entry = start if start is not None else self.translate_offset(start_offset)
        if entry is None:
            return None
        first_position = entry.position
        end_position = first_position
        while entry is not None:
            if max_offset is not None and entry.last_offset >= max_offset:
                break
            size_so_far = end_position - first_position
            if size_so_far + entry.size_bytes > max_bytes and not (min_one_message and size_so_far == 0):
                break
            end_position += entry.size_bytes
            entry = self.entry_at(end_position)
        return FileSlice(self.log_path, first_position, end_position - first_position)

    def find_offset_by_timestamp(self, timestamp_ms: int, starting_offset: int) -> EntryPosition | None:
        """The first batch at/after ``starting_offset`` whose max timestamp is >= the target
        (``LogSegment.findOffsetByTimestamp``, at batch granularity). With listeners, both
        index searches and the scan are reported as ``LookupStep`` events (``index="time"``
        for the time index)."""
        listeners = self.listeners
        step = ev.LookupStep("", -1, self.base_offset, target_timestamp=timestamp_ms) if listeners else None
        time_slot = self.time_index.floor_slot(
            timestamp_ms, self._probe_reporter(step, "time") if step else None)
        ts_entry = self.time_index.floor_entry(time_slot)
        if step:
            ev.emit(listeners, dataclasses.replace(
                step, kind="index_result", index="time", slot=time_slot,
                timestamp=ts_entry.timestamp, offset=ts_entry.offset))
        start_offset = max(ts_entry.offset, starting_offset)
        slot = self.offset_index.floor_slot(
            start_offset - self.base_offset, self._probe_reporter(step, "offset") if step else None)
        mapping = self.offset_index.floor_entry(slot)
        if step:
            ev.emit(listeners, dataclasses.replace(
                step, kind="index_result", slot=slot, offset=mapping.offset, position=mapping.position))
        found = next((entry for entry in self.entries_from(mapping.position)
                      if entry.max_timestamp >= timestamp_ms and entry.last_offset >= starting_offset), None)
        if step:
            self._emit_scan(dataclasses.replace(step, kind="scan"), mapping.position, found)
        return found

    def _probe_reporter(self, step: ev.LookupStep, index: str) -> index_search.ProbeCallback:
        """An index search's ``on_probe`` that reports each slot read as an ``index_probe``."""
        def on_probe(slot: int, key: int, section: str) -> None:
            # A time-index key is a timestamp; an offset-index key is relative to the base offset.
            key_fields: dict[str, Any] = {"index": "time", "timestamp": key} if index == "time" else {
                "offset": self.base_offset + key}
            ev.emit(self.listeners, dataclasses.replace(
                step, kind="index_probe", slot=slot, section=section, **key_fields))
        return on_probe

    def read_next_offset(self) -> int:
        """One past the last offset in this segment (base offset when empty)."""
        last = self.offset_index.last_offset
        position = self.offset_index.lookup(last).position
        next_offset = self.base_offset
        for entry in self.entries_from(position):
            next_offset = entry.last_offset + 1
        return max(next_offset, self.base_offset)

    # -- rolling -----------------------------------------------------------------------------

    def time_waited_for_roll_ms(self, now_ms: int, batch_max_timestamp: int) -> int:
        """Kafka's ``timeWaitedForRoll``: measured from the first batch's max timestamp when
        there is one (so replaying old data rolls by its own timestamps), else from when the
        segment was created."""
        if self.rolling_based_timestamp is None and self._size_bytes > 0:
            first = self.entry_at(0)
            self.rolling_based_timestamp = first.max_timestamp if first else None
        if self.rolling_based_timestamp is not None and self.rolling_based_timestamp >= 0:
            return batch_max_timestamp - self.rolling_based_timestamp
        return now_ms - self.created_ms

    def should_roll(
        self, *, segment_bytes: int, segment_ms: int, messages_size_bytes: int,
        max_timestamp: int, max_offset: int, now_ms: int,
    ) -> str | None:
        """Which of Kafka's four roll conditions holds, as a reason string, or None."""
        size = self._size_bytes
        if size > segment_bytes - messages_size_bytes:
            return "segment.bytes"
        if size > 0 and self.time_waited_for_roll_ms(now_ms, max_timestamp) > segment_ms - self.roll_jitter_ms:
            return "segment.ms"
        if self.offset_index.is_full():
            return "offset index full"
        if self.time_index.is_full():
            return "time index full"
        if not 0 <= max_offset - self.base_offset <= RELATIVE_OFFSET_MAX:
            return "relative offset overflow"
        return None

    def on_become_inactive(self) -> None:
        """Called on roll: write the final time-index entry and trim both indexes."""
        max_ts = self._max_timestamp()
        if max_ts.timestamp > NO_TIMESTAMP:
            self.time_index.maybe_append(max_ts.timestamp, max_ts.offset, skip_full_check=True)
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()

    def resize_indexes(self, max_index_bytes: int) -> None:
        self.offset_index.resize(max_index_bytes)
        self.time_index.resize(max_index_bytes)

    # -- recovery and truncation -------------------------------------------------------------

    def recover(self, max_batch_bytes: int) -> RecoveryResult:
        """Validate every entry, rebuild the indexes, cut off a torn or corrupt tail.

        Mirrors ``LogSegment.recover``: entries are checked in order
        (:func:`~kafkalab.storage.segment_validation.validate_entries`); the first bad one and
        everything after it are truncated, nothing before it is touched.
        """
        self.offset_index.reset()
        self.time_index.reset()
        self._max_timestamp_and_offset = TimestampOffset(NO_TIMESTAMP, self.base_offset)
        self._bytes_since_last_index_entry = 0
        valid, reason, headers = validate_entries(self._fd, self._size_bytes, self.base_offset, max_batch_bytes)
        for header in headers:
            max_ts = self._max_timestamp_and_offset
            if header.max_timestamp > max_ts.timestamp:
                self._max_timestamp_and_offset = max_ts = TimestampOffset(header.max_timestamp, header.last_offset)
            if self._bytes_since_last_index_entry > self.index_interval_bytes:
                self._add_index_entries(header.last_offset, header.position, max_ts)
            self._bytes_since_last_index_entry += header.size_bytes
        next_offset = headers[-1].last_offset + 1 if headers else self.base_offset
        self.txn_index.truncate_to(next_offset)
        truncated = self._size_bytes - valid
        if truncated > 0:
            self._unmap()
            os.ftruncate(self._fd, valid)
            self._size_bytes = valid
            self._durable_bytes = min(self._durable_bytes, valid)
        self.rolling_based_timestamp = headers[0].max_timestamp if headers else None
        return RecoveryResult(valid, truncated, reason, tuple(headers))

    def truncate_to(self, offset: int) -> int:
        """Drop every batch holding offsets >= ``offset``; returns the bytes removed."""
        entry = self.translate_offset(offset)
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        removed = 0
        if entry is not None:
            removed = self._size_bytes - entry.position
            self._unmap()
            os.ftruncate(self._fd, entry.position)
            self._size_bytes = entry.position
            self._durable_bytes = min(self._durable_bytes, entry.position)
        if self._size_bytes == 0:
            self.rolling_based_timestamp = None
        self._bytes_since_last_index_entry = 0
        self._max_timestamp_and_offset = None
        return removed

    # -- files -------------------------------------------------------------------------------

    def sanity_check(self) -> None:
        self.offset_index.sanity_check()
        self.time_index.sanity_check()
        self.txn_index.sanity_check()

    def flush(self) -> None:
        os.fsync(self._fd)
        self._durable_bytes = self._size_bytes
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def close(self) -> None:
        """Write the final time-index entry, trim the indexes and release the files."""
        if self._fd < 0:
            return
        self.on_become_inactive()
        self.close_handlers()

    def close_handlers(self) -> None:
        self._unmap()
        if self._fd >= 0:
            self._close_fd()
            self._fd = -1
        self.offset_index.close()
        self.time_index.close()
        self.txn_index.close()

    def all_paths(self) -> list[Path]:
        return [self.log_path, self.offset_index.path, self.time_index.path, self.txn_index.path]

    def change_file_suffixes(self, old_suffix: str, new_suffix: str) -> None:
        """Rename every file of the segment, e.g. ``.cleaned`` -> ``.swap`` (missing ones skipped)."""
        def renamed(path: Path) -> Path:
            name = path.name[: len(path.name) - len(old_suffix)] if old_suffix else path.name
            return path.with_name(name + new_suffix)
        new_log = renamed(self.log_path)
        if self.log_path.exists():
            os.replace(self.log_path, new_log)
        self.log_path = new_log
        for index in (self.offset_index, self.time_index, self.txn_index):
            target = renamed(index.path)
            if index.path.exists():
                index.rename_to(target)
            else:
                index.path = target

    def delete_files(self) -> None:
        self.close_handlers()
        for path in self.all_paths():
            path.unlink(missing_ok=True)
