from __future__ import annotations

import pytest

from kafkalab.errors import StorageError
from kafkalab.storage.cleaner.offset_map import BYTES_PER_ENTRY, OffsetMap, OffsetMapFullError


def test_slots_from_memory_like_kafka() -> None:
    offset_map = OffsetMap(128 * 1024 * 1024, 0.9)
    assert offset_map.slots == 5_592_405
    assert offset_map.max_entries == int(5_592_405 * 0.9)


def test_latest_offset_wins_and_missing_is_minus_one() -> None:
    offset_map = OffsetMap(100 * BYTES_PER_ENTRY)
    offset_map.put(b"a", 1)
    offset_map.put(b"b", 2)
    offset_map.put(b"a", 3)
    assert (offset_map.get(b"a"), offset_map.get(b"b"), offset_map.get(b"c")) == (3, 2, -1)
    assert offset_map.size == 2 and offset_map.latest_offset == 3


def test_bounded_by_slots() -> None:
    offset_map = OffsetMap(10 * BYTES_PER_ENTRY, load_factor=0.5)
    for i in range(5):
        assert offset_map.try_put(b"k%d" % i, i)
    assert offset_map.is_full
    assert not offset_map.try_put(b"new", 5)
    assert offset_map.try_put(b"k0", 6)  # an existing key still updates
    with pytest.raises(OffsetMapFullError):
        offset_map.put(b"other", 7)


@pytest.mark.parametrize(("memory", "factor"), [(BYTES_PER_ENTRY - 1, 0.9), (1024, 0.0), (1024, 1.5)])
def test_bad_sizes_rejected(memory: int, factor: float) -> None:
    with pytest.raises(StorageError):
        OffsetMap(memory, factor)
