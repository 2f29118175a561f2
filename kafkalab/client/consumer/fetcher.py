"""The consumer's fetcher, sans I/O: one Fetch request per broker, records out of its answer.

Theory of operation
-------------------
Kafka's ``Fetcher`` groups the fetchable partitions by leader and sends each leader one Fetch
naming every partition it leads, at that partition's position. The request carries the
settings that shape the broker's answer:

* ``fetch.min.bytes`` / ``fetch.max.wait.ms``: the broker parks the request until that many
  bytes are ready or the wait is over (a long poll, so an idle consumer is not a busy loop).
* ``fetch.max.bytes`` caps the whole answer, ``max.partition.fetch.bytes`` each partition's
  share; both are soft: a first batch larger than the cap still comes whole, so a consumer
  never sticks behind one big batch (KIP-74).
* ``isolation.level``: read_committed answers stop at the last stable offset and list the
  aborted transactions in range.

A consumer keeps a fetch session with each broker (KIP-227,
:class:`~kafkalab.client.fetch_session.FetchSessionHandler`): after the first full Fetch it
names only the partitions whose position moved, and the broker answers only those with records
or a new high watermark.

:func:`partition_records` turns one partition's answer into records. The broker sends whole
batches, so the first may start before the position (a compressed batch is one unit) and the
last may be cut off by the byte cap; the former's early records and the latter are dropped.
Under read_committed it replays Kafka's ``CompletedFetch`` rule: walking batches in offset
order, an aborted transaction whose ``first_offset`` has been reached marks its producer id as
aborted; that producer's transactional batches are skipped until its ABORT marker clears the
mark. Control batches (the markers) are never handed to the application, but the position moves
past them, as past every skipped batch.

Magic 2 answers are decoded by :func:`kafkalab.records.columnar.decode_columns` (a compiled
kernel parses every varint; Python builds one tuple per record kept); answers holding older
magics take the reference decoder (:func:`kafkalab.records.iter_batches`). Both keep the same
batches by the same rule.

Worked example: position 5; the answer holds a batch 3-7 from producer 9 (transactional),
producer 9's ABORT marker at 8 and a plain batch 9-10, with aborted transaction
``(producer 9, first_offset 3)``. read_uncommitted returns offsets 5, 6, 7, 9, 10;
read_committed returns 9, 10. Either way the next fetch offset is 11.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from kafkalab.client.consumer.config import ConsumerConfig
from kafkalab.client.fetch_session import FetchRequestData, FetchSessionHandler
from kafkalab.errors import ErrorCode, InvalidRecordError, RecordTooLargeError
from kafkalab.protocol import SCHEMAS
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.fetch_metadata import SESSIONLESS
from kafkalab.records import iter_batches
from kafkalab.records.codec import decode_batch
from kafkalab.records.control import ControlRecordType, parse_control_record
from kafkalab.records.header import NO_PRODUCER_ID, BatchHeader
from kafkalab.records.model import Header
from kafkalab.storage.checkpoints import TopicPartition

if TYPE_CHECKING:
    from kafkalab.records.columnar import RecordColumns

CONSUMER_REPLICA_ID = -1  # a consumer's Fetch names no replica


class ConsumerRecord(NamedTuple):
    """One record as ``poll`` hands it to the application (Kafka's ``ConsumerRecord``).
    A named tuple: the fetcher builds one per record, and tuples are the cheapest to build."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()


@dataclass(frozen=True, slots=True)
class FetchedPartition:
    """What one partition's answer yields: the records at or after the position, the offset
    the next fetch starts at, and the broker's view (high watermark, last stable offset)."""

    topic_partition: TopicPartition
    records: tuple[ConsumerRecord, ...]
    next_offset: int
    high_watermark: int
    last_stable_offset: int


def fetch_request(config: ConsumerConfig, positions: Iterable[tuple[TopicPartition, int]],
                  session: FetchSessionHandler | None = None) -> Any:
    """One Fetch for every ``(partition, position)`` a broker leads: all of them without a
    ``session`` (sessionless), else what the session says (full, or incremental: only the
    partitions whose position moved, KIP-227)."""
    request = SCHEMAS[ApiKey.FETCH][0].cls
    by_topic = sorted(positions, key=lambda item: item[0][0])  # stable: partitions of a topic together
    wanted = [(tp, request.FetchTopic.FetchPartition(partition=tp[1], fetch_offset=offset,
                                                      partition_max_bytes=config.max_partition_fetch_bytes))
              for tp, offset in by_topic]
    if session is None:
        data = FetchRequestData(tuple(wanted), (), SESSIONLESS, tuple(tp for tp, _ in wanted))
    else:
        data = session.build(wanted)
    return request(replica_id=CONSUMER_REPLICA_ID, max_wait_ms=config.fetch_max_wait_ms,
                   min_bytes=config.fetch_min_bytes, max_bytes=config.fetch_max_bytes,
                   isolation_level=config.isolation, session_id=data.metadata.session_id,
                   session_epoch=data.metadata.epoch, rack_id=config.client_rack or "",
                   topics=data.topics(), forgotten_topics_data=data.forgotten_topics())


def partition_records(config: ConsumerConfig, tp: TopicPartition, position: int, data: Any) -> FetchedPartition:
    """Decode one partition's answer (error NONE) into records from ``position`` on."""
    assert data.error_code == ErrorCode.NONE, "errors are the caller's to handle"
    raw = data.records or b""
    aborted = AbortedTransactions(data.aborted_transactions or ()) if config.isolation == 1 else None
    # Imported here: numba's start-up is paid by the first fetch, not by every import of the
    # simulation, which imports this module.
    from kafkalab.records.columnar import decode_columns
    try:
        columns = decode_columns(raw, check_crc=config.check_crcs)
    except InvalidRecordError:  # magic 0/1 entries, which only the reference decoder reads
        records, next_offset, left_bytes = _records(config, tp, position, raw, aborted)
    else:
        records, next_offset, left_bytes = _records_from_columns(tp, position, raw, columns, aborted)
    if next_offset == position and left_bytes >= config.max_partition_fetch_bytes:
        raise RecordTooLargeError(f"{tp[0]}-{tp[1]} at offset {position}: a batch of more than "
                                  f"{config.max_partition_fetch_bytes} bytes came cut off; raise "
                                  f"max.partition.fetch.bytes")
    return FetchedPartition(tp, tuple(records), next_offset, int(data.high_watermark),
                            int(data.last_stable_offset))


def _records(config: ConsumerConfig, tp: TopicPartition, position: int, raw: bytes,
             aborted: AbortedTransactions | None) -> tuple[list[ConsumerRecord], int, int]:
    """The reference path: one :class:`RecordBatch` at a time (every magic)."""
    records: list[ConsumerRecord] = []
    next_offset = position
    walker = iter_batches(raw, check_crc=config.check_crcs)
    for batch in walker:
        if batch.last_offset < position:
            continue  # an earlier batch the broker sent whole
        next_offset = batch.last_offset + 1
        if _skip(batch.header, raw, aborted):
            continue
        records.extend(ConsumerRecord(tp[0], tp[1], r.offset, r.timestamp, r.key, r.value, r.headers)
                       for r in batch.records if r.offset >= position)
    return records, next_offset, walker.remaining_bytes


def _records_from_columns(tp: TopicPartition, position: int, raw: bytes, columns: RecordColumns,
                          aborted: AbortedTransactions | None) -> tuple[list[ConsumerRecord], int, int]:
    """The fast path for magic 2: every varint parsed by :func:`decode_columns`' compiled
    kernel, then one tuple per record kept. Same batches kept, same records out."""
    keep, next_offset = [], position
    for header in columns.batches:
        keep.append(header.last_offset >= position and not _skip(header, raw, aborted))
        next_offset = max(next_offset, header.last_offset + 1)
    data = columns.data.tobytes()
    topic, partition = tp
    rows = zip(columns.batch_index.tolist(), columns.offset.tolist(), columns.timestamp.tolist(),
               columns.key_start.tolist(), columns.key_length.tolist(), columns.value_start.tolist(),
               columns.value_length.tolist(), columns.headers_count.tolist())
    records = [ConsumerRecord(topic, partition, offset, timestamp,
                              None if k_len < 0 else data[k:k + k_len], None if v_len < 0 else data[v:v + v_len],
                              columns.headers_of(i) if h_count else ())
               for i, (b, offset, timestamp, k, k_len, v, v_len, h_count) in enumerate(rows)
               if keep[b] and offset >= position]
    end = columns.batches[-1].end_position if columns.batches else 0
    return records, next_offset, len(raw) - end


def _skip(header: BatchHeader, raw: bytes, aborted: AbortedTransactions | None) -> bool:
    """A batch not for the application: a control batch, or (read_committed) an aborted one."""
    if aborted is None:
        return header.is_control
    return aborted.skip(header, lambda: _control_type(raw, header))


def _control_type(raw: bytes, header: BatchHeader) -> ControlRecordType:
    records = decode_batch(raw, header).records
    return parse_control_record(records[0]).type if records else ControlRecordType.UNKNOWN


class AbortedTransactions:
    """Kafka's ``CompletedFetch`` read_committed rule, fed one batch at a time in offset order.
    Not thread-safe; lives for one partition's answer."""

    def __init__(self, aborted: Iterable[Any]) -> None:
        self._pending = sorted(((a.first_offset, a.producer_id) for a in aborted), reverse=True)
        self._aborted_producers: set[int] = set()

    def skip(self, batch: BatchHeader, control_type: Callable[[], ControlRecordType]) -> bool:
        """True when ``batch`` is not for the application: a marker, or an aborted one."""
        producer_id = batch.producer_id
        if producer_id == NO_PRODUCER_ID:
            return batch.is_control
        while self._pending and self._pending[-1][0] <= batch.last_offset:
            self._aborted_producers.add(self._pending.pop()[1])  # its transaction has begun
        if batch.is_control:
            if control_type() is ControlRecordType.ABORT:
                self._aborted_producers.discard(producer_id)  # its transaction is over
            return True
        return batch.is_transactional and producer_id in self._aborted_producers
