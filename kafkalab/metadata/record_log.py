"""Where the controller's records go, and how a node reads them back at start-up.

Theory of operation
-------------------
The controller encodes each decision as metadata records (:mod:`kafkalab.metadata.records`)
and appends them as one v2 batch of keyless records, as Kafka's ``QuorumController`` hands a
decision's records to the Raft client in one batch, so they commit -- and replay -- atomically.
A :class:`RecordLog` takes the encoded values and says at which offset the last one landed.

* :class:`MemoryRecordLog` keeps the values in a list (the simulation and tests: the bytes are
  still Kafka's, so a test can decode them or dump them);
* :class:`StorageRecordLog` appends to ``__cluster_metadata-0``, a real log directory in the
  first data directory (Kafka's default ``metadata.log.dir``). A single node is the only voter
  of its quorum, so a flushed append is committed at once and the high watermark follows the
  log end offset.

At start-up :func:`read_log_records` walks the log from an offset (the newest snapshot's end,
or the log start) and yields ``(offset, record)`` for every data record, skipping the KRaft
control batches (LEADER_CHANGE and the like) that carry no metadata.

Worked example: a topic of 3 partitions created in an empty log is one batch of four records,
TopicRecord at offset 1 and PartitionRecords at 2, 3, 4 (offset 0 holds the bootstrap
FeatureLevelRecord); ``append`` returns 4, and the published image has offset 4.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from kafkalab.metadata.delta import MetadataDelta
from kafkalab.metadata.image import MetadataImage
from kafkalab.metadata.records import decode_record
from kafkalab.metadata.snapshot import latest_snapshot, read_snapshot
from kafkalab.records.codec import iter_batches
from kafkalab.records.model import Record
from kafkalab.records.v2 import build_v2_batch
from kafkalab.storage.log import Log
from kafkalab.storage.log_manager import KRAFT_METADATA_TOPIC

SOLE_VOTER_EPOCH = 1  # the Raft epoch of a node that is its own quorum: elected once, by itself
READ_CHUNK_BYTES = 8 * 1024 * 1024  # KafkaRaftClient.MAX_FETCH_SIZE_BYTES: one read at a time


class RecordLog(Protocol):
    """An append-only sink for encoded metadata records (the controller's view of its log)."""

    def append(self, values: Sequence[bytes], now_ms: int) -> int:
        """Append ``values`` as one batch; returns the offset of the last one."""
        ...


class MemoryRecordLog:
    """Metadata record values in memory, offsets from 0. Not thread-safe; owned by a controller."""

    def __init__(self) -> None:
        self.values: list[bytes] = []
        self.batches: list[tuple[int, int]] = []  # (last offset, append time) of each batch, in order

    def append(self, values: Sequence[bytes], now_ms: int) -> int:
        self.values.extend(values)
        self.batches.append((len(self.values) - 1, now_ms))
        return len(self.values) - 1

    def records(self) -> list[Any]:
        return [decode_record(value) for value in self.values]


class StorageRecordLog:
    """Metadata records in a ``__cluster_metadata-0`` log directory. Not thread-safe; owned by a
    single-node controller, which is the whole quorum."""

    def __init__(self, log: Log) -> None:
        self.log = log

    def append(self, values: Sequence[bytes], now_ms: int) -> int:
        batch = build_v2_batch([Record(i, now_ms, None, value) for i, value in enumerate(values)])
        self.log.append_as_leader(batch, SOLE_VOTER_EPOCH)
        self.log.flush()
        self.log.update_high_watermark(self.log.log_end_offset)
        return self.log.log_end_offset - 1


def read_log_records(log: Log, from_offset: int = 0) -> Iterator[tuple[int, Any]]:
    """``(offset, record)`` for each metadata record in ``log`` at or after ``from_offset``."""
    offset = max(from_offset, log.log_start_offset)
    while offset < log.log_end_offset:
        chunk = log.read(offset, READ_CHUNK_BYTES).read_bytes()
        if not chunk:
            break
        last = offset - 1
        for batch in iter_batches(chunk):
            last = batch.last_offset
            if batch.header.is_control:
                continue
            for record in batch.records:
                if record.offset >= offset and record.value is not None:
                    yield record.offset, decode_record(record.value)
        if last < offset:  # no whole batch fitted: a bug guard, the read returns at least one
            raise AssertionError(f"no progress reading {log.directory.name} at offset {offset}")
        offset = last + 1


def replay_metadata_log(log: Log) -> MetadataImage:
    """The image of the newest snapshot plus every record of ``log`` after it: what a node
    (a lone broker, a controller process) rebuilds at start-up."""
    image, end_offset = MetadataImage(), 0
    newest = latest_snapshot(log.directory)
    if newest is not None:
        image = read_snapshot(newest)
        end_offset = image.offset + 1
    delta = MetadataDelta(image)
    for offset, record in read_log_records(log, end_offset):
        delta.replay(record, offset)
    return delta.apply()


def replay_batches(image: MetadataImage, data: bytes) -> MetadataImage:
    """``image`` with every whole batch of ``data`` replayed (data records decoded; control
    batches carry no metadata but still advance the image's offset, as Kafka's
    ``MetadataLoader`` counts them). A cut-short trailing batch is left for the next read."""
    delta = MetadataDelta(image)
    for batch in iter_batches(data):
        if not batch.header.is_control:
            for record in batch.records:
                if record.value is not None:
                    delta.replay(decode_record(record.value))
        delta.mark_offset(batch.last_offset)
    return delta.apply()


__all__ = [
    "KRAFT_METADATA_TOPIC", "MemoryRecordLog", "RecordLog", "SOLE_VOTER_EPOCH",
    "StorageRecordLog", "read_log_records", "replay_batches", "replay_metadata_log",
]
