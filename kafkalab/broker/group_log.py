"""``__consumer_offsets`` and ``__transaction_state`` for the coordinators, over this broker's log store.

Implements :class:`kafkalab.group.log.CoordinatorLog` for one internal topic. The topic is
created on first use, as Kafka creates its internal topics: ``offsets.topic.num.partitions``
(``transaction.state.log.num.partitions``) partitions, compacted (``cleanup.policy=compact``)
and with ``offsets.topic.segment.bytes`` (``transaction.state.log.segment.bytes``) segments. Each append is
one v2 batch with CreateTime ``now_ms`` (Kafka's coordinator writes uncompressed batches unless
``offsets.topic.compression.codec`` says otherwise). The append goes through the partition, as
a produce does: it stamps the leader epoch and moves the high watermark, so on a lone broker an
append is committed when it returns; with followers, the same call will wait for ``acks=all``.

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

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.group.log import KeyValue
from kafkalab.group.partitioner import OFFSETS_TOPIC
from kafkalab.records import Record, RecordBatch, build_batch, iter_batches
from kafkalab.records.control import ControlRecordType, parse_control_record
from kafkalab.storage.producer_state import AppendOrigin

if TYPE_CHECKING:
    from kafkalab.broker.broker import Broker

ACKS_ALL = -1  # the coordinator writes with acks=all (Kafka's appendForGroup)
REPLAY_READ_BYTES = 5242880  # offsets.load.buffer.size


class BrokerCoordinatorLog:
    """The coordinator's view of ``__consumer_offsets``. Not thread-safe; owned by the broker."""

    def __init__(self, broker: Broker, partition_count: int, segment_bytes: int, topic: str = OFFSETS_TOPIC) -> None:
        self.broker = broker
        self.partition_count = partition_count
        self.segment_bytes = segment_bytes
        self.topic = topic
        self._open: dict[int, list[tuple[int, bytes, bytes | None]]] = {}

    def append(self, partition: int, records: Sequence[KeyValue], now_ms: int,
               producer: tuple[int, int] | None = None) -> int:
        """``producer`` (id, epoch): append as that producer's transactional batch."""
        self.ensure_topic()
        hosted = self.broker.topics.partition(self.topic, partition)
        if hosted is None:  # in a cluster, another broker may hold the partition
            raise KafkaError(f"{self.topic}-{partition} has no replica on broker {self.broker.settings.node_id}",
                             error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER)
        base_offset = hosted.log.log_end_offset
        producer_id, producer_epoch = producer if producer is not None else (-1, -1)
        batch = build_batch([Record(base_offset + index, now_ms, key, value)
                             for index, (key, value) in enumerate(records)], base_offset=base_offset,
                            producer_id=producer_id, producer_epoch=producer_epoch,
                            is_transactional=producer is not None)
        origin = AppendOrigin.CLIENT if producer is None else AppendOrigin.COORDINATOR
        try:
            info = hosted.partition.append_records_to_leader(batch, ACKS_ALL, now_ms, origin=origin)
        except KafkaError as error:
            self.broker.on_storage_error(error)  # a failed disk goes offline even if the caller copes
            raise
        return info.first_offset

    def replay(self) -> Iterator[tuple[int, bytes, bytes | None]]:
        self._open = {}
        if self.broker.topics.get(self.topic) is None:
            return
        for partition in range(self.partition_count):
            log = self.broker.topics.log(self.topic, partition)
            if log is None:
                continue
            open_transactions: dict[int, list[Record]] = {}  # producer id -> records held back
            offset = log.log_start_offset
            while offset < log.high_watermark:
                info = log.read(offset, REPLAY_READ_BYTES, max_offset=log.high_watermark)
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
        # Stored as the topic's own configs, as Kafka's internal topic creation does, so
        # `kafkalab configs --describe` and the log cleaner both see cleanup.policy=compact.
        config_store = self.broker.config_store
        config_store.alter("topics", self.topic,
                           add={"cleanup.policy": "compact", "segment.bytes": str(self.segment_bytes)})
        self.broker.topics.create(self.topic, self.partition_count)


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
