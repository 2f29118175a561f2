"""Kafka's own Admin client (3.9.1) describes the cluster and elects leaders through kafkalab.

``describeCluster`` sends DescribeCluster (60) and ``electLeaders`` ElectLeaders (43) v2; the
client decodes kafkalab's answers with Kafka's generated code and maps each error code to
Kafka's exception classes, so this checks the wire format and the error codes at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalab.client.connection import bootstrap
from kafkalab.client.launcher import ServerProcess, start_server
from tests.java_client import java_client

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    process = start_server(tmp_path / "data")
    try:
        with bootstrap(process.bootstrap) as connection:
            topic = {"name": "t", "num_partitions": 1, "replication_factor": 1, "configs": []}
            assert connection.request(19, {"topics": [topic], "timeout_ms": 1000}).topics[0].error_code == 0
        yield process
    finally:
        process.stop()


def test_java_admin_describes_the_cluster_and_elects_leaders(server):
    client = java_client()
    out = client.run("ClusterAdmin", "", server.bootstrap, "t", timeout_s=90).splitlines()
    host, port = server.bootstrap.rsplit(":", 1)
    assert out[0] == "cluster kafkalab-cluster controller 0"
    assert out[1] == f"node 0 {host} {port}"
    assert out[2:] == [
        "elect PREFERRED t-0 ElectionNotNeededException",
        "elect PREFERRED missing-topic-0 UnknownTopicOrPartitionException",
        "elect UNCLEAN t-0 ElectionNotNeededException",
        "elect UNCLEAN missing-topic-0 UnknownTopicOrPartitionException",
    ]
