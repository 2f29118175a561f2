"""A follower's fetcher: what to ask its leader for next, and what to do with the answer.

Theory of operation
-------------------
Mirrors Kafka's ``AbstractFetcherThread`` / ``ReplicaFetcherThread`` without the thread: one
:class:`FollowerFetcher` per leader broker holds a fetch state for each partition this node
follows from that leader, builds the next Fetch (:meth:`FollowerFetcher.next_fetch`) and applies
the leader's answer (:meth:`FollowerFetcher.on_fetch_response`). The replica manager sends the
request and routes the answer back; nothing here touches a socket or a clock.

Per partition the state is ``fetch_offset`` (the local LEO: the next offset wanted) and the
``current_leader_epoch`` the follower believes in. Each fetch also carries the epoch of the last
batch the follower holds (``last_fetched_epoch``, KIP-595), so the leader can answer
*diverging epoch* instead of records when the follower's tail was never committed; the follower
then truncates (:mod:`kafkalab.replication.truncation`) and fetches again from the cut.

What an answer does, per partition::

    records            append as follower; fetch_offset = new LEO;
                       HW = min(leader's HW, LEO); log start follows the leader's
    diverging epoch    truncate to truncation_for(...); fetch from there
    OFFSET_OUT_OF_RANGE  the leader's log does not hold fetch_offset: if the leader's LEO is
                       below ours (an unclean election cut history), truncate to it; otherwise
                       our log is entirely below its start: start over at its log start
                       (a new replica copies from the leader's log start offset)
    leadership errors  (NOT_LEADER_OR_FOLLOWER, FENCED/UNKNOWN_LEADER_EPOCH) pause the partition
                       until new metadata names a leader again

Worked example: a new follower (empty log) of a leader whose log starts at 500 and ends at 900
fetches at 0, gets OFFSET_OUT_OF_RANGE with the leader's offsets, truncates fully to start at
500, and its next fetch asks for 500.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from kafkalab.errors import ErrorCode
from kafkalab.replication.truncation import EpochCache, EpochEndOffset, truncation_for


class FollowerEpochCache(EpochCache, Protocol):
    @property
    def latest_epoch(self) -> int | None: ...


class FollowerLog(Protocol):
    """The follower's log as the fetcher uses it (``kafkalab.storage.Log`` provides it)."""

    high_watermark: int
    log_start_offset: int

    @property
    def log_end_offset(self) -> int: ...
    @property
    def leader_epoch_cache(self) -> FollowerEpochCache: ...
    def append_as_follower(self, records: bytes | bytearray) -> object: ...
    def truncate_to(self, offset: int) -> bool: ...
    def truncate_fully_and_start_at(self, offset: int) -> None: ...
    def update_high_watermark(self, offset: int) -> int: ...
    def increment_log_start_offset(self, offset: int) -> bool: ...


class FetchStatus(Enum):
    FETCHING = "fetching"
    PAUSED = "paused"  # a leadership error: wait for new metadata


@dataclass(slots=True)
class PartitionFetchState:
    fetch_offset: int
    current_leader_epoch: int
    status: FetchStatus = FetchStatus.FETCHING


@dataclass(frozen=True, slots=True)
class PartitionFetch:
    """One partition of a follower's Fetch request (the wire form is built by the broker)."""

    topic: str
    partition: int
    fetch_offset: int
    current_leader_epoch: int
    last_fetched_epoch: int
    log_start_offset: int
    partition_max_bytes: int


@dataclass(frozen=True, slots=True)
class PartitionFetchResult:
    """One partition of the leader's answer."""

    topic: str
    partition: int
    error_code: int
    high_watermark: int = -1
    log_start_offset: int = -1
    log_end_offset: int = -1  # the leader's LEO; used only with OFFSET_OUT_OF_RANGE
    records: bytes | bytearray | None = None
    diverging_epoch: EpochEndOffset | None = None


PARTITION_MAX_BYTES = 1_048_576  # replica.fetch.max.bytes
# As Kafka's AbstractFetcherThread: FENCED_LEADER_EPOCH means our leader epoch is stale, so the
# partition waits for new metadata; NOT_LEADER_OR_FOLLOWER and UNKNOWN_LEADER_EPOCH mean the
# leader has not yet learned what we learned from the metadata log, so the fetch is retried.
_PAUSE_ON = frozenset({ErrorCode.FENCED_LEADER_EPOCH})

TopicPartition = tuple[str, int]


class FollowerFetcher:
    """Replication from one leader broker. Not thread-safe; owned by the replica manager."""

    def __init__(self, leader_id: int, partition_max_bytes: int = PARTITION_MAX_BYTES) -> None:
        self.leader_id = leader_id
        self.partition_max_bytes = partition_max_bytes
        self.states: dict[TopicPartition, PartitionFetchState] = {}
        self.logs: dict[TopicPartition, FollowerLog] = {}
        self._asked: dict[TopicPartition, PartitionFetchState] = {}  # the state each fetch was sent for

    def add_partition(self, topic: str, partition: int, log: FollowerLog, leader_epoch: int) -> None:
        """Start (or restart, after a leader change) following ``topic-partition`` from our LEO."""
        self.states[(topic, partition)] = PartitionFetchState(log.log_end_offset, leader_epoch)
        self.logs[(topic, partition)] = log

    def remove_partition(self, topic: str, partition: int) -> None:
        self.states.pop((topic, partition), None)
        self.logs.pop((topic, partition), None)
        self._asked.pop((topic, partition), None)

    def next_fetch(self) -> list[PartitionFetch]:
        """The partitions to ask for now, in a stable order; empty when all are paused."""
        fetches = []
        for (topic, partition), state in sorted(self.states.items()):
            if state.status is not FetchStatus.FETCHING:
                continue
            log = self.logs[(topic, partition)]
            self._asked[(topic, partition)] = state
            fetches.append(PartitionFetch(
                topic, partition, state.fetch_offset, state.current_leader_epoch,
                _last_epoch(log), log.log_start_offset, self.partition_max_bytes))
        return fetches

    def on_fetch_response(self, results: list[PartitionFetchResult]) -> list[TopicPartition]:
        """Apply the leader's answer; returns the partitions whose log or HW changed."""
        changed = []
        for result in results:
            key = (result.topic, result.partition)
            state = self.states.get(key)
            if state is None or self._asked.get(key) is not state:
                # Removed, or restarted for a new leader epoch, while the fetch was in flight:
                # the answer is about the old state (Kafka's fetcher checks the same).
                continue
            if self._apply(key, state, result):
                changed.append(key)
        return changed

    def _apply(self, key: TopicPartition, state: PartitionFetchState, result: PartitionFetchResult) -> bool:
        log = self.logs[key]
        if result.error_code == ErrorCode.NONE:
            if result.diverging_epoch is not None:
                return self._truncate(log, state, result.diverging_epoch)
            return self._append(log, state, result)
        if result.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
            return self._reset_out_of_range(log, state, result)
        if result.error_code in _PAUSE_ON:
            state.status = FetchStatus.PAUSED
        return False  # other errors (a slow leader, a storage error) retry on the next fetch

    def _append(self, log: FollowerLog, state: PartitionFetchState, result: PartitionFetchResult) -> bool:
        if result.records:
            log.append_as_follower(result.records)
        state.fetch_offset = log.log_end_offset
        old_hw = log.high_watermark
        log.update_high_watermark(min(result.high_watermark, log.log_end_offset))
        # The leader's log start never passes its HW, which bounds ours once we hold it.
        moved_start = log.log_start_offset < result.log_start_offset <= log.high_watermark and \
            log.increment_log_start_offset(result.log_start_offset)
        return bool(result.records) or log.high_watermark != old_hw or moved_start

    def _truncate(self, log: FollowerLog, state: PartitionFetchState, diverging: EpochEndOffset) -> bool:
        cut = truncation_for(diverging, log.leader_epoch_cache, log.log_end_offset, state.fetch_offset)
        changed = log.truncate_to(cut.offset)
        state.fetch_offset = log.log_end_offset
        return changed

    def _reset_out_of_range(self, log: FollowerLog, state: PartitionFetchState, result: PartitionFetchResult) -> bool:
        # Kafka's fetchOffsetAndTruncate: the leader answered where its log starts and ends.
        if 0 <= result.log_end_offset < log.log_end_offset:
            log.truncate_to(result.log_end_offset)
        elif result.log_start_offset > log.log_end_offset:
            log.truncate_fully_and_start_at(result.log_start_offset)
        else:
            return False
        state.fetch_offset = log.log_end_offset
        return True


def _last_epoch(log: FollowerLog) -> int:
    latest = log.leader_epoch_cache.latest_epoch
    return -1 if latest is None else latest


__all__ = [
    "PARTITION_MAX_BYTES", "FetchStatus", "FollowerFetcher", "FollowerLog", "PartitionFetch",
    "PartitionFetchResult", "PartitionFetchState",
]
