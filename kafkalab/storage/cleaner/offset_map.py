"""The cleaner's offset map: key -> latest offset, in a fixed number of slots.

Mirrors Kafka's ``SkimpyOffsetMap``. The map never stores keys, only a 16-byte MD5 digest of
each key plus an 8-byte offset, so its size is fixed by ``log.cleaner.dedupe.buffer.size``
whatever the keys look like::

    bytes per entry = 16 (digest) + 8 (offset) = 24
    slots           = dedupe buffer bytes // 24
    usable entries  = slots * log.cleaner.io.buffer.load.factor

Worked example: the default 128 MiB buffer gives 134_217_728 // 24 = 5_592_405 slots, and at
the 0.9 load factor one clean can dedupe about 5.03 million distinct keys; a log with more
distinct keys in its dirty section is cleaned in several passes, each up to where the map
filled. Two keys with the same MD5 would share a slot -- the chance is negligible, the same
trade Kafka makes.

kafkalab keeps the digests in a Python ``dict`` (the slot count is enforced, not the exact
byte layout), which is what makes the memory bound real: the map refuses the entry past
``max_entries`` instead of growing.
"""

from __future__ import annotations

import hashlib

from kafkalab.errors import StorageError

DIGEST_BYTES = 16  # MD5, as in Kafka
OFFSET_BYTES = 8
BYTES_PER_ENTRY = DIGEST_BYTES + OFFSET_BYTES


class OffsetMapFullError(StorageError):
    """A put into a map that already holds ``max_entries`` keys."""


def map_capacity(memory_bytes: int, load_factor: float) -> tuple[int, int]:
    """(slots, entries before the map counts as full) for ``log.cleaner.dedupe.buffer.size``
    bytes and ``log.cleaner.io.buffer.load.factor``: one slot per digest plus offset."""
    if memory_bytes < BYTES_PER_ENTRY:
        raise StorageError(f"offset map needs at least {BYTES_PER_ENTRY} bytes, got {memory_bytes}")
    if not 0 < load_factor <= 1:
        raise StorageError(f"offset map load factor must be in (0, 1], got {load_factor}")
    slots = memory_bytes // BYTES_PER_ENTRY
    return slots, max(1, int(slots * load_factor))


class OffsetMap:
    """Latest offset per key digest, bounded by slots. Not thread-safe; owned by one cleaner."""

    def __init__(self, memory_bytes: int, load_factor: float = 0.9) -> None:
        self.slots, self.max_entries = map_capacity(memory_bytes, load_factor)
        self._offsets: dict[bytes, int] = {}
        self.latest_offset = -1  # the last offset the map has seen, keyed or not
        self.lookups = 0
        self.inserts = 0

    @staticmethod
    def digest(key: bytes) -> bytes:
        return hashlib.md5(key, usedforsecurity=False).digest()

    @property
    def size(self) -> int:
        return len(self._offsets)

    @property
    def is_full(self) -> bool:
        return len(self._offsets) >= self.max_entries

    @property
    def utilization(self) -> float:
        return len(self._offsets) / self.slots

    def put(self, key: bytes, offset: int) -> None:
        """Remember ``offset`` as the latest for ``key``; offsets must not go backwards."""
        assert offset > self.latest_offset or offset == self.latest_offset, (offset, self.latest_offset)
        digest = self.digest(key)
        if digest not in self._offsets and self.is_full:
            raise OffsetMapFullError(f"offset map full: {self.size} of {self.max_entries} entries")
        self._offsets[digest] = offset
        self.latest_offset = offset
        self.inserts += 1

    def try_put(self, key: bytes, offset: int) -> bool:
        """``put`` unless it would need a new entry in a full map; False then."""
        digest = self.digest(key)
        if digest not in self._offsets and self.is_full:
            return False
        self._offsets[digest] = offset
        self.latest_offset = max(self.latest_offset, offset)
        self.inserts += 1
        return True

    def get(self, key: bytes) -> int:
        """The latest offset recorded for ``key``, or -1."""
        self.lookups += 1
        return self._offsets.get(self.digest(key), -1)

    def update_latest_offset(self, offset: int) -> None:
        self.latest_offset = max(self.latest_offset, offset)

    def clear(self) -> None:
        self._offsets.clear()
        self.latest_offset = -1
