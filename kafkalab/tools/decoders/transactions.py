"""``--transaction-log-decoder``: the transaction coordinator's records in ``__transaction_state``.

Theory of operation
-------------------
The transaction coordinator (KIP-98) keeps one compacted record per transactional id. The key
is record type 0 then ``TransactionLogKey`` (the transactional id); the value is
``TransactionLogValue`` at version 0 or, once ``transaction.version`` 2 is finalized (KIP-890),
the flexible version 1, whose tag section may carry the previous and next producer ids and the
client's transaction version. Both are declared once, in :mod:`kafkalab.txn.records`, which
the transaction coordinator writes and replays with.

``transactionStatus`` is the coordinator's state id (Kafka's ``TransactionState``)::

    0 Empty  1 Ongoing  2 PrepareCommit  3 PrepareAbort  4 CompleteCommit  5 CompleteAbort
    6 Dead   7 PrepareEpochFence

Worked example: ``app-1`` with producer id 1000, epoch 2, 60 s timeout, state Ongoing (1) and
``orders`` partitions 0 and 3 prints (``kafka-dump-log.sh`` framing, one line)::

    key: {"type":"0","data":{"transactionalId":"app-1"}} payload: {"version":"0","data":
    {"producerId":1000,"producerEpoch":2,"transactionTimeoutMs":60000,"transactionStatus":1,
    "transactionPartitions":[{"topic":"orders","partitionIds":[0,3]}],
    "transactionLastUpdateTimestampMs":...,"transactionStartTimestampMs":...}}
"""

from __future__ import annotations

from kafkalab.records import Record
from kafkalab.txn.records import TRANSACTION_LOG_KEY, TRANSACTION_LOG_TYPE, TRANSACTION_LOG_VALUE
from kafkalab.txn.state import TransactionState
from kafkalab.tools.decoders.coordinator import CoordinatorDecoder, ParseResult, RecordType

TRANSACTION_STATES = {state.id: state.value for state in TransactionState}

TRANSACTION_DECODER = CoordinatorDecoder(
    {TRANSACTION_LOG_TYPE: RecordType(TRANSACTION_LOG_KEY, TRANSACTION_LOG_VALUE)})


def parse_transactions(record: Record) -> ParseResult:
    """``(key, payload)`` text of one ``__transaction_state`` record."""
    return TRANSACTION_DECODER.parse(record)


__all__ = ["TRANSACTION_DECODER", "TRANSACTION_STATES", "parse_transactions"]
