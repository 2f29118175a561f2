"""A broker reading the metadata log as a KRaft observer: Fetch from the quorum leader, replay.

Theory of operation
-------------------
In KRaft a broker is not a voter: it is an *observer* of ``__cluster_metadata``. It sends the
quorum leader the same Fetch a follower sends (its own id as ReplicaId), but its position never
counts toward the high watermark (:class:`~kafkalab.controller.raft.leader.LeaderState` ignores
non-voters). kafkalab's leader sends an observer committed batches only -- those below the high
watermark -- so an observer never holds a record that might be truncated, and replays every
batch it receives at once. (Kafka's leader sends observers uncommitted batches too, and its
brokers replay only up to the high watermark; the image a broker sees is the same.)

:class:`MetadataObserver` is sans-I/O. The runtime calls :meth:`MetadataObserver.poll` on its
tick and :meth:`MetadataObserver.handle` with each Fetch answer; both return the messages to
send. Finding the leader: with no leader known, the observer asks the voters in turn (a
voter that is not the leader answers NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH and names the
leader and epoch it knows). A fetch unanswered for ``request_timeout_ms`` forgets the leader.

Worked example: voters 1, 2, 3, leader 2 of epoch 4 with high watermark 7. Broker 101 starts
knowing nothing and sends Fetch(offset 0, epoch 0) to voter 1, which answers
FENCED_LEADER_EPOCH, leader 2, epoch 4. The broker fetches from 2 at offset 0 and gets the
batches at offsets 0..6; its image has offset 6, and its next fetch, at offset 7, waits on the
leader until more commits.

How a broker plugs in: create one per broker with the controller voters' ids, subscribe the
broker's metadata listener with :meth:`MetadataObserver.subscribe`, route messages addressed to
the broker's id whose type is :class:`FetchResponse` into :meth:`handle`, and send what
``poll``/``handle`` return to the voters (``Send.dst`` is a voter id).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kafkalab.controller.raft.messages import (
    NO_ERROR, FetchRequest, FetchResponse, FetchSnapshotRequest, FetchSnapshotResponse, Send,
)
from kafkalab.controller.raft.api import FETCH_MAX_BYTES, FETCH_MAX_WAIT_MS, RaftConfig
from kafkalab.controller.raft.snapshot_fetch import SnapshotDownload
from kafkalab.controller.raft.state import NO_ID
from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.metadata.image import MetadataImage
from kafkalab.metadata.record_log import replay_batches
from kafkalab.records.codec import iter_batches

ImageListener = Callable[[MetadataImage], None]


class MetadataObserverError(KafkaError):
    """The leader answered in a way an observer of committed data cannot act on."""


class MetadataObserver:
    """Follows the metadata log for one broker. Not thread-safe; owned by one broker."""

    def __init__(
        self, node_id: int, voters: Sequence[int], now_ms: int, *, image: MetadataImage | None = None,
        config: RaftConfig | None = None, cluster_id: str | None = None, snapshot_chunk_bytes: int = FETCH_MAX_BYTES,
    ) -> None:
        if not voters:
            raise ValueError("an observer needs at least one voter to ask")
        self.node_id = node_id
        self.voters = tuple(sorted(set(voters)))
        self.config = config or RaftConfig()
        self.cluster_id = cluster_id
        self.image = MetadataImage() if image is None else image
        self.fetch_offset = self.image.offset + 1
        self.last_fetched_epoch = 0
        self.leader_id = NO_ID
        self.leader_epoch = 0
        self.high_watermark = 0
        self._next_voter = 0  # which voter to ask next while no leader is known
        self._correlation = 0
        self._in_flight: int | None = None
        self._sent_ms = now_ms
        self._retry_ms = now_ms
        self._listeners: list[ImageListener] = []
        self.snapshot_chunk_bytes = snapshot_chunk_bytes
        self._download: SnapshotDownload | None = None  # a snapshot being fetched (KIP-630)

    def subscribe(self, listener: ImageListener) -> Callable[[], None]:
        """Receive every image this observer replays from now on."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def poll(self, now_ms: int) -> list[Send]:
        """Send a fetch when none is outstanding; give up on one unanswered for too long."""
        if self._in_flight is not None and now_ms - self._sent_ms >= self.config.request_timeout_ms:
            self._in_flight, self.leader_id, self._download = None, NO_ID, None  # that voter may be gone
        if self._in_flight is None and now_ms >= self._retry_ms:
            return [self._fetch(now_ms)]
        return []

    def handle(self, src: int, correlation_id: int, response: FetchResponse | FetchSnapshotResponse,
               now_ms: int) -> list[Send]:
        """Apply one Fetch or FetchSnapshot answer; returns the next request to send, if any."""
        if correlation_id != self._in_flight:
            return []  # a late or duplicated answer
        self._in_flight = None
        known = (self.leader_epoch, self.leader_id)
        self._learn_leader(response)
        if (response.partition_error_code or response.error_code) != NO_ERROR:
            self._download = None  # a snapshot download starts over from the next Fetch's answer
            if (self.leader_epoch, self.leader_id) != known and self.leader_id != NO_ID:
                return [self._fetch(now_ms)]  # told of a newer leader: go there at once
            self.leader_id = NO_ID  # no better hint: ask the next voter, after a pause
            self._retry_ms = now_ms + self.config.retry_backoff_ms
            return []
        if isinstance(response, FetchSnapshotResponse):
            return [self._snapshot_chunk(response, now_ms)]
        if response.snapshot_end_offset >= 0:  # below the leader's log start: fetch its snapshot
            self._download = SnapshotDownload(response.snapshot_end_offset, response.snapshot_epoch)
            return [self._fetch_snapshot(now_ms)]
        if response.diverging_epoch >= 0 or response.diverging_end_offset >= 0:
            raise MetadataObserverError(
                f"observer {self.node_id} holds committed metadata up to offset {self.fetch_offset}, yet "
                f"leader {src} reports divergence at epoch {response.diverging_epoch}",
                error_code=ErrorCode.UNKNOWN_SERVER_ERROR)
        self.high_watermark = max(self.high_watermark, response.high_watermark)
        if response.records:
            self._replay(response.records)
        return [self._fetch(now_ms)]

    def _snapshot_chunk(self, response: FetchSnapshotResponse, now_ms: int) -> Send:
        download = self._download
        if download is None:
            return self._fetch(now_ms)  # an answer to a download given up
        if not download.add(response):
            return self._fetch_snapshot(now_ms)
        self._download = None
        self.image = download.image()
        self.fetch_offset, self.last_fetched_epoch = download.end_offset, download.epoch
        for listener in self._listeners:
            listener(self.image)
        return self._fetch(now_ms)

    def _fetch_snapshot(self, now_ms: int) -> Send:
        download = self._download
        assert download is not None and self.leader_id != NO_ID
        self._correlation += 1
        self._in_flight, self._sent_ms = self._correlation, now_ms
        request = FetchSnapshotRequest(self.cluster_id, self.node_id, self.snapshot_chunk_bytes, self.leader_epoch,
                                       download.end_offset, download.epoch, len(download.data))
        return Send(self.leader_id, self._correlation, request)

    def _learn_leader(self, response: FetchResponse | FetchSnapshotResponse) -> None:
        if response.leader_epoch > self.leader_epoch or (
                response.leader_epoch == self.leader_epoch and response.leader_id != NO_ID):
            self.leader_epoch, self.leader_id = response.leader_epoch, response.leader_id

    def _replay(self, data: bytes) -> None:
        for batch in iter_batches(data):
            if batch.header.base_offset != self.fetch_offset:
                raise MetadataObserverError(
                    f"observer {self.node_id} expected a batch at offset {self.fetch_offset}, "
                    f"got one at {batch.header.base_offset}", error_code=ErrorCode.CORRUPT_MESSAGE)
            self.fetch_offset = batch.last_offset + 1
            self.last_fetched_epoch = batch.header.partition_leader_epoch
        self.image = replay_batches(self.image, data)
        for listener in self._listeners:
            listener(self.image)

    def _fetch(self, now_ms: int) -> Send:
        if self.leader_id == NO_ID:
            target = self.voters[self._next_voter % len(self.voters)]
            self._next_voter += 1
        else:
            target = self.leader_id
        self._correlation += 1
        self._in_flight, self._sent_ms = self._correlation, now_ms
        request = FetchRequest(self.cluster_id, self.node_id, FETCH_MAX_WAIT_MS, self.leader_epoch,
                               self.fetch_offset, self.last_fetched_epoch)
        return Send(target, self._correlation, request)


__all__ = ["MetadataObserver", "MetadataObserverError"]
