"""``kafkalab configs --bootstrap-server`` against a live server: same lines as ``--data-dir``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalab.client.connection import bootstrap
from kafkalab.client.launcher import ServerProcess, start_server
from kafkalab.tools.cli import main

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    process = start_server(tmp_path / "data", overrides=["log.retention.hours=24"])
    try:
        with bootstrap(process.bootstrap) as connection:
            topic = {"name": "t", "num_partitions": 2, "replication_factor": 1, "configs": []}
            assert connection.request(19, {"topics": [topic], "timeout_ms": 1000}).topics[0].error_code == 0
        yield process
    finally:
        process.stop()


def run(capsys: pytest.CaptureFixture[str], where: list[str], *argv: str) -> tuple[int, str, str]:
    status = main(["configs", *where, *argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_alter_and_describe_over_the_network_match_the_data_dir(server, capsys):
    net = ["--bootstrap-server", server.bootstrap]
    topic = ["--entity-type", "topics", "--entity-name", "t"]
    status, out, err = run(capsys, net, *topic, "--alter", "--add-config", "retention.ms=1000,cleanup.policy=[compact,delete]")
    assert (status, out, err) == (0, "Completed updating config for topic t.\n", "")
    _, described, _ = run(capsys, net, *topic, "--describe")
    assert described == (
        "Dynamic configs for topic t are:\n"
        "  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete, "
        "DEFAULT_CONFIG:log.cleanup.policy=delete}\n"
        "  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000, "
        "STATIC_BROKER_CONFIG:log.retention.hours=24, DEFAULT_CONFIG:log.retention.hours=168}\n"
    )
    status, out, _ = run(capsys, net, *topic, "--alter", "--delete-config", "cleanup.policy")
    assert status == 0
    _, described_all, _ = run(capsys, net, *topic, "--describe", "--all")
    assert "  cleanup.policy=delete sensitive=false synonyms={DEFAULT_CONFIG:log.cleanup.policy=delete}\n" in described_all
    status, out, _ = run(capsys, net, "--entity-type", "brokers", "--entity-default", "--alter",
                         "--add-config", "log.retention.ms=7200000")
    assert (status, out) == (0, "Completed updating default config for brokers in the cluster.\n")
    _, after_delete, _ = run(capsys, net, *topic, "--describe")
    _, broker_default, _ = run(capsys, net, "--entity-type", "brokers", "--entity-default", "--describe")
    assert server.stop() == 0
    # The server wrote the same dynamic-configs.json the --data-dir path reads; the static layer
    # (log.retention.hours=24) was an --override, so the offline view lacks only that synonym.
    local = ["--data-dir", str(server.data_dir)]
    _, offline, _ = run(capsys, local, *topic, "--describe")
    assert offline == after_delete.replace("STATIC_BROKER_CONFIG:log.retention.hours=24, ", "")
    assert offline.startswith("Dynamic configs for topic t are:\n  retention.ms=1000 ")
    _, offline_default, _ = run(capsys, local, "--entity-type", "brokers", "--entity-default", "--describe")
    assert offline_default == broker_default.replace("STATIC_BROKER_CONFIG:log.retention.hours=24, ", "") == (
        "Default configs for brokers in the cluster are:\n"
        "  log.retention.ms=7200000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=7200000, "
        "DEFAULT_CONFIG:log.retention.hours=168}\n"
    )


def test_errors_over_the_network(server, capsys):
    net = ["--bootstrap-server", server.bootstrap]
    status, _, err = run(capsys, net, "--entity-type", "topics", "--entity-name", "t", "--alter",
                         "--add-config", "retention.ms=soon")
    assert status == 1 and "ConfigError" in err and "retention.ms" in err
    status, _, err = run(capsys, net, "--entity-type", "topics", "--entity-name", "t", "--alter",
                         "--delete-config", "segment.bytes")
    assert status == 1 and "Invalid config(s): segment.bytes" in err
    status, _, err = run(capsys, net, "--entity-type", "topics", "--entity-name", "ghost", "--describe")
    assert status == 1 and "UNKNOWN_TOPIC_OR_PARTITION" in err
    status, _, err = run(capsys, net, "--entity-type", "users", "--entity-name", "alice", "--describe")
    assert status == 1 and "--data-dir" in err
    status, _, err = run(capsys, ["--bootstrap-server", "127.0.0.1:1"], "--entity-type", "topics", "--describe")
    assert status == 1 and "NetworkError" in err


def test_describe_every_topic_lists_topics_from_metadata(server, capsys):
    with bootstrap(server.bootstrap) as connection:
        topic = {"name": "u", "num_partitions": 1, "replication_factor": 1,
                 "configs": [{"name": "segment.bytes", "value": "1048576"}]}
        assert connection.request(19, {"topics": [topic], "timeout_ms": 1000}).topics[0].error_code == 0
    status, out, _ = run(capsys, ["--bootstrap-server", server.bootstrap], "--entity-type", "topics", "--describe")
    assert status == 0 and out == (
        "Dynamic configs for topic t are:\n"
        "Dynamic configs for topic u are:\n"
        "  segment.bytes=1048576 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:segment.bytes=1048576, "
        "DEFAULT_CONFIG:log.segment.bytes=1073741824}\n"
    )
