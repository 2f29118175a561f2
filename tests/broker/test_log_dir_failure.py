"""A failed log directory goes offline and its partitions answer KAFKA_STORAGE_ERROR (56).

Mirrors Kafka's log-directory failure handling (``LogDirFailureChannel``,
``ReplicaManager.handleLogDirFailure``): the first I/O error in a directory takes every
partition in it offline, without touching its files again.
"""

from __future__ import annotations

import shutil

import pytest

from kafkalab.clock import ManualClock
from kafkalab.errors import ErrorCode, LogDirFailureError
from kafkalab.storage import Log, LogConfig
from tests.broker._harness import Harness, batch, records_of

SMALL_SEGMENT = {"segment.bytes": "200"}  # every batch below rolls a new segment file


@pytest.fixture
def harness(tmp_path):
    h = Harness(tmp_path / "data")
    yield h
    h.close()


def list_offsets(harness: Harness, topic: str) -> int:
    body = {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}]}
    return harness.call(2, 7, body).topics[0].partitions[0].error_code


def test_deleted_directory_takes_its_partitions_offline(harness):
    harness.create_topic("a", configs=SMALL_SEGMENT)
    harness.create_topic("b")
    assert harness.produce("a", 0, batch([b"x" * 80])).error_code == 0
    shutil.rmtree(harness.data_dir)
    failed = harness.produce("a", 0, batch([b"y" * 80]), version=9)  # the roll cannot create a file
    assert failed.error_code == ErrorCode.KAFKA_STORAGE_ERROR == 56
    assert "Error while rolling log segment for a-0 in dir" in failed.error_message
    assert harness.broker.log_dir_failures.all_offline
    # Every partition of the directory is now offline, even one whose files were never touched.
    assert harness.produce("b", 0, batch([b"z"])).error_code == ErrorCode.KAFKA_STORAGE_ERROR
    fetched = harness.call(1, 11, harness.fetch_body("b", 0, 0)).responses[0].partitions[0]
    assert fetched.error_code == ErrorCode.KAFKA_STORAGE_ERROR and fetched.high_watermark == -1
    assert records_of(fetched) == b""
    assert list_offsets(harness, "b") == ErrorCode.KAFKA_STORAGE_ERROR


def test_shutdown_after_the_directory_vanished_records_the_failure(harness):
    harness.create_topic("a")
    assert harness.produce("a", 0, batch([b"x"])).error_code == 0
    shutil.rmtree(harness.data_dir)
    harness.close()  # used to raise FileNotFoundError from the checkpoint write
    message = harness.broker.log_dir_failures.shutdown_message()
    assert message.startswith(f"Shutdown broker because all log dirs in {harness.data_dir} have failed")


def test_storage_turns_an_os_error_into_a_typed_log_dir_failure(tmp_path):
    log = Log.open(tmp_path / "t-0", LogConfig(segment_bytes=200), ManualClock(0))
    log.append_as_leader(batch([b"x" * 80]), 0)
    shutil.rmtree(tmp_path / "t-0")
    with pytest.raises(LogDirFailureError) as caught:
        log.append_as_leader(batch([b"y" * 80]), 0)
    assert caught.value.log_dir == str(tmp_path) and caught.value.error_code == 56
    assert isinstance(caught.value.__cause__.__cause__, FileNotFoundError)  # via the segment
    log.close_handlers()


def test_a_failed_periodic_checkpoint_takes_the_directory_offline(tmp_path):
    harness = Harness(tmp_path / "data", properties={"replica.high.watermark.checkpoint.interval.ms": "1000"})
    try:
        harness.create_topic("a")
        shutil.rmtree(harness.data_dir)
        harness.advance(1000)
        assert harness.broker.log_dir_failures.all_offline
        assert "highwatermark-checkpoint" in harness.broker.housekeeping.errors[0]
        assert harness.produce("a", 0, batch([b"x"])).error_code == ErrorCode.KAFKA_STORAGE_ERROR
    finally:
        harness.close()
