"""The transaction index (``.txnindex``): aborted transactions that overlap a segment.

Mirrors Kafka's ``TransactionIndex``. Each 34-byte big-endian entry records one aborted
transaction::

    version int16 (0) | producerId int64 | firstOffset int64 | lastOffset int64 | lastStableOffset int64

A ``read_committed`` consumer uses it to skip the aborted records in the range it fetched.
Unlike the offset and time indexes the file is not preallocated and is created only when the
first entry arrives (a segment without aborted transactions has no ``.txnindex`` at all).

Example: producer 7 aborts a transaction spanning offsets 10..14 and the last stable offset
then moves to 15: ``append(AbortedTxn(7, 10, 14, 15))`` writes 34 bytes
``0000 0000000000000007 000000000000000a 000000000000000e 000000000000000f``.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

from kafkalab.errors import CorruptIndexError, InvalidRecordError
from kafkalab.storage.index_file import INDEX_FILE_BYTES_MAX, read_exact

ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = ENTRY.size  # 34
CURRENT_VERSION = 0


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """One aborted transaction: producer id, first and last offset, and the LSO after it."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = CURRENT_VERSION

    def encode(self) -> bytes:
        return ENTRY.pack(
            self.version, self.producer_id, self.first_offset, self.last_offset, self.last_stable_offset
        )


class TransactionIndex:
    """A segment's ``.txnindex``. Not thread-safe; owned by one :class:`LogSegment`."""

    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = Path(path)
        self.base_offset = base_offset
        self._entries: list[AbortedTxn] | None = None
        self.invalid_bytes = 0

    def _load(self) -> list[AbortedTxn]:
        if self._entries is None:
            self._entries = []
            if self.path.exists():
                self._entries = self._read_file()
        return self._entries

    def _read_file(self) -> list[AbortedTxn]:
        length = self.path.stat().st_size
        if length > INDEX_FILE_BYTES_MAX:
            raise CorruptIndexError(f"transaction index {self.path} is {length} bytes, above the limit")
        fd = os.open(self.path, os.O_RDONLY)
        try:
            data = read_exact(fd, length, 0)
        finally:
            os.close(fd)
        self.invalid_bytes = len(data) % ENTRY_SIZE
        entries = []
        for position in range(0, len(data) - ENTRY_SIZE + 1, ENTRY_SIZE):
            version, pid, first, last, lso = ENTRY.unpack_from(data, position)
            if version != CURRENT_VERSION:
                raise CorruptIndexError(
                    f"transaction index {self.path} entry at byte {position} has version "
                    f"{version}; only {CURRENT_VERSION} is defined"
                )
            entries.append(AbortedTxn(pid, first, last, lso, version))
        return entries

    @property
    def entries(self) -> list[AbortedTxn]:
        return list(self._load())

    def append(self, txn: AbortedTxn) -> None:
        """Add an aborted transaction; last offsets must not go backwards (Kafka's rule)."""
        entries = self._load()
        if entries and txn.last_offset < entries[-1].last_offset:
            raise InvalidRecordError(
                f"the last offset of appended transaction {txn} is smaller than "
                f"{entries[-1].last_offset}, the last offset in {self.path}"
            )
        with open(self.path, "ab") as file:
            file.write(txn.encode())
        entries.append(txn)

    def collect_aborted(self, fetch_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [fetch_offset, upper_bound_offset)."""
        return [
            t for t in self._load()
            if t.last_offset >= fetch_offset and t.first_offset < upper_bound_offset
        ]

    def truncate_to(self, offset: int) -> None:
        """Drop entries whose last offset is >= ``offset`` (they describe truncated data)."""
        entries = self._load()
        keep = [t for t in entries if t.last_offset < offset]
        if len(keep) != len(entries):
            self._rewrite(keep)

    def reset(self) -> None:
        self._rewrite([])

    def _rewrite(self, entries: list[AbortedTxn]) -> None:
        self._entries = entries
        if self.path.exists():
            with open(self.path, "wb") as file:
                file.write(b"".join(t.encode() for t in entries))

    def flush(self) -> None:
        if self.path.exists():
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def sanity_check(self) -> None:
        self._load()
        if self.invalid_bytes:
            raise CorruptIndexError(
                f"transaction index {self.path} is corrupt: its length is not a multiple of "
                f"{ENTRY_SIZE}"
            )

    def rename_to(self, new_path: Path) -> None:
        if self.path.exists():
            os.replace(self.path, new_path)
        self.path = Path(new_path)

    def close(self) -> None:
        """Nothing stays open between calls."""
