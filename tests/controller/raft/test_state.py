"""The quorum state table and the restart rules (Kafka's QuorumState / EpochState classes)."""

from __future__ import annotations

import pytest

from kafkalab.controller.raft.state import (
    NO_ID, TRANSITIONS, ElectionState, IllegalQuorumTransition, QuorumEvent, QuorumStateKind,
    initial_state, next_state,
)

K, E = QuorumStateKind, QuorumEvent


@pytest.mark.parametrize("state,event,expected", [
    (K.UNATTACHED, E.VOTE_GRANTED, K.VOTED),
    (K.UNATTACHED, E.ELECTION_TIMEOUT, K.CANDIDATE),
    (K.VOTED, E.ELECTION_TIMEOUT, K.CANDIDATE),
    (K.FOLLOWER, E.FETCH_TIMEOUT, K.CANDIDATE),
    (K.CANDIDATE, E.ELECTION_WON, K.LEADER),
    (K.LEADER, E.RESIGN, K.RESIGNED),
    (K.RESIGNED, E.ELECTION_TIMEOUT, K.CANDIDATE),
    (K.LEADER, E.HIGHER_EPOCH, K.UNATTACHED),
    (K.CANDIDATE, E.LEADER_FOUND, K.FOLLOWER),
])
def test_legal_moves(state, event, expected):
    assert next_state(state, event, 3) is expected


@pytest.mark.parametrize("state,event", [
    (K.LEADER, E.ELECTION_TIMEOUT),  # a leader never stands again in its own epoch
    (K.FOLLOWER, E.ELECTION_WON),
    (K.UNATTACHED, E.ELECTION_WON),  # only a candidate can win
    (K.VOTED, E.VOTE_GRANTED),  # one vote per epoch
    (K.FOLLOWER, E.RESIGN),
])
def test_illegal_moves_name_state_and_event(state, event):
    with pytest.raises(IllegalQuorumTransition) as info:
        next_state(state, event, 7)
    assert state.name in str(info.value) and event.name in str(info.value) and "7" in str(info.value)


def test_only_candidates_become_leaders():
    assert [s for (s, e), t in TRANSITIONS.items() if t is K.LEADER] == [K.CANDIDATE]


@pytest.mark.parametrize("election,expected", [
    (ElectionState(0), K.UNATTACHED),
    (ElectionState(4, NO_ID, 2), K.VOTED),
    (ElectionState(4, NO_ID, 1), K.CANDIDATE),
    (ElectionState(4, 2, 2), K.FOLLOWER),
    (ElectionState(4, 1, 1), K.RESIGNED),  # a leader that restarts does not lead again at once
])
def test_restart_state(election, expected):
    assert initial_state(election, local_id=1) is expected


def test_election_state_rejects_negative_epoch():
    with pytest.raises(ValueError):
        ElectionState(-1)
