"""The leader's bookkeeping: each voter's end offset, the Raft high watermark, check-quorum.

Theory of operation
-------------------
A voter's fetch at offset ``n`` says "my log matches yours up to ``n``" (the leader has just
checked its last fetched epoch). The leader keeps the largest such offset per voter, its own
being its flushed log end offset. The high watermark is the offset a majority has reached --
sort the end offsets in descending order and take the one at index ``len(voters) // 2`` --
**but only once that offset is past the start of the leader's own epoch** (Kafka's
``LeaderState.maybeUpdateHighWatermark``). Raft's commit rule needs that second condition: an
entry from an older epoch that happens to sit on a majority can still be overwritten by a
later leader (the Raft paper's Figure 8), unless an entry of the current epoch above it is on a
majority too. The high watermark never moves back within an epoch.

Worked example (voters 1, 2, 3; leader 1 of epoch 4 started its epoch at offset 10 with the
LEADER_CHANGE batch, LEO 13): end offsets {1: 13, 2: 10, 3: 8} sort to [13, 10, 8]; index 1
gives 10, which is not past 10, so no high watermark yet. Voter 3 fetches at 12: [13, 12, 10]
gives 12 > 10, so the high watermark becomes 12: offsets 0..11 are committed.

Check-quorum: a leader that has not heard fetches from a majority (itself included) for
1.5 x ``controller.quorum.fetch.timeout.ms`` resigns, so a leader cut off from its quorum stops
acting as one (Kafka's ``LeaderState`` check-quorum timer).

For DescribeQuorum (``kafka-metadata-quorum.sh describe --replication``) the leader also keeps
each voter's last fetch time and last caught-up time, with the rule partitions use: a fetch at or
beyond the leader's log end offset is caught up now; a fetch at or beyond the leader's log end
offset at the *previous* fetch was caught up as of that previous fetch.

Not thread-safe; owned by one Raft node for one epoch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kafkalab.controller.raft.messages import FetchRequest

CHECK_QUORUM_TIMEOUT_FACTOR = 1.5  # LeaderState.CHECK_QUORUM_TIMEOUT_FACTOR
OBSERVERS_TRACKED_MAX = 10_000  # a bound on DescribeQuorum's observer list, far above any cluster


@dataclass(frozen=True, slots=True)
class ReplicaDescription:
    """One voter as DescribeQuorum's ReplicaState reports it; -1 means never."""

    replica_id: int
    log_end_offset: int
    last_fetch_timestamp: int
    last_caught_up_timestamp: int


@dataclass(slots=True)
class _FetchTimes:
    last_fetch_ms: int = -1
    last_caught_up_ms: int = -1
    leader_end_at_last_fetch: int = -1


@dataclass(frozen=True, slots=True)
class ParkedFetch:
    """A fetch with nothing to return yet, answered on new data, a high watermark move, or at
    ``deadline_ms`` (Kafka parks it in the fetch purgatory for up to its ``MaxWaitMs``)."""

    src: int
    correlation_id: int
    request: FetchRequest
    deadline_ms: int


def majority(voter_count: int) -> int:
    return voter_count // 2 + 1


class LeaderState:
    """One epoch's leadership. Not thread-safe; owned by one Raft node."""

    def __init__(
        self, local_id: int, epoch: int, voters: Sequence[int], epoch_start_offset: int,
        granting_voters: Sequence[int], now_ms: int, fetch_timeout_ms: int,
    ) -> None:
        self.local_id = local_id
        self.epoch = epoch
        self.voters = tuple(sorted(voters))
        self.epoch_start_offset = epoch_start_offset
        self.granting_voters = tuple(sorted(granting_voters))
        self.end_offsets: dict[int, int] = {v: -1 for v in self.voters}
        self.high_watermark: int | None = None  # unknown until something of this epoch commits
        self.acknowledged: set[int] = {local_id}  # voters known to have learned of this epoch
        self.parked: dict[int, ParkedFetch] = {}
        self._check_quorum_ms = int(fetch_timeout_ms * CHECK_QUORUM_TIMEOUT_FACTOR)
        self.check_quorum_deadline_ms = now_ms + self._check_quorum_ms
        self._fetched_since_check: set[int] = {local_id}
        self._fetch_times: dict[int, _FetchTimes] = {v: _FetchTimes() for v in self.voters}
        self._observers: dict[int, _FetchTimes] = {}
        self._observer_offsets: dict[int, int] = {}

    def update_end_offset(self, voter: int, end_offset: int) -> bool:
        """Record ``voter``'s matching end offset; returns whether the high watermark moved."""
        if voter not in self.end_offsets:
            return False  # an observer: it reads the log but does not count towards commits
        self.end_offsets[voter] = end_offset
        self.acknowledged.add(voter)
        return self._maybe_update_high_watermark()

    def _maybe_update_high_watermark(self) -> bool:
        ranked = sorted(self.end_offsets.values(), reverse=True)
        reached = ranked[len(self.voters) // 2]
        if reached <= self.epoch_start_offset:
            return False
        if self.high_watermark is not None and reached <= self.high_watermark:
            return False  # never backwards (a voter that restarted may report less)
        self.high_watermark = reached
        return True

    def record_fetch(self, voter: int, now_ms: int) -> None:
        """Check-quorum bookkeeping: a majority fetched since the last reset pushes the
        deadline forward."""
        if voter not in self.end_offsets:
            return
        self._fetched_since_check.add(voter)
        if len(self._fetched_since_check) >= majority(len(self.voters)):
            self.check_quorum_deadline_ms = now_ms + self._check_quorum_ms
            self._fetched_since_check = {self.local_id}

    def record_fetch_times(self, voter: int, fetch_offset: int, leader_end_offset: int, now_ms: int) -> None:
        """Kafka's ``ReplicaState.updateFollowerState`` timestamps."""
        times = self._fetch_times.get(voter)
        if times is None:  # an observer: reported by DescribeQuorum, at its fetch offset
            if voter not in self._observers and len(self._observers) >= OBSERVERS_TRACKED_MAX:
                return
            times = self._observers.setdefault(voter, _FetchTimes())
            self._observer_offsets[voter] = fetch_offset
        if fetch_offset >= leader_end_offset:
            times.last_caught_up_ms = now_ms
        elif fetch_offset >= times.leader_end_at_last_fetch >= 0:
            times.last_caught_up_ms = times.last_fetch_ms
        times.last_fetch_ms = now_ms
        times.leader_end_at_last_fetch = leader_end_offset

    def describe(self, now_ms: int) -> tuple[ReplicaDescription, ...]:
        """The voters' replication state, the leader reporting itself as fetched now."""
        out = []
        for voter in self.voters:
            times = self._fetch_times[voter]
            fetched = now_ms if voter == self.local_id else times.last_fetch_ms
            caught_up = now_ms if voter == self.local_id else times.last_caught_up_ms
            out.append(ReplicaDescription(voter, self.end_offsets[voter], fetched, caught_up))
        return tuple(out)

    def describe_observers(self) -> tuple[ReplicaDescription, ...]:
        """The observers (brokers) that fetched in this epoch, by id."""
        return tuple(ReplicaDescription(o, self._observer_offsets[o], t.last_fetch_ms, t.last_caught_up_ms)
                     for o, t in sorted(self._observers.items()))

    def unacknowledged(self) -> list[int]:
        return [v for v in self.voters if v not in self.acknowledged]

    def preferred_successors(self) -> tuple[int, ...]:
        """Other voters, the most caught-up first (EndQuorumEpoch's PreferredSuccessors)."""
        others = [v for v in self.voters if v != self.local_id]
        return tuple(sorted(others, key=lambda v: (-self.end_offsets[v], v)))

    def take_parked(self) -> list[ParkedFetch]:
        parked = list(self.parked.values())
        self.parked.clear()
        return parked

    def take_expired(self, now_ms: int) -> list[ParkedFetch]:
        expired = [p for p in self.parked.values() if p.deadline_ms <= now_ms]
        for fetch in expired:
            del self.parked[fetch.src]
        return expired


__all__ = ["CHECK_QUORUM_TIMEOUT_FACTOR", "LeaderState", "ParkedFetch", "ReplicaDescription", "majority"]
