"""Committed offsets: validation, fetch, delete, expiry and replay from the log."""

from __future__ import annotations

import random

from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription as KpSubscription

from kafkalab.errors import ErrorCode as E
from kafkalab.group.coordinator import GroupCoordinator
from kafkalab.group.offsets import OffsetCommit, subscribed_topics
from kafkalab.group.state import GroupState as S
from tests.group._harness import Cluster


def _commit(c: Cluster, group: str, generation: int, member: str, offset: int = 42, version: int = 8,
            partitions: tuple[int, ...] = (0,)) -> list[int]:
    commits = [OffsetCommit("orders", p, offset, -1, "") for p in partitions]
    return c.coordinator.offsets.commit(group, generation, member, None, commits, -1, version, c.now_ms)


def _stable_one(c: Cluster) -> str:
    a, _ = c.join_with_id("g")
    c.advance(3000)
    c.sync("g", 1, a, {a: b"A"})
    return a


def test_simple_consumer_commit_creates_an_empty_group():
    c = Cluster()
    assert _commit(c, "simple", -1, "") == [E.NONE]
    assert c.coordinator.groups["simple"].state is S.EMPTY
    [(tp, value)] = c.coordinator.offsets.fetch("simple", [("orders", 0)])
    assert tp == ("orders", 0) and value.offset == 42


def test_commit_to_a_missing_group_with_a_generation():
    c = Cluster()
    assert _commit(c, "nope", 3, "m", version=8) == [E.ILLEGAL_GENERATION]
    assert _commit(c, "nope", 3, "m", version=9) == [E.GROUP_ID_NOT_FOUND]


def test_member_commit_checks_generation_and_member():
    c = Cluster()
    a = _stable_one(c)
    assert _commit(c, "g", 1, a) == [E.NONE]
    assert _commit(c, "g", 0, a) == [E.ILLEGAL_GENERATION]
    assert _commit(c, "g", 1, "ghost") == [E.UNKNOWN_MEMBER_ID]
    assert _commit(c, "g", -1, "") == [E.UNKNOWN_MEMBER_ID]  # a live group refuses simple commits


def test_commit_during_completing_rebalance():
    c = Cluster()
    a, _ = c.join_with_id("g")
    c.advance(3000)
    assert _commit(c, "g", 1, a) == [E.REBALANCE_IN_PROGRESS]


def test_fetch_unknown_partition_and_all_partitions():
    c = Cluster()
    _commit(c, "g", -1, "", partitions=(0, 2))
    found = dict(c.coordinator.offsets.fetch("g", [("orders", 0), ("orders", 1)]))
    assert found[("orders", 1)] is None and found[("orders", 0)].offset == 42
    assert [tp for tp, _ in c.coordinator.offsets.fetch("g", None)] == [("orders", 0), ("orders", 2)]


def test_metadata_too_large():
    c = Cluster(offset_metadata_max_bytes=3)
    commits = [OffsetCommit("orders", 0, 1, -1, "abcd"), OffsetCommit("orders", 1, 1, -1, "abc")]
    assert c.coordinator.offsets.commit("g", -1, "", None, commits, -1, 8, c.now_ms) == [
        E.OFFSET_METADATA_TOO_LARGE, E.NONE]


def test_replay_rebuilds_groups_and_offsets():
    c = Cluster()
    a = _stable_one(c)
    _commit(c, "g", 1, a, offset=10)
    _commit(c, "g", 1, a, offset=11)
    _commit(c, "simple", -1, "", offset=5)
    c.coordinator.offsets.delete("simple", [("orders", 0)], c.now_ms)
    fresh = GroupCoordinator(c.coordinator.settings, c.log, c.timer, random.Random(1))
    assert fresh.load(c.now_ms) == sum(len(r) for r in c.log.partitions.values())
    group = fresh.groups["g"]
    assert (group.state, group.generation_id, group.leader_id, group.protocol_name) == (S.STABLE, 1, a, "range")
    assert group.members[a].assignment == b"A"
    assert fresh.offsets.fetch("g", [("orders", 0)])[0][1].offset == 11
    assert fresh.offsets.fetch("simple", [("orders", 0)])[0][1] is None
    assert fresh.heartbeat("g", 1, a, None, c.now_ms) == E.NONE


def test_offsets_of_an_empty_group_expire_after_retention():
    c = Cluster(offsets_retention_ms=60_000)
    a = _stable_one(c)
    _commit(c, "g", 1, a)
    for _ in range(24):  # two minutes of heartbeats
        c.advance(5000)
        c.coordinator.heartbeat("g", 1, a, None, c.now_ms)
    assert c.coordinator.expire_offsets(c.now_ms) == 0  # a live group keeps its offsets
    c.coordinator.leave_group("g", [(a, None)], c.now_ms)
    emptied_ms = c.now_ms
    c.advance(59_999)
    assert c.coordinator.expire_offsets(c.now_ms) == 0
    c.advance(1)
    assert c.now_ms == emptied_ms + 60_000
    assert c.coordinator.expire_offsets(c.now_ms) == 1
    assert "g" not in c.coordinator.groups
    records = c.log.partitions[c.coordinator.partition_of("g")]
    assert records[-2][1] is None and records[-1][1] is None  # offset tombstone, group tombstone


def test_delete_groups():
    c = Cluster()
    a = _stable_one(c)
    assert c.coordinator.delete_group("g", c.now_ms) == E.NON_EMPTY_GROUP
    assert c.coordinator.delete_group("missing", c.now_ms) == E.GROUP_ID_NOT_FOUND
    _commit(c, "simple", -1, "")
    assert c.coordinator.delete_group("simple", c.now_ms) == E.NONE
    assert "simple" not in c.coordinator.groups and c.coordinator.offsets.fetch("simple", None) == []


def test_offset_delete_refuses_subscribed_topics():
    c = Cluster()
    subscription = b"\x00\x00" + b"\x00\x00\x00\x01" + b"\x00\x06orders" + b"\xff\xff\xff\xff"
    a, _ = c.join_with_id("g", protocols=(("range", subscription),))
    c.advance(3000)
    c.sync("g", 1, a, {a: b""})
    c.coordinator.offsets.commit("g", 1, a, None, [OffsetCommit("orders", 0, 1, -1, ""),
                                                   OffsetCommit("old", 0, 1, -1, "")], -1, 8, c.now_ms)
    error, results = c.coordinator.offsets.delete("g", [("orders", 0), ("old", 0)], c.now_ms)
    assert (error, results) == (E.NONE, [E.GROUP_SUBSCRIBED_TO_TOPIC, E.NONE])
    assert c.coordinator.offsets.delete("missing", [("old", 0)], c.now_ms)[0] == E.GROUP_ID_NOT_FOUND


def test_replay_skips_records_of_newer_group_types():
    c = Cluster()
    _commit(c, "simple", -1, "")
    partition = c.coordinator.partition_of("simple")
    c.log.partitions[partition].insert(0, (b"\x00\x09\x00\x01x", b"\x00\x00"))  # a share group record
    fresh = GroupCoordinator(c.coordinator.settings, c.log, c.timer, random.Random(1))
    assert fresh.load(c.now_ms) == 1
    assert fresh.offsets.fetch("simple", [("orders", 0)])[0][1].offset == 42


def test_subscribed_topics_of_every_consumer_protocol_version():
    """kafka-python's subscriptions, v0-v3 and a future v9 (v3's bytes plus a trailing field):
    the coordinator reads each one's v0 prefix, as Kafka's ClassicGroup does."""
    tp = KpSubscription.TopicPartition
    for version in (0, 1, 2, 3, 9):
        written = min(version, 3)
        subscription = KpSubscription(version=written, topics=["orders", "audit"], user_data=b"u",
                                      owned_partitions=[tp(topic="orders", partitions=[0])],
                                      generation_id=4, rack_id="r").encode(version=written)
        if version == 9:
            subscription = b"\x00\x09" + subscription[2:] + b"\x00\x00\x00\x07"
        c = Cluster()
        c.join_with_id("g", protocols=(("range", subscription),))
        c.advance(3000)  # the rebalance completes and picks the protocol
        assert subscribed_topics(c.coordinator.groups["g"]) == {"orders", "audit"}, version
