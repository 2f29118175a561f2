"""read_committed against a real kafkalab server, checked by clients nobody here wrote.

The log is built with bytes from kafka-python only: transactional batches from its
``DefaultRecordBatchBuilder`` sent in its ``ProduceRequest``, and COMMIT/ABORT markers written
through a ``WriteTxnMarkersRequest`` it encodes (what a transaction coordinator sends). Then
kafka-python's ``KafkaConsumer``, confluent-kafka's (librdkafka) ``Consumer``, aiokafka's
``AIOKafkaConsumer`` and Kafka's own Java ``KafkaConsumer`` read it: with
read_committed each must see exactly the committed and non-transactional records and nothing of
an aborted or still-open transaction; with read_uncommitted everything. Both clients drop aborted
records using the ``aborted_transactions`` of the Fetch response and stop at its
``last_stable_offset``, so this checks the broker's side against four independent consumers.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka import TopicPartition as AioTopicPartition
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition
from kafka import KafkaConsumer
from kafka import TopicPartition as KpTopicPartition
from kafka.protocol.producer import (
    ProduceRequest, ProduceResponse, WriteTxnMarkersRequest, WriteTxnMarkersResponse,
)
from kafka.record.default_records import DefaultRecordBatchBuilder

from tests.interop.support import CLIENT_TIMEOUT_MS, DEADLINE_S, create_topic
from tests.java_client import java_client

IDLE_S = 1.5  # after the expected records, wait this long to be sure no more arrive
P_COMMIT, P_ABORT, P_ABORT2, P_OPEN = 7001, 7002, 7003, 7004

# (producer id or None for a plain batch, values) in log order, and the markers between them.
PLAN: list[tuple[str, int | None, list[bytes]]] = [
    ("data", P_COMMIT, [b"c1", b"c2"]),
    ("data", P_ABORT, [b"a1", b"a2"]),
    ("data", None, [b"p1"]),
    ("data", P_COMMIT, [b"c3"]),
    ("data", P_ABORT, [b"a3"]),
    ("abort", P_ABORT, []),
    ("commit", P_COMMIT, []),
    ("data", P_ABORT2, [b"a4"]),
    ("abort", P_ABORT2, []),
    ("data", None, [b"p2"]),
    ("data", P_OPEN, [b"open1"]),  # no marker yet: the LSO stays here
]
COMMITTED = [b"c1", b"c2", b"p1", b"c3", b"p2"]
EVERYTHING = [b"c1", b"c2", b"a1", b"a2", b"p1", b"c3", b"a3", b"a4", b"p2", b"open1"]
OPEN_TXN_OFFSET = 12  # 0-1 c, 2-3 a, 4 p1, 5 c3, 6 a3, 7 ABORT, 8 COMMIT, 9 a4, 10 ABORT, 11 p2
LOG_END_OFFSET = 13


class RawConnection:
    """One socket speaking kafka-python-encoded requests, as an inter-broker client would."""

    def __init__(self, bootstrap: str) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=CLIENT_TIMEOUT_MS / 1000)
        self.correlation_id = 0

    def call(self, request: Any, response_class: Any, flexible: bool) -> Any:
        self.correlation_id += 1
        request.with_header(correlation_id=self.correlation_id, client_id="txn-test")
        frame = bytes(request.encode(header=True))
        self.sock.sendall(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", self._read(4))[0]
        data = self._read(size)
        assert struct.unpack(">i", data[:4])[0] == self.correlation_id
        return response_class.decode(data[5:] if flexible else data[4:], version=request.version)

    def _read(self, n: int) -> bytes:
        chunks = b""
        while len(chunks) < n:
            chunk = self.sock.recv(n - len(chunks))
            assert chunk, "connection closed"
            chunks += chunk
        return chunks

    def close(self) -> None:
        self.sock.close()


def _batch(producer_id: int | None, sequence: int, values: list[bytes]) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=producer_id is not None,
        producer_id=-1 if producer_id is None else producer_id, producer_epoch=-1 if producer_id is None else 0,
        base_sequence=-1 if producer_id is None else sequence, batch_size=1 << 20)
    now_ms = int(time.time() * 1000)
    for i, value in enumerate(values):
        builder.append(i, timestamp=now_ms, key=None, value=value, headers=[])
    return bytes(builder.build())


def _produce(conn: RawConnection, topic: str, producer_id: int | None, sequence: int, values: list[bytes]) -> None:
    P = ProduceRequest
    request = P(version=7, transactional_id=None if producer_id is None else f"txn-{producer_id}", acks=-1,
                timeout_ms=CLIENT_TIMEOUT_MS, topic_data=[P.TopicProduceData(name=topic, partition_data=[
                    P.TopicProduceData.PartitionProduceData(index=0, records=_batch(producer_id, sequence, values))])])
    response = conn.call(request, ProduceResponse, flexible=False)
    assert response.responses[0].partition_responses[0].error_code == 0


def _marker(conn: RawConnection, topic: str, producer_id: int, commit: bool) -> None:
    W = WriteTxnMarkersRequest
    request = W(version=1, markers=[W.WritableTxnMarker(
        producer_id=producer_id, producer_epoch=0, transaction_result=commit, coordinator_epoch=0,
        topics=[W.WritableTxnMarker.WritableTxnMarkerTopic(name=topic, partition_indexes=[0])])])
    response = conn.call(request, WriteTxnMarkersResponse, flexible=True)
    assert response.markers[0].topics[0].partitions[0].error_code == 0


def _build_log(bootstrap: str, topic: str) -> None:
    """The PLAN's batches and markers, this test playing the transaction coordinator. No real
    coordinator knows these producers, so transaction verification (KIP-890), which would
    rightly refuse their batches, is turned off first, as Kafka before 3.6 had it."""
    from kafkalab.tools.cli import main

    assert main(["configs", "--bootstrap-server", bootstrap, "--entity-type", "brokers", "--entity-default",
                 "--alter", "--add-config", "transaction.partition.verification.enable=false"]) == 0
    create_topic(bootstrap, topic)
    conn = RawConnection(bootstrap)
    sequences: dict[int, int] = {}
    try:
        for kind, pid, values in PLAN:
            if kind == "data":
                seq = sequences.get(pid, 0) if pid is not None else -1
                _produce(conn, topic, pid, seq, values)
                if pid is not None:
                    sequences[pid] = seq + len(values)
            else:
                assert pid is not None
                _marker(conn, topic, pid, commit=kind == "commit")
    finally:
        conn.close()


def _kafka_python_values(bootstrap: str, topic: str, isolation: str, count: int) -> tuple[list[bytes], int]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation, enable_auto_commit=False,
                             auto_offset_reset="earliest", request_timeout_ms=CLIENT_TIMEOUT_MS + 1000,
                             fetch_max_wait_ms=100)
    try:
        tp = KpTopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        got: list[bytes] = []
        deadline_s, idle_since = time.monotonic() + DEADLINE_S, time.monotonic()
        while time.monotonic() < deadline_s:
            batch = consumer.poll(timeout_ms=200)
            for records in batch.values():
                got.extend(r.value for r in records)
                idle_since = time.monotonic()
            if len(got) >= count and time.monotonic() - idle_since > IDLE_S:
                break
        end = consumer.end_offsets([tp])[tp]  # ListOffsets latest at this isolation level
        return got, end
    finally:
        consumer.close()


def _confluent_values(bootstrap: str, topic: str, isolation: str | None, count: int) -> list[bytes]:
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap, "group.id": "read-committed-assign-only", "enable.auto.commit": False,
        "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100, "socket.timeout.ms": CLIENT_TIMEOUT_MS,
    }
    if isolation is not None:
        config["isolation.level"] = isolation
    consumer = Consumer(config)
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        got: list[bytes] = []
        deadline_s, idle_since = time.monotonic() + DEADLINE_S, time.monotonic()
        while time.monotonic() < deadline_s:
            for m in consumer.consume(num_messages=100, timeout=0.2):
                if m.error() is not None:
                    raise KafkaException(m.error())
                got.append(m.value())
                idle_since = time.monotonic()
            if len(got) >= count and time.monotonic() - idle_since > IDLE_S:
                break
        return got
    finally:
        consumer.close()


async def _aiokafka_values(bootstrap: str, topic: str, isolation: str, count: int) -> tuple[list[bytes], int]:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest",
                                request_timeout_ms=CLIENT_TIMEOUT_MS, fetch_max_wait_ms=100, isolation_level=isolation)
    await consumer.start()
    try:
        tp = AioTopicPartition(topic, 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        got: list[bytes] = []
        loop = asyncio.get_running_loop()
        deadline_s, idle_since = loop.time() + DEADLINE_S, loop.time()
        while loop.time() < deadline_s:
            for batch in (await consumer.getmany(timeout_ms=200)).values():
                got += [m.value for m in batch]
                idle_since = loop.time()
            if len(got) >= count and loop.time() - idle_since > IDLE_S:
                break
        end = (await consumer.end_offsets([tp]))[tp]
        return got, end
    finally:
        await consumer.stop()


@pytest.mark.timeout(120)
def test_aiokafka_consumer_sees_only_committed_records(bootstrap: str, topic_name: str) -> None:
    _build_log(bootstrap, topic_name)
    committed, committed_end = asyncio.run(_aiokafka_values(bootstrap, topic_name, "read_committed", len(COMMITTED)))
    assert committed == COMMITTED
    assert committed_end == OPEN_TXN_OFFSET
    everything, end = asyncio.run(_aiokafka_values(bootstrap, topic_name, "read_uncommitted", len(EVERYTHING)))
    assert everything == EVERYTHING
    assert end == LOG_END_OFFSET


@pytest.mark.timeout(120)
def test_kafka_python_consumer_sees_only_committed_records(bootstrap: str, topic_name: str) -> None:
    _build_log(bootstrap, topic_name)
    committed, committed_end = _kafka_python_values(bootstrap, topic_name, "read_committed", len(COMMITTED))
    assert committed == COMMITTED
    assert committed_end == OPEN_TXN_OFFSET  # ListOffsets read_committed: the LSO
    everything, end = _kafka_python_values(bootstrap, topic_name, "read_uncommitted", len(EVERYTHING))
    assert everything == EVERYTHING
    assert end == LOG_END_OFFSET  # read_uncommitted: the HW


@pytest.mark.timeout(120)
def test_confluent_consumer_sees_only_committed_records(bootstrap: str, topic_name: str) -> None:
    _build_log(bootstrap, topic_name)
    # librdkafka's default isolation.level is read_committed.
    assert _confluent_values(bootstrap, topic_name, None, len(COMMITTED)) == COMMITTED
    assert _confluent_values(bootstrap, topic_name, "read_uncommitted", len(EVERYTHING)) == EVERYTHING


@pytest.mark.timeout(120)
def test_committing_the_open_transaction_releases_it_to_read_committed(bootstrap: str, topic_name: str) -> None:
    _build_log(bootstrap, topic_name)
    conn = RawConnection(bootstrap)
    try:
        _marker(conn, topic_name, P_OPEN, commit=True)
    finally:
        conn.close()
    got, end = _kafka_python_values(bootstrap, topic_name, "read_committed", len(COMMITTED) + 1)
    assert got == [*COMMITTED, b"open1"]
    assert end == LOG_END_OFFSET + 1  # the COMMIT marker at 13
    assert _confluent_values(bootstrap, topic_name, "read_committed", len(COMMITTED) + 1) == [*COMMITTED, b"open1"]


@pytest.mark.timeout(180)
def test_java_consumer_sees_only_committed_records(bootstrap: str, topic_name: str) -> None:
    client = java_client()  # fetched once per machine; skips with the reason without Java
    _build_log(bootstrap, topic_name)
    for isolation, values, end in (("read_committed", COMMITTED, OPEN_TXN_OFFSET),
                                   ("read_uncommitted", EVERYTHING, LOG_END_OFFSET)):
        out = client.run("ReadCommittedConsumer", "", bootstrap, topic_name, isolation, str(len(values)),
                         timeout_s=90)
        lines = out.splitlines()
        assert [line[len("value "):].encode() for line in lines if line.startswith("value ")] == values, out
        assert f"end {end}" in lines, out
