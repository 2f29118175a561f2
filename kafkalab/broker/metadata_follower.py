"""A broker learning the cluster by fetching ``__cluster_metadata`` as a KRaft observer.

Theory of operation
-------------------
A KRaft broker does not receive the controller's image: it fetches the metadata log from the
active controller, as a follower fetches a partition, and replays the records into its own
:class:`~kafkalab.metadata.image.MetadataImage` through a
:class:`~kafkalab.metadata.delta.MetadataDelta` (Kafka's ``MetadataLoader``). Each Fetch names
``__cluster_metadata`` partition 0, the next offset the broker needs and the epoch of the last
batch it has (KIP-595), and waits up to ``max_wait_ms`` (500 ms, Kafka's
``KafkaRaftClient.MAX_FETCH_WAIT_MS``) for new records. Only records below the quorum's high
watermark are replayed: those are committed.

The follower is sans-I/O: :meth:`MetadataFollower.next_fetch` returns the Fetch body to send
(one in flight at a time), :meth:`MetadataFollower.on_fetch_response` replays what came back and
returns the new image (None when nothing new was committed).

Worked example: a new broker fetches at offset 0 and gets two batches ending at offsets 0 and 4
(bootstrap features; a topic of three partitions), high watermark 5: it replays five records,
its image has offset 4 and the topic, and its next fetch asks for offset 5, last fetched epoch 1.
"""

from __future__ import annotations

from typing import Any

from kafkalab.controller.raft.api import FETCH_MAX_BYTES, FETCH_MAX_WAIT_MS
from kafkalab.errors import ErrorCode
from kafkalab.metadata.delta import MetadataDelta
from kafkalab.metadata.image import MetadataImage
from kafkalab.metadata.record_log import KRAFT_METADATA_TOPIC
from kafkalab.metadata.records import decode_record
from kafkalab.protocol.messages.fetch import FETCH_REQUEST
from kafkalab.records.codec import iter_batches

METADATA_FETCH_VERSION = 12  # the newest Fetch kafkalab speaks; the KRaft form (cluster id, last fetched epoch)

_REQ = FETCH_REQUEST.cls


class MetadataFollower:
    """One broker's replay of the metadata log. Not thread-safe; owned by the broker."""

    def __init__(self, broker_id: int, cluster_id: str | None, image: MetadataImage | None = None) -> None:
        self.broker_id = broker_id
        self.cluster_id = cluster_id
        self.image = MetadataImage() if image is None else image
        self.last_fetched_epoch = -1
        self.in_flight = False

    @property
    def next_offset(self) -> int:
        return self.image.offset + 1

    def next_fetch(self) -> Any | None:
        """The Fetch body for the next records, or None while one is in flight."""
        if self.in_flight:
            return None
        self.in_flight = True
        partition = _REQ.FetchTopic.FetchPartition(
            partition=0, current_leader_epoch=-1, fetch_offset=self.next_offset,
            last_fetched_epoch=self.last_fetched_epoch, log_start_offset=-1, partition_max_bytes=FETCH_MAX_BYTES)
        return _REQ(cluster_id=self.cluster_id, replica_id=self.broker_id, max_wait_ms=FETCH_MAX_WAIT_MS,
                    min_bytes=1, max_bytes=FETCH_MAX_BYTES, isolation_level=0,
                    topics=(_REQ.FetchTopic(topic=KRAFT_METADATA_TOPIC, partitions=(partition,)),))

    def on_failure(self) -> None:
        self.in_flight = False

    def on_fetch_response(self, response: Any) -> MetadataImage | None:
        """Replay the committed records of a Fetch answer; the new image, or None."""
        self.in_flight = False
        if response.error_code != ErrorCode.NONE or len(response.responses) != 1:
            return None
        partitions = response.responses[0].partitions
        if len(partitions) != 1 or partitions[0].error_code != ErrorCode.NONE or not partitions[0].records:
            return None
        data = partitions[0]
        delta = MetadataDelta(self.image)
        replayed = False
        for batch in iter_batches(bytes(data.records)):
            if batch.last_offset < self.next_offset or batch.last_offset >= data.high_watermark:
                continue  # already replayed, or not yet committed
            if not batch.header.is_control:
                for record in batch.records:
                    if record.value is not None:
                        delta.replay(decode_record(record.value), record.offset)
            delta.mark_offset(batch.last_offset)
            self.last_fetched_epoch = batch.header.partition_leader_epoch
            replayed = True
        if not replayed:
            return None
        self.image = delta.apply()
        return self.image


__all__ = ["METADATA_FETCH_VERSION", "MetadataFollower"]
