"""kafkalab's group member over sockets, in one group with real clients.

kafka-python and confluent-kafka (librdkafka) each share a group with kafkalab's member: the
partitions must split with no overlap whoever leads, so the real client's leader reads
kafkalab's subscription bytes and kafkalab's leader writes an assignment the real client reads.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer as CKConsumer
from kafka import KafkaConsumer

from kafkalab.client.launcher import start_server
from kafkalab.client.membership import MemberConfig, MemberState
from kafkalab.client.membership.sockets import SocketMember
from tests.interop.conftest import EXTERNAL_BOOTSTRAP
from tests.interop.support import create_topic

PARTITIONS = 4
OVERRIDES = ["group.initial.rebalance.delay.ms=300", "group.min.session.timeout.ms=1000"]
DEADLINE_S = 20.0

pytestmark = pytest.mark.skipif(bool(EXTERNAL_BOOTSTRAP), reason="starts its own server")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    process = start_server(tmp_path_factory.mktemp("membership") / "data", overrides=OVERRIDES)
    try:
        yield process.bootstrap
    finally:
        process.stop()


def member_config(group: str, topic: str) -> MemberConfig:
    return MemberConfig(group, (topic,), assignors=("range",), session_timeout_ms=6_000,
                        heartbeat_interval_ms=300, rebalance_timeout_ms=10_000)


def split_evenly(ours: set[int], theirs: set[int]) -> bool:
    return len(ours) == len(theirs) == PARTITIONS // 2 and ours | theirs == set(range(PARTITIONS))


@pytest.mark.timeout(60)
def test_kafkalab_member_and_kafka_python_split_a_topic(server: str, topic_name: str) -> None:
    create_topic(server, topic_name, partitions=PARTITIONS)
    group = f"{topic_name}-g"
    runner = SocketMember(server, member_config(group, topic_name))
    assert runner.run_until(lambda m: m.state is MemberState.STABLE, 10_000)
    assert {p for _, p in runner.member.owned} == set(range(PARTITIONS))  # alone: it leads, takes all
    theirs = KafkaConsumer(topic_name, bootstrap_servers=server, group_id=group, enable_auto_commit=False,
                           session_timeout_ms=6_000, heartbeat_interval_ms=300)
    stop = threading.Event()

    def poll_theirs() -> None:
        while not stop.is_set():
            theirs.poll(timeout_ms=100)

    thread = threading.Thread(target=poll_theirs)
    thread.start()
    try:
        def both_split() -> bool:
            ours = {p for _, p in runner.member.owned}
            return runner.member.state is MemberState.STABLE and split_evenly(ours, {tp.partition for tp in theirs.assignment()})

        assert runner.run_until(lambda m: both_split(), 15_000), (runner.member.owned, theirs.assignment())
        stop.set()
        thread.join(10)
        theirs.close()  # LeaveGroup: kafkalab's member takes everything back
        assert runner.run_until(lambda m: len(m.owned) == PARTITIONS, 10_000)
    finally:
        stop.set()
        runner.close()
    assert runner.member.state is MemberState.LEFT


@pytest.mark.timeout(60)
def test_librdkafka_leads_and_kafkalab_member_follows(server: str, topic_name: str) -> None:
    create_topic(server, topic_name, partitions=PARTITIONS)
    group = f"{topic_name}-g"
    theirs = CKConsumer({"bootstrap.servers": server, "group.id": group, "enable.auto.commit": False,
                         "session.timeout.ms": 6000, "heartbeat.interval.ms": 300,
                         "partition.assignment.strategy": "range"})
    # librdkafka serves its rebalance callbacks only inside poll(), and kafkalab's member blocks in
    # JoinGroup until every member has rejoined, so librdkafka is polled from its own thread. Its
    # assignment is read from the callbacks: assignment() waits on the consumer poll() holds.
    assigned: set[int] = set()
    stop = threading.Event()

    def on_assign(consumer: CKConsumer, partitions: list) -> None:
        assigned.clear()
        assigned.update(tp.partition for tp in partitions)

    def on_revoke(consumer: CKConsumer, partitions: list) -> None:
        assigned.clear()

    theirs.subscribe([topic_name], on_assign=on_assign, on_revoke=on_revoke)

    def poll_theirs() -> None:
        while not stop.is_set():
            theirs.poll(0.1)

    thread = threading.Thread(target=poll_theirs)
    thread.start()
    end = time.monotonic() + DEADLINE_S
    while not assigned and time.monotonic() < end:
        time.sleep(0.05)
    runner = SocketMember(server, member_config(group, topic_name))
    try:
        def both_split() -> bool:
            ours = {p for _, p in runner.member.owned}
            return runner.member.state is MemberState.STABLE and split_evenly(ours, set(assigned))

        assert runner.run_until(lambda m: both_split(), 15_000), (runner.member.owned, assigned)
        assert runner.member.leader_id != runner.member.member_id  # librdkafka joined first and leads
    finally:
        stop.set()
        thread.join(10)
        runner.close()
        theirs.close()
