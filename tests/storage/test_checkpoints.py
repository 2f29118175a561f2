"""Checkpoint text formats, partition.metadata and producer snapshots, byte for byte."""

from __future__ import annotations

import random
import uuid
from pathlib import Path

import pytest

from kafkalab.errors import CorruptRecordError, StorageError
from kafkalab.storage import checkpoints, partition_metadata, producer_snapshot
from kafkalab.storage.checkpoints import CorruptCheckpointError
from kafkalab.storage.producer_snapshot import ProducerSnapshotEntry


def test_offset_checkpoint_text_is_exact(tmp_path: Path) -> None:
    path = tmp_path / checkpoints.RECOVERY_POINT_CHECKPOINT
    checkpoints.write_offsets(path, {("orders", 1): 1320, ("orders", 0): 1500})
    assert path.read_bytes() == b"0\n2\norders 0 1500\norders 1 1320\n"
    assert checkpoints.read_offsets(path) == {("orders", 0): 1500, ("orders", 1): 1320}
    assert not (tmp_path / (path.name + ".tmp")).exists()


def test_leader_epoch_checkpoint_text_is_exact(tmp_path: Path) -> None:
    path = tmp_path / checkpoints.LEADER_EPOCH_CHECKPOINT
    checkpoints.write_leader_epochs(path, [(0, 0), (3, 120)])
    assert path.read_text() == "0\n2\n0 0\n3 120\n"
    assert checkpoints.read_leader_epochs(path) == [(0, 0), (3, 120)]


def test_empty_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "replication-offset-checkpoint"
    checkpoints.write_offsets(path, {})
    assert path.read_text() == "0\n0\n"
    assert checkpoints.read_offsets(path) == {}
    assert checkpoints.read_offsets(tmp_path / "missing") == {}


@pytest.mark.parametrize("text", [
    "", "1\n0\n", "0\n2\norders 0 5\n", "0\n1\norders 0\n", "0\n1\norders x 5\n", "0\nabc\n",
])
def test_malformed_checkpoints_raise_typed_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "recovery-point-offset-checkpoint"
    path.write_text(text)
    with pytest.raises(CorruptCheckpointError):
        checkpoints.read_offsets(path)


def test_partition_metadata_exact_text_and_seeded_id(tmp_path: Path) -> None:
    topic_id = partition_metadata.random_topic_id(random.Random(42))
    assert topic_id == partition_metadata.random_topic_id(random.Random(42))
    raw = partition_metadata.str_to_uuid(topic_id)
    assert uuid.UUID(bytes=raw).version == 4
    assert len(topic_id) == 22 and not topic_id.startswith("-")
    partition_metadata.write(tmp_path, topic_id)
    assert (tmp_path / "partition.metadata").read_bytes() == f"version: 0\ntopic_id: {topic_id}".encode()
    assert partition_metadata.read(tmp_path) == topic_id


def test_partition_metadata_corrupt(tmp_path: Path) -> None:
    (tmp_path / "partition.metadata").write_text("version: 7\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA")
    with pytest.raises(StorageError):
        partition_metadata.read(tmp_path)


def test_empty_producer_snapshot_bytes() -> None:
    assert producer_snapshot.encode([]).hex() == "000148674bc700000000"


def test_producer_snapshot_round_trip_and_crc(tmp_path: Path) -> None:
    entries = [ProducerSnapshotEntry(1000, 2, 41, 99, 4, 1_700_000_000_000, 7, -1)]
    path = producer_snapshot.snapshot_file_name(tmp_path, 100)
    assert path.name == "00000000000000000100.snapshot"
    producer_snapshot.write_snapshot(path, entries)
    assert path.stat().st_size == 10 + 46
    assert producer_snapshot.read_snapshot(path) == entries
    data = bytearray(path.read_bytes())
    data[20] ^= 1
    with pytest.raises(CorruptRecordError, match="CRC mismatch"):
        producer_snapshot.decode(bytes(data))
