"""Recovery on open: torn and corrupt tails, broken indexes, stray files, checkpoints."""

from __future__ import annotations

import os
from pathlib import Path

from storage_helpers import batch_of_size, build_batch

from kafkalab.clock import ManualClock
from kafkalab.storage import Log, LogConfig, LogManager, Recovered
from kafkalab.storage import checkpoints
from kafkalab.storage.log_manager import CLEAN_SHUTDOWN_FILE

SMALL = LogConfig(segment_bytes=1000, index_interval_bytes=100)


def fill(log: Log, batches: int, size: int = 150) -> None:
    for i in range(batches):
        log.append_as_leader(batch_of_size(size, timestamp_ms=1000 + i), 1)


def reopen(log_dir: Path, clock: ManualClock, **kwargs: object) -> Log:
    return Log.open(log_dir, SMALL, clock, **kwargs)  # type: ignore[arg-type]


def crash(log: Log) -> None:
    """Drop the log without trimming or closing cleanly, as a killed process would."""
    for segment in log.segments:
        segment.close_handlers()


def test_torn_tail_is_truncated_and_later_segments_deleted(log_dir: Path, clock: ManualClock) -> None:
    log = reopen(log_dir, clock)
    fill(log, 14)  # 6 batches per 1000-byte segment -> segments 0, 6, 12
    assert [s.base_offset for s in log.segments] == [0, 6, 12]
    crash(log)
    middle = log_dir / "00000000000000000006.log"
    with open(middle, "r+b") as file:
        file.truncate(150 * 3 + 40)  # cut batch 9 in the middle
    events: list[object] = []
    again = reopen(log_dir, clock)
    assert [s.base_offset for s in again.segments] == [0, 6]
    assert again.log_end_offset == 9
    assert again.active_segment.size_bytes == 450
    assert not (log_dir / "00000000000000000012.log").exists()
    assert again.append_as_leader(build_batch(1), 2).first_offset == 9
    again.close()
    del events


def test_corrupt_byte_truncates_from_that_batch_only(log_dir: Path, clock: ManualClock) -> None:
    log = reopen(log_dir, clock)
    fill(log, 5)
    crash(log)
    path = log_dir / "00000000000000000000.log"
    data = bytearray(path.read_bytes())
    data[150 * 3 + 100] ^= 0x40  # inside batch 3's CRC-covered bytes
    path.write_bytes(bytes(data))
    seen: list[Recovered] = []
    again = Log.open(log_dir, SMALL, clock)
    assert again.log_end_offset == 3 and again.active_segment.size_bytes == 450
    again.close()
    del seen


def test_garbage_tail_and_clean_prefix_survive(log_dir: Path, clock: ManualClock) -> None:
    log = reopen(log_dir, clock)
    fill(log, 3)
    crash(log)
    with open(log_dir / "00000000000000000000.log", "ab") as file:
        file.write(os.urandom(7) + b"\xff" * 100)
    again = reopen(log_dir, clock)
    assert again.log_end_offset == 3 and again.active_segment.size_bytes == 450
    again.close()


def test_zeroed_preallocated_index_after_crash_is_rebuilt(log_dir: Path, clock: ManualClock) -> None:
    log = reopen(log_dir, clock)
    fill(log, 5)
    entries = log.active_segment.offset_index.raw_entries()
    crash(log)
    again = reopen(log_dir, clock, recovery_point=5)  # even a flushed active segment is checked
    assert again.active_segment.offset_index.raw_entries() == entries
    again.close()


def test_corrupt_index_of_old_segment_is_rebuilt(log_dir: Path, clock: ManualClock) -> None:
    log = reopen(log_dir, clock)
    fill(log, 14)
    expected = log.segments[0].offset_index.raw_entries()
    assert expected
    log.close()
    (log_dir / "00000000000000000000.index").write_bytes(b"\x00\x00\x00\x09\x00\x00\x00\x10" * 2)
    (log_dir / "00000000000000000006.timeindex").unlink()
    again = Log.open(log_dir, SMALL, clock, had_clean_shutdown=True)
    assert again.segments[0].offset_index.raw_entries() == expected
    assert again.segments[1].time_index.entries > 0
    assert again.lookup(3) is not None and again.lookup(3)[1].last_offset == 3
    again.close()


def test_stray_deleted_cleaned_and_swap_files(log_dir: Path, clock: ManualClock) -> None:
    log = reopen(log_dir, clock)
    fill(log, 14)
    log.close()
    (log_dir / "00000000000000000040.log.deleted").write_bytes(b"x")
    (log_dir / "00000000000000000050.log.cleaned").write_bytes(b"x")
    (log_dir / "00000000000000000060.log.swap").write_bytes(b"x")  # above the cleaned base: incomplete
    (log_dir / "00000000000000000099.index").write_bytes(b"")  # orphan index
    again = reopen(log_dir, clock, had_clean_shutdown=True)
    names = sorted(os.listdir(log_dir))
    assert not any(n.endswith((".deleted", ".cleaned", ".swap")) for n in names)
    assert "00000000000000000099.index" not in names
    assert again.log_end_offset == 14
    again.close()


def test_completed_swap_replaces_old_segments(log_dir: Path, clock: ManualClock) -> None:
    log = reopen(log_dir, clock)
    fill(log, 14)  # segments 0 (0..5), 6 (6..11), 12 (12..13)
    log.close()
    # A compaction wrote the merged content of segments 0 and 6 as 0.log.swap, then crashed.
    merged = (log_dir / "00000000000000000000.log").read_bytes() + (log_dir / "00000000000000000006.log").read_bytes()
    (log_dir / "00000000000000000000.log.swap").write_bytes(merged)
    again = reopen(log_dir, clock)
    assert [s.base_offset for s in again.segments] == [0, 12]
    assert not (log_dir / "00000000000000000006.log").exists()
    assert again.lookup(8) is not None and again.lookup(8)[0].base_offset == 0
    again.close()


def test_replace_segments_protocol(log_dir: Path, clock: ManualClock) -> None:
    log = reopen(log_dir, clock)
    fill(log, 14)
    old = log.segments[:2]
    cleaned = log.new_segment(0, suffix=".cleaned")
    data = old[0].log_path.read_bytes() + old[1].log_path.read_bytes()
    from kafkalab.records.header import iter_headers

    headers = list(iter_headers(data))
    cleaned.append(headers[-1].last_offset, 1000, data, headers)
    assert cleaned.log_path.name == "00000000000000000000.log.cleaned"
    log.replace_segments([cleaned], old)
    assert [s.base_offset for s in log.segments] == [0, 12]
    names = sorted(os.listdir(log_dir))
    assert "00000000000000000000.log" in names and "00000000000000000006.log" not in names
    assert not any(n.endswith((".swap", ".cleaned", ".deleted")) for n in names)
    assert log.lookup(9)[1].last_offset == 9
    log.close()


def test_delete_segments_renames_then_deletes_after_delay(log_dir: Path, clock: ManualClock) -> None:
    scheduled: list[tuple[int, object]] = []

    class Scheduler:
        def schedule(self, delay_ms: int, fn):  # type: ignore[no-untyped-def]
            scheduled.append((delay_ms, fn))

    log = Log.open(log_dir, SMALL, clock, scheduler=Scheduler())
    fill(log, 14)
    assert log.delete_segments(log.segments[:1], "retention") == 1
    assert (log_dir / "00000000000000000000.log.deleted").exists()
    assert log.log_start_offset == 6
    delay, fn = scheduled[0]
    assert delay == 60_000
    fn()  # type: ignore[operator]
    assert not any(n.startswith("00000000000000000000") for n in os.listdir(log_dir))
    log.close()


def test_log_manager_checkpoints_and_clean_shutdown(tmp_path: Path, clock: ManualClock) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = LogManager(dirs, clock, SMALL)
    first = manager.get_or_create_log("orders", 0)
    second = manager.get_or_create_log("orders", 1)
    assert {first.directory.parent, second.directory.parent} == set(dirs)
    fill(first, 8)
    fill(second, 2)
    first.increment_log_start_offset(7)
    manager.shutdown()
    assert (dirs[0] / CLEAN_SHUTDOWN_FILE).exists()
    text = (dirs[0] / checkpoints.RECOVERY_POINT_CHECKPOINT).read_text()
    assert text == "0\n1\norders 0 8\n"
    assert (dirs[0] / checkpoints.LOG_START_OFFSET_CHECKPOINT).read_text() == "0\n1\norders 0 7\n"
    assert (dirs[1] / checkpoints.REPLICATION_OFFSET_CHECKPOINT).read_text() == "0\n1\norders 1 2\n"
    assert (dirs[0] / "orders-0" / "partition.metadata").read_text().startswith("version: 0\ntopic_id: ")
    again = LogManager(dirs, clock, SMALL)
    log = again.get_log("orders", 0)
    assert log is not None and (log.log_start_offset, log.log_end_offset, log.recovery_point) == (7, 8, 8)
    assert not (dirs[0] / CLEAN_SHUTDOWN_FILE).exists()
    assert again.delete_log("orders", 1) and not (dirs[1] / "orders-1").exists()
    again.shutdown()


def test_log_manager_corrupt_checkpoint_falls_back(tmp_path: Path, clock: ManualClock) -> None:
    manager = LogManager([tmp_path], clock, SMALL)
    fill(manager.get_or_create_log("t", 0), 3)
    manager.shutdown()
    (tmp_path / checkpoints.RECOVERY_POINT_CHECKPOINT).write_text("0\n5\nbroken")
    (tmp_path / CLEAN_SHUTDOWN_FILE).unlink()
    again = LogManager([tmp_path], clock, SMALL)
    assert any("resetting recovery points to 0" in w for w in again.warnings)
    assert again.get_log("t", 0).log_end_offset == 3  # type: ignore[union-attr]
    again.shutdown()


def test_corrupt_leader_epoch_checkpoint_is_rebuilt_from_batches(log_dir: Path, clock: ManualClock) -> None:
    log = reopen(log_dir, clock)
    log.append_as_leader(build_batch(3), 2)
    log.append_as_leader(build_batch(3), 5)
    log.close()
    (log_dir / "leader-epoch-checkpoint").write_text("0\n7\ngarbage")
    again = reopen(log_dir, clock, had_clean_shutdown=True)
    assert again.leader_epoch_cache.entries == [(2, 0), (5, 3)]
    again.close()
    assert (log_dir / "leader-epoch-checkpoint").read_text() == "0\n2\n2 0\n5 3\n"
