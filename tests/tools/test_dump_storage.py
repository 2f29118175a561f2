"""The storage dumpers behind ``kafkalab dump-log``: Kafka's lines and sanity checks."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "storage"))
from storage_helpers import build_batch, exact_batch  # noqa: E402

from kafkalab.clock import ManualClock
from kafkalab.errors import CorruptIndexError
from kafkalab.storage import AbortedTxn, Log, LogConfig, ProducerSnapshotEntry, TransactionIndex, write_snapshot
from kafkalab.tools import dump_log, dump_storage


def dump(*paths: Path, **flags: bool) -> str:
    parser = __import__("argparse").ArgumentParser()
    dump_log.add_arguments(parser)
    argv = ["--files", ",".join(str(p) for p in paths)] + [f"--{k.replace('_', '-')}" for k, v in flags.items() if v]
    out = io.StringIO()
    status = dump_log.run(parser.parse_args(argv), out=out, err=out)
    assert status == 0, out.getvalue()
    return out.getvalue()


@pytest.fixture
def chapter_log(tmp_path: Path) -> Path:
    """The chapter-04 segment: index entries (20, 320) and (43, 1220)."""
    directory = tmp_path / "t-0"
    log = Log.open(directory, LogConfig(index_interval_bytes=300), ManualClock(0))
    for count, size in ((10, 160), (10, 160), (1, 300), (22, 600), (1, 100)):
        log.append_as_leader(exact_batch(count, size, timestamp_ms=1000 + size), 0)
    log.close()
    return directory


def test_offset_index_dump_lines(chapter_log: Path) -> None:
    text = dump(chapter_log / "00000000000000000000.index")
    assert text.splitlines()[1:] == ["offset: 20 position: 320", "offset: 43 position: 1220"]


def test_time_index_dump_lines_match_kafka_checks(chapter_log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = dump(chapter_log / "00000000000000000000.timeindex")
    lines = text.splitlines()[1:]
    assert lines and all(line.startswith("timestamp: ") and " offset: " in line for line in lines)
    assert capsys.readouterr().err == ""  # every entry agrees with the log


def test_empty_index_and_sanity_check(tmp_path: Path, chapter_log: Path) -> None:
    empty = tmp_path / "00000000000000000007.index"
    empty.write_bytes(b"")
    assert f"{empty} is empty." in dump(empty)
    index = chapter_log / "00000000000000000000.index"
    assert f"{index} passed sanity check." in dump(index, index_sanity_check=True)
    index.write_bytes(index.read_bytes() + b"\x01\x02\x03")
    with pytest.raises(CorruptIndexError):
        dump_storage.dump_offset_index(index, __import__("argparse").Namespace(index_sanity_check=True), io.StringIO())
    assert "Found 3 invalid bytes at the end of 00000000000000000000.index" in dump(index)


def test_mismatch_reported_like_kafka(chapter_log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    index = chapter_log / "00000000000000000000.index"
    data = bytearray(index.read_bytes())
    data[0:4] = (21).to_bytes(4, "big")  # claim offset 21 at position 320 (really offset 20)
    index.write_bytes(bytes(data))
    dump(index)
    err = capsys.readouterr().err
    assert f"Mismatches in :{index.resolve()}" in err and "  Index offset: 21, log offset: 20" in err


def test_zero_filled_tail_stops_the_dump(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = Log.open(directory, LogConfig(index_interval_bytes=0, segment_index_bytes=800), ManualClock(0))
    for _ in range(3):
        log.append_as_leader(build_batch(1), 0)
    for segment in log.segments:
        segment.close_handlers()  # crash: the index keeps its preallocated zeros
    text = dump(directory / "00000000000000000000.index")
    size = len(build_batch(1))
    assert text.splitlines()[1:] == [f"offset: 1 position: {size}", f"offset: 2 position: {2 * size}"]


def test_txn_index_and_snapshot_dumps(tmp_path: Path) -> None:
    txn = TransactionIndex(tmp_path / "00000000000000000000.txnindex", 0)
    txn.append(AbortedTxn(7, 10, 14, 15))
    snapshot = tmp_path / "00000000000000000100.snapshot"
    write_snapshot(snapshot, [
        ProducerSnapshotEntry(1000, 2, 41, 99, 4, 1700, 7, -1),
        ProducerSnapshotEntry(1001, 0, 1, 120, 3, 1800, -1, 118),  # sequences wrapped: MAX-1..1
        ProducerSnapshotEntry(1002, 5, -1, -1, 0, 1900, 3, -1),  # no batch known
    ])
    text = dump(txn.path, snapshot)
    assert "version: 0 producerId: 7 firstOffset: 10 lastOffset: 14 lastStableOffset: 15" in text
    # DumpLogSegments.dumpProducerIdSnapshot: Java's OptionalLong, batch fields only when known.
    assert ("producerId: 1000 producerEpoch: 2 coordinatorEpoch: 7 currentTxnFirstOffset: OptionalLong.empty "
            "lastTimestamp: 1700 firstSequence: 37 lastSequence: 41 lastOffset: 99 offsetDelta: 4 "
            "timestamp: 1700\n") in text
    assert ("producerId: 1001 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong[118] "
            "lastTimestamp: 1800 firstSequence: 2147483646 lastSequence: 1 lastOffset: 120 offsetDelta: 3 "
            "timestamp: 1800\n") in text
    assert ("producerId: 1002 producerEpoch: 5 coordinatorEpoch: 3 currentTxnFirstOffset: OptionalLong.empty "
            "lastTimestamp: 1900 \n") in text


def test_directory_dumps_identically_before_and_after_reopen(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    config = LogConfig(segment_bytes=1500, index_interval_bytes=200)
    log = Log.open(directory, config, ManualClock(0))
    for i in range(40):
        log.append_as_leader(build_batch(1 + i % 4, timestamp_ms=1000 + 3 * i, value_bytes=20 + i), i // 10)
    log.close()
    files = sorted(p for p in directory.iterdir() if p.suffix in (".log", ".index", ".timeindex"))
    before = dump(*files, deep_iteration=True)
    assert "offset: " in before and "timestamp: " in before and "baseOffset: " in before
    Log.open(directory, config, ManualClock(0)).close()  # full recovery from offset 0
    assert dump(*files, deep_iteration=True) == before
