"""``kafkalab server-start server.properties`` with Kafka's KRaft keys, as a real process.

A node starts only on directories ``kafkalab storage format`` prepared; it takes its cluster id
from ``meta.properties`` (clients see it in Metadata, read here with kafka-python's admin
client), binds its broker and controller listeners, and refuses a directory formatted for
another node with Kafka's message and exit status 1. Refusals run in process (they end before
anything binds); the one node that starts is a real process.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from kafka import KafkaAdminClient

from kafkalab.client.launcher import start_server, unused_port
from kafkalab.tools.cli import main

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qk"


def write_properties(path: Path, node_id: int, controller_port: int, log_dir: Path) -> Path:
    path.write_text(
        "process.roles=broker,controller\n"
        f"node.id={node_id}\n"
        f"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:{controller_port}\n"
        "controller.listener.names=CONTROLLER\n"
        f"controller.quorum.voters={node_id}@127.0.0.1:{controller_port}\n"
        f"log.dirs={log_dir}\n")
    return path


def refused(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """Run a command that must fail before it binds anything, in process (no interpreter start);
    returns its stderr."""
    assert main(list(args)) == 1
    return capsys.readouterr().err


def test_unformatted_directory_refused_with_kafkas_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_properties(tmp_path / "server.properties", 1, unused_port(), tmp_path / "data")
    assert "No readable meta.properties files found." in refused(capsys, "server-start", str(config), "--port", "0")


def test_directory_of_another_node_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    controller_port = unused_port()
    config = write_properties(tmp_path / "server.properties", 1, controller_port, tmp_path / "data")
    assert main(["storage", "format", "-t", CLUSTER, "-c", str(config)]) == 0
    other = write_properties(tmp_path / "other.properties", 2, controller_port, tmp_path / "data")
    stderr = refused(capsys, "server-start", str(other), "--port", "0")
    assert "Stored node id 1 doesn't match previous node id 2" in stderr


def test_invalid_combination_refused_before_anything_starts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "server.properties"
    config.write_text("process.roles=broker,controller\nnode.id=1\ncontroller.quorum.voters=1@127.0.0.1:9093\n"
                      f"log.dirs={tmp_path}\n")
    stderr = refused(capsys, "server-start", str(config))
    assert "controller.listener.names must contain at least one value appearing in the 'listeners'" in stderr


def test_quorums_kafkalab_processes_cannot_run_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """kafkalab's processes run a one-voter quorum, and a combined node is that voter."""
    port = unused_port()
    three_voters = write_properties(tmp_path / "three.properties", 1, port, tmp_path / "c")
    text = three_voters.read_text().replace(f"voters=1@127.0.0.1:{port}",
                                            f"voters=1@127.0.0.1:{port},2@127.0.0.1:1,3@127.0.0.1:2")
    three_voters.write_text(text)
    assert "must name one controller, this node 1; got [1, 2, 3]" in refused(capsys, "server-start", str(three_voters))
    broker_only = tmp_path / "broker.properties"
    broker_only.write_text(f"process.roles=broker\nnode.id=2\nlisteners=PLAINTEXT://127.0.0.1:0\n"
                           f"controller.listener.names=CONTROLLER\n"
                           f"controller.quorum.voters=1@127.0.0.1:{port},3@127.0.0.1:{port + 1}\n"
                           f"log.dirs={tmp_path / 'b'}\n")
    assert "must name one controller; got [1, 3]" in refused(capsys, "server-start", str(broker_only))


def test_kafka_quickstart_dynamic_quorum_with_standalone_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Kafka 4's quickstart: controller.quorum.bootstrap.servers, no voters, format --standalone."""
    broker_port, controller_port = unused_port(), unused_port()
    config = tmp_path / "server.properties"
    config.write_text(
        "process.roles=broker,controller\nnode.id=1\n"
        f"controller.quorum.bootstrap.servers=localhost:{controller_port}\n"
        f"listeners=PLAINTEXT://:{broker_port},CONTROLLER://:{controller_port}\n"
        "inter.broker.listener.name=PLAINTEXT\n"
        f"advertised.listeners=PLAINTEXT://localhost:{broker_port},CONTROLLER://localhost:{controller_port}\n"
        "controller.listener.names=CONTROLLER\n"
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT\n"
        f"log.dirs={tmp_path / 'logs'}\n")
    stderr = refused(capsys, "storage", "format", "-t", CLUSTER, "-c", str(config))
    assert "you must specify one of the following: --standalone" in stderr
    assert main(["storage", "format", "-t", CLUSTER, "-c", str(config), "--standalone"]) == 0
    assert "dynamic metadata voter directory" in capsys.readouterr().out
    server = start_server(tmp_path / "logs", config=config, port=None)
    try:
        admin = KafkaAdminClient(bootstrap_servers=f"localhost:{broker_port}", request_timeout_ms=10_000)
        try:
            cluster = admin.describe_cluster()
        finally:
            admin.close()
        assert cluster["cluster_id"] == CLUSTER
        assert [(b["host"], b["port"]) for b in cluster["brokers"]] == [("localhost", broker_port)]
        with socket.create_connection(("127.0.0.1", controller_port), timeout=5):
            pass  # the controller listener is bound too
    finally:
        assert server.stop() == 0
