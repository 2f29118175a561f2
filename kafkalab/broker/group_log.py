"""``__consumer_offsets`` for the group coordinator, over this broker's log store.

Implements :class:`kafkalab.group.log.CoordinatorLog`. The topic is created on first use, as
Kafka creates its internal topics: ``offsets.topic.num.partitions`` partitions, compacted
(``cleanup.policy=compact``) and with ``offsets.topic.segment.bytes`` segments. Each append is
one v2 batch with CreateTime ``now_ms`` (Kafka's coordinator writes uncompressed batches unless
``offsets.topic.compression.codec`` says otherwise). The append goes through the partition, as
a produce does: it stamps the leader epoch and moves the high watermark, so on a lone broker an
append is committed when it returns; with followers, the same call will wait for ``acks=all``.

Worked example: the first commit of group ``my-group`` creates ``__consumer_offsets-0`` ..
``-49`` and writes one batch at offset 0 of partition 12.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from kafkalab.group.log import KeyValue
from kafkalab.group.partitioner import OFFSETS_TOPIC
from kafkalab.records import Record, build_batch, iter_batches

if TYPE_CHECKING:
    from kafkalab.broker.broker import Broker

ACKS_ALL = -1  # the coordinator writes with acks=all (Kafka's appendForGroup)
REPLAY_READ_BYTES = 5242880  # offsets.load.buffer.size


class BrokerCoordinatorLog:
    """The coordinator's view of ``__consumer_offsets``. Not thread-safe; owned by the broker."""

    def __init__(self, broker: Broker, partition_count: int, segment_bytes: int) -> None:
        self.broker = broker
        self.partition_count = partition_count
        self.segment_bytes = segment_bytes

    def append(self, partition: int, records: Sequence[KeyValue], now_ms: int) -> int:
        self._ensure_topic()
        hosted = self.broker.topics.partition(OFFSETS_TOPIC, partition)
        assert hosted is not None, f"{OFFSETS_TOPIC}-{partition} exists once the topic does"
        base_offset = hosted.log.log_end_offset
        batch = build_batch([Record(base_offset + index, now_ms, key, value)
                             for index, (key, value) in enumerate(records)], base_offset=base_offset)
        info = hosted.partition.append_records_to_leader(batch, ACKS_ALL, now_ms)
        return info.first_offset

    def replay(self) -> Iterator[tuple[int, bytes, bytes | None]]:
        if self.broker.topics.get(OFFSETS_TOPIC) is None:
            return
        for partition in range(self.partition_count):
            log = self.broker.topics.log(OFFSETS_TOPIC, partition)
            if log is None:
                continue
            offset = log.log_start_offset
            while offset < log.high_watermark:
                info = log.read(offset, REPLAY_READ_BYTES, max_offset=log.high_watermark)
                data = b"".join(s.read_bytes() for s in info.slices)
                if not data:
                    break
                for batch in iter_batches(data):
                    for record in batch.records:
                        if record.offset >= offset and record.key is not None:
                            yield partition, record.key, record.value
                    offset = batch.last_offset + 1

    def _ensure_topic(self) -> None:
        if self.broker.topics.get(OFFSETS_TOPIC) is not None:
            return
        # Stored as the topic's own configs, as Kafka's internal topic creation does, so
        # `kafkalab configs --describe` and the log cleaner both see cleanup.policy=compact.
        config_store = self.broker.config_store
        config_store.alter("topics", OFFSETS_TOPIC,
                           add={"cleanup.policy": "compact", "segment.bytes": str(self.segment_bytes)})
        self.broker.topics.create(OFFSETS_TOPIC, self.partition_count)
