"""kafkalab topics: Kafka's describe format, config parsing and topic ids, without a server."""

from __future__ import annotations

import base64
import uuid

import pytest

from kafkalab.client.admin import PartitionInfo, TopicInfo
from kafkalab.tools.topics import describe_partition_line, describe_topic_line, kafka_uuid, parse_configs


def test_describe_lines_match_kafka_topic_command_layout() -> None:
    raw = uuid.UUID("12e6dd9a-2482-4934-943a-261e2871869b").bytes
    topic = TopicInfo("orders", raw, False, (
        PartitionInfo(0, 0, (0,), (0,)), PartitionInfo(1, -1, (0,), ())))
    assert describe_topic_line(topic, ["retention.ms=3600000", "cleanup.policy=compact"]) == (
        "Topic: orders\tTopicId: EubdmiSCSTSUOiYeKHGGmw\tPartitionCount: 2\tReplicationFactor: 1"
        "\tConfigs: retention.ms=3600000,cleanup.policy=compact")
    assert describe_partition_line("orders", topic.partitions[0]) == (
        "\tTopic: orders\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0\tElr: N/A\tLastKnownElr: N/A")
    assert describe_partition_line("orders", topic.partitions[1]).startswith(
        "\tTopic: orders\tPartition: 1\tLeader: none\tReplicas: 0\tIsr: \t")


def test_topic_without_id_omits_the_field() -> None:
    line = describe_topic_line(TopicInfo("t", None, False, (PartitionInfo(0, 0, (0,), (0,)),)), [])
    assert line == "Topic: t\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: "


def test_kafka_uuid_is_unpadded_url_safe_base64() -> None:
    raw = bytes(range(250, 256)) + bytes(10)  # bytes that need '-' and '_' in URL-safe base64
    text = kafka_uuid(raw)
    assert len(text) == 22 and "=" not in text and "+" not in text and "/" not in text
    assert base64.urlsafe_b64decode(text + "==") == raw


def test_parse_configs_trims_like_topic_command() -> None:
    assert parse_configs(["retention.ms = 1000", "cleanup.policy=compact"]) == {
        "retention.ms": "1000", "cleanup.policy": "compact"}


@pytest.mark.parametrize("bad", ["retention.ms", "=1", "a=b=c"])
def test_parse_configs_rejects_malformed_pairs(bad: str) -> None:
    with pytest.raises(ValueError, match='format "key=val"'):
        parse_configs([bad])


def test_a_partition_being_reassigned_shows_what_moves() -> None:
    # Kafka's TopicCommand while partition 0 moves from [1, 2] to [3, 2]: the replica list is the
    # target then the removed replica, and the added one is not counted in the factor.
    topic = TopicInfo("orders", None, False, (PartitionInfo(0, 1, (3, 2, 1), (1, 2)),))
    assert describe_topic_line(topic, [], adding=[3]) == (
        "Topic: orders\tPartitionCount: 1\tReplicationFactor: 2\tConfigs: ")
    assert describe_partition_line("orders", topic.partitions[0], ([3, 2, 1], [3], [1])) == (
        "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 3,2,1\tIsr: 1,2"
        "\tAdding Replicas: 3\tRemoving Replicas: 1\tElr: N/A\tLastKnownElr: N/A")
