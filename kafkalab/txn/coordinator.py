"""The transaction coordinator: InitProducerId, AddPartitionsToTxn, EndTxn, timeouts, markers, leadership.

Theory of operation
-------------------
One committed transaction, as Kafka's ``TransactionCoordinator`` runs it::

    InitProducerId("app-1")            -> Empty, producer id 4000 epoch 0       (record written)
    AddPartitionsToTxn(orders-0)       -> Ongoing {orders-0}, timeout scheduled (record written)
    Produce to orders-0 (transactional batches; the partition leader, not the coordinator)
    EndTxn(commit)                     -> PrepareCommit, answered NONE          (record written)
    markers sent through the MarkerChannel; orders-0 answers NONE
                                       -> CompleteCommit                        (record written)

Every change is written to ``__transaction_state`` first and applied in memory only once the
partition's ISR has it (acks=all, :meth:`~kafkalab.group.log.CoordinatorLog.when_committed`),
so a coordinator that loads the log rebuilds the same state, and nothing a client was told can
be lost with the leader. While a record is on its way the id answers CONCURRENT_TRANSACTIONS.
The state table (:mod:`kafkalab.txn.state`) decides each request; the checks before it follow
Kafka: an unknown transactional id or another producer id is INVALID_PRODUCER_ID_MAPPING, an
older epoch PRODUCER_FENCED.

*Leadership.* The coordinator of an id is the leader of its ``__transaction_state`` partition
(:func:`partition_for`), followed through the broker's
:class:`~kafkalab.broker.coordinator_partitions.CoordinatorPartitions`, as the group coordinator
follows ``__consumer_offsets``. Elected, it replays the partition
(:meth:`TransactionCoordinator.load_partition`, Kafka's ``loadTransactionsForTxnTopicPartition``):
a transaction found in PrepareCommit or PrepareAbort gets its markers sent again, an Ongoing one
its timeout re-armed. The partition's leader epoch becomes its *coordinator epoch*, carried in
every marker; a partition refuses markers of an older coordinator epoch than the last it
wrote (TRANSACTION_COORDINATOR_FENCED), so a deposed coordinator cannot end a transaction
its successor already ended. Resigning, it forgets the partition's ids
(:meth:`~TransactionCoordinator.unload_partition`); a write or marker answer that arrives
after is ignored, and requests get NOT_COORDINATOR, so the client looks the coordinator up again.

Worked example (three brokers): ``__transaction_state-7`` is led by broker 1 at leader epoch 0.
EndTxn(commit) is answered once brokers 2 and 3 have the PrepareCommit record; broker 1 dies
before any marker. The controller makes broker 2 leader at epoch 1; broker 2 loads partition 7,
finds PrepareCommit and sends the COMMIT markers with coordinator epoch 1.

*Fencing.* An InitProducerId that finds a transaction Ongoing (a new instance of the producer
took over) bumps the epoch and aborts that transaction first, answering CONCURRENT_TRANSACTIONS;
the client retries and, once the abort completed, gets the epoch bumped once more. The same
fence-and-abort runs when ``transaction.timeout.ms`` passes without an EndTxn: each transaction
has a task on the broker's timer from the moment it starts.

Worked example (timeout 60 000 ms): ``app-1`` adds ``orders-0`` at t=1000 and its producer
stops. At t=61 000 the timer aborts it with epoch 1: PrepareAbort, ABORT marker in ``orders-0``,
CompleteAbort. When the producer wakes up, its EndTxn with epoch 0 is answered PRODUCER_FENCED.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar, overload

from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.group.log import CoordinatorLog
from kafkalab.partitioner import java_abs, java_string_hash
from kafkalab.timer import ScheduledTask, Scheduler
from kafkalab.txn.markers import MARKER_DONE, MARKER_SUPERSEDED, MarkerChannel, MarkerRequest, MarkerResults
from kafkalab.txn.metadata import (
    NO_PRODUCER_EPOCH,
    TransactionMetadata,
    bumped_epochs,
    epoch_exhausted,
    valid_producer_id,
)
from kafkalab.txn.records import TopicPartition, TxnRecord, decode_key, decode_value, transaction_log_key, transaction_log_value
from kafkalab.txn.state import TransactionState, TxnEvent, next_state, outcome

TRANSACTION_STATE_TOPIC = "__transaction_state"  # Kafka's Topic.TRANSACTION_STATE_TOPIC_NAME
E = ErrorCode
S = TransactionState

# A failed __transaction_state append, as the client should see it (Kafka's
# TransactionStateManager.appendTransactionToLog): retriable codes become coordinator errors.
_APPEND_ERRORS = {
    E.UNKNOWN_TOPIC_OR_PARTITION: E.COORDINATOR_NOT_AVAILABLE,
    E.NOT_ENOUGH_REPLICAS: E.COORDINATOR_NOT_AVAILABLE,
    E.NOT_ENOUGH_REPLICAS_AFTER_APPEND: E.COORDINATOR_NOT_AVAILABLE,
    E.REQUEST_TIMED_OUT: E.COORDINATOR_NOT_AVAILABLE,
    E.NOT_LEADER_OR_FOLLOWER: E.NOT_COORDINATOR,
    E.KAFKA_STORAGE_ERROR: E.NOT_COORDINATOR,
    E.MESSAGE_TOO_LARGE: E.UNKNOWN_SERVER_ERROR,
    E.RECORD_LIST_TOO_LARGE: E.UNKNOWN_SERVER_ERROR,
}


@dataclass(frozen=True, slots=True)
class TxnSettings:
    """The broker configs the coordinator obeys (Kafka's names and defaults)."""

    state_partitions: int = 50  # transaction.state.log.num.partitions
    max_timeout_ms: int = 900_000  # transaction.max.timeout.ms
    transactional_id_expiration_ms: int = 604_800_000  # transactional.id.expiration.ms
    marker_retry_backoff_ms: int = 100  # retry.backoff.ms of Kafka's marker channel
    request_timeout_ms: int = 30_000  # how long a write may wait for the ISR (Kafka's request.timeout.ms default)
    abort_retry_ms: int = 10_000  # transaction.abort.timed.out.transaction.cleanup.interval.ms


@dataclass(frozen=True, slots=True)
class InitProducerIdResult:
    error_code: int
    producer_id: int = -1
    producer_epoch: int = NO_PRODUCER_EPOCH


TRANSACTIONAL_IDS_CACHED = 4096  # ids whose partition is remembered: each request asks several times


@functools.lru_cache(maxsize=TRANSACTIONAL_IDS_CACHED)
def partition_for(transactional_id: str, partition_count: int) -> int:
    """The ``__transaction_state`` partition of ``transactional_id`` (Kafka's ``partitionFor``)."""
    assert partition_count > 0
    return java_abs(java_string_hash(transactional_id)) % partition_count


class TransactionCoordinator:
    """Every transactional id this node coordinates. Not thread-safe; owned by one broker.

    Each request method answers through ``respond`` once its ``__transaction_state`` record is
    committed (acks=all), or returns the answer when no ``respond`` is given -- then the log
    must commit at once, as a lone broker's and :class:`~kafkalab.group.log.MemoryCoordinatorLog`
    do.
    """

    def __init__(self, settings: TxnSettings, log: CoordinatorLog, channel: MarkerChannel,
                 allocate_producer_id: Callable[[], int], scheduler: Scheduler,
                 clock_ms: Callable[[], int], coordinator_epoch: int = 0,
                 partition_error: Callable[[int], int] = lambda partition: E.NONE) -> None:
        self.settings = settings
        self.log = log
        self.channel = channel
        self.allocate_producer_id = allocate_producer_id
        self.scheduler = scheduler
        self.clock_ms = clock_ms  # wall-clock ms for the timestamps a timer event writes
        # The coordinator epoch of each loaded __transaction_state partition: its leader epoch
        # when this broker was elected (Kafka's TxnMetadataCacheEntry.coordinatorEpoch). Markers
        # carry it, so a partition refuses those of a coordinator that has since been replaced.
        self.coordinator_epoch = coordinator_epoch  # for partitions loaded by :meth:`load`
        self.coordinator_epochs: dict[int, int] = {}
        # NONE if this node coordinates that __transaction_state partition's ids now; else
        # NOT_COORDINATOR (the client looks its coordinator up again) or
        # COORDINATOR_LOAD_IN_PROGRESS.
        self.partition_error = partition_error
        self.transactions: dict[str, TransactionMetadata] = {}
        self._timeouts: dict[str, ScheduledTask] = {}

    def partition_of(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.settings.state_partitions)

    def epoch_of(self, partition: int) -> int:
        """The coordinator epoch of ``partition`` (see :attr:`coordinator_epochs`)."""
        return self.coordinator_epochs.get(partition, self.coordinator_epoch)

    def _ownership_error(self, transactional_id: str) -> int:
        return self.partition_error(self.partition_of(transactional_id))

    def _current(self, metadata: TransactionMetadata, coordinator_epoch: int | None = None) -> bool:
        """Is ``metadata`` still this coordinator's: not unloaded (which drops it) nor reloaded
        (which replaces it) since, and its partition at ``coordinator_epoch`` if one is given?"""
        partition = self.partition_of(metadata.transactional_id)
        return (self.transactions.get(metadata.transactional_id) is metadata
                and (coordinator_epoch is None or self.epoch_of(partition) == coordinator_epoch))

    # --- InitProducerId -------------------------------------------------------------------

    @overload
    def init_producer_id(self, transactional_id: str, timeout_ms: int, expected: tuple[int, int] | None,
                         now_ms: int) -> InitProducerIdResult: ...

    @overload
    def init_producer_id(self, transactional_id: str, timeout_ms: int, expected: tuple[int, int] | None,
                         now_ms: int, respond: Callable[[InitProducerIdResult], None]) -> None: ...

    def init_producer_id(self, transactional_id: str, timeout_ms: int, expected: tuple[int, int] | None,
                         now_ms: int, respond: Callable[[InitProducerIdResult], None] | None = None
                         ) -> InitProducerIdResult | None:
        """A new producer id or a bumped epoch; ``expected`` is KIP-360's (producer id, epoch)."""
        return _answer(lambda done: self._init(transactional_id, timeout_ms, expected, now_ms, done), respond)

    def _init(self, transactional_id: str, timeout_ms: int, expected: tuple[int, int] | None, now_ms: int,
              done: Callable[[InitProducerIdResult], None]) -> None:
        if not transactional_id:
            return done(InitProducerIdResult(E.INVALID_REQUEST))
        if not 0 < timeout_ms <= self.settings.max_timeout_ms:
            return done(InitProducerIdResult(E.INVALID_TRANSACTION_TIMEOUT))
        error = self._ownership_error(transactional_id)
        if error:
            return done(InitProducerIdResult(error))
        metadata = self.transactions.get(transactional_id)
        if metadata is None:
            metadata = TransactionMetadata(transactional_id, self.allocate_producer_id(), timeout_ms=timeout_ms,
                                           last_update_ms=now_ms)
            self.transactions[transactional_id] = metadata
        if metadata.pending_write:
            return done(InitProducerIdResult(E.CONCURRENT_TRANSACTIONS))
        if expected is not None and not valid_producer_id(metadata, *expected):
            return done(InitProducerIdResult(E.PRODUCER_FENCED))
        result = outcome(transactional_id, metadata.state, TxnEvent.INIT_PRODUCER_ID)
        if isinstance(result, ErrorCode):
            return done(InitProducerIdResult(result))
        if result is S.PREPARE_EPOCH_FENCE:
            return self._fence_and_abort(metadata, now_ms, lambda e: done(
                InitProducerIdResult(e or E.CONCURRENT_TRANSACTIONS)))
        return self._bump(metadata, timeout_ms, None if expected is None else expected[1], now_ms, done)

    def _bump(self, metadata: TransactionMetadata, timeout_ms: int, expected_epoch: int | None,
              now_ms: int, done: Callable[[InitProducerIdResult], None]) -> None:
        previous = metadata.producer_id
        if epoch_exhausted(metadata.producer_epoch) and expected_epoch in (None, metadata.producer_epoch):
            # Kafka's prepareProducerIdRotation: a new producer id, starting again at epoch 0.
            last_epoch = NO_PRODUCER_EPOCH if expected_epoch is None else metadata.producer_epoch
            record = metadata.record(S.EMPTY, now_ms, producer_id=self.allocate_producer_id(), producer_epoch=0,
                                     previous_producer_id=previous, timeout_ms=timeout_ms,
                                     partitions=frozenset(), start_ms=-1)
        else:
            epochs = bumped_epochs(metadata, expected_epoch)
            if isinstance(epochs, ErrorCode):
                return done(InitProducerIdResult(epochs))
            epoch, last_epoch = epochs
            record = metadata.record(S.EMPTY, now_ms, producer_epoch=epoch, timeout_ms=timeout_ms,
                                     partitions=frozenset(), start_ms=-1)

        def written(error: int) -> None:
            done(InitProducerIdResult(error) if error else
                 InitProducerIdResult(E.NONE, metadata.producer_id, metadata.producer_epoch))
        self._write(metadata, record, now_ms, written, last_epoch)

    # --- AddPartitionsToTxn / AddOffsetsToTxn ---------------------------------------------

    @overload
    def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                       partitions: Iterable[TopicPartition], now_ms: int) -> int: ...

    @overload
    def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                       partitions: Iterable[TopicPartition], now_ms: int, respond: Callable[[int], None]) -> None: ...

    def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                       partitions: Iterable[TopicPartition], now_ms: int,
                       respond: Callable[[int], None] | None = None) -> int | None:
        """Add ``partitions`` to the producer's transaction, starting one if none is open."""
        added = set(partitions)
        return _answer(lambda done: self._add(transactional_id, producer_id, producer_epoch, added, now_ms, done),
                       respond)

    def _add(self, transactional_id: str, producer_id: int, producer_epoch: int, added: set[TopicPartition],
             now_ms: int, done: Callable[[int], None]) -> None:
        metadata, error = self._producer(transactional_id, producer_id, producer_epoch)
        if metadata is None:
            return done(error)
        result = outcome(transactional_id, metadata.state, TxnEvent.ADD_PARTITIONS)
        if isinstance(result, ErrorCode):
            return done(result)
        if metadata.state is S.ONGOING and added <= metadata.partitions:
            return done(E.NONE)  # Kafka's shortcut: nothing new to write
        starting = metadata.state is not S.ONGOING
        record = metadata.record(S.ONGOING, now_ms, partitions=frozenset(metadata.partitions | added),
                                 start_ms=now_ms if starting else metadata.start_ms)

        def written(error: int) -> None:
            if not error and starting:
                self._schedule_timeout(metadata)
            done(error)
        self._write(metadata, record, now_ms, written)

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """AddPartitionsToTxn v4+ ``verify_only`` (KIP-890): is each partition in the transaction?"""
        metadata, error = self._producer(transactional_id, producer_id, producer_epoch)
        if metadata is not None and metadata.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            error = E.CONCURRENT_TRANSACTIONS
        if metadata is None or error:
            return {tp: error for tp in partitions}
        return {tp: E.NONE if tp in metadata.partitions else E.TRANSACTION_ABORTABLE for tp in partitions}

    def _producer(self, transactional_id: str, producer_id: int,
                  producer_epoch: int) -> tuple[TransactionMetadata | None, int]:
        """The id's metadata if the request's producer id and epoch are its current ones."""
        if not transactional_id:
            return None, E.INVALID_REQUEST
        error = self._ownership_error(transactional_id)
        if error:
            return None, error
        metadata = self.transactions.get(transactional_id)
        if metadata is None or metadata.producer_id != producer_id:
            return None, E.INVALID_PRODUCER_ID_MAPPING
        if metadata.producer_epoch != producer_epoch:
            return None, E.PRODUCER_FENCED
        if metadata.pending_write:
            return None, E.CONCURRENT_TRANSACTIONS
        return metadata, E.NONE

    # --- EndTxn and the markers -----------------------------------------------------------

    @overload
    def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool,
                now_ms: int) -> int: ...

    @overload
    def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool,
                now_ms: int, respond: Callable[[int], None]) -> None: ...

    def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool,
                now_ms: int, respond: Callable[[int], None] | None = None) -> int | None:
        """Decide the transaction; answered once PrepareCommit/PrepareAbort is committed, before
        the markers are (the producer may start its next transaction meanwhile: its
        AddPartitionsToTxn is answered CONCURRENT_TRANSACTIONS until they are)."""
        event = TxnEvent.COMMIT if commit else TxnEvent.ABORT

        def start(done: Callable[[int], None]) -> None:
            error = E.INVALID_REQUEST if not transactional_id else self._ownership_error(transactional_id)
            if error:
                return done(error)
            self._end(transactional_id, producer_id, producer_epoch, event, now_ms, done, from_client=True)
        return _answer(start, respond)

    def _end(self, transactional_id: str, producer_id: int, producer_epoch: int, event: TxnEvent,
             now_ms: int, done: Callable[[int], None], *, from_client: bool) -> None:
        metadata = self.transactions.get(transactional_id)
        if metadata is None or metadata.producer_id != producer_id:
            return done(E.INVALID_PRODUCER_ID_MAPPING)
        # A client must name the current epoch; the coordinator's own abort after a fence names
        # the bumped one (Kafka's transaction version 0/1 rule).
        if producer_epoch < metadata.producer_epoch or (from_client and producer_epoch != metadata.producer_epoch):
            return done(E.PRODUCER_FENCED)
        if metadata.pending_write:
            return done(E.CONCURRENT_TRANSACTIONS)
        result = outcome(transactional_id, metadata.state, event)
        if isinstance(result, ErrorCode):
            return done(result)
        fencing = metadata.state is S.PREPARE_EPOCH_FENCE
        record = metadata.record(result, now_ms, producer_epoch=producer_epoch)

        def written(error: int) -> None:
            if error:
                if fencing and metadata.state is S.PREPARE_EPOCH_FENCE:
                    # The bumped epoch is not applied (only committed records are), so the next
                    # fence bumps from the same epoch again and writes the same one. Kafka bumps
                    # in memory first and so must remember not to bump twice (hasFailedEpochFence).
                    metadata.state = S.ONGOING
                return done(error)
            self._cancel_timeout(transactional_id)
            self._send_markers(metadata, sorted(metadata.partitions))
            done(E.NONE)
        self._write(metadata, record, now_ms, written, NO_PRODUCER_EPOCH if fencing else None)

    def _fence_and_abort(self, metadata: TransactionMetadata, now_ms: int, done: Callable[[int], None]) -> None:
        """Kafka's ``prepareFenceProducerEpoch`` then an abort with the bumped epoch."""
        metadata.state = next_state(metadata.transactional_id, metadata.state, TxnEvent.FENCE)
        self._end(metadata.transactional_id, metadata.producer_id, metadata.producer_epoch + 1, TxnEvent.ABORT, now_ms, done,
                  from_client=False)

    def _send_markers(self, metadata: TransactionMetadata, partitions: Sequence[TopicPartition]) -> None:
        if not self._current(metadata):
            return  # unloaded meanwhile: the new coordinator sends them
        if not partitions:
            self._complete(metadata)
            return
        commit = metadata.state is S.PREPARE_COMMIT
        coordinator_epoch = self.epoch_of(self.partition_of(metadata.transactional_id))
        request = MarkerRequest(metadata.producer_id, metadata.producer_epoch, coordinator_epoch, commit,
                                tuple(partitions))
        self.channel.send(request, lambda results: self._on_markers(metadata, request, results))

    def _on_markers(self, metadata: TransactionMetadata, request: MarkerRequest, results: MarkerResults) -> None:
        """Kafka's ``TransactionMarkerRequestCompletionHandler``: drop each partition that has
        its marker, retry the others after a backoff, and complete once none is left."""
        transactional_id = metadata.transactional_id
        if not self._current(metadata, request.coordinator_epoch) or \
                metadata.state not in (S.PREPARE_COMMIT, S.PREPARE_ABORT) or \
                (metadata.producer_id, metadata.producer_epoch) != (request.producer_id, request.producer_epoch):
            return  # superseded meanwhile (unloaded or reloaded, or a newer producer epoch)
        if any(error in MARKER_SUPERSEDED for error in results.values()):
            return
        retry = sorted(tp for tp, error in results.items() if error not in MARKER_DONE)
        metadata.partitions.difference_update(tp for tp, error in results.items() if error in MARKER_DONE)
        if retry:
            self.scheduler.schedule(self.settings.marker_retry_backoff_ms,
                                    lambda: self._send_markers(metadata, retry), name=f"txn-markers-{transactional_id}")
        elif not metadata.partitions:
            self._complete(metadata)

    def _complete(self, metadata: TransactionMetadata) -> None:
        """Every marker is written: CompleteCommit or CompleteAbort (retried until written)."""
        if not self._current(metadata) or metadata.state not in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return
        now_ms = self.clock_ms()
        state = next_state(metadata.transactional_id, metadata.state, TxnEvent.MARKERS_WRITTEN)

        def written(error: int) -> None:
            if error:
                self.scheduler.schedule(self.settings.marker_retry_backoff_ms, lambda: self._complete(metadata),
                                        name=f"txn-complete-{metadata.transactional_id}")
        self._write(metadata, metadata.record(state, now_ms, partitions=frozenset()), now_ms, written)

    # --- transaction.timeout.ms -----------------------------------------------------------

    def _schedule_timeout(self, metadata: TransactionMetadata, delay_ms: int | None = None) -> None:
        transactional_id, start_ms = metadata.transactional_id, metadata.start_ms
        self._cancel_timeout(transactional_id)
        self._timeouts[transactional_id] = self.scheduler.schedule(
            metadata.timeout_ms if delay_ms is None else delay_ms,
            lambda: self._on_timeout(transactional_id, start_ms), name=f"txn-timeout-{transactional_id}")

    def _cancel_timeout(self, transactional_id: str) -> None:
        task = self._timeouts.pop(transactional_id, None)
        if task is not None:
            task.cancel()

    def _on_timeout(self, transactional_id: str, start_ms: int) -> None:
        """Kafka's ``abortTimedOutTransactions``: fence the producer and abort."""
        self._timeouts.pop(transactional_id, None)
        metadata = self.transactions.get(transactional_id)
        if metadata is None or metadata.state is not S.ONGOING or metadata.start_ms != start_ms:
            return
        if metadata.pending_write:  # a write is in flight: look again after it
            self._schedule_timeout(metadata, self.settings.marker_retry_backoff_ms)
            return

        def aborted(error: int) -> None:
            # The abort did not reach the log (the ISR was short, say): Kafka's periodic check
            # finds the transaction again on its next run.
            if error and self._current(metadata) and metadata.state is S.ONGOING:
                self._schedule_timeout(metadata, self.settings.abort_retry_ms)
        self._fence_and_abort(metadata, self.clock_ms(), aborted)

    # --- the log --------------------------------------------------------------------------

    def _write(self, metadata: TransactionMetadata, record: TxnRecord, now_ms: int, done: Callable[[int], None],
               last_producer_epoch: int | None = None) -> None:
        """Append ``record`` for ``metadata``'s id; once the ISR has it (acks=all) apply it and
        call ``done(NONE)``, else ``done`` with the client's error code (Kafka's
        ``appendTransactionToLog``). Until then the id answers CONCURRENT_TRANSACTIONS."""
        partition = self.partition_of(metadata.transactional_id)
        key = transaction_log_key(metadata.transactional_id)
        try:
            offset = self.log.append(partition, [(key, transaction_log_value(record))], now_ms)
        except KafkaError as error:
            return done(_APPEND_ERRORS.get(ErrorCode(error.error_code), error.error_code))
        coordinator_epoch = self.epoch_of(partition)
        metadata.pending_write = True

        def committed(error: int) -> None:
            metadata.pending_write = False
            if not error and not self._current(metadata, coordinator_epoch):
                error = E.NOT_COORDINATOR  # resigned meanwhile: the new coordinator has it
            if error:
                return done(_APPEND_ERRORS.get(ErrorCode(error), error))
            metadata.apply(record, last_producer_epoch)
            done(E.NONE)
        self.log.when_committed(partition, offset, committed)

    def load(self, now_ms: int) -> int:
        """Rebuild every transactional id from the whole of ``__transaction_state`` (a lone
        broker's start); see :meth:`load_partition`. Returns the number of records replayed."""
        return self._load(self.log.replay(), now_ms)

    def load_partition(self, partition: int, records: Iterable[tuple[int, bytes, bytes | None]],
                       coordinator_epoch: int, now_ms: int) -> int:
        """This broker now leads ``partition`` at leader epoch ``coordinator_epoch``: replay its
        records, finish transactions caught in PrepareCommit/PrepareAbort and re-arm the
        timeouts of Ongoing ones (Kafka's ``loadTransactionsForTxnTopicPartition``)."""
        self.coordinator_epochs[partition] = coordinator_epoch
        return self._load(records, now_ms)

    def _load(self, records: Iterable[tuple[int, bytes, bytes | None]], now_ms: int) -> int:
        count, loaded = 0, set()
        for _partition, key, value in records:
            transactional_id = decode_key(key)
            if value is None:
                self.transactions.pop(transactional_id, None)
            else:
                self.transactions[transactional_id] = TransactionMetadata.loaded(transactional_id, decode_value(value))
            loaded.add(transactional_id)
            count += 1
        for metadata in [self.transactions[t] for t in sorted(loaded) if t in self.transactions]:
            if metadata.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                self._send_markers(metadata, sorted(metadata.partitions))
            elif metadata.state is S.ONGOING:
                self._schedule_timeout(metadata, max(metadata.start_ms + metadata.timeout_ms - now_ms, 0))
        return count

    def unload_partition(self, partition: int) -> list[str]:
        """This broker no longer leads ``partition``: forget its ids, their timeouts and the
        markers still owed (the new leader resumes them). Kafka's
        ``removeTransactionsForTxnTopicPartition``. Returns the ids dropped."""
        dropped = sorted(t for t in self.transactions if self.partition_of(t) == partition)
        for transactional_id in dropped:
            self._cancel_timeout(transactional_id)
            del self.transactions[transactional_id]
        self.coordinator_epochs.pop(partition, None)
        return dropped

    def expire_transactional_ids(self, now_ms: int) -> int:
        """Tombstone every id idle past ``transactional.id.expiration.ms`` with no open
        transaction (Kafka's ``removeExpiredTransactionalIds``); the number removed."""
        horizon_ms = now_ms - self.settings.transactional_id_expiration_ms
        expired = [m for m in self.transactions.values()
                   if m.state.expiration_allowed and m.last_update_ms <= horizon_ms and not m.pending_write
                   and self._ownership_error(m.transactional_id) == E.NONE]
        for metadata in expired:
            next_state(metadata.transactional_id, metadata.state, TxnEvent.EXPIRE)
            key = transaction_log_key(metadata.transactional_id)
            try:
                self.log.append(self.partition_of(metadata.transactional_id), [(key, None)], now_ms)
            except KafkaError:
                continue  # tried again at the next check, as Kafka's does
            del self.transactions[metadata.transactional_id]
        return len(expired)

    # --- DescribeTransactions and ListTransactions (KIP-664) ------------------------------

    def describe(self, transactional_id: str) -> tuple[int, TransactionMetadata | None]:
        """(error code, metadata): INVALID_REQUEST for an empty id, TRANSACTIONAL_ID_NOT_FOUND
        for an unknown or expiring one."""
        if not transactional_id:
            return E.INVALID_REQUEST, None
        error = self._ownership_error(transactional_id)
        if error:
            return error, None
        metadata = self.transactions.get(transactional_id)
        if metadata is None or metadata.state is S.DEAD:
            return E.TRANSACTIONAL_ID_NOT_FOUND, None
        return E.NONE, metadata

    def list_transactions(self, states: Iterable[str], producer_ids: Iterable[int], duration_ms: int,
                          now_ms: int) -> tuple[list[TransactionMetadata], list[str]]:
        """(matching ids sorted by transactional id, state filters that name no state), with
        Kafka's filters: any of ``states``, any of ``producer_ids``, open longer than
        ``duration_ms`` (when >= 0)."""
        names = {state.value: state for state in TransactionState}
        wanted_states = {names[s] for s in states if s in names}
        unknown = [s for s in states if s not in names]
        wanted_ids = set(producer_ids)
        found = [
            m for _, m in sorted(self.transactions.items())
            if m.state is not S.DEAD
            and (not wanted_ids or m.producer_id in wanted_ids)
            and (not states or m.state in wanted_states)
            and (duration_ms < 0 or now_ms - m.start_ms > duration_ms)
        ]
        return found, unknown


Answer = TypeVar("Answer")


def _answer(start: Callable[[Callable[[Answer], None]], None], respond: Callable[[Answer], None] | None
            ) -> Answer | None:
    """Run ``start(done)``. With ``respond`` the answer goes there whenever it comes (None is
    returned); without, it must come before ``start`` returns, and is returned."""
    if respond is not None:
        start(respond)
        return None
    answers: list[Answer] = []
    start(answers.append)
    assert answers, "without respond the coordinator log must commit at once"
    return answers[0]
