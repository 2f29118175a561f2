"""``kafkalab delete-records`` against a data directory written by the storage engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafkalab.clock import ManualClock
from kafkalab.errors import InvalidRequestError
from kafkalab.records.codec import build_batch
from kafkalab.records.model import Record
from kafkalab.storage.checkpoints import LOG_START_OFFSET_CHECKPOINT, read_offsets
from kafkalab.storage.log_config import LogConfig
from kafkalab.storage.log_manager import LogManager
from kafkalab.storage.retention import delete_old_segments
from kafkalab.tools.cli import main
from kafkalab.tools.delete_records import parse_offset_json


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    # Segments with base offsets 0, 11, 23, 30 (the worked example) and the active one at 30.
    manager = LogManager([tmp_path], ManualClock(now_ms=1_000), LogConfig(segment_bytes=10**6))
    log = manager.get_or_create_log("t", 0)
    for count in (11, 12, 7, 5):
        records = [Record(i, 1_000, b"k%d" % i, b"v") for i in range(count)]
        log.append_as_leader(build_batch(records), 0)
        log.roll("test")
    manager.shutdown()
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], data_dir: Path, offsets: object) -> tuple[int, str]:
    path = data_dir.parent / "offsets.json"
    path.write_text(json.dumps(offsets))
    status = main(["delete-records", "--data-dir", str(data_dir), "--offset-json-file", str(path)])
    captured = capsys.readouterr()
    return status, captured.out + captured.err


def test_moves_log_start_offset_and_persists_it(capsys: pytest.CaptureFixture[str], data_dir: Path) -> None:
    status, out = run(capsys, data_dir, {"partitions": [{"topic": "t", "partition": 0, "offset": 25}], "version": 1})
    assert status == 0
    assert out == "Executing records delete operation\nRecords delete operation completed:\npartition: t-0\tlow_watermark: 25\n"
    assert read_offsets(data_dir / LOG_START_OFFSET_CHECKPOINT) == {("t", 0): 25}
    # The next retention check deletes the segments wholly below 25: next bases 11 and 23.
    manager = LogManager([data_dir], ManualClock(now_ms=2_000), LogConfig(retention_ms=-1))
    log = manager.get_log("t", 0)
    assert log is not None and log.log_start_offset == 25
    assert delete_old_segments(log, 2_000).log_start_offset_breached == 2
    assert [s.base_offset for s in log.segments] == [23, 30, 35]


def test_minus_one_means_high_watermark(capsys: pytest.CaptureFixture[str], data_dir: Path) -> None:
    status, out = run(capsys, data_dir, {"partitions": [{"topic": "t", "partition": 0, "offset": -1}], "version": 1})
    assert status == 0 and "low_watermark: 35" in out


def test_errors_per_partition(capsys: pytest.CaptureFixture[str], data_dir: Path) -> None:
    status, out = run(capsys, data_dir, {"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "offset": 99},
        {"topic": "nope", "partition": 0, "offset": 1},
    ]})
    assert status == 1
    assert "partition: t-0\terror: OffsetOutOfRangeError" in out and "high watermark 35" in out
    assert "partition: nope-0\terror: KafkaError: This server does not host this topic-partition" in out


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not valid JSON"),
        ('{"version": 2, "partitions": []}', "version"),
        ('{"version": 1}', "partitions"),
        ('{"version": 1, "partitions": [{"topic": "t", "partition": 0, "offset": "5"}]}', "offset"),
        ('{"version": 1, "partitions": [{"topic": "t", "partition": -1, "offset": 5}]}', "partition must be"),
        ('{"version": 1, "partitions": [{"topic": "t", "partition": 0, "offset": 1}, {"topic": "t", "partition": 0, "offset": 2}]}', "duplicate"),
    ],
)
def test_bad_offset_files(text: str, message: str) -> None:
    with pytest.raises(InvalidRequestError, match=message):
        parse_offset_json(text)
