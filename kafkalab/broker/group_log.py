"""``__consumer_offsets`` and ``__transaction_state`` for the coordinators, over this broker's log store.

Implements :class:`kafkalab.group.log.CoordinatorLog` for one internal topic. The topic is
created on first use, as Kafka creates its internal topics: ``offsets.topic.num.partitions``
(``transaction.state.log.num.partitions``) partitions, compacted (``cleanup.policy=compact``)
and with ``offsets.topic.segment.bytes`` (``transaction.state.log.segment.bytes``) segments. Each append is
one v2 batch with CreateTime ``now_ms`` (Kafka's coordinator writes uncompressed batches unless
``offsets.topic.compression.codec`` says otherwise). The append goes through the partition, as a produce does: it stamps the leader epoch, and the
high watermark moves once every ISR replica has the batch. :meth:`BrokerCoordinatorLog.when_committed`
is the coordinator's acks=all: it calls back when the high watermark passes an offset (at once on
a lone broker), with NOT_COORDINATOR if this broker stops leading the partition first, and with
COORDINATOR_NOT_AVAILABLE after ``offsets.commit.timeout.ms``. The topic's replication factor is
``offsets.topic.replication.factor``
(:func:`~kafkalab.broker.coordinator_partitions.internal_topic_replication_factor`).

A transactional offset commit (TxnOffsetCommit) is appended as a *transactional* batch of its
producer (id, epoch, no sequence, origin COORDINATOR, as Kafka's ``GroupMetadataManager``
writes it), and the transaction's COMMIT or ABORT marker later lands in the same partition.
Replay therefore holds back each producer's transactional records until its marker: a COMMIT
releases them in order, an ABORT drops them, and records of a transaction still open at the
end of the log are handed over by :meth:`BrokerCoordinatorLog.open_transactions` (the group
coordinator keeps them pending until the marker the transaction coordinator re-sends).

Worked example: the first commit of group ``my-group`` creates ``__consumer_offsets-0`` ..
``-49`` and writes one batch at offset 0 of partition 12.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from kafkalab.broker.handlers.fetch import on_partition_appended
from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.group.log import KeyValue
from kafkalab.group.partitioner import OFFSETS_TOPIC
from kafkalab.records import Record, RecordBatch, iter_batches
from kafkalab.records.header import NO_TIMESTAMP, TRANSACTIONAL_FLAG_MASK
from kafkalab.records.v2 import encode_record, seal_v2_batch
from kafkalab.records.control import ControlRecordType, parse_control_record
from kafkalab.storage.producer_state import AppendOrigin
from kafkalab.timer import ScheduledTask, Scheduler

if TYPE_CHECKING:
    from kafkalab.broker.broker import Broker

ACKS_ALL = -1  # the coordinator writes with acks=all (Kafka's appendForGroup)
REPLAY_READ_BYTES = 5242880  # offsets.load.buffer.size


class BrokerCoordinatorLog:
    """The coordinator's view of ``__consumer_offsets``. Not thread-safe; owned by the broker."""

    def __init__(self, broker: Broker, partition_count: int, segment_bytes: int, replication_factor: int = 1,
                 commit_timeout_ms: int = 5000, topic: str = OFFSETS_TOPIC) -> None:
        self.broker = broker
        self.partition_count = partition_count
        self.segment_bytes = segment_bytes
        self.replication_factor = replication_factor
        self.commit_timeout_ms = commit_timeout_ms
        self.topic = topic
        self._open: dict[int, list[tuple[int, bytes, bytes | None]]] = {}
        self._scheduler = Scheduler(broker.timer)
        # per partition: (offset, callback, timeout task), waiting for the high watermark
        self._waiting: dict[int, list[tuple[int, Callable[[int], None], ScheduledTask]]] = {}

    def append(self, partition: int, records: Sequence[KeyValue], now_ms: int,
               producer: tuple[int, int] | None = None) -> int:
        """``producer`` (id, epoch): append as that producer's transactional batch."""
        self.ensure_topic()
        hosted = self.broker.topics.partition(self.topic, partition)
        if hosted is None or not hosted.partition.is_leader:  # only the leader coordinates its groups
            raise KafkaError(f"broker {self.broker.settings.node_id} does not lead {self.topic}-{partition}",
                             error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER)
        batch = coordinator_batch(records, hosted.log.log_end_offset, now_ms, producer)
        origin = AppendOrigin.CLIENT if producer is None else AppendOrigin.COORDINATOR
        try:
            info = hosted.partition.append_records_to_leader(batch, ACKS_ALL, now_ms, origin=origin)
        except KafkaError as error:
            self.broker.on_storage_error(error)  # a failed disk goes offline even if the caller copes
            raise
        on_partition_appended(self.broker, self.topic, partition)  # followers parked on it fetch now
        return info.first_offset

    def when_committed(self, partition: int, offset: int, callback: Callable[[int], None]) -> None:
        hosted = self.broker.topics.partition(self.topic, partition)
        if hosted is not None and hosted.log.high_watermark > offset:
            callback(ErrorCode.NONE)
            return
        waiting = self._waiting.setdefault(partition, [])
        entry: list[tuple[int, Callable[[int], None], ScheduledTask]] = []

        def timed_out() -> None:
            if entry and entry[0] in waiting:
                waiting.remove(entry[0])
                callback(ErrorCode.COORDINATOR_NOT_AVAILABLE)

        entry.append((offset, callback, self._scheduler.schedule(self.commit_timeout_ms, timed_out)))
        waiting.append(entry[0])

    def high_watermark_moved(self, partition: int) -> None:
        """Answer the waits the partition's new high watermark satisfies, in offset order."""
        hosted = self.broker.topics.partition(self.topic, partition)
        waiting = self._waiting.get(partition)
        if hosted is None or not waiting:
            return
        done = [w for w in waiting if w[0] < hosted.log.high_watermark]
        self._waiting[partition] = [w for w in waiting if w[0] >= hosted.log.high_watermark]
        for _offset, callback, task in done:
            task.cancel()
            callback(ErrorCode.NONE)

    def abandon(self, partition: int) -> None:
        """This broker no longer leads ``partition``: its waits fail with NOT_COORDINATOR."""
        for _offset, callback, task in self._waiting.pop(partition, []):
            task.cancel()
            callback(ErrorCode.NOT_COORDINATOR)

    def replay(self) -> Iterator[tuple[int, bytes, bytes | None]]:
        self._open = {}
        if self.broker.topics.get(self.topic) is None:
            return
        for partition in range(self.partition_count):
            yield from self._replay_partition(partition)

    def replay_partition(self, partition: int) -> Iterator[tuple[int, bytes, bytes | None]]:
        """Every record of one partition up to its log end (a new leader's whole log becomes
        committed as its followers catch up, so the coordinator loads all of it), transactional
        records held back until their marker; those still open go to :meth:`open_transactions`,
        which then holds this partition's only -- an earlier load's may have been decided since."""
        self._open = {}
        yield from self._replay_partition(partition)

    def _replay_partition(self, partition: int) -> Iterator[tuple[int, bytes, bytes | None]]:
        log = self.broker.topics.log(self.topic, partition)
        if log is None:
            return
        open_transactions: dict[int, list[Record]] = {}  # producer id -> records held back
        offset = log.log_start_offset
        while offset < log.log_end_offset:
            info = log.read(offset, REPLAY_READ_BYTES, max_offset=log.log_end_offset)
            data = b"".join(s.read_bytes() for s in info.slices)
            if not data:
                break
            for batch in iter_batches(data):
                for record in _committed(batch, offset, open_transactions):
                    yield partition, record.key or b"", record.value
                offset = batch.last_offset + 1
        for producer_id, held in open_transactions.items():
            self._open.setdefault(producer_id, []).extend((partition, r.key or b"", r.value) for r in held)

    def open_transactions(self) -> dict[int, list[tuple[int, bytes, bytes | None]]]:
        return self._open

    def ensure_topic(self) -> None:
        """Create the topic if it does not exist yet."""
        if self.broker.topics.get(self.topic) is not None:
            return
        # Created with its own topic configs, as Kafka's internal topic creation does, so
        # `kafkalab configs --describe` and the log cleaner both see cleanup.policy=compact.
        self.broker.topics.create(self.topic, self.partition_count, self.replication_factor,
                                  {"cleanup.policy": "compact", "segment.bytes": str(self.segment_bytes)})


def coordinator_batch(records: Sequence[KeyValue], base_offset: int, now_ms: int,
                      producer: tuple[int, int] | None = None) -> bytes:
    """One uncompressed v2 batch of ``records``, every one stamped ``now_ms`` (CreateTime); the
    producer's transactional batch when ``producer`` (id, epoch) is given. The bytes
    ``build_batch`` gives for the same records, without a ``Record`` object per record: each
    record is encoded straight from its key and value, as a producer appends them."""
    producer_id, producer_epoch = producer if producer is not None else (-1, -1)
    timestamp_ms = now_ms if records else NO_TIMESTAMP
    body = b"".join(encode_record(index, 0, key, value) for index, (key, value) in enumerate(records))
    return seal_v2_batch(body, len(records), base_offset=base_offset, last_offset_delta=max(len(records) - 1, 0),
                         base_timestamp=timestamp_ms, max_timestamp=timestamp_ms,
                         attributes=0 if producer is None else TRANSACTIONAL_FLAG_MASK,
                         producer_id=producer_id, producer_epoch=producer_epoch)


def _committed(batch: RecordBatch, from_offset: int, open_transactions: dict[int, list[Record]]) -> list[Record]:
    """The records of ``batch`` a replay applies now: a plain batch's own, a transactional
    batch's none (held back in ``open_transactions``), a marker's the records it commits."""
    producer_id = batch.header.producer_id
    if batch.is_control:
        held = open_transactions.pop(producer_id, [])
        markers = [parse_control_record(r) for r in batch.records]
        return held if any(m.type is ControlRecordType.COMMIT for m in markers) else []
    records = [r for r in batch.records if r.offset >= from_offset and r.key is not None]
    if batch.is_transactional:
        open_transactions.setdefault(producer_id, []).extend(records)
        return []
    return records
