"""Lab 05's data: the lag story's logs, read back by parsers that do not share its code."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatch

from kafkalab.client.in_process import InProcessBroker
from kafkalab.partitioner import java_abs, java_string_hash
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.spark.lag_story import Burst, GroupSpec, LagStory, write_lag_story

SHORT = LagStory(partition_weights=(1.0, 0.5), seconds=60, records_per_s=10, burst=Burst(10, 20, 3),
                 groups=(GroupSpec("fast", 100), GroupSpec("slow", 12, outages=((30, 40),))),
                 commit_interval_s=5, keys=20, value_bytes=8)


@pytest.fixture(scope="module")
def story_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list]:
    data_dir = tmp_path_factory.mktemp("lag") / "data"
    return data_dir, write_lag_story(data_dir, SHORT)


def kafka_python_records(partition_dir: Path) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """(offset, timestamp, key, value) of every record, decoded by kafka-python's batch reader."""
    out = []
    for log in sorted(partition_dir.glob("*.log")):
        data = log.read_bytes()
        position = 0
        while position + 12 <= len(data):
            size = struct.unpack_from(">i", data, position + 8)[0]
            batch = DefaultRecordBatch(data[position:position + 12 + size])
            out += [(r.offset, r.timestamp, r.key, r.value) for r in batch]
            position += 12 + size
    return out


def parse_offset_commit(key: bytes, value: bytes) -> tuple[str, str, int, int, int]:
    """Kafka's documented OffsetCommitKey (type 1) and OffsetCommitValue v3 layouts, by hand."""
    record_type, group_len = struct.unpack_from(">hh", key)
    assert record_type == 1
    group = key[4:4 + group_len].decode()
    topic_len = struct.unpack_from(">h", key, 4 + group_len)[0]
    topic = key[6 + group_len:6 + group_len + topic_len].decode()
    [partition] = struct.unpack_from(">i", key, 6 + group_len + topic_len)
    version, offset, _leader_epoch, metadata_len = struct.unpack_from(">hqih", value)
    assert version == 3
    [commit_ts] = struct.unpack_from(">q", value, 16 + metadata_len)
    return group, topic, partition, offset, commit_ts


def test_the_truth_follows_the_storys_arithmetic(story_dir) -> None:
    _, commits = story_dir
    slow_p0 = {c.commit_timestamp_ms - SHORT.start_ms: c.lag for c in commits if c.group == "slow" and c.partition == 0}
    assert slow_p0[10_000] == 0  # 10/s arrive, 12/s read
    assert slow_p0[20_000] == (30 - 12) * 10  # the burst: 30/s in for 10 s
    assert slow_p0[30_000] == 180 - 2 * 10  # 2/s of headroom for 10 s
    assert 35_000 not in slow_p0 and 40_000 not in slow_p0  # down in seconds 30..39: no commit
    assert slow_p0[45_000] == 160 + 10 * 10 - 5 * 2  # 10 s of nothing read, then 5 s of 2/s headroom
    assert all(c.lag == 0 for c in commits if c.group == "fast")


def test_topic_records_decode_with_kafka_python(story_dir) -> None:
    data_dir, _ = story_dir
    records = kafka_python_records(data_dir / "orders-1")
    expected = sum(SHORT.rate(1, s) for s in range(SHORT.seconds))
    assert [r[0] for r in records] == list(range(expected))
    timestamps = [r[1] for r in records]
    assert timestamps == sorted(timestamps)
    assert SHORT.start_ms < timestamps[0] and timestamps[-1] <= SHORT.start_ms + SHORT.seconds * 1000


def test_commits_are_in_the_groups_offsets_partition_in_kafkas_layout(story_dir) -> None:
    data_dir, commits = story_dir
    for group in ("fast", "slow"):
        partition = java_abs(java_string_hash(group)) % 50
        parsed = [parse_offset_commit(k, v) for _, _, k, v in kafka_python_records(data_dir / f"__consumer_offsets-{partition}")
                  if k is not None and struct.unpack_from(">h", k)[0] == 1 and parse_offset_commit(k, v)[0] == group]
        truth = [(c.group, "orders", c.partition, c.committed_offset, c.commit_timestamp_ms)
                 for c in commits if c.group == group]
        assert parsed == truth


def test_a_restarted_broker_serves_the_last_commits(story_dir) -> None:
    data_dir, commits = story_dir
    last = {(c.group, c.partition): c.committed_offset for c in commits}
    with InProcessBroker(data_dir, start_ms=SHORT.start_ms + 100_000) as broker:
        for group in ("fast", "slow"):
            body = {"group_id": group, "topics": [{"name": "orders", "partition_indexes": [0, 1]}],
                    "require_stable": False}
            answer = broker.call(ApiKey.OFFSET_FETCH, 7, body)
            got = {p.partition_index: p.committed_offset for t in answer.topics for p in t.partitions}
            assert got == {0: last[(group, 0)], 1: last[(group, 1)]}


def test_rates_must_be_whole_records() -> None:
    with pytest.raises(ValueError, match="whole records"):
        LagStory(partition_weights=(1.0, 0.33))


@pytest.mark.spark
def test_spark_decodes_the_commits(spark, story_dir) -> None:
    from kafkalab.spark.offsets_topic import committed_offsets

    data_dir, commits = story_dir
    rows = committed_offsets(spark.read.format("kafkalog").load(str(data_dir / "__consumer_offsets"))).collect()
    got = sorted((r.group, r.partition, r.committed_offset, r.commit_timestamp) for r in rows)
    assert got == sorted((c.group, c.partition, c.committed_offset, c.commit_timestamp_ms) for c in commits)
    assert {r.offsets_partition for r in rows if r.group == "slow"} == {java_abs(java_string_hash("slow")) % 50}
