"""``kafkalab delete-records --bootstrap-server`` against a live server: same lines as ``--data-dir``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalab.client.connection import bootstrap
from kafkalab.client.launcher import ServerProcess, start_server
from kafkalab.storage import checkpoints
from kafkalab.tools.cli import main
from tests.broker._harness import batch

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    process = start_server(tmp_path / "data")
    try:
        with bootstrap(process.bootstrap) as connection:
            topic = {"name": "t", "num_partitions": 2, "replication_factor": 1, "configs": []}
            assert connection.request(19, {"topics": [topic], "timeout_ms": 1000}).topics[0].error_code == 0
            for partition, count in ((0, 10), (1, 4)):
                body = {"acks": -1, "timeout_ms": 1000, "topic_data": [{"name": "t", "partition_data": [
                    {"index": partition, "records": batch([b"v%d" % i for i in range(count)])}]}]}
                assert connection.request(0, body).responses[0].partition_responses[0].error_code == 0
        yield process
    finally:
        process.stop()


def run(capsys: pytest.CaptureFixture[str], tmp_path: Path, where: list[str], partitions: list[dict]) -> tuple[int, str, str]:
    path = tmp_path / "offsets.json"
    path.write_text(json.dumps({"partitions": partitions, "version": 1}))
    status = main(["delete-records", *where, "--offset-json-file", str(path)])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _earliest(server: ServerProcess, partition: int) -> int:
    with bootstrap(server.bootstrap) as connection:
        body = {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": "t", "partitions": [{"partition_index": partition, "timestamp": -2}]}]}
        return int(connection.request(2, body).topics[0].partitions[0].offset)


def test_delete_records_over_the_network(server, capsys, tmp_path):
    status, out, err = run(capsys, tmp_path, ["--bootstrap-server", server.bootstrap], [
        {"topic": "t", "partition": 0, "offset": 6}, {"topic": "t", "partition": 1, "offset": -1}])
    assert (status, err) == (0, "")
    assert out == ("Executing records delete operation\n"
                   "Records delete operation completed:\n"
                   "partition: t-0\tlow_watermark: 6\n"
                   "partition: t-1\tlow_watermark: 4\n")
    assert (_earliest(server, 0), _earliest(server, 1)) == (6, 4)  # the live broker moved them
    assert server.stop() == 0
    offsets = checkpoints.read_offsets(server.data_dir / checkpoints.LOG_START_OFFSET_CHECKPOINT)
    assert offsets == {("t", 0): 6, ("t", 1): 4}


def test_partition_errors_print_like_the_data_dir_path(server, capsys, tmp_path):
    partitions = [{"topic": "t", "partition": 0, "offset": 99}, {"topic": "t", "partition": 1, "offset": 2},
                  {"topic": "ghost", "partition": 0, "offset": 1}]
    status, out, _ = run(capsys, tmp_path, ["--bootstrap-server", server.bootstrap], partitions)
    assert status == 1
    lines = out.splitlines()[2:]
    assert lines[0].startswith("partition: t-0\terror: OffsetOutOfRangeError: ")
    assert lines[1] == "partition: t-1\tlow_watermark: 2"
    assert lines[2] == "partition: ghost-0\terror: KafkaError: This server does not host this topic-partition: ghost-0"
    assert server.stop() == 0
    local_status, local_out, _ = run(capsys, tmp_path, ["--data-dir", str(server.data_dir)], partitions)
    local_lines = local_out.splitlines()[2:]
    assert local_status == 1 and [line.split(":", 2)[:2] for line in local_lines] == [
        line.split(":", 2)[:2] for line in lines]  # same partitions, same outcome kinds
    assert local_lines[2] == lines[2]


def test_unreachable_bootstrap_server(capsys, tmp_path):
    status, _, err = run(capsys, tmp_path, ["--bootstrap-server", "127.0.0.1:1"], [
        {"topic": "t", "partition": 0, "offset": 1}])
    assert status == 1 and err.startswith("Error: no bootstrap server answered")
