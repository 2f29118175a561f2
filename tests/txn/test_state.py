"""The transaction state table against Kafka's own rules (TransactionMetadata.scala)."""

from __future__ import annotations

import pytest

from kafkalab.errors import ErrorCode
from kafkalab.txn.state import (
    TRANSITIONS,
    IllegalTransactionTransition,
    TransactionState,
    TxnEvent,
    next_state,
    outcome,
)

S, E = TransactionState, TxnEvent

# Kafka's ``validPreviousStates`` of each target state, transcribed as data: every move in our
# table must be one of these.
KAFKA_VALID_PREVIOUS = {
    S.EMPTY: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.ONGOING: {S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.PREPARE_COMMIT: {S.ONGOING},
    S.PREPARE_ABORT: {S.ONGOING, S.PREPARE_EPOCH_FENCE},
    S.COMPLETE_COMMIT: {S.PREPARE_COMMIT},
    S.COMPLETE_ABORT: {S.PREPARE_ABORT},
    S.DEAD: {S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT},
    S.PREPARE_EPOCH_FENCE: {S.ONGOING},
}
# Kafka's transaction status ids (TransactionState.fromId) and names.
KAFKA_IDS = {0: "Empty", 1: "Ongoing", 2: "PrepareCommit", 3: "PrepareAbort", 4: "CompleteCommit",
             5: "CompleteAbort", 6: "Dead", 7: "PrepareEpochFence"}


@pytest.mark.parametrize("key", sorted(TRANSITIONS, key=lambda k: (k[0].value, k[1].value)),
                         ids=lambda k: f"{k[0].value}-{k[1].name}")
def test_every_move_is_one_kafka_allows(key):
    target = TRANSITIONS[key]
    if isinstance(target, TransactionState):
        assert key[0] in KAFKA_VALID_PREVIOUS[target]


def test_every_kafka_move_is_in_the_table():
    moves = {(source, target) for (source, _), target in TRANSITIONS.items() if isinstance(target, TransactionState)}
    kafkas = {(source, target) for target, sources in KAFKA_VALID_PREVIOUS.items() for source in sources}
    assert moves == kafkas


def test_ids_and_names_are_kafkas():
    assert {s.id: s.value for s in TransactionState} == KAFKA_IDS
    assert all(TransactionState.from_id(i).value == name for i, name in KAFKA_IDS.items())


@pytest.mark.parametrize("state,event,answer", [
    (S.COMPLETE_COMMIT, E.COMMIT, ErrorCode.NONE),  # a retried commit
    (S.PREPARE_COMMIT, E.COMMIT, ErrorCode.CONCURRENT_TRANSACTIONS),  # markers still going out
    (S.COMPLETE_COMMIT, E.ABORT, ErrorCode.INVALID_TXN_STATE),
    (S.EMPTY, E.COMMIT, ErrorCode.INVALID_TXN_STATE),
    (S.PREPARE_ABORT, E.ADD_PARTITIONS, ErrorCode.CONCURRENT_TRANSACTIONS),
    (S.PREPARE_COMMIT, E.INIT_PRODUCER_ID, ErrorCode.CONCURRENT_TRANSACTIONS),
    (S.ONGOING, E.INIT_PRODUCER_ID, S.PREPARE_EPOCH_FENCE),
])
def test_requests_answered_as_kafkas_coordinator_answers(state, event, answer):
    assert outcome("app-1", state, event) == answer


def test_missing_pair_is_a_coordinator_bug_naming_state_and_event():
    with pytest.raises(IllegalTransactionTransition, match="Dead.*AddPartitionsToTxn") as raised:
        outcome("app-1", S.DEAD, E.ADD_PARTITIONS)
    assert raised.value.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    with pytest.raises(IllegalTransactionTransition):
        next_state("app-1", S.COMPLETE_COMMIT, E.COMMIT)  # an answer, not a move


def test_expiration_allowed_only_without_an_open_transaction():
    assert {s for s in TransactionState if s.expiration_allowed} == KAFKA_VALID_PREVIOUS[S.DEAD]
