"""``kafkalab storage random-uuid | format``: output and exit status as kafka-storage.sh's."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab.storage.partition_metadata import str_to_uuid
from kafkalab.tools.cli import main


def test_random_uuid_prints_a_fresh_kafka_uuid(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["storage", "random-uuid"]) == 0
    assert main(["storage", "random-uuid"]) == 0
    first, second = capsys.readouterr().out.split()
    assert first != second
    for text in (first, second):
        assert len(text) == 22 and not text.startswith("-")
        assert str_to_uuid(text)[6] >> 4 == 4  # a version-4 UUID, as Uuid.randomUuid makes


def test_format_then_refuse_a_second_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "server.properties"
    config.write_text("process.roles=broker,controller\nnode.id=1\n"
                      "listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093\n"
                      "controller.listener.names=CONTROLLER\ncontroller.quorum.voters=1@localhost:9093\n"
                      f"log.dirs={tmp_path / 'data'}\n")
    assert main(["storage", "format", "-t", "abc", "-c", str(config)]) == 0
    assert capsys.readouterr().out == (
        f"Formatting metadata directory {tmp_path / 'data'} with metadata.version 3.6-IV2.\n")
    assert main(["storage", "format", "--cluster-id", "abc", "--config", str(config)]) == 1
    assert "is already formatted. Use --ignore-formatted" in capsys.readouterr().err
    assert main(["storage", "format", "-t", "abc", "-c", str(config), "-g"]) == 0
    assert capsys.readouterr().out == "All of the log directories are already formatted.\n"


def test_format_refuses_a_config_that_is_not_kraft(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "server.properties"
    config.write_text(f"log.dirs={tmp_path}\n")
    assert main(["storage", "format", "-t", "abc", "-c", str(config)]) == 1
    assert "Formatting is only supported for clusters in KRaft mode." in capsys.readouterr().err


def test_info_before_and_after_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "server.properties"
    config.write_text("process.roles=broker,controller\nnode.id=1\n"
                      "listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093\n"
                      "controller.listener.names=CONTROLLER\ncontroller.quorum.voters=1@localhost:9093\n"
                      f"log.dirs={tmp_path / 'a'},{tmp_path / 'b'}\n")
    assert main(["storage", "info", "-c", str(config)]) == 1
    assert capsys.readouterr().out == (
        f"Found problems:\n  {tmp_path / 'a'} does not exist\n  {tmp_path / 'b'} does not exist\n\n")
    assert main(["storage", "format", "-t", "abc", "-c", str(config)]) == 0
    capsys.readouterr()
    assert main(["storage", "info", "-c", str(config)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:4] == ["Found log directories:", f"  {tmp_path / 'a'}", f"  {tmp_path / 'b'}", ""]
    assert out[4].startswith("Found metadata: {cluster.id=abc, directory.id=") and out[4].endswith(", node.id=1, version=1}")
