"""Divergence and truncation by leader epoch: KIP-101's and KIP-279's scenarios, as tables."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab.errors import ErrorCode
from kafkalab.replication.truncation import (
    EpochEndOffset,
    OffsetOutOfRangeError,
    Truncation,
    diverging_epoch,
    truncation_for,
)
from kafkalab.storage.leader_epoch import LeaderEpochCache


def _cache(tmp_path: Path, name: str, *assigned: tuple[int, int]) -> LeaderEpochCache:
    cache = LeaderEpochCache(tmp_path / name)
    for epoch, start in assigned:
        cache.assign(epoch, start)
    return cache


def _converge(leader: LeaderEpochCache, leader_end: int, follower: LeaderEpochCache, follower_end: int) -> int:
    """Run the fetch / truncate loop until the follower's log matches; return where it cut."""
    for _round in range(10):
        last_epoch = follower.entries[-1][0] if follower.entries else -1
        answer = diverging_epoch(leader, 0, leader_end, last_epoch, follower_end)
        if answer is None:
            return follower_end
        cut = truncation_for(answer, follower, follower_end, follower_end)
        follower_end = cut.offset
        follower.truncate_from_end(follower_end)
    raise AssertionError("did not converge")


def test_kip279_docstring_example_takes_two_rounds(tmp_path: Path) -> None:
    leader = _cache(tmp_path, "a", (0, 0), (2, 6))
    follower = _cache(tmp_path, "b", (0, 0), (1, 5))
    answer = diverging_epoch(leader, 0, 9, 1, 8)
    assert answer == EpochEndOffset(0, 6)
    assert truncation_for(answer, follower, 8, 8) == Truncation(5, completed=True)
    follower.truncate_from_end(5)
    assert diverging_epoch(leader, 0, 9, 0, 5) is None


def test_kip101_follower_keeps_committed_data_the_hw_would_have_cut(tmp_path: Path) -> None:
    # KIP-101 scenario 1: both replicas hold offsets 0..1 in epoch 0, the follower's HW was 1
    # when it restarted. Truncating to the HW would lose offset 1, which the leader committed.
    leader = _cache(tmp_path, "a", (0, 0), (1, 2))
    follower = _cache(tmp_path, "b", (0, 0))
    assert _converge(leader, 2, follower, 2) == 2


def test_kip101_divergent_logs_are_cut_to_the_common_prefix(tmp_path: Path) -> None:
    # KIP-101 scenario 2: offset 1 was written in epoch 0 on the old leader only; the new leader
    # wrote a different offset 1 in epoch 1. The follower must drop its offset 1.
    leader = _cache(tmp_path, "a", (0, 0), (1, 1))
    follower = _cache(tmp_path, "b", (0, 0))
    assert _converge(leader, 2, follower, 2) == 1


def test_kip279_two_epochs_neither_saw(tmp_path: Path) -> None:
    leader = _cache(tmp_path, "a", (0, 0), (1, 10), (3, 20))
    follower = _cache(tmp_path, "b", (0, 0), (1, 10), (2, 15))
    assert _converge(leader, 30, follower, 18) == 15


@pytest.mark.parametrize(("answer", "follower", "follower_end", "fetch_offset", "expected"), [
    (EpochEndOffset(3, -1), [(0, 0)], 50, 40, Truncation(40, True)),      # leader cannot say: keep fetch offset
    (EpochEndOffset(-1, 30), [(0, 0)], 50, 50, Truncation(30, True)),     # no epoch in the answer: its offset
    (EpochEndOffset(1, 30), [(4, 40)], 50, 50, Truncation(30, True)),     # below our epochs: its offset
    (EpochEndOffset(2, 30), [(2, 0), (5, 20)], 50, 50, Truncation(20, True)),
    (EpochEndOffset(2, 10), [(2, 0), (5, 20)], 50, 50, Truncation(10, True)),
    (EpochEndOffset(3, 30), [(2, 0), (5, 20)], 50, 50, Truncation(20, False)),  # never saw epoch 3: ask again
])
def test_truncation_table(
    tmp_path: Path, answer: EpochEndOffset, follower: list[tuple[int, int]], follower_end: int,
    fetch_offset: int, expected: Truncation,
) -> None:
    assert truncation_for(answer, _cache(tmp_path, "f", *follower), follower_end, fetch_offset) == expected


def test_leader_refuses_what_it_cannot_judge(tmp_path: Path) -> None:
    leader = _cache(tmp_path, "a", (3, 100))
    with pytest.raises(OffsetOutOfRangeError) as unknown:
        diverging_epoch(leader, 100, 120, 7, 110)  # an epoch above the leader's
    assert unknown.value.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    with pytest.raises(OffsetOutOfRangeError):
        diverging_epoch(leader, 100, 120, 3, 90)  # below the log start
    assert diverging_epoch(leader, 100, 120, 3, 120) is None
    assert diverging_epoch(leader, 100, 120, 3, 121) == EpochEndOffset(3, 120)
