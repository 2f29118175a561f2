"""A controller's place in the KRaft quorum: the epoch states and the moves between them (KIP-595).

Theory of operation
-------------------
Every voter is in exactly one *epoch state* at a time, for one epoch. The epoch only grows. The
states mirror Kafka's ``EpochState`` classes (``UnattachedState``, ``VotedState``,
``CandidateState``, ``LeaderState``, ``FollowerState``, ``ResignedState``)::

        start / higher epoch seen                     majority of votes
    UNATTACHED ---- grant vote ----> VOTED          CANDIDATE ---------------> LEADER
        |                              |               ^   |                     |
        +------ election timeout ------+---------------+   | (own epoch + 1)     | shutdown or
        |                                                  |                     | lost quorum
        +-- leader found --> FOLLOWER -- fetch timeout ----+                  RESIGNED
                                                                                 |
                                              election timeout -> CANDIDATE <----+

What a node remembers across a restart is its *election state*: ``(epoch, leader id, voted id)``,
written to the ``quorum-state`` file before the node acts on it. Two rules make Raft safe, and
both live in that triple: a voter grants at most one vote per epoch (so at most one candidate
gathers a majority per epoch, so at most one leader per epoch), and it never goes back to an
older epoch.

Worked example (3 voters 1, 2, 3, all UNATTACHED at epoch 0): voter 2's election timer fires
first; it moves to CANDIDATE at epoch 1 with ``voted_id=2`` and asks 1 and 3 for votes. Voter
1 grants (``UNATTACHED -> VOTED``, ``voted_id=2`` persisted first); with its own vote, 2 holds 2
of 3 and becomes LEADER of epoch 1. Voter 3 learns of it from BeginQuorumEpoch and moves
``UNATTACHED -> FOLLOWER`` with ``leader_id=2``.

The table :data:`TRANSITIONS` is the single source of the legal moves; a move it does not list
raises :class:`IllegalQuorumTransition` naming the state and the event. Epoch arithmetic (higher
epoch, same epoch) is checked by the node before it asks for a move.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from kafkalab.controller.raft.snapshot_fetch import SnapshotDownload
from kafkalab.errors import ErrorCode, KafkaError

NO_ID = -1  # QuorumStateData's default for LeaderId and VotedId


class QuorumStateKind(enum.Enum):
    UNATTACHED = "Unattached"
    VOTED = "Voted"  # Kafka 3.9 folds this into UnattachedState with a voted key
    CANDIDATE = "Candidate"
    LEADER = "Leader"
    FOLLOWER = "Follower"
    RESIGNED = "Resigned"


class QuorumEvent(enum.Enum):
    HIGHER_EPOCH = "a request or response carries a higher epoch, leader unknown"
    LEADER_FOUND = "a leader for the current or a higher epoch made itself known"
    VOTE_GRANTED = "this node granted its vote to a candidate"
    ELECTION_TIMEOUT = "the election timer expired"
    FETCH_TIMEOUT = "no successful fetch from the leader within the fetch timeout"
    ELECTION_WON = "a majority of voters granted their votes"
    RESIGN = "the leader steps down (shutdown or lost quorum)"


S, E = QuorumStateKind, QuorumEvent
_EVERY = tuple(QuorumStateKind)

TRANSITIONS: dict[tuple[QuorumStateKind, QuorumEvent], QuorumStateKind] = {
    **{(state, E.HIGHER_EPOCH): S.UNATTACHED for state in _EVERY},
    **{(state, E.LEADER_FOUND): S.FOLLOWER for state in _EVERY},
    (S.UNATTACHED, E.VOTE_GRANTED): S.VOTED,
    (S.UNATTACHED, E.ELECTION_TIMEOUT): S.CANDIDATE,
    (S.VOTED, E.ELECTION_TIMEOUT): S.CANDIDATE,
    (S.CANDIDATE, E.ELECTION_TIMEOUT): S.CANDIDATE,
    (S.RESIGNED, E.ELECTION_TIMEOUT): S.CANDIDATE,
    (S.FOLLOWER, E.FETCH_TIMEOUT): S.CANDIDATE,
    (S.CANDIDATE, E.ELECTION_WON): S.LEADER,
    (S.LEADER, E.RESIGN): S.RESIGNED,
}


class IllegalQuorumTransition(KafkaError):
    """A move the quorum state table does not allow (a bug in the caller, or a confused peer)."""

    def __init__(self, state: QuorumStateKind, event: QuorumEvent, epoch: int) -> None:
        super().__init__(
            f"quorum state {state.name} at epoch {epoch} has no transition for event {event.name}",
            error_code=ErrorCode.UNKNOWN_SERVER_ERROR,
        )
        self.state = state
        self.event = event


def next_state(state: QuorumStateKind, event: QuorumEvent, epoch: int) -> QuorumStateKind:
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise IllegalQuorumTransition(state, event, epoch) from None


@dataclass(frozen=True, slots=True)
class ElectionState:
    """What survives a restart (Kafka's ``ElectionState``): epoch, known leader, granted vote."""

    epoch: int
    leader_id: int = NO_ID
    voted_id: int = NO_ID

    def __post_init__(self) -> None:
        if self.epoch < 0:
            raise ValueError(f"an election state's epoch must be >= 0, got {self.epoch}")
        if self.leader_id < NO_ID or self.voted_id < NO_ID:
            raise ValueError(f"ids must be >= {NO_ID}: leader {self.leader_id}, voted {self.voted_id}")

    @property
    def has_leader(self) -> bool:
        return self.leader_id != NO_ID

    @property
    def has_voted(self) -> bool:
        return self.voted_id != NO_ID


def initial_state(election: ElectionState, local_id: int) -> QuorumStateKind:
    """Where a restarted voter begins, from its persisted election state (Kafka's
    ``QuorumState.initialize``): a former leader resigns (it may have lost unflushed data and
    must not keep leading), a node that voted for itself resumes its candidacy, a node that knew
    a leader follows it, a node that voted waits with its vote kept."""
    if election.leader_id == local_id:
        return QuorumStateKind.RESIGNED
    if election.has_leader:
        return QuorumStateKind.FOLLOWER
    if election.voted_id == local_id:
        return QuorumStateKind.CANDIDATE
    if election.has_voted:
        return QuorumStateKind.VOTED
    return QuorumStateKind.UNATTACHED


@dataclass(slots=True)
class VoterTimers:
    """The deadlines and in-flight requests of a voter's current state; reset on every move."""

    election_deadline_ms: int = 0  # UNATTACHED, VOTED, CANDIDATE, RESIGNED
    backoff_until_ms: int | None = None  # CANDIDATE rejected by a majority
    fetch_deadline_ms: int = 0  # FOLLOWER: no successful fetch since then -> election
    fetch_in_flight: int | None = None  # FOLLOWER: correlation id of the outstanding fetch
    fetch_sent_ms: int = 0
    fetch_retry_ms: int = 0
    begin_epoch_resend_ms: int = 0  # LEADER
    download: SnapshotDownload | None = None  # FOLLOWER below the leader's log start


__all__ = [
    "NO_ID", "ElectionState", "IllegalQuorumTransition", "QuorumEvent", "QuorumStateKind",
    "TRANSITIONS", "VoterTimers", "initial_state", "next_state",
]
