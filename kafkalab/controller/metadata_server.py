"""Serving ``__cluster_metadata`` to brokers, which fetch it as KRaft observers.

Theory of operation
-------------------
In KRaft a broker learns the cluster by *fetching* the metadata log from the active controller,
as a follower fetches a partition: Fetch for ``__cluster_metadata`` partition 0 with its next
offset and the epoch of the last batch it has (KIP-595's ``last_fetched_epoch``); it replays
the records into its own image. The controller answers with whole v2 batches from that offset,
each one decision of the controller (the records of one decision commit together), up to the
high watermark. Brokers never vote: they are *observers* of the quorum.

:class:`MetadataLogServer` is the reading side of that exchange over the records of a
single controller, whose high watermark is its log end (the controller is the whole quorum):
either a :class:`~kafkalab.metadata.record_log.MemoryRecordLog` (the simulation), whose batches
are encoded on first read and cached, or a :class:`~kafkalab.metadata.record_log.StorageRecordLog`
(a controller process), whose ``__cluster_metadata-0`` segments already hold the batches, read
as a partition's are. A Raft quorum can serve the same fetches from its replicated log by
providing :meth:`read` and :attr:`end_offset`.

Worked example: a log of 5 records written as batches ending at offsets 0 and 4 (the bootstrap
FeatureLevelRecord, then a topic of 3 partitions: TopicRecord and 3 PartitionRecords). A
fetch at offset 1 gets the second batch, base offset 1, 4 records, leader epoch 1; a fetch at
offset 5 gets nothing yet and is parked until the next decision or its ``max_wait_ms``.
"""

from __future__ import annotations

import bisect

from kafkalab.controller.raft.api import FETCH_MAX_BYTES
from kafkalab.metadata.record_log import SOLE_VOTER_EPOCH, MemoryRecordLog, StorageRecordLog
from kafkalab.records.model import Record
from kafkalab.records.v2 import build_v2_batch

BATCH_CACHE_MAX = 4_096  # encoded batches kept for repeated fetches (each broker reads each one)


class MetadataLogServer:
    """Reads whole batches of one controller's metadata log. Not thread-safe; owned by the
    controller node."""

    def __init__(self, log: MemoryRecordLog | StorageRecordLog, leader_epoch: int = SOLE_VOTER_EPOCH) -> None:
        self.log = log
        self.leader_epoch = leader_epoch
        self._encoded: dict[int, bytes] = {}  # batch index -> its v2 bytes

    @property
    def end_offset(self) -> int:
        """The log end offset, which is also the high watermark of a one-voter quorum."""
        if isinstance(self.log, StorageRecordLog):
            return self.log.log.log_end_offset
        return len(self.log.values)

    def read(self, fetch_offset: int, max_bytes: int = FETCH_MAX_BYTES) -> bytes:
        """Whole batches from the one holding ``fetch_offset`` on, at least one, at most
        ``max_bytes`` beyond the first; b"" at the log end. Offsets past the end raise."""
        if not 0 <= fetch_offset <= self.end_offset:
            raise ValueError(f"metadata fetch at offset {fetch_offset}, log is [0, {self.end_offset})")
        if isinstance(self.log, StorageRecordLog):  # whole batches, at least one, as a Fetch reads
            return self.log.log.read(fetch_offset, max_bytes).read_bytes() if fetch_offset < self.end_offset else b""
        log = self.log
        last_offsets = [last for last, _ in log.batches]
        index = bisect.bisect_left(last_offsets, fetch_offset)
        parts: list[bytes] = []
        size_bytes = 0
        while index < len(log.batches) and (not parts or size_bytes < max_bytes):
            batch = self._batch(log, index)
            parts.append(batch)
            size_bytes += len(batch)
            index += 1
        return b"".join(parts)

    def _batch(self, log: MemoryRecordLog, index: int) -> bytes:
        encoded = self._encoded.get(index)
        if encoded is None:
            last, now_ms = log.batches[index]
            first = log.batches[index - 1][0] + 1 if index else 0
            records = [Record(offset, now_ms, None, log.values[offset]) for offset in range(first, last + 1)]
            encoded = build_v2_batch(records, partition_leader_epoch=self.leader_epoch)
            if len(self._encoded) >= BATCH_CACHE_MAX:
                self._encoded.pop(next(iter(self._encoded)))
            self._encoded[index] = encoded
        return encoded


__all__ = ["MetadataLogServer"]
