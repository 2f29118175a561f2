"""The replicated log under a Raft node: ``__cluster_metadata-0``, a real Kafka log directory.

Theory of operation
-------------------
Raft needs few things from its log (Kafka's ``ReplicatedLog`` interface): the end offset and the
epoch of the last batch, appends as leader (offsets and the leader epoch stamped here) and as
follower (offsets already assigned), reads from an offset, truncation after divergence, the
leader-epoch cache that answers "where did epoch E end?", and a high watermark. The
:class:`RaftLog` protocol names exactly those; :class:`StorageRaftLog` provides them over
kafkalab's :class:`~kafkalab.storage.log.Log`, so the metadata log on disk is the same segments,
indexes and ``leader-epoch-checkpoint`` a Kafka controller writes::

    metadata/__cluster_metadata-0/
      00000000000000000000.log  .index  .timeindex
      leader-epoch-checkpoint   quorum-state

Unlike a single-broker partition, the high watermark does not follow the log end offset: the
Raft node moves it (commit rule in :mod:`kafkalab.controller.raft.leader`). Every append is
flushed before the node reports its new end offset, as ``KafkaRaftClient`` flushes before a
leader counts its own offset or a follower fetches again: a record a majority acknowledged is
on a majority's disks.

Worked example: a new leader of epoch 3 with LEO 5 writes its LEADER_CHANGE batch at offset 5;
the epoch cache gains ``(3, 5)``; ``end_offset_for(2)`` now answers ``(2, 5)``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from kafkalab.clock import Clock
from kafkalab.errors import InvalidRecordError
from kafkalab.metadata.image import MetadataImage
from kafkalab.metadata.snapshot import (
    image_from_snapshot, latest_snapshot, read_snapshot, snapshot_id, snapshot_name, write_snapshot,
    write_snapshot_bytes,
)
from kafkalab.records.control import ControlRecordType
from kafkalab.records.header import HeaderWalker
from kafkalab.records.kraft_control import CONTROL_MESSAGE_VERSION, LEADER_CHANGE_MESSAGE, control_batch
from kafkalab.records.model import Record
from kafkalab.records.v2 import build_v2_batch
from kafkalab.storage.leader_epoch import LeaderEpochCache
from kafkalab.storage.log import Log
from kafkalab.storage.log_config import LogConfig
from kafkalab.storage.log_manager import KRAFT_METADATA_TOPIC

METADATA_TOPIC = KRAFT_METADATA_TOPIC
METADATA_PARTITION = 0
METADATA_DIR_NAME = f"{METADATA_TOPIC}-{METADATA_PARTITION}"


class RaftLog(Protocol):
    """What a Raft node needs from its log (Kafka's ``ReplicatedLog``)."""

    @property
    def log_start_offset(self) -> int: ...
    @property
    def log_end_offset(self) -> int: ...
    @property
    def last_fetched_epoch(self) -> int: ...
    @property
    def high_watermark(self) -> int: ...
    @property
    def epoch_cache(self) -> LeaderEpochCache: ...
    def append_as_leader(self, batch: bytes, epoch: int) -> int: ...
    def append_as_follower(self, batches: bytes) -> int: ...
    def read(self, offset: int, max_bytes: int) -> bytes: ...
    def truncate_to(self, offset: int) -> None: ...
    def initialize_leader_epoch(self, epoch: int) -> None: ...
    def update_high_watermark(self, offset: int) -> None: ...
    def close(self) -> None: ...
    def latest_snapshot_id(self) -> tuple[int, int] | None: ...
    def snapshot_bytes(self, end_offset: int, epoch: int) -> bytes | None: ...
    def latest_snapshot_image(self) -> MetadataImage: ...
    def snapshot_and_clean(self, image: MetadataImage, now_ms: int) -> tuple[int, int]: ...
    def install_snapshot(self, end_offset: int, epoch: int, data: bytes) -> None: ...


class StorageRaftLog:
    """:class:`RaftLog` over kafkalab's storage ``Log``. Not thread-safe; owned by one Raft node."""

    def __init__(self, log: Log) -> None:
        self.log = log
        log.auto_advance_high_watermark = False
        newest = latest_snapshot(log.directory)
        self._snapshot_id = None if newest is None else snapshot_id(newest)  # kept current here

    @classmethod
    def open(cls, metadata_dir: Path, clock: Clock, config: LogConfig | None = None) -> StorageRaftLog:
        """Open (creating or recovering) ``<metadata_dir>/__cluster_metadata-0``. The high
        watermark is not persisted by Raft: a restarted node learns it again, from the end of
        its newest snapshot (or 0)."""
        directory = Path(metadata_dir) / METADATA_DIR_NAME
        directory.mkdir(parents=True, exist_ok=True)
        log = Log.open(directory, config or LogConfig(), clock, rng=random.Random(0))
        log.update_high_watermark(0)
        raft_log = cls(log)
        snapshot = raft_log.latest_snapshot_id()
        if snapshot is not None and snapshot[0] > log.log_start_offset:
            # The log starts at the newest snapshot (Kafka's KafkaMetadataLog does the same on
            # open): a snapshot holds committed records only, and a crash may have come between
            # writing it and moving the log start.
            if snapshot[0] > log.log_end_offset:
                log.truncate_fully_and_start_at(snapshot[0])
            log.update_high_watermark(snapshot[0])
            log.increment_log_start_offset(snapshot[0])
        return raft_log

    @property
    def directory(self) -> Path:
        return self.log.directory

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def last_fetched_epoch(self) -> int:
        """The epoch of the last batch (0 for an empty log), as Raft's ``endOffset`` pairs it; a
        log that starts right after a snapshot takes the snapshot's epoch."""
        latest = self.log.leader_epoch_cache.latest_epoch
        if latest is None:
            snapshot = self.latest_snapshot_id()
            return snapshot[1] if snapshot is not None and snapshot[0] == self.log_end_offset else 0
        return latest

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def epoch_cache(self) -> LeaderEpochCache:
        return self.log.leader_epoch_cache

    def append_as_leader(self, batch: bytes, epoch: int) -> int:
        """Append one batch in ``epoch``; returns the new log end offset (after a flush)."""
        self.log.append_as_leader(batch, epoch)
        self.log.flush()
        return self.log.log_end_offset

    def append_as_follower(self, batches: bytes) -> int:
        """Append the leader's batches; they must start exactly at our log end offset."""
        if len(batches) < 8 or int.from_bytes(batches[:8], "big") != self.log.log_end_offset:
            raise InvalidRecordError(
                f"{self.directory.name}: fetched batches must start at the log end offset "
                f"{self.log.log_end_offset}, got {len(batches)} bytes starting at "
                f"{int.from_bytes(batches[:8], 'big') if len(batches) >= 8 else None}")
        self.log.append_as_follower(batches)
        self.log.flush()
        return self.log.log_end_offset

    def read(self, offset: int, max_bytes: int) -> bytes:
        if offset >= self.log.log_end_offset:
            return b""
        return self.log.read(offset, max_bytes).read_bytes()

    def truncate_to(self, offset: int) -> None:
        assert offset >= self.log.high_watermark, (
            f"truncating {self.directory.name} to {offset}, below its high watermark "
            f"{self.log.high_watermark}, would lose committed records")
        self.log.truncate_to(offset)
        self.log.leader_epoch_cache.maybe_write()

    def initialize_leader_epoch(self, epoch: int) -> None:
        self.log.assign_epoch_start_offset(epoch, self.log.log_end_offset)

    def update_high_watermark(self, offset: int) -> None:
        self.log.update_high_watermark(offset)

    def close(self) -> None:
        self.log.close()

    # -- snapshots (KIP-630) --------------------------------------------------------------------

    def latest_snapshot_id(self) -> tuple[int, int] | None:
        """(end offset, epoch) of the newest ``.checkpoint`` beside the log, or None."""
        return self._snapshot_id

    def snapshot_bytes(self, end_offset: int, epoch: int) -> bytes | None:
        path = self.directory / snapshot_name(end_offset, epoch)
        return path.read_bytes() if path.exists() else None

    def latest_snapshot_image(self) -> MetadataImage:
        """The image in the newest snapshot (there must be one: the log starts after it)."""
        path = latest_snapshot(self.directory)
        assert path is not None, f"{self.directory.name} starts at {self.log_start_offset} without a snapshot"
        return read_snapshot(path)

    def install_snapshot(self, end_offset: int, epoch: int, data: bytes) -> None:
        """A follower below the leader's log start: keep the fetched snapshot, then empty the
        log and start it at the snapshot's end (Kafka's ``truncateToLatestSnapshot``). Raises
        MetadataRecordError for a torn snapshot, before anything changes."""
        image_from_snapshot(data, end_offset)
        write_snapshot_bytes(self.directory, end_offset, epoch, data)
        self._snapshot_id = (end_offset, epoch)
        self.log.truncate_fully_and_start_at(end_offset)
        self.log.update_high_watermark(end_offset)

    def snapshot_and_clean(self, image: MetadataImage, now_ms: int) -> tuple[int, int]:
        """Write the committed ``image`` as a snapshot, then start the log at its end offset: a
        replica that needs what lay below now fetches the snapshot (FetchSnapshot)."""
        end_offset = image.offset + 1
        assert 0 < end_offset <= self.high_watermark, (
            f"a snapshot ending at {end_offset} must hold committed records only "
            f"(high watermark {self.high_watermark})")
        epochs = [e for e, start in self.epoch_cache.entries if start <= image.offset]
        epoch = epochs[-1] if epochs else 0
        write_snapshot(self.directory, image, epoch, now_ms)
        self._snapshot_id = max(self._snapshot_id or (end_offset, epoch), (end_offset, epoch))
        self.log.increment_log_start_offset(end_offset)
        self.log.leader_epoch_cache.maybe_write()
        return end_offset, epoch


def batches_below(data: bytes, end_offset: int) -> bytes:
    """The whole batches of ``data`` that end before ``end_offset`` (what a leader sends an
    observer: committed batches only; the high watermark always falls between batches)."""
    cut = 0
    for header in HeaderWalker(data):
        if header.last_offset >= end_offset:
            break
        cut = header.position + header.size_bytes
    return data[:cut]


def data_batch(values: Sequence[bytes], now_ms: int) -> bytes:
    """One v2 batch of keyless records (offsets are assigned when the leader appends it)."""
    return build_v2_batch([Record(i, now_ms, None, value) for i, value in enumerate(values)])


def leader_change_value(leader_id: int, voters: Sequence[int], granting_voters: Sequence[int]) -> bytes:
    """LeaderChangeMessage v0 (clients/.../LeaderChangeMessage.json), flexible::

        Version int16 | LeaderId int32 | Voters compact[] {VoterId int32, tags} |
        GrantingVoters compact[] {VoterId int32, tags} | tags"""
    cls = LEADER_CHANGE_MESSAGE.cls
    value = cls(Version=CONTROL_MESSAGE_VERSION, LeaderId=leader_id,
                Voters=tuple(cls.Voter(VoterId=v) for v in voters),
                GrantingVoters=tuple(cls.Voter(VoterId=v) for v in granting_voters))
    return LEADER_CHANGE_MESSAGE.encode(value, CONTROL_MESSAGE_VERSION)


def leader_change_batch(
    leader_id: int, voters: Sequence[int], granting_voters: Sequence[int], now_ms: int,
) -> bytes:
    """The control batch a new leader writes first in its epoch (Kafka's
    ``MemoryRecords.withLeaderChangeMessage``)."""
    return control_batch(ControlRecordType.LEADER_CHANGE,
                         leader_change_value(leader_id, voters, granting_voters), now_ms)


__all__ = [
    "METADATA_DIR_NAME", "METADATA_PARTITION", "METADATA_TOPIC", "RaftLog", "StorageRaftLog",
    "batches_below", "data_batch", "leader_change_batch", "leader_change_value",
]
