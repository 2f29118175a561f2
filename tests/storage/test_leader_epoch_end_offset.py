"""``LeaderEpochCache.end_offset_for`` against the cases Kafka's ``LeaderEpochFileCacheTest`` pins."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab.storage.leader_epoch import LeaderEpochCache


def _cache(tmp_path: Path, *assigned: tuple[int, int]) -> LeaderEpochCache:
    cache = LeaderEpochCache(tmp_path / "leader-epoch-checkpoint")
    for epoch, start in assigned:
        cache.assign(epoch, start)
    return cache


@pytest.mark.parametrize(("assigned", "epoch", "log_end", "expected"), [
    ([(2, 10)], 2, 11, (2, 11)),                                  # the latest epoch ends at the LEO
    ([(2, 10), (2, 11), (2, 12)], 2, 11, (2, 11)),                # re-assigning an epoch changes nothing
    ([(2, 11), (3, 12)], -1, 0, (-1, -1)),                        # undefined epoch asked
    ([], 0, 0, (-1, -1)),                                         # empty cache
    ([(5, 11), (6, 12), (7, 13)], 4, 0, (4, 11)),                 # below every epoch: itself, first start
    ([(1, 11), (2, 13), (3, 15)], 2, 17, (2, 15)),                # an older epoch ends where the next starts
    ([(0, 10), (2, 13), (4, 17)], 1, 0, (0, 13)),                 # unknown epoch: the floor epoch, next start
    ([(0, 10), (2, 13), (4, 17)], 3, 0, (2, 17)),
    ([(2, 100)], 3, 100, (-1, -1)),                               # above every epoch
])
def test_end_offset_for_matches_kafka(
    tmp_path: Path, assigned: list[tuple[int, int]], epoch: int, log_end: int, expected: tuple[int, int]
) -> None:
    assert _cache(tmp_path, *assigned).end_offset_for(epoch, log_end) == expected


def test_a_new_epoch_reaches_the_checkpoint_at_once(tmp_path: Path) -> None:
    # As Kafka's LeaderEpochFileCache.assign: a crash right after a leader change must not lose
    # the epoch a follower's truncation will ask about.
    from kafkalab.storage import checkpoints

    path = tmp_path / "leader-epoch-checkpoint"
    cache = LeaderEpochCache(path)
    cache.assign(0, 0)
    cache.assign(3, 120)
    assert checkpoints.read_leader_epochs(path) == [(0, 0), (3, 120)]
    cache.assign(3, 130)  # not a new epoch: nothing to write
    cache.truncate_from_end(120)  # truncation waits for the next flush
    assert checkpoints.read_leader_epochs(path) == [(0, 0), (3, 120)] and cache.dirty
