"""A partition's open transactions, its last stable offset, and the aborted-transaction index.

Mirrors the transaction parts of Kafka's ``ProducerStateManager`` (``ongoingTxns``,
``unreplicatedTxns``, ``firstUnstableOffset``, ``lastStableOffset(CompletedTxn)``,
``completeTxn``), of ``UnifiedLog`` (``lastStableOffset``) and of ``LocalLog``
(``collectAbortedTransactions``); KIP-98.

Theory of operation
-------------------
A transactional producer's first batch on a partition *opens* a transaction there at that
batch's offset; the COMMIT or ABORT marker the coordinator has the leader append *completes*
it. Until then nobody can say whether its records will count, so a ``read_committed`` consumer
must not read past its first offset. The **last stable offset** (LSO) is where such a reader
stops::

    offset   0    1    2    3    4    5    6    7    8
             A1   A2   B1   A3   C    B2   A:ABORT   B:COMMIT
    open:    A from 0, B from 2           (C is not transactional)

    before offset 6 is written: first unstable offset = 0          LSO = min(0, HW)
    after the ABORT at 6:       A is decided, B still open from 2   LSO = min(2, HW)
    after the COMMIT at 7:      nothing open                        LSO = HW

A decided transaction stays *unstable* until the high watermark passes its marker (it is
"unreplicated"): a new leader might not have the marker yet. So the first unstable offset is
the smallest first offset among open transactions and decided transactions whose marker is at
or above the HW, and ``LSO = min(first unstable offset, HW)``; with nothing unstable it is the
HW. Both never move backwards while the log only grows, and ``log start offset <= LSO <= HW``.

When an ABORT completes a transaction, the segment holding the marker gets an entry in its
``.txnindex`` (:mod:`kafkalab.storage.txn_index`): producer id, first offset, the marker's
offset, and the LSO right after the abort -- the first offset of the oldest transaction still
open (of another producer), else the offset after the marker. In the picture above the ABORT
at 6 writes ``AbortedTxn(A, 0, 6, 2)``. A ``read_committed`` fetch from offset 0 that reads
up to 8 collects the entries overlapping [0, 8) from that segment on, stopping at the first
entry whose LSO reaches 8 (every later abort ended after it), and the consumer drops A's
records; B's it keeps.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from kafkalab.storage.producer_state import CompletedTxn
from kafkalab.storage.txn_index import AbortedTxn, TransactionIndex


class HasTxnIndex(Protocol):
    """A segment, as far as transactions are concerned."""

    @property
    def base_offset(self) -> int: ...

    @property
    def txn_index(self) -> TransactionIndex: ...


class Transactions:
    """The open and not yet replicated transactions of one partition. Not thread-safe; owned
    by the partition's :class:`~kafkalab.storage.producer_state_manager.ProducerStateManager`."""

    __slots__ = ("ongoing", "unreplicated")

    def __init__(self) -> None:
        # first offset -> producer id. Transactions open in offset order, so the dict's
        # insertion order is offset order and its first key is the oldest open transaction.
        self.ongoing: dict[int, int] = {}
        # first offset -> marker offset, for decided transactions the HW has not passed yet.
        self.unreplicated: dict[int, int] = {}

    def clear(self) -> None:
        self.ongoing.clear()
        self.unreplicated.clear()

    def load(self, open_first_offsets: Iterable[tuple[int, int]]) -> None:
        """Open transactions from loaded producer state: (first offset, producer id) each."""
        self.ongoing = dict(sorted({**self.ongoing, **dict(open_first_offsets)}.items()))

    def start(self, producer_id: int, first_offset: int) -> None:
        assert not self.ongoing or first_offset > next(reversed(self.ongoing)), (first_offset, self.ongoing)
        self.ongoing[first_offset] = producer_id

    def last_stable_offset_after(self, txn: CompletedTxn) -> int:
        """The LSO recorded with an aborted transaction in the ``.txnindex``: the oldest other
        producer's open transaction, else the offset after the marker (Kafka's
        ``lastStableOffset(CompletedTxn)``). Call before :meth:`complete`."""
        for first_offset, producer_id in self.ongoing.items():
            if producer_id != txn.producer_id:
                return first_offset
        return txn.last_offset + 1

    def complete(self, txn: CompletedTxn) -> None:
        """The marker is written: the transaction is decided, and stays unstable until the HW
        passes the marker."""
        producer_id = self.ongoing.pop(txn.first_offset, None)
        assert producer_id == txn.producer_id, f"{txn} completes a transaction that was not open"
        self.unreplicated[txn.first_offset] = txn.last_offset

    def first_unstable_offset(self, high_watermark: int) -> int | None:
        """The smallest first offset of an open transaction, or of a decided one whose marker
        the HW has not passed; None if there is none. Forgets decided transactions below the
        HW (Kafka's ``onHighWatermarkUpdated``)."""
        if not self.ongoing and not self.unreplicated:
            return None  # no transactions: the usual case, asked on every read
        passed = [first for first, last in self.unreplicated.items() if last < high_watermark]
        for first in passed:
            del self.unreplicated[first]
        oldest_open = next(iter(self.ongoing), None)
        oldest_unreplicated = min(self.unreplicated, default=None)
        if oldest_open is None:
            return oldest_unreplicated
        if oldest_unreplicated is None:
            return oldest_open
        return min(oldest_open, oldest_unreplicated)

    def on_log_start_offset_incremented(self, log_start_offset: int) -> None:
        """Decided transactions whose marker is below the new log start are gone."""
        for first in [f for f, last in self.unreplicated.items() if last < log_start_offset]:
            del self.unreplicated[first]


def last_stable_offset(transactions: Transactions, high_watermark: int, log_start_offset: int) -> int:
    """``min(first unstable offset, HW)``, never below the log start offset (Kafka's
    ``UnifiedLog.lastStableOffset`` with ``maybeIncrementFirstUnstableOffset``)."""
    first = transactions.first_unstable_offset(high_watermark)
    if first is None:
        return high_watermark
    return min(max(first, log_start_offset), high_watermark)


def index_completed(transactions: Transactions, completed: Sequence[CompletedTxn], segment: HasTxnIndex) -> None:
    """Record each completed transaction: an aborted one in ``segment``'s ``.txnindex`` (the
    segment holding its marker), then mark it decided. Mirrors the completion loop of Kafka's
    ``UnifiedLog.append``. An entry already in the index (a replay after a crash) is not
    written twice."""
    for txn in completed:
        if txn.is_aborted:
            entry = AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset,
                               transactions.last_stable_offset_after(txn))
            existing = segment.txn_index.entries
            if not existing or existing[-1].last_offset < entry.last_offset:
                segment.txn_index.append(entry)
        transactions.complete(txn)


def collect_aborted(segments: Sequence[HasTxnIndex], fetch_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
    """The aborted transactions overlapping [fetch_offset, upper_bound_offset), from the
    ``.txnindex`` of each segment in ``segments`` (those from the one holding ``fetch_offset``
    on), stopping after the first entry whose LSO reaches the upper bound (Kafka's
    ``LocalLog.collectAbortedTransactions`` and ``TransactionIndex.collectAbortedTxns``)."""
    found: list[AbortedTxn] = []
    for segment in segments:
        for txn in segment.txn_index.entries:
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                return found
    return found
