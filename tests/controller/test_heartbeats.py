"""The controller's heartbeat manager and its control-state table, against Kafka's
``BrokerHeartbeatManager.calculateNextBrokerState`` (read from Kafka 3.9's source): each row
below is one branch of that method."""

from __future__ import annotations

import pytest

from kafkalab.controller.heartbeats import (
    TRANSITIONS,
    Ask,
    BrokerControlState,
    BrokerHeartbeatManager,
    HeartbeatError,
    ask_of,
)
from kafkalab.errors import ErrorCode

S = BrokerControlState

# (state, want_fence, want_shut_down, caught up, has leaderships, lowest active offset) -> next;
# the broker entered controlled shutdown at offset 50.
KAFKA_BRANCHES = [
    (S.FENCED, False, True, False, False, 0, S.SHUTDOWN_NOW),  # fenced + wants shutdown: at once
    (S.FENCED, True, True, True, True, 0, S.SHUTDOWN_NOW),
    (S.FENCED, False, False, True, False, 0, S.UNFENCED),  # caught up with its registration
    (S.FENCED, False, False, False, False, 0, S.FENCED),  # not yet
    (S.FENCED, True, False, True, False, 0, S.FENCED),  # wants to stay fenced
    (S.UNFENCED, True, True, True, True, 0, S.SHUTDOWN_NOW),
    (S.UNFENCED, True, False, True, True, 0, S.FENCED),
    (S.UNFENCED, False, True, True, True, 0, S.CONTROLLED_SHUTDOWN),  # leads something
    (S.UNFENCED, False, True, True, False, 0, S.SHUTDOWN_NOW),  # leads nothing
    (S.UNFENCED, False, False, True, True, 0, S.UNFENCED),
    (S.UNFENCED, False, False, False, True, 0, S.UNFENCED),  # an unfenced broker is never re-fenced for lag
    (S.CONTROLLED_SHUTDOWN, False, True, True, True, 100, S.CONTROLLED_SHUTDOWN),  # still leads
    (S.CONTROLLED_SHUTDOWN, False, True, True, False, 40, S.CONTROLLED_SHUTDOWN),  # others behind 50
    (S.CONTROLLED_SHUTDOWN, False, True, True, False, 50, S.SHUTDOWN_NOW),
    (S.SHUTDOWN_NOW, False, False, True, False, 0, S.SHUTDOWN_NOW),
]


@pytest.mark.parametrize("state,fence,shut,caught_up,leads,lowest,expected", KAFKA_BRANCHES)
def test_next_state_follows_kafkas_branches(state, fence, shut, caught_up, leads, lowest, expected):
    manager = BrokerHeartbeatManager()
    manager.register(2, 30, now_ms=0)
    session = manager.session(2, 30)
    session.state = state
    session.controlled_shutdown_offset = 50
    assert manager.next_state(session, ask_of(fence, shut, caught_up), lambda: leads, lambda: lowest) is expected


def test_the_table_covers_every_state_and_ask():
    assert set(TRANSITIONS) == {(state, ask) for state in BrokerControlState for ask in Ask}


def test_session_expires_after_the_timeout_and_names_the_stale_broker():
    manager = BrokerHeartbeatManager(session_timeout_ms=9_000)
    manager.register(1, 10, now_ms=0)
    manager.register(2, 11, now_ms=0)
    for broker_id, epoch in ((1, 10), (2, 11)):
        session = manager.session(broker_id, epoch)
        manager.touch(session, S.UNFENCED, 12, now_ms=1_000)
    manager.touch(manager.session(2, 11), S.UNFENCED, 12, now_ms=5_000)
    assert manager.next_deadline_ms() == 10_000
    assert manager.stale_brokers(9_999) == []
    assert manager.stale_brokers(10_000) == [1]
    assert manager.has_valid_session(1, 9_999) and not manager.has_valid_session(1, 10_001)
    manager.fenced(1)
    assert manager.stale_brokers(20_000) == [2]  # a fenced broker is not fenced again
    assert not manager.has_valid_session(1, 1_000)  # nor does it hold a session


def test_a_heartbeat_with_a_stale_epoch_or_from_a_stranger_is_refused():
    manager = BrokerHeartbeatManager()
    manager.register(1, 10, now_ms=0)
    with pytest.raises(HeartbeatError) as stale:
        manager.session(1, 9)
    assert stale.value.error_code == ErrorCode.STALE_BROKER_EPOCH
    with pytest.raises(HeartbeatError) as stranger:
        manager.session(4, 10)
    assert stranger.value.error_code == ErrorCode.BROKER_ID_NOT_REGISTERED


def test_lowest_active_offset_counts_only_unfenced_brokers():
    manager = BrokerHeartbeatManager()
    for broker_id, offset, state in ((1, 40, S.UNFENCED), (2, 12, S.FENCED), (3, 55, S.UNFENCED)):
        manager.register(broker_id, broker_id, now_ms=0)
        manager.touch(manager.session(broker_id, broker_id), state, offset, now_ms=0)
    assert manager.lowest_active_offset() == 40
