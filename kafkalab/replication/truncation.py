"""Where a follower's log diverges from its leader's, found by leader epochs (KIP-101, KIP-279,
KIP-595).

Theory of operation
-------------------
After a leader change, a follower may hold records the new leader never had: they were written
by the old leader past the high watermark and never committed. The follower must cut them off
before it fetches again, and the high watermark is the wrong place to cut (KIP-101 shows it
loses committed data, or leaves logs that differ at the same offset). Leader epochs find the
exact point: every batch carries the epoch of the leader that wrote it, and each replica's
leader-epoch cache records where each epoch began.

The follower names the epoch of the last batch it has (its *last fetched epoch*). The leader
answers with the end of that epoch in *its* log -- where the next epoch begins, or its LEO for
the current epoch -- using :meth:`LeaderEpochCache.end_offset_for`. Two cases follow:

* the leader knows the epoch: the follower truncates to ``min(leader's end, its own end for that
  epoch, its LEO)`` and is done;
* the leader answers an *older* epoch (it never saw the follower's): the follower truncates to
  its own end of that older epoch and asks again (KIP-279: two leaders may have written in
  epochs the other never saw, so one round trip is not always enough).

Since Fetch v12 (KIP-595) the question rides on every fetch: the follower sends
``last_fetched_epoch`` and the leader answers ``diverging_epoch`` instead of records when the
follower's log has gone astray. OffsetsForLeaderEpoch asks the same question on its own.

Worked example (KIP-279's scenario). Follower B: epochs [(0, 0), (1, 5)], LEO 8. New leader A:
epochs [(0, 0), (2, 6)], LEO 9. B fetches at 8 with last fetched epoch 1. A has no epoch 1: its
cache answers (0, 6) -- epoch 0 ends at 6. B's own epoch 0 ends at 5 (where its epoch 1 began),
so B truncates to min(6, 5, 8) = 5 and fetches again from 5 with last fetched epoch 0, which
A's log matches: A sends offsets 5.. from its epochs 0 and 2.

Pure functions over epoch caches and offsets; no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from kafkalab.errors import ErrorCode, KafkaError

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


class EpochCache(Protocol):
    """A leader-epoch cache (``kafkalab.storage.leader_epoch.LeaderEpochCache``)."""

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]: ...


class OffsetOutOfRangeError(KafkaError):
    def __init__(self, message: str) -> None:
        super().__init__(message, error_code=ErrorCode.OFFSET_OUT_OF_RANGE)


@dataclass(frozen=True, slots=True)
class EpochEndOffset:
    """An answer about where an epoch ends: Fetch's ``diverging_epoch`` and OffsetsForLeaderEpoch."""

    epoch: int
    end_offset: int


@dataclass(frozen=True, slots=True)
class Truncation:
    """Where the follower cuts its log; ``completed`` False means: ask the leader again."""

    offset: int
    completed: bool


def diverging_epoch(
    leader_cache: EpochCache, leader_log_start: int, leader_log_end: int, last_fetched_epoch: int,
    fetch_offset: int,
) -> EpochEndOffset | None:
    """The leader's check of a follower's fetch (Kafka's ``Partition.readRecords``): None when
    the follower's log matches up to ``fetch_offset``, else where the follower's last epoch ends
    in the leader's log. Raises OFFSET_OUT_OF_RANGE when the leader cannot tell, or the offset
    is below its log start."""
    epoch, end = leader_cache.end_offset_for(last_fetched_epoch, leader_log_end)
    if epoch == UNDEFINED_EPOCH or end == UNDEFINED_OFFSET:
        raise OffsetOutOfRangeError(
            f"Could not determine the end offset of the last fetched epoch {last_fetched_epoch}")
    if fetch_offset < leader_log_start:
        raise OffsetOutOfRangeError(
            f"Received request for offset {fetch_offset}, but the log starts at {leader_log_start}")
    if epoch < last_fetched_epoch or end < fetch_offset:
        return EpochEndOffset(epoch, end)
    return None


def truncation_for(
    leader_answer: EpochEndOffset, follower_cache: EpochCache, follower_log_end: int, fetch_offset: int,
) -> Truncation:
    """The follower's reaction to the leader's answer (Kafka's ``getOffsetTruncationState``)."""
    if leader_answer.end_offset == UNDEFINED_OFFSET:
        return Truncation(fetch_offset, completed=True)  # the leader cannot say: keep our fetch offset
    if leader_answer.epoch == UNDEFINED_EPOCH:
        return Truncation(min(leader_answer.end_offset, follower_log_end), completed=True)
    own_epoch, own_end = follower_cache.end_offset_for(leader_answer.epoch, follower_log_end)
    if own_end == UNDEFINED_OFFSET:
        # Below every epoch we know: only the leader's offset can guide us.
        return Truncation(min(leader_answer.end_offset, follower_log_end), completed=True)
    if own_epoch != leader_answer.epoch:
        # We never saw the leader's epoch: cut to where our own older epoch ends, then ask again.
        return Truncation(min(own_end, follower_log_end), completed=False)
    return Truncation(min(own_end, leader_answer.end_offset, follower_log_end), completed=True)


__all__ = [
    "UNDEFINED_EPOCH", "UNDEFINED_OFFSET", "EpochCache", "EpochEndOffset", "OffsetOutOfRangeError",
    "Truncation", "diverging_epoch", "truncation_for",
]
