"""Fetch: read whole batches up to the high watermark, waiting for ``min_bytes`` if asked.

Consumers (``replica_id`` -1) read below the high watermark: a fetch naming an older
``current_leader_epoch`` (v9+, KIP-320) is answered FENCED_LEADER_EPOCH, a newer one
UNKNOWN_LEADER_EPOCH. Before v11 only the leader serves consumers (others answer
NOT_LEADER_OR_FOLLOWER); from v11 the consumer names its rack, a follower serves it up to the
follower's own high watermark, and a leader with ``replica.selector.class`` set may answer with
no records and a ``preferred_read_replica`` to read from instead (KIP-392, see
:mod:`kafkalab.replication.replica_selector`); such an answer is sent at once. Followers
(``replica_id`` >= 0) read up to the log end offset; their fetch offset is their LEO, which the
leader records (:mod:`kafkalab.replication.partition`), and a last fetched epoch that does not
match the leader's log is answered with ``diverging_epoch`` instead of records (KIP-595).

Size limits follow KIP-74: ``max_bytes`` bounds the response and ``partition_max_bytes`` each
partition, but the first batch found is returned whole even when it is larger than either
limit, so a consumer can always make progress.

A consumer's ``isolation_level`` decides where its reads stop (KIP-98). read_uncommitted (0)
reads to the high watermark and gets ``aborted_transactions`` null. read_committed (1) reads to
the last stable offset -- the first offset of the oldest transaction not yet decided -- and gets
the aborted transactions (producer id, first offset) overlapping the batches it was sent,
collected from the segments' ``.txnindex`` files; the consumer drops a producer's records
from that first offset up to the producer's ABORT marker, and skips every control batch.
Every successful answer carries the partition's real ``last_stable_offset``. Worked example:
offsets 0-1 are an aborted transaction of producer 7 (marker at 2), 3 is plain, 4-5 are an
open transaction: read_committed from 0 gets offsets 0-3 with ``aborted_transactions=[(7, 0)]``
and ``last_stable_offset=4``; read_uncommitted gets 0-5 and null.

If the partitions together hold fewer than ``min_bytes`` and ``max_wait_ms`` > 0, the request
is parked as a ``DelayedFetch`` in the broker's fetch purgatory (see
:mod:`kafkalab.broker.delayed_fetch`) and answered when a produce brings enough bytes
(``check_and_complete`` on the partition) or the timing wheel reaches ``max_wait_ms``.

Fetch sessions (KIP-227, v7+): the broker's :class:`~kafkalab.broker.fetch_session.FetchSessionCache`
turns the request into a context first -- which partitions to read (an incremental request's
are the session's), or a session error answered at once with no partitions -- and the answer,
now or when a parked fetch completes, names only what the context lets through (an incremental
response: the partitions with something new). A follower's fetch offsets are recorded for every
partition of its session, named in the request or implied by it.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from itertools import groupby
from operator import itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple

from kafkalab.broker.delayed_fetch import DELAYED_FETCHES_MAX, DelayedFetch
from kafkalab.broker.fetch_session import FetchContext, TopicPartitionData
from kafkalab.replication.partition import NotLeaderOrFollowerError, Partition
from kafkalab.replication.replica_selector import NO_PREFERRED_REPLICA, Candidate, preferred_read_replica
from kafkalab.replication.truncation import EpochEndOffset
from kafkalab.broker.request import PENDING, Request
from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.messages.fetch import FETCH_RESPONSE
from kafkalab.protocol.types import RecordsParts
from kafkalab.storage.txn_index import AbortedTxn

if TYPE_CHECKING:
    from kafkalab.broker.broker import Broker

_R = FETCH_RESPONSE.cls
_T = _R.FetchableTopicResponse
_P = _T.PartitionData
READ_COMMITTED = 1  # isolation_level: 0 read_uncommitted, 1 read_committed (KIP-98)
CLIENT_METADATA_VERSION = 11  # Fetch v11+ carries the consumer's rack (KIP-392)
ABORTED_ENTRIES_CACHED = 4096  # response entries for aborted transactions kept for reuse
ANSWERS_CACHED = 4096  # partition answers without records kept for reuse


def handle_fetch(broker: Broker, request: Request) -> Any:
    body = request.body
    version, now_ms = request.header.api_version, request.now_ms
    fetch_data = [(t.topic, p) for t in body.topics for p in t.partitions]
    forgotten = [(t.topic, p) for t in body.forgotten_topics_data for p in t.partitions]
    context = broker.fetch_sessions.new_context(
        version, body.session_id, body.session_epoch, body.replica_id >= 0, fetch_data, forgotten, now_ms)
    answers, size_bytes, answer_now = read_partitions(broker, body, context.partitions, version, now_ms)
    if body.replica_id >= 0:
        _record_follower_fetch(broker, body.replica_id, context.partitions, answers, now_ms)
    enough = size_bytes >= body.min_bytes or answer_now or not context.partitions
    if enough or body.max_wait_ms <= 0 or len(broker.parked_fetches) >= DELAYED_FETCHES_MAX:
        return _response(broker, context, answers, now_ms)
    header, connection_id = request.header, request.connection_id

    def respond(completed: list[TopicPartitionData]) -> None:
        broker.parked_fetches.pop(connection_id, None)
        response = _response(broker, context, completed, broker.timer.now_ms())
        broker.respond(connection_id, ApiKey.FETCH, header.api_version, header.correlation_id, response)

    operation = DelayedFetch(
        connection_id, body.max_wait_ms, body.min_bytes,
        lambda: read_partitions(broker, body, context.partitions, version, broker.timer.now_ms()), respond,
        name=f"fetch-{connection_id}-{header.correlation_id}",
    )
    keys = sorted({(topic, wanted.partition) for topic, wanted in context.partitions})
    broker.parked_fetches[connection_id] = operation
    # If a re-check completes it inside this call, its response is already in the outbox.
    broker.fetch_purgatory.try_complete_else_watch(operation, keys)
    return PENDING


def _response(broker: Broker, context: FetchContext, answers: list[TopicPartitionData], now_ms: int) -> Any:
    """The response the session context lets through, its partitions grouped by topic in order."""
    answer = broker.fetch_sessions.respond(context, answers, now_ms)
    topics = tuple(_T(topic=topic, partitions=tuple(data for _, data in group))
                   for topic, group in groupby(answer.partitions, key=itemgetter(0)))
    return _R(error_code=answer.error_code, session_id=answer.session_id, responses=topics)


def read_partitions(
    broker: Broker, body: Any, partitions: Sequence[TopicPartitionData], version: int = 0, now_ms: int = 0,
) -> tuple[list[TopicPartitionData], int, bool]:
    """Read ``partitions`` (topic, FetchPartition) under the request's limits: ((topic, answer)
    in the same order, record bytes found, whether to answer at once: a partition failed or
    points the consumer to another replica)."""
    remaining_bytes = max(body.max_bytes, 0)
    min_one_message = True
    size_total = 0
    answer_now = False
    answers = []
    client = _ClientMetadata(body.rack_id or "", now_ms) if version >= CLIENT_METADATA_VERSION and body.replica_id < 0 else None
    read_committed = body.isolation_level == READ_COMMITTED
    for topic, wanted in partitions:
        limit = min(wanted.partition_max_bytes, remaining_bytes)
        data, size_bytes = _read_one(broker, topic, wanted, limit, min_one_message, body.replica_id,
                                     read_committed, client)
        answer_now = answer_now or data.error_code != 0 or data.preferred_read_replica != NO_PREFERRED_REPLICA
        if size_bytes:
            min_one_message = False
            remaining_bytes = max(remaining_bytes - size_bytes, 0)
            size_total += size_bytes
        answers.append((topic, data))
    return answers, size_total, answer_now


class _ClientMetadata(NamedTuple):
    """What a v11+ consumer fetch tells about its sender (Kafka's ``ClientMetadata``)."""

    rack: str
    now_ms: int


def _read_one(
    broker: Broker, topic: str, wanted: Any, limit: int, min_one_message: bool, replica_id: int,
    read_committed: bool, client: _ClientMetadata | None = None,
) -> tuple[Any, int]:
    hosted = broker.topics.partition(topic, wanted.partition)
    if hosted is None:
        return _P(partition_index=wanted.partition, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                  high_watermark=-1, records=None), 0
    log = hosted.log
    try:
        broker.check_online(log)
    except KafkaError as error:  # an offline log directory: no offsets to report, as in Kafka
        return _P(partition_index=wanted.partition, error_code=error.error_code, high_watermark=-1, records=None), 0
    offsets = _Offsets(log.high_watermark, log.last_stable_offset, log.log_start_offset)
    try:
        max_offset = _check_reader(hosted.partition, wanted, replica_id, leader_only=client is None)
    except _Diverging as diverging:
        epoch = _P.EpochEndOffset(epoch=diverging.answer.epoch, end_offset=diverging.answer.end_offset)
        return dataclasses.replace(_partition(wanted, 0, offsets, b""), diverging_epoch=epoch), 0
    except KafkaError as error:
        return _partition(wanted, error.error_code, offsets, None), 0
    if client is not None and hosted.partition.is_leader and broker.replica_selector is not None:
        preferred = _preferred_read_replica(broker, hosted.partition, wanted.fetch_offset, client)
        if preferred != NO_PREFERRED_REPLICA:  # no read: the consumer goes there (Kafka skips it too)
            return dataclasses.replace(_partition(wanted, 0, offsets, b""), preferred_read_replica=preferred), 0
    read_committed = read_committed and replica_id < 0  # followers copy everything
    if read_committed:
        max_offset = offsets.last_stable_offset
    fetch_offset = wanted.fetch_offset
    if fetch_offset > log.log_end_offset or fetch_offset < offsets.log_start_offset:
        return _partition(wanted, ErrorCode.OFFSET_OUT_OF_RANGE, offsets, None), 0
    # Between the HW and the LEO a consumer gets nothing yet, not an error (Kafka's LocalLog.read).
    upper = log.log_end_offset if max_offset is None else max_offset
    if (limit <= 0 and not min_one_message) or fetch_offset >= upper:
        return _partition(wanted, 0, offsets, b"", () if read_committed else None), 0
    try:
        info = log.read(fetch_offset, max(limit, 1), max_offset=max_offset, min_one_message=min_one_message)
        aborted = _aborted(log.aborted_transactions_in(info)) if read_committed else None
    except KafkaError as error:
        broker.on_storage_error(error)
        return _partition(wanted, error.error_code, offsets, None), 0
    slices = tuple(info.slices)  # the storage layer's file slices, sent as they are
    size_bytes = sum(s.size_bytes for s in slices)
    return _partition(wanted, 0, offsets, RecordsParts(slices), aborted), size_bytes


class _Offsets(NamedTuple):
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int


def _aborted(found: list[AbortedTxn]) -> tuple[Any, ...]:
    return tuple(_aborted_entry(t.producer_id, t.first_offset) for t in found)


@functools.lru_cache(maxsize=ABORTED_ENTRIES_CACHED)
def _aborted_entry(producer_id: int, first_offset: int) -> Any:
    """One response entry; consecutive read_committed fetches name the same aborted
    transactions again and again, and the messages are immutable, so they are shared."""
    return _P.AbortedTransaction(producer_id=producer_id, first_offset=first_offset)


class _Diverging(Exception):
    def __init__(self, answer: EpochEndOffset) -> None:
        self.answer = answer


def _preferred_read_replica(broker: Broker, partition: Partition, fetch_offset: int, client: _ClientMetadata) -> int:
    """Ask the selector where this consumer should read (KIP-392); registered, unfenced
    brokers only, as Kafka offers only replicas it has an endpoint for."""
    assert broker.replica_selector is not None
    racks = {b.broker_id: b.rack for b in broker.image.brokers.values() if not b.fenced}
    followers = [Candidate(replica_id, replica_id in partition.isr, state.log_start_offset, state.log_end_offset,
                           state.last_caught_up_time_ms) for replica_id, state in sorted(partition.followers.items())]
    return preferred_read_replica(broker.replica_selector, client.rack, partition.local_broker_id,
                                  partition.log.log_end_offset, followers, racks, fetch_offset, client.now_ms)


def _check_reader(partition: Partition, wanted: Any, replica_id: int, *, leader_only: bool = True) -> int | None:
    """Who may read what: a consumer reads below the HW, from the leader only before Fetch v11;
    a follower reads to the LEO once its last fetched epoch matches our log (else
    :class:`_Diverging`). Returns the offset reads stop before (None: the LEO)."""
    if replica_id < 0:
        partition.check_current_leader_epoch(wanted.current_leader_epoch)
        if leader_only and not partition.is_leader:
            raise NotLeaderOrFollowerError(
                f"broker {partition.local_broker_id} is not the leader of {partition.topic}-{partition.partition}")
        return partition.log.high_watermark
    diverging = partition.check_follower_fetch(
        replica_id, wanted.current_leader_epoch, wanted.fetch_offset, wanted.last_fetched_epoch)
    if diverging is not None:
        raise _Diverging(diverging)
    return None


def _record_follower_fetch(broker: Broker, replica_id: int, partitions: Sequence[TopicPartitionData],
                           answers: list[TopicPartitionData], now_ms: int) -> None:
    """A follower's fetch offsets are its LEOs: record them, which may move the HW (completing
    parked produces) and propose ISR changes for the controller. Done once per request, not on
    the re-reads of a parked fetch, as Kafka does; an incremental request's implied partitions
    count with the offsets the session remembers."""
    for (topic, wanted), (_, answer) in zip(partitions, answers):
        hosted = broker.topics.partition(topic, wanted.partition)
        if hosted is None or answer.error_code != 0 or answer.diverging_epoch is not None:
            continue
        proposal = hosted.partition.update_follower_fetch_state(
            replica_id, wanted.fetch_offset, wanted.log_start_offset, now_ms)
        if proposal is not None:
            broker.replica_manager.propose(proposal)


def _partition(wanted: Any, error_code: int, offsets: _Offsets, records: Any,
               aborted: tuple[Any, ...] | None = None) -> Any:
    """A partition's answer; ``aborted`` is null unless the reader is read_committed."""
    if not isinstance(records, RecordsParts):  # None or b""
        return _answer_without_records(wanted.partition, error_code, offsets, records, aborted)
    return _P(partition_index=wanted.partition, error_code=error_code, high_watermark=offsets.high_watermark,
              last_stable_offset=offsets.last_stable_offset, log_start_offset=offsets.log_start_offset,
              aborted_transactions=aborted, records=records)


@functools.lru_cache(maxsize=ANSWERS_CACHED, typed=True)  # typed: an ErrorCode is not shared as an int
def _answer_without_records(partition: int, error_code: int, offsets: _Offsets, records: bytes | None,
                            aborted: tuple[Any, ...] | None) -> Any:
    """An answer with no records in it, shared as :func:`_aborted_entry` shares its entries: a
    parked fetch re-reads every partition it names at each append and HW move on any of them,
    and most of those answers are the ones it built last time."""
    return _P(partition_index=partition, error_code=error_code, high_watermark=offsets.high_watermark,
              last_stable_offset=offsets.last_stable_offset, log_start_offset=offsets.log_start_offset,
              aborted_transactions=aborted, records=records)


def on_partition_appended(broker: Broker, topic: str, partition: int) -> None:
    """Complete the parked fetches on this partition that now have ``min_bytes``."""
    broker.fetch_purgatory.check_and_complete((topic, partition))
