"""The live server drives the broker's timer from the system clock: retention and delayed deletes."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.broker._harness import batch
from tests.server._server_process import ServerProcess, call

pytestmark = pytest.mark.timeout(60)
WAIT_S = 15.0  # generous for a loaded CI core; the intervals below are 200 ms


def _wait_until(condition, timeout_s: float = WAIT_S) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def _names(directory: Path) -> set[str]:
    return {p.name for p in directory.iterdir()}


def test_lowered_retention_ms_deletes_segments_on_a_live_server(tmp_path):
    server = ServerProcess(
        tmp_path / "data", "--override", "log.retention.check.interval.ms=200",
        "--override", "log.segment.delete.delay.ms=300",
    ).start()
    try:
        with server.connect() as sock:
            topic = {"name": "r", "num_partitions": 1, "replication_factor": 1,
                     "configs": [{"name": "segment.bytes", "value": "100"}]}
            assert call(sock, 19, 7, {"topics": [topic], "timeout_ms": 1000}).topics[0].error_code == 0
            now_ms = int(time.time() * 1000)
            for cid, (value, timestamp_ms) in enumerate([(b"old", now_ms - 600_000), (b"new", now_ms)], 2):
                body = {"acks": -1, "timeout_ms": 1000, "topic_data": [
                    {"name": "r", "partition_data": [{"index": 0, "records": batch([value], timestamp_ms=timestamp_ms)}]}]}
                assert call(sock, 0, 7, body, cid).responses[0].partition_responses[0].error_code == 0
            partition_dir = tmp_path / "data" / "r-0"
            first = "00000000000000000000.log"
            time.sleep(0.5)  # several retention checks pass: 10 minutes old is within 7 days
            assert first in _names(partition_dir)
            alter = {"resources": [{"resource_type": 2, "resource_name": "r", "configs": [
                {"name": "retention.ms", "config_operation": 0, "value": "60000"}]}], "validate_only": False}
            assert call(sock, 44, 1, alter, 5).responses[0].error_code == 0
            assert _wait_until(lambda: first not in _names(partition_dir)), _names(partition_dir)
            # renamed .deleted first, then removed file.delete.delay.ms later
            assert _wait_until(lambda: not any(n.endswith(".deleted") for n in _names(partition_dir)))
            body = {"replica_id": -1, "isolation_level": 0, "topics": [
                {"name": "r", "partitions": [{"partition_index": 0, "timestamp": -2}]}]}
            assert call(sock, 2, 2, body, 6).topics[0].partitions[0].offset == 1  # earliest is now 1
    finally:
        assert server.stop() == 0
