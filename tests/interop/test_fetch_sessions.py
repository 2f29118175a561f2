"""Real clients and incremental fetch sessions (KIP-227).

Kafka's Java consumer opens a fetch session with the first full Fetch and then sends
incremental ones; here it reads six partitions through three ``assign`` changes (0-3, then
0-1, then 0-5) while its own producer writes, and the broker -- served in this process so its
session cache can be looked at -- must have served incremental fetches that forgot and added
partitions, with every record read once and in order. kafka-python (2.1+ keeps its own
sessions) and librdkafka (which sends every Fetch sessionless, session 0 and epoch -1) read
through the same broker.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from kafkalab.server import KafkaServer
from tests.java_client import java_client
from tests.server._server_process import call

pytestmark = pytest.mark.timeout(180)
ROUNDS = 3  # records per partition per assignment phase
PHASES = ((0, 1, 2, 3), (0, 1), (0, 1, 2, 3, 4, 5))


@contextmanager
def served(data_dir: Path) -> Iterator[tuple[KafkaServer, str]]:
    """A kafkalab server on its own event loop thread; yields it and its bootstrap address."""
    loop = asyncio.new_event_loop()
    server = KafkaServer(data_dir, {}, port=0, seed=1)
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        host, port = asyncio.run_coroutine_threadsafe(server.start(), loop).result(timeout=30)
        yield server, f"{host}:{port}"
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


def _create_topic(bootstrap: str, name: str, partitions: int) -> None:
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port))) as sock:
        topic = {"name": name, "num_partitions": partitions, "replication_factor": 1, "configs": []}
        assert call(sock, 19, 7, {"topics": [topic], "timeout_ms": 1000}).topics[0].error_code == 0


def _record_contexts(server: KafkaServer) -> list[tuple[int, int, list[Any], list[Any]]]:
    """Every Fetch's (session id, epoch, partitions named, partitions forgotten), as the
    broker's session cache received them."""
    assert server.broker is not None
    cache = server.broker.fetch_sessions
    seen: list[tuple[int, int, list[Any], list[Any]]] = []
    original = cache.new_context

    def new_context(version: int, session_id: int, epoch: int, privileged: bool, fetch_data: Any,
                    forgotten: Any, now_ms: int) -> Any:
        seen.append((session_id, epoch, [(t, w.partition) for t, w in fetch_data], list(forgotten)))
        return original(version, session_id, epoch, privileged, fetch_data, forgotten, now_ms)

    cache.new_context = new_context  # type: ignore[method-assign]
    return seen


def test_java_consumer_reads_through_assign_changes_in_one_incremental_session(tmp_path: Path) -> None:
    client = java_client()  # skips with the reason without Java
    with served(tmp_path / "data") as (server, bootstrap):
        _create_topic(bootstrap, "sessions", 6)
        seen = _record_contexts(server)
        out = client.run("SessionConsumer", "", bootstrap, "sessions", str(ROUNDS), timeout_s=150)
        assert server.broker is not None
        incremental = server.broker.fetch_sessions.incremental_fetches
    read: dict[int, list[tuple[int, str]]] = {}
    for line in out.splitlines():
        if line.startswith("phase "):
            _, _, partition, offset, value = line.split(" ")
            read.setdefault(int(partition), []).append((int(offset), value))
    # Every partition read once, in order, each value where it was written.
    for partition, records in read.items():
        assert [offset for offset, _ in records] == list(range(len(records))), records
        written = [f"p{phase}-r{r}-{partition}" for phase in range(len(PHASES)) for r in range(ROUNDS)]
        assert [value for _, value in records] == written[:len(records)]
    assert {p: len(r) for p, r in read.items()} == {p: len(PHASES) * ROUNDS for p in range(6)}
    # The broker's side: a session opened, most fetches incremental, partitions forgotten and added.
    consumer_fetches = [s for s in seen if s[1] != -1]
    # Kafka's client checks every answer against its session (a full answer must name every
    # partition, an incremental one only session partitions) and starts over on a mismatch: it
    # never had to, so one session carried the epochs 1, 2, 3, ... to the end.
    assert consumer_fetches[0][:2] == (0, 0)
    session_id = consumer_fetches[1][0]
    assert [s[:2] for s in consumer_fetches[1:]] == [(session_id, e) for e in range(1, len(consumer_fetches))]
    assert incremental >= 15 and incremental > len(consumer_fetches) // 2, (incremental, len(consumer_fetches))
    forgot = {p for session_id, epoch, _, forgotten in seen if epoch > 0 for _, p in forgotten}
    added_later = {p for session_id, epoch, named, _ in seen if epoch > 0 for _, p in named}
    assert {2, 3} <= forgot and {4, 5} <= added_later, (forgot, added_later)


def test_kafka_python_in_a_session_and_librdkafka_without(tmp_path: Path) -> None:
    kafka = pytest.importorskip("kafka")
    confluent = pytest.importorskip("confluent_kafka")
    with served(tmp_path / "data") as (server, bootstrap):
        _create_topic(bootstrap, "plain", 2)
        seen = _record_contexts(server)
        producer = kafka.KafkaProducer(bootstrap_servers=bootstrap)
        for i in range(10):
            producer.send("plain", value=b"v%d" % i, partition=i % 2)
        producer.flush()
        producer.close()
        consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                       consumer_timeout_ms=3000, fetch_max_wait_ms=50)
        consumer.assign([kafka.TopicPartition("plain", 0), kafka.TopicPartition("plain", 1)])
        got = []
        for message in consumer:  # stops after consumer_timeout_ms idle, or here once all are in
            got.append(message.value)
            if len(got) == 10:
                break
        assert sorted(got) == sorted(b"v%d" % i for i in range(10))
        for _ in range(3):  # idle fetches: incremental, naming nothing
            consumer.poll(timeout_ms=100)
        consumer.close()
        python_fetches = list(seen)
        # kafka-python 2.1+ has its own FetchSessionHandler: full with epoch 0, then incremental.
        assert python_fetches[0][:2] == (0, 0)
        session_id = python_fetches[1][0]
        assert session_id != 0 and [epoch for _, epoch, _, _ in python_fetches[1:4]] == [1, 2, 3]
        assert [s[:2] for s in python_fetches[1:]] == [(session_id, e) for e in range(1, len(python_fetches))]
        rd = confluent.Consumer({"bootstrap.servers": bootstrap, "group.id": "plain-reader",
                                 "auto.offset.reset": "earliest", "fetch.wait.max.ms": 50})
        rd.assign([confluent.TopicPartition("plain", 0, 0), confluent.TopicPartition("plain", 1, 0)])
        values = []
        for _ in range(100):
            message = rd.poll(0.1)
            if message is not None and message.error() is None:
                values.append(message.value())
            if len(values) == 10:
                break
        rd.close()
        assert sorted(values) == sorted(b"v%d" % i for i in range(10))
        librdkafka = seen[len(python_fetches):]
        # librdkafka 2.x keeps no sessions: every Fetch is full and sessionless (0, -1).
        assert librdkafka and all(s[:2] == (0, -1) for s in librdkafka)
