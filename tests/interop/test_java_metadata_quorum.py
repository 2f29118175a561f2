"""Kafka's own Admin client (3.9.1) reads kafkalab's DescribeQuorum, and ``kafkalab
metadata-quorum`` prints what it decoded in kafka-metadata-quorum.sh's layout.

``describeMetadataQuorum`` sends DescribeQuorum (55) v2 and decodes the answer with Kafka's
generated code: leader, epoch, high watermark, each voter's replication state, and the voters'
endpoints (v2's Nodes). A lone kafkalab node is a one-voter quorum that leads itself.
"""

from __future__ import annotations

import io
import time
from argparse import Namespace
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalab.client.connection import bootstrap
from kafkalab.client.launcher import ServerProcess, start_server
from kafkalab.tools import metadata_quorum
from tests.java_client import java_client

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    process = start_server(tmp_path / "data")
    try:
        with bootstrap(process.bootstrap) as connection:
            topic = {"name": "t", "num_partitions": 2, "replication_factor": 1, "configs": []}
            assert connection.request(19, {"topics": [topic], "timeout_ms": 1000}).topics[0].error_code == 0
        yield process
    finally:
        process.stop()


def _tool(server: ServerProcess, *flags: str) -> str:
    out = io.StringIO()
    args = Namespace(bootstrap_server=server.bootstrap, subcommand="describe", status="--status" in flags,
                     replication="--replication" in flags, human_readable="--human-readable" in flags)
    assert metadata_quorum.run(args, out, io.StringIO()) == 0
    return out.getvalue()


def test_java_admin_decodes_the_quorum_the_tool_prints(server: ServerProcess) -> None:
    started_ms = int(time.time() * 1000)
    lines = java_client().run("MetadataQuorum", "", server.bootstrap, timeout_s=90).splitlines()
    host, port = server.bootstrap.rsplit(":", 1)
    quorum, voter, node = lines
    _, _, leader, _, epoch, _, hw = quorum.split()
    assert (leader, epoch) == ("0", "1") and int(hw) >= 4  # bootstrap, broker, topic, 2 partitions
    kind, replica, directory, log_end, fetched, caught_up = voter.split()
    assert (kind, replica, directory, log_end) == ("voter", "0", "AAAAAAAAAAAAAAAAAAAAAA", hw)
    assert int(fetched) >= started_ms and int(caught_up) >= started_ms
    assert node == f"node 0 PLAINTEXT://{host}:{port}"

    status = _tool(server, "--status").splitlines()
    assert status[:6] == ["ClusterId:              kafkalab-cluster", "LeaderId:               0",
                          "LeaderEpoch:            1", f"HighWatermark:          {hw}",
                          "MaxFollowerLag:         0", "MaxFollowerLagTimeMs:   0"]
    assert status[6:] == [f'CurrentVoters:          [{{"id": 0, "directoryId": null, "endpoints": '
                          f'["PLAINTEXT://{host}:{port}"]}}]', "CurrentObservers:       []"]
    header, row = _tool(server, "--replication").splitlines()
    assert [cell.strip() for cell in header.split("\t")] == [*metadata_quorum.HEADERS, ""]
    cells = [cell.strip() for cell in row.split("\t")]
    assert cells[:4] == ["0", directory, hw, "0"] and cells[6:] == ["Leader", ""]
    assert int(cells[4]) >= int(fetched)



def test_describe_quorum_of_another_partition_is_refused(server: ServerProcess) -> None:
    with bootstrap(server.bootstrap) as connection:
        response = connection.request(55, {"topics": [
            {"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 1}]}]})
    (partition,) = response.topics[0].partitions
    assert response.error_code == 0 and partition.partition_index == 1
    assert partition.error_code == 3  # UNKNOWN_TOPIC_OR_PARTITION, as KafkaRaftClient answers
