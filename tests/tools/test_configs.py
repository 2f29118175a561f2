"""``kafkalab configs``: kafka-configs.sh flags and output against a data directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab.tools.cli import main
from kafkalab.tools.configs import parse_add_config


def run(capsys: pytest.CaptureFixture[str], data_dir: Path, *argv: str) -> tuple[int, str, str]:
    status = main(["configs", "--data-dir", str(data_dir), *argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    (tmp_path / "t-0").mkdir()
    (tmp_path / "t-1").mkdir()
    return tmp_path


def test_parse_add_config_brackets() -> None:
    assert parse_add_config("k1=v1,k2=[a,b],k3=v3") == {"k1": "v1", "k2": "a,b", "k3": "v3"}
    assert parse_add_config("cleanup.policy=[compact,delete]") == {"cleanup.policy": "compact,delete"}


def test_alter_then_describe_topic(capsys: pytest.CaptureFixture[str], data_dir: Path) -> None:
    status, out, _ = run(capsys, data_dir, "--entity-type", "topics", "--entity-name", "t", "--alter",
                         "--add-config", "retention.ms=1000,cleanup.policy=[compact,delete]")
    assert status == 0 and out == "Completed updating config for topic t.\n"
    status, out, _ = run(capsys, data_dir, "--entity-type", "topics", "--entity-name", "t", "--describe")
    assert out == (
        "Dynamic configs for topic t are:\n"
        "  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete, "
        "DEFAULT_CONFIG:log.cleanup.policy=delete}\n"
        "  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000, "
        "DEFAULT_CONFIG:log.retention.hours=168}\n"
    )


def test_describe_all(capsys: pytest.CaptureFixture[str], data_dir: Path) -> None:
    status, out, _ = run(capsys, data_dir, "--entity-type", "topics", "--entity-name", "t", "--describe", "--all")
    lines = out.splitlines()
    assert lines[0] == "All configs for topic t are:"
    assert "  segment.bytes=1073741824 sensitive=false synonyms={DEFAULT_CONFIG:log.segment.bytes=1073741824}" in lines


def test_broker_default_and_per_broker(capsys: pytest.CaptureFixture[str], data_dir: Path) -> None:
    status, out, _ = run(capsys, data_dir, "--entity-type", "brokers", "--entity-default", "--alter",
                         "--add-config", "log.retention.ms=5000")
    assert out == "Completed updating default config for brokers in the cluster.\n"
    status, out, _ = run(capsys, data_dir, "--entity-type", "brokers", "--entity-name", "0", "--alter",
                         "--add-config", "num.io.threads=4")
    assert out == "Completed updating config for broker 0.\n"
    _, out, _ = run(capsys, data_dir, "--entity-type", "brokers", "--entity-default", "--describe")
    assert out == (
        "Default configs for brokers in the cluster are:\n"
        "  log.retention.ms=5000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=5000, "
        "DEFAULT_CONFIG:log.retention.hours=168}\n"
    )
    _, out, _ = run(capsys, data_dir, "--entity-type", "brokers", "--entity-name", "0", "--describe")
    assert out == (
        "Dynamic configs for broker 0 are:\n"
        "  num.io.threads=4 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:num.io.threads=4, DEFAULT_CONFIG:num.io.threads=8}\n"
    )
    # The topic now inherits the cluster default, and describe says where it came from.
    _, out, _ = run(capsys, data_dir, "--entity-type", "topics", "--entity-name", "t", "--describe", "--all")
    assert ("  retention.ms=5000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=5000, "
            "DEFAULT_CONFIG:log.retention.hours=168}") in out.splitlines()


def test_delete_config(capsys: pytest.CaptureFixture[str], data_dir: Path) -> None:
    run(capsys, data_dir, "--entity-type", "topics", "--entity-name", "t", "--alter", "--add-config", "retention.ms=1,segment.ms=2")
    status, _, _ = run(capsys, data_dir, "--entity-type", "topics", "--entity-name", "t", "--alter", "--delete-config", "retention.ms")
    assert status == 0
    _, out, _ = run(capsys, data_dir, "--entity-type", "topics", "--entity-name", "t", "--describe")
    assert "retention.ms" not in out and "segment.ms=2" in out


def test_quotas(capsys: pytest.CaptureFixture[str], data_dir: Path) -> None:
    status, out, _ = run(capsys, data_dir, "--entity-type", "users", "--entity-name", "alice", "--alter",
                         "--add-config", "producer_byte_rate=1024")
    assert status == 0 and out == "Completed updating config for user alice.\n"
    _, out, _ = run(capsys, data_dir, "--entity-type", "users", "--entity-name", "alice", "--describe")
    assert out == "Quota configs for user-principal 'alice' are producer_byte_rate=1024.0\n"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--entity-type", "topics", "--entity-name", "t", "--alter", "--add-config", "retention.msx=5"], "Did you mean 'retention.ms'"),
        (["--entity-type", "topics", "--entity-name", "t", "--alter", "--add-config", "segment.bytes=abc"], "Invalid value abc for configuration segment.bytes"),
        (["--entity-type", "topics", "--entity-name", "nope", "--alter", "--add-config", "retention.ms=5"], "does not exist"),
        (["--entity-type", "topics", "--entity-name", "t", "--alter"], "At least one of --add-config or --delete-config"),
        (["--entity-type", "topics", "--entity-name", "t", "--alter", "--add-config", "novalue"], "key=val"),
        (["--entity-type", "brokers", "--entity-default", "--alter", "--add-config", "broker.id=2"], "Cannot update these configs dynamically"),
        (["--entity-type", "topics", "--entity-name", "t", "--alter", "--delete-config", "retention.ms"], "Invalid config(s): retention.ms"),
    ],
)
def test_errors_exit_1_with_message(capsys: pytest.CaptureFixture[str], data_dir: Path, argv: list[str], message: str) -> None:
    status, out, err = run(capsys, data_dir, *argv)
    assert status == 1 and out == ""
    assert "Error while executing config command" in err and message in err


def test_bootstrap_server_unreachable(capsys: pytest.CaptureFixture[str]) -> None:
    # The live-server paths are tested in test_configs_network.py.
    status = main(["configs", "--bootstrap-server", "127.0.0.1:1", "--entity-type", "topics", "--describe"])
    assert status == 1
    assert "NetworkError: no bootstrap server answered" in capsys.readouterr().err


def test_describe_every_topic(capsys: pytest.CaptureFixture[str], data_dir: Path) -> None:
    (data_dir / "u-0").mkdir()
    run(capsys, data_dir, "--entity-type", "topics", "--entity-name", "u", "--alter", "--add-config", "retention.ms=1")
    _, out, _ = run(capsys, data_dir, "--entity-type", "topics", "--describe")
    assert out.splitlines() == [
        "Dynamic configs for topic t are:",
        "Dynamic configs for topic u are:",
        "  retention.ms=1 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1, DEFAULT_CONFIG:log.retention.hours=168}",
    ]
