"""Producer snapshots (``.snapshot``): written at roll and close in Kafka's layout, deleted with
their segment, and the base of producer-state recovery after clean and unclean shutdowns."""

from __future__ import annotations

import struct
from pathlib import Path

import crc32c
import pytest
from idempotent_helpers import idempotent_batch
from storage_helpers import build_batch

from kafkalab.clock import ManualClock
from kafkalab.records.control import build_end_txn_marker
from kafkalab.storage import Log, LogConfig
from kafkalab.storage.producer_snapshot import read_snapshot
from kafkalab.storage.producer_state import OutOfOrderSequenceError
from kafkalab.tools.cli import main as cli_main

SMALL = LogConfig(segment_bytes=400, index_interval_bytes=100)
PID = 9000


def open_log(log_dir: Path, clock: ManualClock, **kwargs: object) -> Log:
    return Log.open(log_dir, SMALL, clock, **kwargs)  # type: ignore[arg-type]


def produce(log: Log, seq: int, count: int = 2, pid: int = PID, epoch: int = 0) -> tuple[int, int]:
    info = log.append_as_leader(idempotent_batch(pid, epoch, seq, count), 0)
    return info.first_offset, info.last_offset


def crash(log: Log) -> None:
    """Drop the log as a killed process would: no final snapshot, no trimming."""
    for segment in log.segments:
        segment.close_handlers()


def snapshots(log_dir: Path) -> list[int]:
    return sorted(int(p.name[:20]) for p in log_dir.glob("*.snapshot"))


def kafka_snapshot(entries: list[tuple[int, int, int, int, int, int, int, int]]) -> bytes:
    """The layout from Kafka's ProducerSnapshot.json, built here by hand with struct."""
    body = struct.pack(">i", len(entries)) + b"".join(struct.pack(">qhiqiqiq", *e) for e in entries)
    return struct.pack(">hI", 1, crc32c.crc32c(body)) + body


def test_roll_writes_a_snapshot_named_by_the_new_base_offset(log_dir: Path, clock: ManualClock) -> None:
    log = open_log(log_dir, clock)
    log.append_as_leader(build_batch(1), 0)
    log.roll()
    assert (log_dir / "00000000000000000001.snapshot").read_bytes() == bytes.fromhex("0001 48674bc7 00000000")
    produce(log, 0, 3)  # offsets 1..3, timestamps 1_000_000..1_000_002
    log.roll()
    assert (log_dir / "00000000000000000004.snapshot").read_bytes() == kafka_snapshot(
        [(PID, 0, 2, 3, 2, 1_000_002, -1, -1)])
    log.close()


def test_close_writes_a_snapshot_at_the_log_end_offset(log_dir: Path, clock: ManualClock) -> None:
    log = open_log(log_dir, clock)
    produce(log, 0, 2)
    produce(log, 0, 1, pid=PID + 1)
    log.close()
    assert snapshots(log_dir) == [3]
    assert (log_dir / "00000000000000000003.snapshot").read_bytes() == kafka_snapshot([
        (PID, 0, 1, 1, 1, 1_000_001, -1, -1), (PID + 1, 0, 0, 2, 0, 1_000_000, -1, -1)])


def test_dump_log_reads_the_snapshots_kafkalab_writes(
    log_dir: Path, clock: ManualClock, capsys: pytest.CaptureFixture[str]
) -> None:
    log = open_log(log_dir, clock)
    produce(log, 5, 3)
    log.close()
    assert cli_main(["dump-log", "--files", str(log_dir / "00000000000000000003.snapshot")]) == 0
    assert (f"producerId: {PID} producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: "
            "OptionalLong.empty lastTimestamp: 1000002 firstSequence: 5 lastSequence: 7 lastOffset: 2 "
            "offsetDelta: 2 timestamp: 1000002") in capsys.readouterr().out


def test_deleted_segment_takes_its_snapshot_along(log_dir: Path, clock: ManualClock) -> None:
    log = open_log(log_dir, clock)
    for seq in range(0, 30, 2):
        produce(log, seq)
    bases = [s.base_offset for s in log.segments]
    assert len(bases) >= 3 and snapshots(log_dir) == bases[1:]
    log.delete_segments(log.segments[:2], "retention")
    assert snapshots(log_dir) == bases[2:]
    log.close()


def test_unclean_restart_replays_batches_after_the_latest_snapshot(log_dir: Path, clock: ManualClock) -> None:
    log = open_log(log_dir, clock)
    for seq in range(0, 30, 2):
        produce(log, seq)  # offsets 0..29 over several segments, a snapshot at each roll
    last_snapshot = snapshots(log_dir)[-1]
    assert last_snapshot < 28, "some batches come after the newest snapshot"
    log.flush()
    crash(log)
    again = open_log(log_dir, clock, recovery_point=0)
    state = again.producer_state.producers[PID]
    assert (state.last_seq, state.last_data_offset) == (29, 29)
    assert produce(again, 28) == (28, 29), "a retry of the last batch, replayed from the log"
    with pytest.raises(OutOfOrderSequenceError):
        produce(again, 31)
    assert produce(again, 30) == (30, 31)
    assert snapshots(log_dir)[-1] == 30, "recovery ends with a snapshot at the log end offset"
    again.close()


def test_recovery_skips_a_corrupt_snapshot_and_replays_from_an_older_one(log_dir: Path, clock: ManualClock) -> None:
    log = open_log(log_dir, clock)
    for seq in range(0, 30, 2):
        produce(log, seq)
    crash(log)
    newest = snapshots(log_dir)[-1]
    path = log_dir / f"{newest:020d}.snapshot"
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    again = open_log(log_dir, clock)
    assert again.producer_state.producers[PID].last_seq == 29
    # Replaying through that segment's base wrote a good snapshot in its place, as Kafka does.
    (entry,) = read_snapshot(path)
    assert (entry.producer_id, entry.last_offset) == (PID, newest - 1)
    again.close()


def test_snapshot_above_the_recovered_end_is_dropped(log_dir: Path, clock: ManualClock) -> None:
    log = open_log(log_dir, clock)
    for seq in range(0, 20, 2):
        produce(log, seq)
    log.producer_state.take_snapshot(20)  # the snapshot reached the disk, the last segment did not
    crash(log)
    segments = sorted(log_dir.glob("*.log"))
    segments[-1].write_bytes(b"")  # the active segment's data never reached the disk
    again = open_log(log_dir, clock)
    end = again.log_end_offset
    assert end < 20 and 20 not in snapshots(log_dir)
    assert again.producer_state.producers[PID].last_data_offset == end - 1
    assert produce(again, end) == (end, end + 1)
    again.close()


def test_clean_restart_loads_the_shutdown_snapshot_without_replay(log_dir: Path, clock: ManualClock) -> None:
    log = open_log(log_dir, clock)
    for seq in range(0, 10, 2):
        produce(log, seq)
    log.close()
    again = open_log(log_dir, clock, had_clean_shutdown=True)
    assert again.producer_state.map_end_offset == 10
    assert produce(again, 8) == (8, 9), "the shutdown snapshot keeps the last batch"
    again.close()


def test_clean_restart_without_snapshots_starts_empty_as_after_an_upgrade(log_dir: Path, clock: ManualClock) -> None:
    log = open_log(log_dir, clock)
    for seq in range(0, 20, 2):
        produce(log, seq)
    log.close()
    for path in log_dir.glob("*.snapshot"):
        path.unlink()
    again = open_log(log_dir, clock, had_clean_shutdown=True)
    assert again.producer_state.producers == {}
    bases = [s.base_offset for s in again.segments]
    # Empty snapshots at the last two segment bases and the LEO (none at 0: nothing precedes it).
    assert snapshots(log_dir) == sorted({b for b in bases[-2:] if b > 0} | {20})
    again.close()


def test_stray_snapshots_are_removed_on_load(log_dir: Path, clock: ManualClock) -> None:
    log = open_log(log_dir, clock)
    for seq in range(0, 20, 2):
        produce(log, seq)
    log.close()
    bases = [s.base_offset for s in log.segments]
    for stray in (bases[1] + 1, bases[1] + 2):
        (log_dir / f"{stray:020d}.snapshot").write_bytes(bytes.fromhex("0001 48674bc7 00000000"))
    again = open_log(log_dir, clock, had_clean_shutdown=True)
    assert snapshots(log_dir) == sorted(set(bases[1:] + [20]))
    again.close()


def test_truncation_rebuilds_producer_state(log_dir: Path, clock: ManualClock) -> None:
    log = open_log(log_dir, clock)
    for seq in range(0, 20, 2):
        produce(log, seq)
    log.truncate_to(12)
    state = log.producer_state.producers[PID]
    assert (state.last_seq, state.last_data_offset) == (11, 11)
    assert all(offset <= 12 for offset in snapshots(log_dir))
    assert produce(log, 12) == (12, 13), "sequence 12 was cut off, so it is new again"
    log.close()


def test_replayed_commit_marker_closes_the_transaction(log_dir: Path, clock: ManualClock) -> None:
    """A follower or a recovery that replays a COMMIT marker ends the producer's open transaction
    and learns the coordinator epoch (Kafka's ``appendEndTxnMarker``)."""
    log = open_log(log_dir, clock)
    data = bytearray(idempotent_batch(PID, 2, 0, 2, transactional=True))
    log.append_as_follower(bytes(data))
    assert log.producer_state.producers[PID].current_txn_first_offset == 0
    log.append_as_follower(build_end_txn_marker(
        commit=True, offset=2, timestamp_ms=1_000_005, producer_id=PID, producer_epoch=2, coordinator_epoch=7))
    entry = log.producer_state.producers[PID]
    assert (entry.current_txn_first_offset, entry.coordinator_epoch, entry.last_seq) == (None, 7, 1)
    crash(log)
    for path in log_dir.glob("*.snapshot"):
        path.unlink()
    again = open_log(log_dir, clock)
    entry = again.producer_state.producers[PID]
    assert (entry.current_txn_first_offset, entry.coordinator_epoch, entry.producer_epoch) == (None, 7, 2)
    again.close()
