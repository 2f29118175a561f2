"""kafkalab's own CLI tools against a kafkalab server, cross-checked with kafka-python."""

from __future__ import annotations

import io
import re

import pytest
from kafka import KafkaConsumer, TopicPartition

from kafkalab.tools import console_producer
from kafkalab.tools.cli import main
from tests.interop.support import CLIENT_TIMEOUT_MS


def topics(capsys: pytest.CaptureFixture[str], bootstrap: str, *args: str) -> tuple[int, str]:
    status = main(["topics", "--bootstrap-server", bootstrap, *args])
    return status, capsys.readouterr().out


@pytest.mark.timeout(60)
def test_topics_create_list_describe_alter_delete(bootstrap: str, topic_name: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert topics(capsys, bootstrap, "--create", "--topic", topic_name, "--partitions", "2",
                  "--config", "retention.ms=3600000") == (0, f"Created topic {topic_name}.\n")
    status, out = topics(capsys, bootstrap, "--create", "--topic", topic_name)
    assert status == 1 and "TOPIC_ALREADY_EXISTS" in out
    assert topics(capsys, bootstrap, "--create", "--topic", topic_name, "--if-not-exists") == (0, "")
    assert topic_name in topics(capsys, bootstrap, "--list")[1].splitlines()
    status, out = topics(capsys, bootstrap, "--describe", "--topic", topic_name)
    lines = out.splitlines()
    assert re.fullmatch(rf"Topic: {topic_name}\tTopicId: [A-Za-z0-9_-]{{22}}\tPartitionCount: 2"
                        r"\tReplicationFactor: 1\tConfigs: retention.ms=3600000", lines[0])
    assert lines[1:] == [f"\tTopic: {topic_name}\tPartition: {p}\tLeader: 0\tReplicas: 0\tIsr: 0"
                         "\tElr: N/A\tLastKnownElr: N/A" for p in (0, 1)]
    assert topics(capsys, bootstrap, "--alter", "--topic", topic_name, "--partitions", "4",
                  "--config", "cleanup.policy=compact")[0] == 0
    first = topics(capsys, bootstrap, "--describe", "--topic", topic_name)[1].splitlines()[0]
    assert "PartitionCount: 4" in first and "cleanup.policy=compact" in first
    assert topics(capsys, bootstrap, "--delete", "--topic", topic_name) == (0, "")
    assert topic_name not in topics(capsys, bootstrap, "--list")[1].splitlines()
    assert topics(capsys, bootstrap, "--describe", "--topic", topic_name) == (
        1, f"Error while executing topic command : Topic '{topic_name}' does not exist as expected\n")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_console_producer_to_console_consumer(bootstrap: str, topic_name: str, codec: str,
                                              capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    assert topics(capsys, bootstrap, "--create", "--topic", topic_name)[0] == 0
    monkeypatch.setattr("sys.stdin", io.StringIO("a:1\nb:2\nc:3:with colon\n"))
    assert main(["console-producer", "--bootstrap-server", bootstrap, "--topic", topic_name,
                 "--property", "parse.key=true", "--property", "key.separator=:",
                 "--producer-property", "acks=all", "--compression-codec", codec]) == 0
    capsys.readouterr()
    assert main(["console-consumer", "--bootstrap-server", bootstrap, "--topic", topic_name,
                 "--from-beginning", "--max-messages", "3", "--property", "print.key=true",
                 "--property", "print.offset=true", "--property", "print.partition=true"]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        "Partition:0\tOffset:0\ta\t1", "Partition:0\tOffset:1\tb\t2", "Partition:0\tOffset:2\tc\t3:with colon"]
    assert "Processed a total of 3 messages" in captured.err
    # An independent client reads the same records the console producer wrote.
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             request_timeout_ms=CLIENT_TIMEOUT_MS + 1000, consumer_timeout_ms=5000)
    try:
        consumer.assign([TopicPartition(topic_name, 0)])
        consumer.seek_to_beginning()
        got = [(m.key, m.value) for _, m in zip(range(3), consumer)]
    finally:
        consumer.close()
    assert got == [(b"a", b"1"), (b"b", b"2"), (b"c", b"3:with colon")]


@pytest.mark.timeout(60)
def test_console_consumer_from_offset_and_idle_timeout(bootstrap: str, topic_name: str,
                                                        capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    assert topics(capsys, bootstrap, "--create", "--topic", topic_name)[0] == 0
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(f"v{i}\n" for i in range(5))))
    assert main(["console-producer", "--bootstrap-server", bootstrap, "--topic", topic_name,
                 "--batch-size", "2"]) == 0
    capsys.readouterr()
    assert main(["console-consumer", "--bootstrap-server", bootstrap, "--topic", topic_name,
                 "--offset", "3", "--timeout-ms", "500"]) == 0
    assert capsys.readouterr().out.splitlines() == ["v3", "v4"]
    assert console_producer.ACKS["all"] == -1


@pytest.mark.timeout(30)
def test_console_consumer_unknown_topic_fails_cleanly(bootstrap: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["console-consumer", "--bootstrap-server", bootstrap, "--topic", "no-such-topic",
                 "--from-beginning", "--timeout-ms", "200"]) == 1
    assert "UNKNOWN_TOPIC_OR_PARTITION" in capsys.readouterr().err


@pytest.mark.timeout(60)
def test_console_producer_places_keys_like_kafkas_default_partitioner(
        bootstrap: str, topic_name: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from kafka.partitioner.default import murmur2  # kafka-python's own, independent murmur2

    assert topics(capsys, bootstrap, "--create", "--topic", topic_name, "--partitions", "3")[0] == 0
    keys = [f"user-{i}" for i in range(30)]
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(f"{k}:v\n" for k in keys)))
    assert main(["console-producer", "--bootstrap-server", bootstrap, "--topic", topic_name,
                 "--property", "parse.key=true", "--property", "key.separator=:"]) == 0
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             request_timeout_ms=CLIENT_TIMEOUT_MS + 1000, consumer_timeout_ms=5000)
    try:
        consumer.assign([TopicPartition(topic_name, p) for p in range(3)])
        consumer.seek_to_beginning()
        placed = {m.key.decode(): m.partition for _, m in zip(range(len(keys)), consumer)}
    finally:
        consumer.close()
    expected = {k: (murmur2(k.encode()) & 0x7FFFFFFF) % 3 for k in keys}
    assert placed == expected
    assert len(set(placed.values())) == 3  # the keys really spread over every partition
