"""``kafkalab leader-election`` against a live server, and its report of a three-broker election.

The single node leads every partition already, so both election types answer "not needed"; the
report of a real change is checked on the simulated three-broker cluster's controller, whose
answer goes through the same ElectLeaders response schema (Kafka's spec, checked in
tests/protocol against kafka-python's copy).
"""

from __future__ import annotations

import io
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalab.client.connection import bootstrap
from kafkalab.client.launcher import ServerProcess, start_server
from kafkalab.controller.local import LocalController
from kafkalab.controller.partition_change import Election
from kafkalab.metadata.image import BrokerRegistration
from kafkalab.protocol.messages.elect_leaders import ELECT_LEADERS_RESPONSE
from kafkalab.tools.cli import main
from kafkalab.tools.leader_election import report

pytestmark = pytest.mark.timeout(60)


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


def test_elections_over_the_network(server, capsys):
    base = ["leader-election", "--bootstrap-server", server.bootstrap]
    assert main([*base, "--election-type", "PREFERRED", "--topic", "t", "--partition", "1"]) == 0
    assert capsys.readouterr().out == "Valid replica already elected for partitions t-1\n"
    assert main([*base, "--election-type", "unclean", "--all-topic-partitions"]) == 0
    assert capsys.readouterr().out == ""  # nothing needed an election; Kafka leaves those out
    assert main([*base, "--election-type", "PREFERRED", "--topic", "nope", "--partition", "0"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ("Error completing leader election (PREFERRED) for partition: nope-0: "
                            "org.apache.kafka.common.errors.UnknownTopicOrPartitionException: "
                            "No such partition as nope-0\n")
    assert captured.err == "1 replica(s) could not be elected\n"


def test_report_of_a_preferred_election_on_three_brokers():
    controller = LocalController([BrokerRegistration(b, b, "h", 9090 + b) for b in (1, 2, 3)], random.Random(5))
    controller.create_topic("orders", 2, 3)
    preferred = controller.image.partition("orders", 0).replicas[0]
    controller.fence_broker(preferred)
    controller.register_broker(BrokerRegistration(preferred, 9, "h", 9999))
    current = controller.image.partition("orders", 0)
    controller.alter_partition(current.leader, "orders", 0, current.leader_epoch, current.partition_epoch,
                               [(b, -1) for b in current.replicas])
    R = ELECT_LEADERS_RESPONSE.cls
    results = controller.elect_leaders(Election.PREFERRED, [("orders", 0), ("orders", 1)])
    response = R(replica_election_results=(R.ReplicaElectionResult("orders", tuple(
        R.ReplicaElectionResult.PartitionResult(p, e, m) for _, p, e, m in results)),))
    wire = ELECT_LEADERS_RESPONSE.decode(ELECT_LEADERS_RESPONSE.encode(response, 2), 2)
    out, err = io.StringIO(), io.StringIO()
    assert report("PREFERRED", wire, out, err) == 0
    assert out.getvalue() == ("Successfully completed leader election (PREFERRED) for partitions orders-0\n"
                              "Valid replica already elected for partitions orders-1\n")
