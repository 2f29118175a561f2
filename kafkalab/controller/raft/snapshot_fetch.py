"""FetchSnapshot (KIP-630): how a replica that fell below the leader's log start catches up.

Theory of operation
-------------------
Once the metadata log is snapshotted and its prefix cleaned, a Fetch below the leader's log start
cannot be answered with records. The leader answers it with the id of its newest snapshot
(``SnapshotId {EndOffset, Epoch}`` in the FetchResponse); the fetcher then pulls that
``.checkpoint`` file in chunks with FetchSnapshot -- ``Position`` is a byte position within the
file, ``Size`` its total length -- loads the image from it, and fetches the log again from the
snapshot's end offset, with the snapshot's epoch as its last fetched epoch.

Worked example: the leader's log starts at 120 with snapshot ``(120, 3)``, 9,000 bytes. An
observer fetching at offset 0 is told ``SnapshotId(120, 3)``; it asks FetchSnapshot(120, 3,
position 0, max 4,096), then position 4,096, then 8,192 (808 bytes). Position + bytes = Size:
the image is replayed from the 9,000 bytes (offset 119), and the next Fetch is at 120, epoch 3.

:func:`answer_fetch_snapshot` is the leader's side; :class:`SnapshotDownload` the fetcher's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kafkalab.controller.raft.messages import NO_ERROR, FetchSnapshotRequest, FetchSnapshotResponse
from kafkalab.controller.raft.metadata_log import RaftLog
from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.metadata.image import MetadataImage
from kafkalab.metadata.snapshot import image_from_snapshot

SNAPSHOT_BYTES_MAX = 1 << 30  # a bound on one snapshot a fetcher will assemble in memory


def answer_fetch_snapshot(
    log: RaftLog, request: FetchSnapshotRequest, error: ErrorCode | None, leader_id: int, epoch: int,
    max_bytes: int,
) -> FetchSnapshotResponse:
    """Kafka's ``handleFetchSnapshotRequest`` for a leader (``error`` is the epoch check's):
    up to ``max_bytes`` from ``position``, SNAPSHOT_NOT_FOUND, or POSITION_OUT_OF_RANGE."""
    data = None if error is not None else log.snapshot_bytes(request.end_offset, request.epoch)
    if error is None and data is None:
        error = ErrorCode.SNAPSHOT_NOT_FOUND
    if data is not None and request.position > len(data):
        error = ErrorCode.POSITION_OUT_OF_RANGE
    if error is not None or data is None:
        return FetchSnapshotResponse(NO_ERROR, int(error or ErrorCode.UNKNOWN_SERVER_ERROR), leader_id, epoch)
    end = request.position + min(request.max_bytes, max_bytes)
    return FetchSnapshotResponse(NO_ERROR, NO_ERROR, leader_id, epoch, request.end_offset, request.epoch,
                                 len(data), request.position, data[request.position:end])


def needs_snapshot(log: RaftLog, fetch_offset: int, last_fetched_epoch: int, snapshot: tuple[int, int]) -> bool:
    """Kafka's ``validateOffsetAndEpoch``: what the fetcher needs -- or the epochs that would show
    where its log diverges from the leader's -- is gone below the log start; only the snapshot
    helps: an offset below the log start, the log start reached in another epoch than the
    snapshot's, or a last epoch older than every epoch the log still knows."""
    entries = log.epoch_cache.entries
    start = log.log_start_offset
    return (fetch_offset < start or (fetch_offset == start and last_fetched_epoch != snapshot[1])
            or (bool(entries) and fetch_offset > start and last_fetched_epoch < entries[0][0]))


class SnapshotFetchError(KafkaError):
    """A FetchSnapshot answer that does not continue the download."""


@dataclass
class SnapshotDownload:
    """One snapshot being fetched, chunk by chunk. Not thread-safe; owned by one fetcher."""

    end_offset: int
    epoch: int
    data: bytearray = field(default_factory=bytearray)
    size: int | None = None

    def add(self, response: FetchSnapshotResponse) -> bool:
        """Append one chunk; True when the whole snapshot is here."""
        if (response.end_offset, response.epoch) != (self.end_offset, self.epoch) or response.position != len(self.data):
            raise SnapshotFetchError(
                f"expected snapshot ({self.end_offset}, {self.epoch}) at position {len(self.data)}, got "
                f"({response.end_offset}, {response.epoch}) at {response.position}", error_code=ErrorCode.CORRUPT_MESSAGE)
        if not 0 <= response.size <= SNAPSHOT_BYTES_MAX or (self.size is not None and response.size != self.size):
            raise SnapshotFetchError(f"snapshot size {response.size} is not in [0, {SNAPSHOT_BYTES_MAX}] "
                                     f"or changed from {self.size}", error_code=ErrorCode.CORRUPT_MESSAGE)
        self.size = response.size
        if len(self.data) + len(response.unaligned_records) > response.size or (
                not response.unaligned_records and len(self.data) < response.size):
            raise SnapshotFetchError(f"a chunk of {len(response.unaligned_records)} bytes at {len(self.data)} "
                                     f"does not fit a snapshot of {response.size}", error_code=ErrorCode.CORRUPT_MESSAGE)
        self.data += response.unaligned_records
        return len(self.data) == self.size

    def image(self) -> MetadataImage:
        return image_from_snapshot(bytes(self.data), self.end_offset, f"fetched snapshot ({self.end_offset}, {self.epoch})")


__all__ = ["SNAPSHOT_BYTES_MAX", "SnapshotDownload", "SnapshotFetchError", "answer_fetch_snapshot", "needs_snapshot"]
