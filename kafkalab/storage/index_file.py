"""The machinery shared by ``.index`` and ``.timeindex`` files (Kafka's ``AbstractIndex``).

An index file is a flat array of fixed-size, big-endian entries with no header. A new index is
*preallocated*: its file is extended to ``segment.index.bytes`` rounded down to a whole number
of entries, so appends never grow the file; when the segment stops being the active one the
file is trimmed to the entries actually written. After a crash an active index therefore ends
in zero bytes, which is why recovery rebuilds it::

    00000000000000000000.index, 10 MiB preallocated, 3 entries written:
    [ 00000000 00000000 ][ 00000014 00000140 ][ 0000002b 000004c4 ][ 00 00 .. 00 ]  <- zeros
      rel 0 -> pos 0       rel 20 -> pos 320    rel 43 -> pos 1220

``max_entries`` is the file length divided by the entry size, exactly as Kafka derives it from
its memory map, so a trimmed (inactive) index is full until :meth:`IndexFile.resize` grows it.

Like Kafka, kafkalab writes entries through a shared memory map of the preallocated file (no
system call per entry; the map is dropped before the file is resized). The file is the durable
format, byte for byte Kafka's, and the only thing read back on reopen.

For searching, each index also keeps an *in-memory mirror* of its two columns: native-order
Python ``array`` objects, filled from the file when the index is opened, extended on every
append and cut on every truncation, so they always equal the valid entries of the file. Why
a copy: Kafka's index is a memory-mapped file that stays resident in the page cache, and a
lookup is a binary search over it in compiled code. Searching the big-endian bytes of our map
from Python costs an interpreted loop step and an ``unpack`` per probe; an ``array`` is
Python's memory-resident sorted array, and :func:`bisect.bisect_right` searches it in C (see
:mod:`kafkalab.storage.index_search`). The mirror costs what the file does: an offset-index
entry is 4 + 4 bytes (``array('i')`` keys and positions), a time-index entry 8 + 4 bytes, so
a full default index (``segment.index.bytes`` = 10 MiB) holds 10 MiB in memory, plus the
``array``'s growth slack of at most one eighth.

Worked example: an offset index opened with entries ``(20, 320), (43, 1220)`` has keys
``array('i', [20, 43])`` and values ``array('i', [320, 1220])``; ``floor_slot(30)`` is
``bisect_right(keys, 30) - 1`` = 0, so the scan starts at byte 320.
"""

from __future__ import annotations

import mmap
import os
import struct
import weakref
from array import array
from bisect import bisect_right
from pathlib import Path
from typing import ClassVar

import numpy as np

from kafkalab.errors import CorruptIndexError, StorageError
from kafkalab.storage import index_search

# Kafka sizes indexes with an int (segment.index.bytes is an INT config): no file can be larger.
INDEX_FILE_BYTES_MAX = 2**31 - 1
# Entries are read back in one pread; partial reads are retried at most this many times.
READ_RETRIES_MAX = 16


def _writable_map(fd: int, length_bytes: int) -> mmap.mmap:
    """A shared, writable map of an index file, with the kernel's read-ahead turned off.

    The preallocated tail of a new index is a hole. Without ``MADV_RANDOM`` the first entry
    written faults in a whole read-ahead window (``read_ahead_kb``, often several MiB) of
    zero-filled pages: measured at 2-13 ms per new segment on a host with 8 MiB read-ahead,
    against ~60 us with the advice. Entries are appended one at a time and searched at
    random, so read-ahead never helps an index.
    """
    view = mmap.mmap(fd, length_bytes)
    if hasattr(mmap, "MADV_RANDOM"):  # not on Windows
        view.madvise(mmap.MADV_RANDOM)
    return view


def read_exact(fd: int, size_bytes: int, position: int) -> bytes:
    """Read ``size_bytes`` at ``position`` or fewer if the file ends first; never loops forever."""
    chunks: list[bytes] = []
    remaining = size_bytes
    for _ in range(READ_RETRIES_MAX):
        if remaining <= 0:
            break
        chunk = os.pread(fd, remaining, position + size_bytes - remaining)
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


class IndexFile:
    """One index file with a key column and a value column. Not thread-safe; owned by a segment.

    Subclasses define ``ENTRY_SIZE``, ``DTYPE`` (the on-disk numpy record layout), the
    ``array`` type codes of the mirror's two columns, and how a (key, value) pair is meant;
    this class owns the file, preallocation, trimming, the in-memory mirror and the search.
    """

    ENTRY_SIZE: ClassVar[int]
    ENTRY: ClassVar[struct.Struct]  # the on-disk layout of one entry, big-endian
    DTYPE: ClassVar[np.dtype]
    KEY_TYPECODE: ClassVar[str]  # the mirror's key column: "i" (int32) or "q" (int64)
    VALUE_TYPECODE: ClassVar[str] = "i"  # both value columns are int32 on disk
    KIND: ClassVar[str]

    def __init__(self, path: Path, base_offset: int, max_index_bytes: int) -> None:
        self.path = Path(path)
        self.base_offset = base_offset
        self.max_index_bytes = max_index_bytes
        newly_created = not self.path.exists()
        try:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StorageError(f"cannot open {self.KIND} {self.path}: {exc}") from exc
        # A raw descriptor is an int: nothing closes it if the index is dropped unclosed (a
        # crashed test, a forgotten log). The finalizer closes it then; close() runs it early.
        self._close_fd = weakref.finalize(self, os.close, self._fd)
        if newly_created:
            os.ftruncate(self._fd, self._round_down(max_index_bytes))
        self._length_bytes = os.fstat(self._fd).st_size
        self._max_entries = self._length_bytes // self.ENTRY_SIZE
        self._map: mmap.mmap | None = None  # writable map, created on the first append
        self.invalid_bytes = self._length_bytes % self.ENTRY_SIZE
        # The in-memory mirror of the valid entries (see the module docstring).
        self._keys = array(self.KEY_TYPECODE)
        self._values = array(self.VALUE_TYPECODE)
        self._count = 0
        # The last entry as Python ints: the append path compares against it on every batch.
        self._last_key = 0
        self._last_value = 0
        if not newly_created:
            self._load()

    # -- sizes -------------------------------------------------------------------------------

    @property
    def entries(self) -> int:
        return self._count

    @property
    def max_entries(self) -> int:
        return self._max_entries

    @property
    def size_bytes(self) -> int:
        """Bytes of valid entries (the file may be longer while preallocated)."""
        return self._count * self.ENTRY_SIZE

    @property
    def file_length_bytes(self) -> int:
        return self._length_bytes

    def is_full(self) -> bool:
        return self._count >= self._max_entries

    def _round_down(self, size_bytes: int) -> int:
        return size_bytes - size_bytes % self.ENTRY_SIZE

    # -- file <-> columns ---------------------------------------------------------------------

    def _load(self) -> None:
        if self._length_bytes > INDEX_FILE_BYTES_MAX:
            raise CorruptIndexError(
                f"{self.KIND} {self.path} is {self._length_bytes} bytes, above the "
                f"{INDEX_FILE_BYTES_MAX}-byte limit of an index file"
            )
        count = self._length_bytes // self.ENTRY_SIZE
        data = read_exact(self._fd, count * self.ENTRY_SIZE, 0)
        count = len(data) // self.ENTRY_SIZE
        table = np.frombuffer(data, dtype=self.DTYPE, count=count)
        self._keys = array(self.KEY_TYPECODE, table["key"].astype(f"={self.KEY_TYPECODE}").tobytes())
        self._values = array(self.VALUE_TYPECODE, table["value"].astype(f"={self.VALUE_TYPECODE}").tobytes())
        self._count = count
        self._remember_last()

    def _remember_last(self) -> None:
        if self._count:
            self._last_key = self._keys[-1]
            self._last_value = self._values[-1]
        else:
            self._last_key = self._last_value = 0

    def _append_entry(self, key: int, value: int) -> None:
        # Callers check is_full first and raise a typed error; reaching here full is a bug.
        count = self._count
        assert count < self._max_entries, f"append to a full {self.KIND} {self.path}"
        view = self._map
        if view is None:
            view = self._map = _writable_map(self._fd, self._length_bytes)
        self.ENTRY.pack_into(view, count * self.ENTRY_SIZE, key, value)  # straight into the map
        self._keys.append(key)
        self._values.append(value)
        self._count = count + 1
        self._last_key = key
        self._last_value = value

    def _append_entries(self, keys: list[int], values: list[int]) -> None:
        """Many entries at once: one write into the map, one extend per column. Callers have
        checked their order and that they fit."""
        count, added = self._count, len(keys)
        assert count + added <= self._max_entries, f"append past the end of {self.KIND} {self.path}"
        view = self._map
        if view is None:
            view = self._map = _writable_map(self._fd, self._length_bytes)
        table = np.empty(added, dtype=self.DTYPE)
        table["key"], table["value"] = keys, values
        view[count * self.ENTRY_SIZE : (count + added) * self.ENTRY_SIZE] = table.tobytes()
        self._keys.extend(keys)
        self._values.extend(values)
        self._count = count + added
        self._remember_last()

    def key_at(self, slot: int) -> int:
        return self._keys[slot]

    def value_at(self, slot: int) -> int:
        return self._values[slot]

    def floor_slot(self, target_key: int, on_probe: index_search.ProbeCallback | None = None) -> int:
        """The last slot with key <= ``target_key`` (-1 if none).

        With ``on_probe`` (someone listens to the log) the search runs Kafka's warm-section
        loop slot by slot and reports each entry it reads; without, ``bisect`` searches the
        in-memory keys. Both give the same slot."""
        if on_probe is None:
            return bisect_right(self._keys, target_key) - 1
        return index_search.floor_slot_loop(
            self._keys.__getitem__, self._count, target_key, self.ENTRY_SIZE, on_probe
        )

    def raw_entries(self) -> list[tuple[int, int]]:
        """Every (key, value) pair written so far, for dumps and tests."""
        return list(zip(self._keys, self._values))

    # -- lifecycle ---------------------------------------------------------------------------

    def truncate_to_entries(self, count: int) -> None:
        """Forget every entry from slot ``count`` on (the file keeps its length)."""
        count = max(0, min(count, self._count))
        tail = (self._count - count) * self.ENTRY_SIZE
        if tail:
            self._unmap()
            os.pwrite(self._fd, bytes(tail), count * self.ENTRY_SIZE)
        del self._keys[count:], self._values[count:]
        self._count = count
        self._remember_last()

    def reset(self) -> None:
        """Drop every entry and re-extend the file (recovery rebuilds the index from the log)."""
        self.truncate_to_entries(0)
        self.resize(self.max_index_bytes)

    def resize(self, max_index_bytes: int) -> bool:
        """Set the file length to ``max_index_bytes`` rounded down to whole entries (never
        below the valid entries). Returns whether the length changed."""
        new_length = max(self._round_down(max_index_bytes), self.size_bytes)
        if new_length == self._length_bytes:
            return False
        self._unmap()
        os.ftruncate(self._fd, new_length)
        self._length_bytes = new_length
        self._max_entries = new_length // self.ENTRY_SIZE
        self.invalid_bytes = 0
        return True

    def trim_to_valid_size(self) -> None:
        """Shrink the file to exactly the entries written (done on roll and on close)."""
        self.resize(self.size_bytes)

    def _unmap(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None

    def flush(self) -> None:
        if self._map is not None:
            self._map.flush()
        os.fsync(self._fd)

    def close(self) -> None:
        self._unmap()
        if self._fd >= 0:
            self._close_fd()
            self._fd = -1

    def rename_to(self, new_path: Path) -> None:
        os.replace(self.path, new_path)
        self.path = Path(new_path)

    def check_length(self) -> None:
        """Kafka's length rule: the file must hold a whole number of entries."""
        if self.invalid_bytes:
            raise CorruptIndexError(
                f"{self.KIND} file {self.path} is corrupt, found {self._length_bytes} bytes "
                f"which is not a multiple of the entry size {self.ENTRY_SIZE}"
            )

    def check_sorted(self, column: array, name: str, strict: bool) -> None:
        """Entries must be ordered by ``column``; a zeroed or scrambled tail breaks this."""
        if self._count < 2:
            return
        steps = np.diff(np.frombuffer(column, dtype=f"={column.typecode}").astype(np.int64))
        bad = np.flatnonzero(steps <= 0 if strict else steps < 0)
        if bad.size:
            slot = int(bad[0]) + 1
            raise CorruptIndexError(
                f"{self.KIND} file {self.path} is corrupt: {name} at slot {slot} "
                f"({column[slot]}) does not follow slot {slot - 1} ({column[slot - 1]})"
            )
