"""Kafka's transaction states, and what each request or event does in each state.

Theory of operation
-------------------
A transactional id is always in one of eight states (Kafka's ``TransactionState``); the
number is the ``TransactionStatus`` stored in ``__transaction_state``::

        InitProducerId                AddPartitionsToTxn / AddOffsetsToTxn
     +-------------------+  +-----------------------------------------------+
     v                   |  |                                               v
  +-------+  add   +---------+  EndTxn(commit)  +---------------+  markers  +----------------+
  | Empty |------->| Ongoing |----------------->| PrepareCommit |---------->| CompleteCommit |
  +-------+        +---------+                  +---------------+  written  +----------------+
     ^  |            |     |    EndTxn(abort)   +---------------+  markers  +----------------+
     |  | expire     |     +------------------->| PrepareAbort  |---------->| CompleteAbort  |
     |  v            |                          +---------------+  written  +----------------+
  +------+           | InitProducerId from a new        ^                    (both: InitProducerId
  | Dead |           | producer, or the timeout         |                     -> Empty, add ->
  +------+           v                                  |                     Ongoing, expire -> Dead)
               +-------------------+  abort with the bumped epoch
               | PrepareEpochFence |--------------------+
               +-------------------+

:data:`TRANSITIONS` is the whole picture as a table keyed by ``(state, event)``. A value is
either the next state or an error code the request is answered with, unchanged -- Kafka's
checks in ``TransactionCoordinator``: an EndTxn(commit) retried after the commit completed is
answered NONE; one that arrives while the markers are still being written,
CONCURRENT_TRANSACTIONS (retriable); an EndTxn(abort) after a commit, INVALID_TXN_STATE. A pair
missing from the table is a coordinator bug (Kafka throws ``IllegalStateException``):
:class:`IllegalTransactionTransition`, with UNKNOWN_SERVER_ERROR.

PrepareEpochFence is never written: it marks, in memory, an Ongoing transaction whose producer
is being fenced (a new producer called InitProducerId, or the transaction timed out). The abort
that follows is written as PrepareAbort with the bumped epoch, so the old producer's next
request is answered PRODUCER_FENCED and its markers carry an epoch its batches cannot reach.

Worked example: ``app-1`` is Empty after InitProducerId (epoch 0); AddPartitionsToTxn moves it
to Ongoing; EndTxn(commit) to PrepareCommit; once every partition has its COMMIT marker it is
CompleteCommit, and the next AddPartitionsToTxn starts a new transaction (Ongoing).
"""

from __future__ import annotations

import enum

from kafkalab.errors import ErrorCode, KafkaError


class TransactionState(enum.Enum):
    """The eight states; values are the names DescribeTransactions and ListTransactions use."""

    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"
    DEAD = "Dead"
    PREPARE_EPOCH_FENCE = "PrepareEpochFence"

    @property
    def id(self) -> int:
        """The ``TransactionStatus`` written to ``__transaction_state``."""
        return _IDS[self]

    @classmethod
    def from_id(cls, status: int) -> TransactionState:
        for state, state_id in _IDS.items():
            if state_id == status:
                return state
        raise KafkaError(f"unknown transaction status {status} in __transaction_state",
                         error_code=ErrorCode.CORRUPT_MESSAGE)

    @property
    def expiration_allowed(self) -> bool:
        """Kafka's ``isExpirationAllowed``: no transaction is open."""
        return self in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT)


S = TransactionState
_IDS = {S.EMPTY: 0, S.ONGOING: 1, S.PREPARE_COMMIT: 2, S.PREPARE_ABORT: 3, S.COMPLETE_COMMIT: 4,
        S.COMPLETE_ABORT: 5, S.DEAD: 6, S.PREPARE_EPOCH_FENCE: 7}


class TxnEvent(enum.Enum):
    INIT_PRODUCER_ID = "InitProducerId"  # a producer (re)starts: bump the epoch
    ADD_PARTITIONS = "AddPartitionsToTxn"  # also AddOffsetsToTxn: a partition joins the transaction
    COMMIT = "EndTxn(commit)"
    ABORT = "EndTxn(abort)"  # from the producer, or after a fence
    FENCE = "fence the producer"  # a new producer's InitProducerId, or the timeout, mid-transaction
    MARKERS_WRITTEN = "markers written"  # every partition has its COMMIT or ABORT marker
    EXPIRE = "expire"  # idle past transactional.id.expiration.ms


E = TxnEvent
Outcome = TransactionState | ErrorCode

TRANSITIONS: dict[tuple[TransactionState, TxnEvent], Outcome] = {
    (S.EMPTY, E.INIT_PRODUCER_ID): S.EMPTY,
    (S.COMPLETE_COMMIT, E.INIT_PRODUCER_ID): S.EMPTY,
    (S.COMPLETE_ABORT, E.INIT_PRODUCER_ID): S.EMPTY,
    (S.ONGOING, E.INIT_PRODUCER_ID): S.PREPARE_EPOCH_FENCE,
    (S.PREPARE_COMMIT, E.INIT_PRODUCER_ID): ErrorCode.CONCURRENT_TRANSACTIONS,
    (S.PREPARE_ABORT, E.INIT_PRODUCER_ID): ErrorCode.CONCURRENT_TRANSACTIONS,

    (S.EMPTY, E.ADD_PARTITIONS): S.ONGOING,
    (S.ONGOING, E.ADD_PARTITIONS): S.ONGOING,
    (S.COMPLETE_COMMIT, E.ADD_PARTITIONS): S.ONGOING,
    (S.COMPLETE_ABORT, E.ADD_PARTITIONS): S.ONGOING,
    (S.PREPARE_COMMIT, E.ADD_PARTITIONS): ErrorCode.CONCURRENT_TRANSACTIONS,
    (S.PREPARE_ABORT, E.ADD_PARTITIONS): ErrorCode.CONCURRENT_TRANSACTIONS,

    (S.ONGOING, E.COMMIT): S.PREPARE_COMMIT,
    (S.PREPARE_COMMIT, E.COMMIT): ErrorCode.CONCURRENT_TRANSACTIONS,
    (S.COMPLETE_COMMIT, E.COMMIT): ErrorCode.NONE,
    (S.EMPTY, E.COMMIT): ErrorCode.INVALID_TXN_STATE,
    (S.PREPARE_ABORT, E.COMMIT): ErrorCode.INVALID_TXN_STATE,
    (S.COMPLETE_ABORT, E.COMMIT): ErrorCode.INVALID_TXN_STATE,

    (S.ONGOING, E.ABORT): S.PREPARE_ABORT,
    (S.PREPARE_EPOCH_FENCE, E.ABORT): S.PREPARE_ABORT,
    (S.PREPARE_ABORT, E.ABORT): ErrorCode.CONCURRENT_TRANSACTIONS,
    (S.COMPLETE_ABORT, E.ABORT): ErrorCode.NONE,
    (S.EMPTY, E.ABORT): ErrorCode.INVALID_TXN_STATE,
    (S.PREPARE_COMMIT, E.ABORT): ErrorCode.INVALID_TXN_STATE,
    (S.COMPLETE_COMMIT, E.ABORT): ErrorCode.INVALID_TXN_STATE,

    (S.ONGOING, E.FENCE): S.PREPARE_EPOCH_FENCE,

    (S.PREPARE_COMMIT, E.MARKERS_WRITTEN): S.COMPLETE_COMMIT,
    (S.PREPARE_ABORT, E.MARKERS_WRITTEN): S.COMPLETE_ABORT,

    (S.EMPTY, E.EXPIRE): S.DEAD,
    (S.COMPLETE_COMMIT, E.EXPIRE): S.DEAD,
    (S.COMPLETE_ABORT, E.EXPIRE): S.DEAD,
}


class IllegalTransactionTransition(KafkaError):
    """An event the transaction's state can never take: a coordinator bug, reported with Kafka's
    code for an unexpected server-side failure."""

    def __init__(self, transactional_id: str, state: TransactionState, event: TxnEvent) -> None:
        super().__init__(f"transactional id {transactional_id!r} in state {state.value} cannot take "
                         f"event {event.value!r}", error_code=ErrorCode.UNKNOWN_SERVER_ERROR)
        self.state = state
        self.event = event


def outcome(transactional_id: str, state: TransactionState, event: TxnEvent) -> Outcome:
    """The next state, or the error code to answer with; IllegalTransactionTransition if none."""
    result = TRANSITIONS.get((state, event))
    if result is None:
        raise IllegalTransactionTransition(transactional_id, state, event)
    return result


def next_state(transactional_id: str, state: TransactionState, event: TxnEvent) -> TransactionState:
    """The next state of an event that must move the transaction (markers written, expire, fence)."""
    result = outcome(transactional_id, state, event)
    if not isinstance(result, TransactionState):
        raise IllegalTransactionTransition(transactional_id, state, event)
    return result
