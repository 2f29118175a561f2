"""``kafkalab cluster-start``: formats, writes server.properties, starts the node processes,
prints the bootstrap servers, and stops them all on SIGTERM; a second run restarts the same
cluster with its data. kafka-python is the client."""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from kafkalab.storage import meta_properties

BOOTSTRAP = re.compile(r"^kafkalab cluster started: bootstrap servers (\S+)$")
WAIT_S = 30.0


def _start(data_dir: Path) -> tuple[subprocess.Popen[str], str, list[str]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "kafkalab", "cluster-start", "--nodes", "1", "--data-dir", str(data_dir),
         "--base-port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert process.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + WAIT_S
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while time.monotonic() < deadline and selector.select(deadline - time.monotonic()):
            line = process.stdout.readline().rstrip("\n")
            lines.append(line)
            match = BOOTSTRAP.match(line)
            if match:
                return process, match.group(1), lines
            if not line and process.poll() is not None:
                break
    process.kill()
    process.wait(5)
    raise AssertionError(f"cluster-start did not announce its bootstrap servers: {lines}")


def _stop(process: subprocess.Popen[str]) -> tuple[int, str]:
    process.send_signal(signal.SIGTERM)
    try:
        out, _ = process.communicate(timeout=WAIT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate(timeout=5)
        raise
    return process.returncode, out


def test_one_command_cluster_serves_clients_and_restarts_with_its_data(tmp_path: Path) -> None:
    process, bootstrap, lines = _start(tmp_path)
    try:
        assert any(line.startswith("Formatting metadata directory") for line in lines)
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", request_timeout_ms=10_000)
        try:
            for i in range(5):
                producer.send("events", f"e{i}".encode(), partition=0).get(WAIT_S)
        finally:
            producer.close(timeout=2)
    finally:
        status, out = _stop(process)
    assert status == 0 and "kafkalab cluster stopped" in out
    first = meta_properties.read(tmp_path / "node-1" / "data")
    assert first is not None and first.node_id == 1

    process, again, lines = _start(tmp_path)
    try:
        assert again == bootstrap  # same ports as the first run
        assert not any(line.startswith("Formatting") for line in lines)  # formatted once only
        consumer = KafkaConsumer(bootstrap_servers=again, consumer_timeout_ms=10_000)
        try:
            consumer.assign([TopicPartition("events", 0)])
            consumer.seek_to_beginning()
            values = [m.value for _, m in zip(range(5), consumer)]
        finally:
            consumer.close()
        assert values == [f"e{i}".encode() for i in range(5)]
    finally:
        status, _ = _stop(process)
    assert status == 0
    assert meta_properties.read(tmp_path / "node-1" / "data") == first  # the same cluster


def test_a_directory_restarts_only_with_the_node_count_it_was_made_with(tmp_path: Path) -> None:
    from kafkalab.tools.cluster_start import NodePlan, plan, prepare
    import random
    plans = plan(3, tmp_path, 0)
    assert [(n.node_id, n.roles) for n in plans] == [(1, "broker"), (2, "broker"), (3, "broker"), (4, "controller")]
    prepare(plans, random.Random(5))
    assert isinstance(plans[0], NodePlan) and "controller.quorum.voters=4@127.0.0.1:" in plans[0].config_path.read_text()
    done = subprocess.run([sys.executable, "-m", "kafkalab", "cluster-start", "--nodes", "2",
                           "--data-dir", str(tmp_path)], capture_output=True, text=True, timeout=WAIT_S)
    assert done.returncode == 1
    assert "holds a cluster of 3 broker(s); start it with --nodes 3" in done.stderr
    assert plan(3, tmp_path, 0) == plans  # a later run keeps every port
