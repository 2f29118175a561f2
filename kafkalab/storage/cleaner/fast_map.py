"""The cleaner's compiled offset map: key hash -> latest offset in fixed numpy slots.

Theory of operation
-------------------
Kafka's ``SkimpyOffsetMap`` keeps a 16-byte MD5 digest and an 8-byte offset per slot, in one
buffer of ``log.cleaner.dedupe.buffer.size`` bytes. This map keeps the same 24 bytes per slot,
as three 64-bit words in one ``(capacity, 3)`` uint64 array, and is probed by numba kernels::

    slot i:  | h1 (xxh64, seed 0) | h2 (xxh64, seed 0x9E37...) | offset + 1 (0 = empty) |

A key's home slot is ``h1 % capacity``; a lookup walks forward (linear probing, wrapping at
the end) until it finds both hashes equal (the key) or an empty slot (absent). An insert of a
new key stops the map build when ``size`` reaches ``max_entries = slots * load factor``, the
rule of Kafka's ``buildOffsetMapForSegment``: the clean then ends where the map filled.

Why two 64-bit hashes are enough: keys are never compared, only their hash pairs, so two keys
whose (h1, h2) agree would share a slot and the older one's record could be removed. With
hashes that behave like independent uniform 64-bit values, the chance that any two of ``n``
distinct keys agree on both is about ``n**2 / 2**129``; for the 5.03 million keys of a full
default map that is ~4e-26 per clean, as negligible as Kafka's MD5 (also not collision-proof
against keys crafted on purpose -- neither map is meant to be).

Worked example: a 128 MiB buffer gives 134_217_728 // 24 = 5_592_405 slots and room for
5_033_164 keys at load factor 0.9. A clean whose dirty section spans offsets 1000..61_000
can hold at most 60_000 keys, so the table is sized ``ceil(60_000 / 0.9) + 1 = 66_668``
slots (1.6 MB) instead of all 5.6 million: the memory bound is the same, but a small clean
does not pay for clearing 128 MiB.

Not thread-safe; owned by one :class:`~kafkalab.storage.cleaner.cleaner.Cleaner`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from kafkalab.storage.cleaner.offset_map import map_capacity

SEED_H1 = np.uint64(0)
SEED_H2 = np.uint64(0x9E3779B97F4A7C15)  # any fixed seed other than SEED_H1 gives an independent hash
_P1 = np.uint64(0x9E3779B185EBCA87)
_P2 = np.uint64(0xC2B2AE3D27D4EB4F)
_P3 = np.uint64(0x165667B19E3779F9)
_P4 = np.uint64(0x85EBCA77C2B2AE63)
_P5 = np.uint64(0x27D4EB2F165667C5)


@njit(cache=True, inline="always")
def _rotl(x, r):  # pragma: no cover - compiled
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@njit(cache=True, inline="always")
def _read64(data, p):  # pragma: no cover - compiled
    v = np.uint64(0)
    for i in range(8):
        v |= np.uint64(data[p + i]) << np.uint64(8 * i)
    return v


@njit(cache=True, inline="always")
def _round(acc, lane):  # pragma: no cover - compiled
    acc = acc + lane * _P2
    return _rotl(acc, 31) * _P1


@njit(cache=True, inline="always")
def _merge(acc, v):  # pragma: no cover - compiled
    acc ^= _round(np.uint64(0), v)
    return acc * _P1 + _P4


@njit(cache=True)
def xxh64(data, start, length, seed):  # pragma: no cover - compiled
    """XXH64 of ``data[start:start + length]`` (Yann Collet's xxHash, 64-bit variant)."""
    p = start
    end = start + length
    seed = np.uint64(seed)
    if length >= 32:
        v1 = seed + _P1 + _P2
        v2 = seed + _P2
        v3 = seed
        v4 = seed - _P1
        while p + 32 <= end:
            v1 = _round(v1, _read64(data, p))
            v2 = _round(v2, _read64(data, p + 8))
            v3 = _round(v3, _read64(data, p + 16))
            v4 = _round(v4, _read64(data, p + 24))
            p += 32
        h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
        h = _merge(_merge(_merge(_merge(h, v1), v2), v3), v4)
    else:
        h = seed + _P5
    h += np.uint64(length)
    while p + 8 <= end:
        h ^= _round(np.uint64(0), _read64(data, p))
        h = _rotl(h, 27) * _P1 + _P4
        p += 8
    if p + 4 <= end:
        lane = np.uint64(0)
        for i in range(4):
            lane |= np.uint64(data[p + i]) << np.uint64(8 * i)
        h ^= lane * _P1
        h = _rotl(h, 23) * _P2 + _P3
        p += 4
    while p < end:
        h ^= np.uint64(data[p]) * _P5
        h = _rotl(h, 11) * _P1
        p += 1
    h ^= h >> np.uint64(33)
    h *= _P2
    h ^= h >> np.uint64(29)
    h *= _P3
    h ^= h >> np.uint64(32)
    return h


@njit(cache=True)
def hash_keys(data, key_start, key_length):  # pragma: no cover - compiled
    """(h1, h2) of every key; null keys (length -1) get zeros and must be skipped by callers."""
    n = len(key_start)
    h1 = np.zeros(n, np.uint64)
    h2 = np.zeros(n, np.uint64)
    for i in range(n):
        if key_length[i] >= 0:
            h1[i] = xxh64(data, key_start[i], key_length[i], SEED_H1)
            h2[i] = xxh64(data, key_start[i], key_length[i], SEED_H2)
    return h1, h2


@njit(cache=True)
def _find(table, h1, h2):  # pragma: no cover - compiled
    """The slot holding (h1, h2), or the empty slot where it would go; -1 if neither exists."""
    capacity = table.shape[0]
    slot = np.int64(h1 % np.uint64(capacity))
    for _ in range(capacity):  # bounded: at most every slot once
        if table[slot, 2] == 0 or (table[slot, 0] == h1 and table[slot, 1] == h2):
            return slot
        slot += 1
        if slot == capacity:
            slot = 0
    return -1


@njit(cache=True)
def put_batches(table, size, max_entries, h1, h2, offset, key_length, batch_first, batch_last_offset,
                batch_mappable, start_offset, latest_offset):  # pragma: no cover - compiled
    """Map every keyed record at or past ``start_offset`` of the mappable batches, in order.

    Mirrors Kafka's ``buildOffsetMapForSegment``: a keyed record finding the map at
    ``max_entries`` stops the build (returns full=True) before its batch's last offset is
    recorded. Returns (size, latest offset, full, records mapped)."""
    mapped = 0
    for b in range(len(batch_last_offset)):
        if batch_mappable[b]:
            for i in range(batch_first[b], batch_first[b + 1]):
                if key_length[i] < 0 or offset[i] < start_offset:
                    continue
                if size >= max_entries:
                    return size, latest_offset, True, mapped
                slot = _find(table, h1[i], h2[i])
                if slot < 0:  # every slot taken: only if the caller's records bound was wrong
                    return size, latest_offset, True, mapped
                if table[slot, 2] == 0:
                    table[slot, 0] = h1[i]
                    table[slot, 1] = h2[i]
                    size += 1
                table[slot, 2] = np.uint64(offset[i] + 1)
                latest_offset = offset[i]
                mapped += 1
        if batch_last_offset[b] >= start_offset and batch_last_offset[b] > latest_offset:
            latest_offset = batch_last_offset[b]
    return size, latest_offset, False, mapped


@njit(cache=True)
def get_offsets(table, h1, h2, key_length):  # pragma: no cover - compiled
    """The mapped offset of every record's key, or -1 (absent, or a null key)."""
    found = np.full(len(h1), -1, np.int64)
    for i in range(len(h1)):
        if key_length[i] >= 0:
            slot = _find(table, h1[i], h2[i])
            if slot >= 0 and table[slot, 2] != 0:
                found[i] = np.int64(table[slot, 2]) - 1
    return found


class FastOffsetMap:
    """The compiled map; same sizing and "full" rule as :class:`OffsetMap`.

    Not thread-safe; owned by one cleaner.
    """

    def __init__(self, memory_bytes: int, load_factor: float = 0.9) -> None:
        self.slots, self.max_entries = map_capacity(memory_bytes, load_factor)
        self.load_factor = load_factor
        self.table = np.zeros((1, 3), np.uint64)
        self.size = 0
        self.latest_offset = -1

    def clear(self, records_bound: int | None = None) -> None:
        """Empty the map, sized for at most ``records_bound`` keys (default: all slots)."""
        capacity = self.slots
        if records_bound is not None:
            needed = min(self.max_entries, max(records_bound, 1))
            capacity = min(self.slots, math.ceil(needed / self.load_factor) + 1)
        self.table = np.zeros((capacity, 3), np.uint64)
        self.size = 0
        self.latest_offset = -1

    @property
    def is_full(self) -> bool:
        return self.size >= self.max_entries

    @property
    def utilization(self) -> float:
        return self.size / self.slots

    def update_latest_offset(self, offset: int) -> None:
        self.latest_offset = max(self.latest_offset, offset)

    def _hash(self, key: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        data = np.frombuffer(key, np.uint8) if key else np.zeros(1, np.uint8)
        lengths = np.array([len(key)], np.int32)
        h1, h2 = hash_keys(data, np.zeros(1, np.int64), lengths)
        return h1, h2, lengths

    def try_put(self, key: bytes, offset: int) -> bool:
        """Put one key (the reference path's interface); False when the map is full."""
        if self.is_full:
            return False
        h1, h2, lengths = self._hash(key)
        one = np.array([offset], np.int64)
        self.size, self.latest_offset, full, _ = put_batches(
            self.table, self.size, self.max_entries, h1, h2, one, lengths, np.array([0, 1], np.int64),
            np.array([offset], np.int64), np.ones(1, np.bool_), -1, self.latest_offset)
        return not full

    def get(self, key: bytes) -> int:
        h1, h2, lengths = self._hash(key)
        return int(get_offsets(self.table, h1, h2, lengths)[0])
