"""The transition table against Kafka's ``ClassicGroupState`` valid previous states."""

from __future__ import annotations

import pytest

from kafkalab.group.state import TRANSITIONS, GroupEvent, GroupState, IllegalGroupTransition, next_state

S = GroupState

# Kafka's ClassicGroupState: each state and the states it may be entered from.
KAFKA_VALID_PREVIOUS = {
    S.EMPTY: {S.PREPARING_REBALANCE},
    S.PREPARING_REBALANCE: {S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY},
    S.COMPLETING_REBALANCE: {S.PREPARING_REBALANCE},
    S.STABLE: {S.COMPLETING_REBALANCE},
    S.DEAD: {S.STABLE, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.EMPTY, S.DEAD},
}


def test_every_transition_is_one_kafka_allows():
    for (source, _event), target in TRANSITIONS.items():
        assert source in KAFKA_VALID_PREVIOUS[target], (source, target)


def test_every_transition_kafka_allows_is_in_the_table():
    reachable = {(source, target) for (source, _), target in TRANSITIONS.items()}
    for target, sources in KAFKA_VALID_PREVIOUS.items():
        for source in sources:
            assert (source, target) in reachable, (source, target)


def test_missing_pair_raises_naming_state_and_event():
    with pytest.raises(IllegalGroupTransition, match="Stable.*join completed") as info:
        next_state("g", S.STABLE, GroupEvent.JOIN_COMPLETED)
    assert info.value.state is S.STABLE and info.value.event is GroupEvent.JOIN_COMPLETED
    assert info.value.error_code == -1


def test_state_names_are_kafkas():
    assert [s.value for s in S] == ["Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"]
