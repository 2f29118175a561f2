"""``kafkalab reassign-partitions`` against a live single-node server: the whole session of Kafka's
operations guide (generate, execute with a throttle, verify clearing it, list, cancel), and the
errors Kafka's controller and tool give for brokers that do not exist."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalab.client import admin
from kafkalab.client.connection import bootstrap
from kafkalab.client.launcher import ServerProcess, start_server
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.tools.cli import main

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = start_server(tmp_path_factory.mktemp("reassign") / "data")  # one server for both tests
    try:
        with bootstrap(process.bootstrap) as connection:
            admin.create_topic(connection, "foo", partitions=2, replication_factor=1, configs={})
        yield process
    finally:
        process.stop()


def _plan(path: Path, partitions: list[tuple[str, int, list[int]]]) -> str:
    path.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": r} for t, p, r in partitions]}))
    return str(path)


def _throttle_configs(process: ServerProcess) -> dict[str, str | None]:
    with bootstrap(process.bootstrap) as connection:
        request = {"resources": [
            {"resource_type": 2, "resource_name": "foo", "configuration_keys": [
                "leader.replication.throttled.replicas", "follower.replication.throttled.replicas"]},
            {"resource_type": 4, "resource_name": "0", "configuration_keys": [
                "leader.replication.throttled.rate", "follower.replication.throttled.rate"]}]}
        response = connection.request(ApiKey.DESCRIBE_CONFIGS, request)
    return {c.name: c.value for r in response.results for c in r.configs}


def test_generate_execute_verify_on_one_node(server, tmp_path, capsys):  # type: ignore[no-untyped-def]
    base = ["reassign-partitions", "--bootstrap-server", server.bootstrap]
    topics = tmp_path / "topics.json"
    topics.write_text('{"topics": [{"topic": "foo"}], "version": 1}')
    assert main([*base, "--generate", "--topics-to-move-json-file", str(topics), "--broker-list", "0"]) == 0
    same = '{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[0],"log_dirs":["any"]},' \
           '{"topic":"foo","partition":1,"replicas":[0],"log_dirs":["any"]}]}'
    assert capsys.readouterr().out == (f"Current partition replica assignment\n{same}\n\n"
                                       f"Proposed partition reassignment configuration\n{same}\n")

    plan = _plan(tmp_path / "plan.json", [("foo", 1, [0]), ("foo", 0, [0])])
    assert main([*base, "--execute", "--reassignment-json-file", plan, "--throttle", "1000"]) == 0
    assert capsys.readouterr().out == (
        f"Current partition replica assignment\n\n{same}\n\n"
        "Save this to use as the --reassignment-json-file option during rollback\n"
        "Warning: You must run --verify periodically, until the reassignment completes, to ensure the "
        "throttle is removed.\nThe inter-broker throttle limit was set to 1000 B/s\n"
        "Successfully started partition reassignments for foo-0,foo-1\n")
    # Nothing moves (the target is where the partitions are): only the leader side is throttled.
    assert _throttle_configs(server) == {
        "leader.replication.throttled.replicas": "0:0,1:0", "follower.replication.throttled.replicas": "",
        "leader.replication.throttled.rate": "1000", "follower.replication.throttled.rate": "1000"}

    assert main([*base, "--verify", "--reassignment-json-file", plan]) == 0
    assert capsys.readouterr().out == (
        "Status of partition reassignment:\nReassignment of partition foo-0 is completed.\n"
        "Reassignment of partition foo-1 is completed.\n\n"
        "Clearing broker-level throttles on broker 0\nClearing topic-level throttles on topic foo\n")
    cleared = _throttle_configs(server)
    assert cleared["leader.replication.throttled.replicas"] == ""  # back to Kafka's default
    assert cleared["leader.replication.throttled.rate"] == str(2**63 - 1)

    assert main([*base, "--list"]) == 0
    assert capsys.readouterr().out == "No partition reassignments found.\n"
    assert main([*base, "--cancel", "--reassignment-json-file", plan, "--preserve-throttles"]) == 0
    assert capsys.readouterr().out == ("None of the specified partition reassignments are active.\n"
                                       "None of the specified partition moves are active.")


def test_errors_as_kafka_reports_them(server, tmp_path, capsys):  # type: ignore[no-untyped-def]
    base = ["reassign-partitions", "--bootstrap-server", server.bootstrap]
    # The tool checks broker ids against the cluster before asking the controller.
    assert main([*base, "--execute", "--reassignment-json-file", _plan(tmp_path / "a.json", [("foo", 0, [1])])]) == 1
    assert capsys.readouterr().out == "Error: Unknown broker id 1\n"
    assert main([*base, "--execute", "--reassignment-json-file", _plan(tmp_path / "b.json", [("foo", 7, [0])])]) == 1
    assert capsys.readouterr().out == "Error: Unable to find partition: foo-7\n"
    assert main([*base, "--verify", "--execute"]) == 1
    assert capsys.readouterr().out.startswith("Command must include exactly one action")
    assert main([*base, "--verify", "--reassignment-json-file", "x.json", "--throttle", "5"]) == 1
    assert capsys.readouterr().out == 'Option "[throttle]" can\'t be used with action "[verify]"\n'
    # The controller's own answers, as an admin client that skips the tool's checks sees them.
    with bootstrap(server.bootstrap) as connection:
        response = connection.request(ApiKey.ALTER_PARTITION_REASSIGNMENTS, {"topics": [
            {"name": "foo", "partitions": [{"partition_index": 0, "replicas": [0, 2]},
                                           {"partition_index": 1, "replicas": None},
                                           {"partition_index": 2, "replicas": [0]}]},
            {"name": "nope", "partitions": [{"partition_index": 0, "replicas": [0]}]}]})
    answers = [(t.name, p.partition_index, p.error_code, p.error_message) for t in response.responses for p in t.partitions]
    assert answers == [
        ("foo", 0, 39, "The manual partition assignment includes broker 2, but no such broker is registered."),
        ("foo", 1, 85, "No partition reassignment is in progress."),
        ("foo", 2, 3, "Unable to find partition foo:2."),
        ("nope", 0, 3, "Unable to find a topic named nope."),
    ]
    # Version 1 (KIP-860) may forbid a change of replication factor; keeping it is allowed.
    with bootstrap(server.bootstrap) as connection:
        response = connection.request(ApiKey.ALTER_PARTITION_REASSIGNMENTS, {
            "allow_replication_factor_change": False,
            "topics": [{"name": "foo", "partitions": [{"partition_index": 0, "replicas": [0]}]}]}, api_version=1)
    assert [p.error_code for t in response.responses for p in t.partitions] == [0]
