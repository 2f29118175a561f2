"""Producer state snapshots (``.snapshot``): the idempotent producers' last known state.

Mirrors the file format of Kafka's ``ProducerStateManager``. The snapshot named
``<log end offset>.snapshot`` lets a broker restore every producer's last sequence numbers
without rereading the whole log. Layout, big-endian::

    version int16 (1) | crc uint32 = CRC-32C(bytes 6..end) | count int32 | count x 46-byte entry
    entry: producerId int64, epoch int16, lastSequence int32, lastOffset int64,
           offsetDelta int32, timestamp int64, coordinatorEpoch int32, currentTxnFirstOffset int64

An empty snapshot is exactly ``0001 48674bc7 00000000``. The CRC covers the count and the
entries, so a torn write is detected on read. The producer state itself lives in
:mod:`kafkalab.storage.producer_state` and :mod:`kafkalab.storage.producer_state_manager`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import crc32c

from kafkalab.errors import CorruptRecordError
from kafkalab.storage.checkpoints import write_atomically
from kafkalab.storage.log_files import PRODUCER_SNAPSHOT_SUFFIX, file_name

VERSION = 1
HEADER = struct.Struct(">hIi")
ENTRY = struct.Struct(">qhiqiqiq")
ENTRY_SIZE = ENTRY.size  # 46
CRC_START = 6
# A broker tracks at most a few hundred thousand producers per partition; refuse absurd counts
# before allocating (the count is read from the file).
PRODUCERS_MAX = 10_000_000


@dataclass(frozen=True, slots=True)
class ProducerSnapshotEntry:
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp_ms: int
    coordinator_epoch: int
    current_txn_first_offset: int = -1


def encode(entries: list[ProducerSnapshotEntry]) -> bytes:
    body = struct.pack(">i", len(entries)) + b"".join(
        ENTRY.pack(
            e.producer_id, e.producer_epoch, e.last_sequence, e.last_offset, e.offset_delta,
            e.timestamp_ms, e.coordinator_epoch, e.current_txn_first_offset,
        )
        for e in entries
    )
    return struct.pack(">hI", VERSION, crc32c.crc32c(body)) + body


def decode(data: bytes, *, source: str = "snapshot") -> list[ProducerSnapshotEntry]:
    if len(data) < HEADER.size:
        raise CorruptRecordError(f"{source} has {len(data)} bytes, fewer than the 10-byte header", position=0)
    version, crc, count = HEADER.unpack_from(data, 0)
    if version != VERSION:
        raise CorruptRecordError(f"{source} has version {version}; only {VERSION} is defined", position=0)
    computed = crc32c.crc32c(data[CRC_START:])
    if computed != crc:
        raise CorruptRecordError(
            f"{source} CRC mismatch: stored 0x{crc:08x}, computed 0x{computed:08x}", position=2
        )
    if not 0 <= count <= PRODUCERS_MAX or HEADER.size + count * ENTRY_SIZE != len(data):
        raise CorruptRecordError(
            f"{source} says {count} producers but holds {len(data) - HEADER.size} entry bytes",
            position=6,
        )
    return [
        ProducerSnapshotEntry(*ENTRY.unpack_from(data, HEADER.size + i * ENTRY_SIZE))
        for i in range(count)
    ]


def snapshot_file_name(directory: Path, offset: int) -> Path:
    return Path(directory) / file_name(offset, PRODUCER_SNAPSHOT_SUFFIX)


def write_snapshot(path: Path, entries: list[ProducerSnapshotEntry], *, sync: bool = True) -> None:
    """Write a snapshot. With ``sync`` (shutdown, recovery) it is fsynced and renamed into
    place; without (a segment roll, on the append path, as Kafka's ``takeSnapshot(false)``) it
    is written straight to its name, and a torn file fails its CRC on load and is skipped."""
    if sync:
        write_atomically(Path(path), encode(entries))
    else:
        Path(path).write_bytes(encode(entries))


def read_snapshot(path: Path) -> list[ProducerSnapshotEntry]:
    path = Path(path)
    size = path.stat().st_size
    if size > HEADER.size + PRODUCERS_MAX * ENTRY_SIZE:
        raise CorruptRecordError(f"{path} is {size} bytes, above the snapshot limit", position=0)
    return decode(path.read_bytes(), source=str(path))
