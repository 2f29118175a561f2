"""Kafka's own Admin client (3.9.1) reassigns partitions through kafkalab.

``alterPartitionReassignments`` sends AlterPartitionReassignments (45) v0 and
``listPartitionReassignments`` ListPartitionReassignments (46) v0; the client decodes kafkalab's
answers with Kafka's generated code and maps each partition's error code to Kafka's exception
class, so this checks the wire format and the errors a KRaft controller gives at once: a target
naming an unregistered broker, a cancellation with nothing in progress, an unknown topic.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalab.client import admin
from kafkalab.client.connection import bootstrap
from kafkalab.client.launcher import ServerProcess, start_server
from tests.java_client import java_client

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    process = start_server(tmp_path / "data")
    try:
        with bootstrap(process.bootstrap) as connection:
            admin.create_topic(connection, "t", partitions=3, replication_factor=1, configs={})
        yield process
    finally:
        process.stop()


def test_java_admin_reassigns_partitions(server):
    client = java_client()
    out = client.run("PartitionReassigner", "", server.bootstrap, "t", "0", timeout_s=90).splitlines()
    assert out == [
        "alter t-0 ok",
        "alter t-1 InvalidReplicaAssignmentException: The manual partition assignment includes broker 1, "
        "but no such broker is registered.",
        "alter t-2 NoReassignmentInProgressException: No partition reassignment is in progress.",
        "alter missing-topic-0 UnknownTopicOrPartitionException: Unable to find a topic named missing-topic.",
        "list all 0",
        "list topic 0",
    ]
