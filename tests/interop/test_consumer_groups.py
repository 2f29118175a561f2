"""Consumer groups with real clients: kafka-python, confluent-kafka (librdkafka) and aiokafka.

Each client runs three members of one group over a six-partition topic: every member gets two
partitions, every record is read exactly once. A member killed with SIGKILL (no LeaveGroup)
loses its partitions to the others once its session times out. Offsets committed before a
broker restart are there after it. A recording proxy in front of the broker notes which API
versions each client actually sends; the last test prints the table and checks it against the
versions each client is known to speak (kafka-facts A2).

The server runs with ``group.initial.rebalance.delay.ms=300`` and
``group.min.session.timeout.ms=1000`` so the tests finish in seconds.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer as CKConsumer
from confluent_kafka import TopicPartition as CKPartition
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata

from kafkalab.client.launcher import ServerProcess, start_server
from kafkalab.protocol.api_keys import ApiKey
from tests.interop.conftest import EXTERNAL_BOOTSTRAP
from tests.interop.recording_proxy import RecordingProxy
from tests.java_client import java_client
from tests.interop.support import create_topic

PARTITIONS = 6
PER_PARTITION = 5
MEMBERS = 3
DEADLINE_S = 15.0
OVERRIDES = ["group.initial.rebalance.delay.ms=300", "group.min.session.timeout.ms=1000"]
GROUP_APIS = [ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT,
              ApiKey.LEAVE_GROUP, ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH]
NEGOTIATED: dict[str, dict[str, int]] = {}

pytestmark = pytest.mark.skipif(bool(EXTERNAL_BOOTSTRAP), reason="needs its own server behind a proxy")


@pytest.fixture(scope="module")
def proxied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, RecordingProxy]]:
    proxy = RecordingProxy()
    advertised = f"advertised.listeners=PLAINTEXT://127.0.0.1:{proxy.port}"
    server = start_server(tmp_path_factory.mktemp("groups") / "data", overrides=[*OVERRIDES, advertised])
    proxy.upstream = (server.host, server.port)
    try:
        yield f"127.0.0.1:{proxy.port}", proxy
    finally:
        server.stop()
        proxy.close()


def _note_versions(client: str, proxy: RecordingProxy) -> None:
    seen = proxy.take()
    NEGOTIATED[client] = {ApiKey(k).name: max(v for kk, v in seen if kk == k)
                          for k in GROUP_APIS if any(kk == k for kk, _ in seen)}


def _produce(bootstrap: str, topic: str) -> set[tuple[int, int]]:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1)
    for partition in range(PARTITIONS):
        for i in range(PER_PARTITION):
            producer.send(topic, value=f"{partition}-{i}".encode(), partition=partition)
    producer.flush(10)
    producer.close(5)
    return {(p, o) for p in range(PARTITIONS) for o in range(PER_PARTITION)}


def _check_split(assignments: list[set[int]], reads: list[list[tuple[int, int]]], expected: set) -> None:
    assert all(len(a) == PARTITIONS // MEMBERS for a in assignments), assignments
    assert set().union(*assignments) == set(range(PARTITIONS))
    every_read = [r for member in reads for r in member]
    assert len(every_read) == len(set(every_read)), "a record was read twice"
    assert set(every_read) == expected
    for owned, member_reads in zip(assignments, reads):
        assert {p for p, _ in member_reads} <= owned


# --- kafka-python -------------------------------------------------------------------------------


def _kp_consumer(bootstrap: str, topic: str, group: str, **extra) -> KafkaConsumer:
    return KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                         enable_auto_commit=False, session_timeout_ms=6000, heartbeat_interval_ms=500,
                         fetch_max_wait_ms=100, **extra)


@pytest.mark.timeout(60)
def test_kafka_python_three_members_split_six_partitions(proxied, topic_name):
    bootstrap, proxy = proxied
    create_topic(bootstrap, topic_name, partitions=PARTITIONS)
    proxy.take()
    consumers = [_kp_consumer(bootstrap, topic_name, "kp-group") for _ in range(MEMBERS)]
    stop = threading.Event()
    reads: list[list[tuple[int, int]]] = [[] for _ in consumers]

    def run(index: int) -> None:
        while not stop.is_set():
            for batch in consumers[index].poll(timeout_ms=100).values():
                reads[index] += [(m.partition, m.offset) for m in batch]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(MEMBERS)]
    for thread in threads:
        thread.start()
    try:
        assignments = _wait(lambda: [{tp.partition for tp in c.assignment()} for c in consumers])
        expected = _produce(bootstrap, topic_name)
        _until(lambda: sum(map(len, reads)) >= len(expected))
        _check_split(assignments, reads, expected)
        stop.set()
        for thread in threads:
            thread.join(10)
        consumers[0].commit()
    finally:
        stop.set()
        for consumer in consumers:
            consumer.close()
    _note_versions("kafka-python 3.0", proxy)


def _wait(assignments_now, deadline_s: float = DEADLINE_S) -> list[set[int]]:
    """Poll until every member holds PARTITIONS / MEMBERS partitions."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        now = assignments_now()
        if all(len(a) == PARTITIONS // MEMBERS for a in now):
            return now
        time.sleep(0.1)
    return assignments_now()


def _until(condition, deadline_s: float = DEADLINE_S) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end and not condition():
        time.sleep(0.05)


# --- confluent-kafka ----------------------------------------------------------------------------


def _ck_consumer(bootstrap: str, group: str, **extra) -> CKConsumer:
    return CKConsumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                       "enable.auto.commit": False, "session.timeout.ms": 6000,
                       "heartbeat.interval.ms": 500, "fetch.wait.max.ms": 100, **extra})


def _ck_round(consumers: list[CKConsumer], reads: list[list[tuple[int, int]]]) -> None:
    for index, consumer in enumerate(consumers):
        message = consumer.poll(0.05)
        if message is not None and message.error() is None:
            reads[index].append((message.partition(), message.offset()))


@pytest.mark.timeout(60)
def test_confluent_kafka_three_members_split_six_partitions(proxied, topic_name):
    bootstrap, proxy = proxied
    create_topic(bootstrap, topic_name, partitions=PARTITIONS)
    proxy.take()
    consumers = [_ck_consumer(bootstrap, "ck-group") for _ in range(MEMBERS)]
    reads: list[list[tuple[int, int]]] = [[] for _ in consumers]
    try:
        for consumer in consumers:
            consumer.subscribe([topic_name])

        def assignments() -> list[set[int]]:
            _ck_round(consumers, reads)
            return [{tp.partition for tp in c.assignment()} for c in consumers]

        split = _wait(assignments)
        expected = _produce(bootstrap, topic_name)
        end = time.monotonic() + DEADLINE_S
        while sum(map(len, reads)) < len(expected) and time.monotonic() < end:
            _ck_round(consumers, reads)
        _check_split(split, reads, expected)
        consumers[0].commit(asynchronous=False)
        committed = consumers[0].committed([CKPartition(topic_name, p) for p in sorted(split[0])], timeout=10)
        assert [tp.offset for tp in committed] == [PER_PARTITION] * len(split[0])
    finally:
        for consumer in consumers:
            consumer.close()
    _note_versions("confluent-kafka 2.16 (librdkafka 2.16)", proxy)


# --- aiokafka -----------------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_aiokafka_three_members_split_six_partitions(proxied, topic_name):
    from aiokafka import AIOKafkaConsumer

    bootstrap, proxy = proxied
    create_topic(bootstrap, topic_name, partitions=PARTITIONS)
    proxy.take()

    async def scenario() -> None:
        consumers = [AIOKafkaConsumer(topic_name, bootstrap_servers=bootstrap, group_id="aio-group",
                                      auto_offset_reset="earliest", enable_auto_commit=False,
                                      session_timeout_ms=6000, heartbeat_interval_ms=500, fetch_max_wait_ms=100)
                     for _ in range(MEMBERS)]
        reads: list[list[tuple[int, int]]] = [[] for _ in consumers]
        await asyncio.gather(*(c.start() for c in consumers))
        try:
            end = time.monotonic() + DEADLINE_S
            while time.monotonic() < end and not all(len(c.assignment()) == 2 for c in consumers):
                await asyncio.gather(*(c.getmany(timeout_ms=100) for c in consumers))
            split = [{tp.partition for tp in c.assignment()} for c in consumers]
            expected = await asyncio.to_thread(_produce, bootstrap, topic_name)
            while sum(map(len, reads)) < len(expected) and time.monotonic() < end + DEADLINE_S:
                batches = await asyncio.gather(*(c.getmany(timeout_ms=100) for c in consumers))
                for index, got in enumerate(batches):
                    reads[index] += [(m.partition, m.offset) for msgs in got.values() for m in msgs]
            _check_split(split, reads, expected)
            await consumers[0].commit()
        finally:
            await asyncio.gather(*(c.stop() for c in consumers))

    asyncio.run(scenario())
    _note_versions("aiokafka 0.14", proxy)


# --- a killed member ----------------------------------------------------------------------------

KILLED_MEMBER = """
import sys, time
from kafka import KafkaConsumer
consumer = KafkaConsumer(sys.argv[2], bootstrap_servers=sys.argv[1], group_id=sys.argv[3],
                         session_timeout_ms=2000, heartbeat_interval_ms=300, enable_auto_commit=False)
while True:
    consumer.poll(timeout_ms=100)
    if consumer.assignment():
        print("assigned", sorted(tp.partition for tp in consumer.assignment()), flush=True)
"""


@pytest.mark.timeout(60)
def test_killed_member_partitions_move_after_its_session_timeout(proxied, topic_name):
    bootstrap, _ = proxied
    create_topic(bootstrap, topic_name, partitions=PARTITIONS)
    group = "kill-group"
    survivors = [_ck_consumer(bootstrap, group, **{"session.timeout.ms": 6000}) for _ in range(2)]
    doomed = subprocess.Popen([sys.executable, "-c", KILLED_MEMBER, bootstrap, topic_name, group],
                              stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    reads: list[list[tuple[int, int]]] = [[], []]
    try:
        for consumer in survivors:
            consumer.subscribe([topic_name])

        def split_three_ways() -> list[set[int]]:
            _ck_round(survivors, reads)
            return [{tp.partition for tp in c.assignment()} for c in survivors]

        assert [len(a) for a in _wait(split_three_ways)] == [2, 2]
        assert doomed.stdout is not None and doomed.stdout.readline().startswith("assigned")
        doomed.send_signal(signal.SIGKILL)  # no LeaveGroup: only the session timeout can tell
        killed_at = time.monotonic()
        end = killed_at + DEADLINE_S
        owned: list[set[int]] = []
        while time.monotonic() < end:
            _ck_round(survivors, reads)
            owned = [{tp.partition for tp in c.assignment()} for c in survivors]
            if sorted(map(len, owned)) == [3, 3]:
                break
        moved_after_s = time.monotonic() - killed_at
        assert sorted(map(len, owned)) == [3, 3] and owned[0] | owned[1] == set(range(PARTITIONS))
        assert moved_after_s >= 1.0, "partitions moved before the 2 s session timeout could expire"
    finally:
        doomed.kill()
        doomed.wait(5)
        for consumer in survivors:
            consumer.close()


# --- commits survive a restart ------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_commits_survive_a_broker_restart(tmp_path: Path):
    data_dir = tmp_path / "data"
    server: ServerProcess = start_server(data_dir, overrides=OVERRIDES)
    topic = "restart-topic"
    try:
        create_topic(server.bootstrap, topic, partitions=PARTITIONS)
        consumer = _kp_consumer(server.bootstrap, topic, "restart-group")
        _until(lambda: bool(consumer.poll(timeout_ms=100) is not None and consumer.assignment()))
        offsets = {TopicPartition(topic, p): 100 + p for p in range(PARTITIONS)}
        consumer.commit({tp: OffsetAndMetadata(o, "m", -1) for tp, o in offsets.items()})
        consumer.close()
    finally:
        server.stop()
    server = start_server(data_dir, overrides=OVERRIDES)
    try:
        check = _ck_consumer(server.bootstrap, "restart-group")
        committed = check.committed([CKPartition(topic, p) for p in range(PARTITIONS)], timeout=10)
        # Offsets through librdkafka; metadata through kafka-python, because confluent-kafka
        # reads librdkafka's unterminated metadata buffer as a C string (librdkafka issue 4649).
        assert {(tp.partition, tp.offset) for tp in committed} == {(p, 100 + p) for p in range(PARTITIONS)}
        check.close()
        reader = KafkaConsumer(bootstrap_servers=server.bootstrap, group_id="restart-group")
        assert reader.committed(TopicPartition(topic, 3), metadata=True) == OffsetAndMetadata(103, "m", -1)
        reader.close()
    finally:
        server.stop()


# --- Kafka's own Java client --------------------------------------------------------------------

@pytest.mark.timeout(90)
def test_java_client_three_members_split_six_partitions(proxied, topic_name):
    client = java_client()  # fetched once per machine; skips with the reason without Java
    bootstrap, proxy = proxied
    create_topic(bootstrap, topic_name, partitions=PARTITIONS)
    expected = _produce(bootstrap, topic_name)
    proxy.take()
    out = client.run("GroupConsumer", "", bootstrap, topic_name, "java-group", str(len(expected)), timeout_s=60)
    lines = out.splitlines()
    owned = [set(map(int, line.split("[")[1].split("]")[0].split(", "))) for line in lines[:MEMBERS]]
    read = [int(line.rsplit(" ", 1)[1]) for line in lines[:MEMBERS]]
    assert sorted(map(len, owned)) == [2, 2, 2] and set().union(*owned) == set(range(PARTITIONS))
    assert sum(read) == len(expected)
    assert lines[MEMBERS] == "committed " + " ".join(f"{p}={PER_PARTITION}" for p in range(PARTITIONS))
    _note_versions("Kafka Java client 3.9", proxy)


# --- what each client negotiated ----------------------------------------------------------------

# The highest version each client speaks (kafka-facts A2), capped by what kafkalab advertises.
EXPECTED = {
    "kafka-python 3.0": {"FIND_COORDINATOR": 6, "JOIN_GROUP": 7, "SYNC_GROUP": 5, "HEARTBEAT": 4,
                         "LEAVE_GROUP": 5, "OFFSET_COMMIT": 8, "OFFSET_FETCH": 8},
    "confluent-kafka 2.16 (librdkafka 2.16)": {"FIND_COORDINATOR": 2, "JOIN_GROUP": 5, "SYNC_GROUP": 3,
                                               "HEARTBEAT": 3, "LEAVE_GROUP": 1, "OFFSET_COMMIT": 9,
                                               "OFFSET_FETCH": 9},
    # Kafka's Java client 3.9 ships validVersions 0-6/0-9/0-5/0-4/0-5/0-9/0-9 for these APIs.
    "Kafka Java client 3.9": {"FIND_COORDINATOR": 6, "JOIN_GROUP": 9, "SYNC_GROUP": 5, "HEARTBEAT": 4,
                              "LEAVE_GROUP": 5, "OFFSET_COMMIT": 9, "OFFSET_FETCH": 9},
    "aiokafka 0.14": {"FIND_COORDINATOR": 1, "JOIN_GROUP": 5, "SYNC_GROUP": 3, "HEARTBEAT": 1,
                      "LEAVE_GROUP": 1, "OFFSET_COMMIT": 3, "OFFSET_FETCH": 3},
}


def test_negotiated_group_api_versions(capsys):
    if not NEGOTIATED:
        pytest.skip("runs after the client tests of this module")
    with capsys.disabled():
        print("\ngroup API versions each client sent to kafkalab:")
        for client, versions in NEGOTIATED.items():
            print(f"  {client}: " + ", ".join(f"{api} v{v}" for api, v in versions.items()))
    for client, seen in NEGOTIATED.items():
        versions = EXPECTED[client]
        for api, version in versions.items():
            if api in seen:  # a client may not send every API in a short run (e.g. no LeaveGroup)
                assert seen[api] == version, (client, api, seen[api])
