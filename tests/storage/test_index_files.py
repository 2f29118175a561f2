"""Offset and time index files: byte layout, preallocation, trimming, lookups, sanity checks."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import numpy as np
import pytest

from kafkalab.errors import CorruptIndexError, InvalidRecordError, StorageError
from kafkalab.storage import index_search
from kafkalab.storage.offset_index import OffsetIndex, OffsetPosition
from kafkalab.storage.time_index import TimeIndex, TimestampOffset
from kafkalab.storage.txn_index import AbortedTxn, TransactionIndex


def test_offset_index_entry_layout_and_preallocation(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000100.index"
    index = OffsetIndex(path, 100, 1003)  # rounds down to 125 whole 8-byte entries
    assert path.stat().st_size == 1000 and index.max_entries == 125
    index.append(120, 320)
    index.append(143, 1220)
    data = path.read_bytes()
    assert data[:16] == struct.pack(">iiii", 20, 320, 43, 1220)
    assert data[16:] == bytes(1000 - 16)  # preallocated zeros after the entries
    index.trim_to_valid_size()
    assert path.read_bytes() == struct.pack(">iiii", 20, 320, 43, 1220)
    index.close()


def test_offset_index_lookup_is_largest_lower_bound(tmp_path: Path) -> None:
    index = OffsetIndex(tmp_path / "0.index", 0, 10 * 1024 * 1024)
    index.append(20, 320)
    index.append(43, 1220)
    assert index.lookup(23) == OffsetPosition(20, 320)
    assert index.lookup(20) == OffsetPosition(20, 320)
    assert index.lookup(5) == OffsetPosition(0, 0)
    assert index.lookup(10**9) == OffsetPosition(43, 1220)
    index.close()


def test_offset_index_rejects_non_increasing_and_full(tmp_path: Path) -> None:
    index = OffsetIndex(tmp_path / "0.index", 0, 16)
    index.append(5, 0)
    with pytest.raises(InvalidRecordError, match="no larger than the last offset"):
        index.append(5, 10)
    index.append(6, 10)
    with pytest.raises(StorageError, match="full offset index"):
        index.append(7, 20)
    index.close()


def test_reopened_index_keeps_entries_and_is_full_until_resized(tmp_path: Path) -> None:
    path = tmp_path / "0.index"
    index = OffsetIndex(path, 0, 800)
    for i in range(1, 6):
        index.append(i * 10, i * 100)
    index.trim_to_valid_size()
    index.close()
    again = OffsetIndex(path, 0, 800)
    assert again.entries == 5 and again.is_full()
    again.resize(800)
    assert not again.is_full() and path.stat().st_size == 800
    assert again.lookup(35) == OffsetPosition(30, 300)
    again.close()


def test_truncate_to_removes_entries_at_or_above(tmp_path: Path) -> None:
    index = OffsetIndex(tmp_path / "0.index", 0, 800)
    for i in range(1, 6):
        index.append(i * 10, i * 100)
    index.truncate_to(30)
    assert index.raw_entries() == [(10, 100), (20, 200)]
    index.close()


def test_zeroed_tail_fails_sanity_check(tmp_path: Path) -> None:
    path = tmp_path / "0.index"
    index = OffsetIndex(path, 0, 800)
    index.append(10, 100)
    index.append(20, 200)
    index.close()  # not trimmed: 98 zero entries follow, as after a crash
    with pytest.raises(CorruptIndexError, match="does not follow"):
        OffsetIndex(path, 0, 800).sanity_check()


def test_length_not_multiple_of_entry_size_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "0.index"
    path.write_bytes(struct.pack(">ii", 1, 10) + b"\x00\x01\x02")
    index = OffsetIndex(path, 0, 800)
    with pytest.raises(CorruptIndexError, match="not a multiple"):
        index.sanity_check()
    index.close()


def test_time_index_appends_only_when_timestamp_grows(tmp_path: Path) -> None:
    path = tmp_path / "0.timeindex"
    index = TimeIndex(path, 0, 120)
    assert index.max_entries == 10
    assert index.maybe_append(1557554753400, 0)
    assert not index.maybe_append(1557554753400, 5)
    assert index.maybe_append(1557554753420, 430)
    assert path.read_bytes()[:24] == struct.pack(">qiqi", 1557554753400, 0, 1557554753420, 430)
    assert index.lookup(1557554753430) == TimestampOffset(1557554753420, 430)
    assert index.lookup(5) == TimestampOffset(-1, 0)
    with pytest.raises(InvalidRecordError):
        index.maybe_append(1557554753500, 10)  # offset went backwards
    index.close()


def test_time_index_reserves_last_slot_for_roll(tmp_path: Path) -> None:
    index = TimeIndex(tmp_path / "0.timeindex", 0, 36)  # 3 entries
    index.maybe_append(10, 1)
    index.maybe_append(20, 2)
    assert index.is_full()
    with pytest.raises(StorageError):
        index.maybe_append(30, 3)
    assert index.maybe_append(30, 3, skip_full_check=True)
    index.close()


def test_txn_index_entry_is_34_bytes_and_created_lazily(tmp_path: Path) -> None:
    path = tmp_path / "0.txnindex"
    index = TransactionIndex(path, 0)
    assert not path.exists()
    index.append(AbortedTxn(7, 10, 14, 15))
    assert path.read_bytes().hex() == "0000" + "0000000000000007" + "000000000000000a" + "000000000000000e" + "000000000000000f"
    assert TransactionIndex(path, 0).collect_aborted(12, 20) == [AbortedTxn(7, 10, 14, 15)]
    assert TransactionIndex(path, 0).collect_aborted(15, 20) == []


@pytest.mark.parametrize("entry_size", [8, 12])
def test_bisect_search_matches_kafkas_warm_section_loop(entry_size: int) -> None:
    rng = random.Random(7)
    for count in [0, 1, 2, 5, 600, 1023, 1024, 1025, 1026, 3000]:
        keys = np.array(sorted(rng.sample(range(10**6), count)), dtype=np.int64)
        targets = [-1, 0, 10**6] + [rng.randrange(-5, 10**6 + 5) for _ in range(50)] + keys[:20].tolist()
        for target in targets:
            probes: list[tuple[int, int, str]] = []
            loop = index_search.floor_slot_loop(
                lambda s: int(keys[s]), count, target, entry_size, lambda *p: probes.append(p)
            )
            fast = index_search.floor_slot(keys.tolist(), count, target)
            expected = int(np.searchsorted(keys, target, side="right")) - 1
            assert loop == fast == expected, (count, target)
            assert len(probes) <= 2 + count.bit_length()


def _random_indexes(tmp_path: Path, rng: random.Random) -> list[OffsetIndex | TimeIndex]:
    """Offset and time indexes of random sizes around the warm-section boundary, written
    through the file and reopened, so the mirror searched is the one loaded from disk."""
    indexes: list[OffsetIndex | TimeIndex] = []
    for n, count in enumerate([0, 1, 2, 3, 7, 100, 1022, 1023, 1024, 1025, 1026, 2047, 2048, 4000, 9000]):
        base = rng.randrange(10**9)
        offsets = sorted(rng.sample(range(base, base + 20 * count + 1), count))
        written = OffsetIndex(tmp_path / f"{n}.index", base, 8 * count + 8)
        for position, offset in enumerate(offsets):
            written.append(offset, 100 * position)
        written.trim_to_valid_size()
        written.close()
        indexes.append(OffsetIndex(tmp_path / f"{n}.index", base, 8 * count + 8))
        times = TimeIndex(tmp_path / f"{n}.timeindex", base, 12 * count + 24)
        for stamp, offset in zip(sorted(rng.sample(range(1_700_000_000_000, 1_700_000_000_000 + 30 * count + 1), count)), offsets):
            times.maybe_append(stamp, offset)
        indexes.append(times)
    return indexes


def test_index_lookup_by_bisect_agrees_with_the_probed_search_on_random_cases(tmp_path: Path) -> None:
    """The index answers with bisect when nobody listens and with Kafka's probe loop when
    someone does: the same slot, for more than 10,000 random targets (exact keys, their
    neighbours, below the first and above the last), against numpy's searchsorted too."""
    rng = random.Random(17)
    cases = 0
    for index in _random_indexes(tmp_path, rng):
        keys = [key for key, _ in index.raw_entries()]
        wanted = [rng.choice(keys) + rng.choice((-1, 0, 1)) for _ in range(300)] if keys else []
        low, high = (keys[0], keys[-1]) if keys else (0, 1)
        wanted += [rng.randrange(low - 50, high + 50) for _ in range(500)] + [low - 1, high + 1]
        for target in wanted:
            probes: list[int] = []
            probed = index.floor_slot(target, lambda slot, key, section: probes.append(key))
            fast = index.floor_slot(target)
            assert fast == probed == int(np.searchsorted(np.array(keys, np.int64), target, "right")) - 1
            assert len(probes) <= 2 + len(keys).bit_length()
            cases += 1
        index.close()
    assert cases >= 10_000


def test_warm_section_search_touches_only_the_tail_for_recent_offsets() -> None:
    keys = np.arange(0, 50_000, 10, dtype=np.int64)  # 5000 entries
    probed: list[int] = []
    slot = index_search.floor_slot_loop(lambda s: int(keys[s]), 5000, 49_995, 8, lambda s, k, sec: probed.append(s))
    assert slot == 4999
    assert index_search.first_hot_slot(5000, 8) == 3975
    assert min(probed) >= 3975
