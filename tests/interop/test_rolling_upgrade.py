"""A rolling upgrade from the classic group protocol to KIP-848's, and back, with real clients.

Two kafka-python consumers (the classic protocol: JoinGroup, SyncGroup, Heartbeat) share a
six-partition topic. Then Kafka's Java consumer 3.9.1 joins the same group with
``group.protocol=consumer`` (``tests/java/ConsumerProtocolMember.java``): the coordinator turns
the classic group into a consumer group (``group.consumer.migration.policy`` is
``bidirectional``, Kafka 4.0's default), the server assignor gives the newcomer its share, and
the classic members rejoin and keep theirs: two partitions each, no partition owned twice, and
every record produced afterwards read exactly once. When the Java member leaves again, only
classic members remain and the group goes back to the classic protocol (the downgrade).

Sessions and intervals are shortened, but with the JVM's start the test takes some ten seconds,
so it runs with the slow tests (``make campaign``); the default suite's variant drives the same
coordinator on a ManualClock (``tests/group/consumer/test_classic_members.py``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer

from kafkalab.client.launcher import start_server
from tests.interop.conftest import EXTERNAL_BOOTSTRAP
from tests.interop.support import create_topic
from tests.interop.test_consumer_protocol import PARTITIONS, Member, _produce, _until
from tests.java_client import java_client

GROUP = "rolling"
OVERRIDES = ["group.initial.rebalance.delay.ms=300", "group.min.session.timeout.ms=1000",
             "group.consumer.heartbeat.interval.ms=500", "group.consumer.session.timeout.ms=3000"]
DEADLINE_S = 40.0

pytestmark = pytest.mark.skipif(bool(EXTERNAL_BOOTSTRAP), reason="needs its own server with short sessions")


@pytest.fixture
def bootstrap_fast(tmp_path: Path) -> Iterator[str]:
    server = start_server(tmp_path / "data", overrides=OVERRIDES)
    try:
        yield server.bootstrap
    finally:
        server.stop()


class ClassicMember:
    """A kafka-python consumer polling in its own thread, noting what it reads."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=GROUP,
                                      auto_offset_reset="earliest", enable_auto_commit=False,
                                      session_timeout_ms=6000, heartbeat_interval_ms=500, fetch_max_wait_ms=100)
        self.reads: list[tuple[int, int]] = []
        self.partitions: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for batch in self.consumer.poll(timeout_ms=100).values():
                self.reads += [(m.partition, m.offset) for m in batch]
            self.partitions = {tp.partition for tp in self.consumer.assignment()}

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.consumer.close()


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_kafka_python_members_stay_while_a_java_consumer_protocol_member_joins(bootstrap_fast, topic_name):
    client = java_client()
    create_topic(bootstrap_fast, topic_name, partitions=PARTITIONS)
    classic = [ClassicMember(bootstrap_fast, topic_name) for _ in range(2)]
    java: Member | None = None
    try:
        assert _until(lambda: [len(m.partitions) for m in classic] == [3, 3], DEADLINE_S), \
            [m.partitions for m in classic]
        java = Member(client, bootstrap_fast, topic_name, GROUP)

        def split() -> list[set[int]]:
            assert java is not None
            return [*(m.partitions for m in classic), java.assignment()]

        def settled() -> bool:
            owned = split()
            return [len(o) for o in owned] == [2, 2, 2] and set().union(*owned) == set(range(PARTITIONS))

        assert _until(settled, DEADLINE_S), split()
        expected = _produce(bootstrap_fast, topic_name)
        assert _until(lambda: sum(len(m.reads) for m in classic) + len(java.reads()) >= len(expected))
        reads = [*classic[0].reads, *classic[1].reads, *java.reads()]
        assert len(reads) == len(set(reads)), "a record was read twice"
        assert set(reads) == expected
        for owned, member_reads in zip(split(), (classic[0].reads, classic[1].reads, java.reads())):
            assert {p for p, _ in member_reads} <= owned
    finally:
        for member in classic:
            member.close()
        if java is not None:
            java.kill()


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_group_goes_back_to_classic_when_the_java_consumer_protocol_member_leaves(bootstrap_fast, topic_name):
    """The rolling downgrade: the Java member leaves with a ConsumerGroupHeartbeat at epoch -1,
    only classic members remain, and the coordinator turns the group back into a classic group
    whose rebalance hands the two kafka-python members three partitions each."""
    client = java_client()
    create_topic(bootstrap_fast, topic_name, partitions=PARTITIONS)
    classic = [ClassicMember(bootstrap_fast, topic_name) for _ in range(2)]
    java: Member | None = None
    admin = KafkaAdminClient(bootstrap_servers=bootstrap_fast)
    try:
        java = Member(client, bootstrap_fast, topic_name, GROUP)
        assert _until(lambda: [len(m.partitions) for m in classic] + [len(java.assignment())] == [2, 2, 2],
                      DEADLINE_S), [m.partitions for m in classic]
        java.stop()
        halves = lambda: [m.partitions for m in classic]  # noqa: E731
        assert _until(lambda: sorted(map(len, halves())) == [3, 3] and set().union(*halves()) == set(range(PARTITIONS)),
                      DEADLINE_S), halves()
        described = admin.describe_groups([GROUP])[GROUP]  # classic DescribeGroups: a classic group again
        assert (described["protocol_type"], described["group_state"], len(described["members"])) == (
            "consumer", "Stable", 2), described
        expected = _produce(bootstrap_fast, topic_name)
        assert _until(lambda: {r for m in classic for r in m.reads} >= expected, DEADLINE_S)
        for member in classic:
            assert {p for p, _ in member.reads if (p, _) in expected} <= member.partitions
    finally:
        admin.close()
        for member in classic:
            member.close()
        if java is not None:
            java.kill()
