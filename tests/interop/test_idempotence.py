"""Idempotent producers against a real ``kafkalab server-start``: confluent-kafka (librdkafka),
kafka-python and aiokafka with idempotence on, and raw Produce requests that resend a batch
(answered with its original offset, nothing appended) or skip a sequence (error 45).

The clients allocate their producer id with InitProducerId and number their batches
themselves; the broker's answers are checked against what each client accepts, and the batches
the broker stored are read back raw to check the producer ids and sequences that reached it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from confluent_kafka import Producer
from kafka import KafkaProducer

from kafkalab.client.connection import BrokerConnection, parse_bootstrap
from kafkalab.client.data import CONSUMER_REPLICA_ID, list_offset
from kafkalab.protocol.messages.list_offsets import LATEST_TIMESTAMP
from kafkalab.client.launcher import ServerProcess
from kafkalab.errors import ErrorCode
from kafkalab.protocol import SCHEMAS
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.records import Record, build_batch, iter_batches
from kafkalab.records.header import BatchHeader
from tests.interop.support import CLIENT_TIMEOUT_MS, create_topic
from tests.java_client import java_client

MESSAGES = 60


def connect(bootstrap: str) -> BrokerConnection:
    ((host, port),) = parse_bootstrap(bootstrap)
    return BrokerConnection(host, port, request_timeout_ms=CLIENT_TIMEOUT_MS)


def init_producer_id(conn: BrokerConnection) -> tuple[int, int]:
    body = SCHEMAS[ApiKey.INIT_PRODUCER_ID][0].cls(transactional_id=None, transaction_timeout_ms=60_000)
    response = conn.request(ApiKey.INIT_PRODUCER_ID, body)
    assert response.error_code == 0
    return int(response.producer_id), int(response.producer_epoch)


def produce_raw(conn: BrokerConnection, topic: str, batch: bytes) -> Any:
    """One Produce with one batch for partition 0; returns the partition's response."""
    request = SCHEMAS[ApiKey.PRODUCE][0].cls
    data = request.TopicProduceData
    body = request(transactional_id=None, acks=-1, timeout_ms=CLIENT_TIMEOUT_MS, topic_data=(
        data(name=topic, partition_data=(data.PartitionProduceData(index=0, records=batch),)),))
    (topic_response,) = conn.request(ApiKey.PRODUCE, body).responses
    (result,) = topic_response.partition_responses
    return result


def stored_headers(conn: BrokerConnection, topic: str, partition: int = 0) -> list[BatchHeader]:
    """The headers of every batch the broker stored, from one raw Fetch at offset 0."""
    request = SCHEMAS[ApiKey.FETCH][0].cls
    topic_cls = request.FetchTopic
    body = request(replica_id=CONSUMER_REPLICA_ID, max_wait_ms=0, min_bytes=1, max_bytes=1 << 24,
                   isolation_level=0, topics=(topic_cls(topic=topic, partitions=(topic_cls.FetchPartition(
                       partition=partition, fetch_offset=0, partition_max_bytes=1 << 24),)),))
    (topic_response,) = conn.request(ApiKey.FETCH, body).responses
    (result,) = topic_response.partitions
    assert result.error_code == 0
    return [batch.header for batch in iter_batches(result.records or b"")]


def assert_one_idempotent_stream(headers: list[BatchHeader], records: int) -> None:
    """One producer id, epoch 0, sequences 0..records-1 without gap or repeat, offsets alike."""
    assert {(h.producer_id >= 0, h.producer_epoch) for h in headers} == {(True, 0)}
    assert len({h.producer_id for h in headers}) == 1
    sequences = [(h.base_sequence, h.last_sequence) for h in headers]
    offsets = [(h.base_offset, h.last_offset) for h in headers]
    assert sequences == offsets, "sequence n is stored at offset n"
    assert headers[-1].last_offset == records - 1


def records(n: int, start: int = 0) -> list[Record]:
    now_ms = int(time.time() * 1000)
    return [Record(k, now_ms, None, b"value-%d" % (start + k)) for k in range(n)]


# -- raw requests: what the broker answers ------------------------------------------------------


@pytest.mark.timeout(60)
def test_resent_batch_gets_its_original_offset_and_appends_nothing(bootstrap: str, topic_name: str) -> None:
    create_topic(bootstrap, topic_name)
    with connect(bootstrap) as conn:
        producer_id, epoch = init_producer_id(conn)
        assert produce_raw(conn, topic_name, build_batch(records(3))).base_offset == 0  # a plain batch
        batch = build_batch(records(4), producer_id=producer_id, producer_epoch=epoch, base_sequence=0)
        first = produce_raw(conn, topic_name, batch)
        again = produce_raw(conn, topic_name, batch)
        assert (first.error_code, first.base_offset) == (0, 3)
        # Kafka answers a duplicate with NONE and the original offset (not DUPLICATE_SEQUENCE_NUMBER).
        assert (again.error_code, again.base_offset) == (0, 3)
        assert list_offset(conn, topic_name, 0, LATEST_TIMESTAMP) == 7
        assert len(stored_headers(conn, topic_name)) == 2


@pytest.mark.timeout(60)
def test_sequence_gap_is_error_45_and_old_epoch_is_error_47(bootstrap: str, topic_name: str) -> None:
    create_topic(bootstrap, topic_name)
    with connect(bootstrap) as conn:
        producer_id, _ = init_producer_id(conn)
        ok = produce_raw(conn, topic_name, build_batch(records(2), producer_id=producer_id, producer_epoch=0, base_sequence=0))
        assert ok.error_code == 0
        gap = produce_raw(conn, topic_name, build_batch(records(1), producer_id=producer_id, producer_epoch=0, base_sequence=5))
        assert gap.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER == 45
        assert gap.base_offset == -1
        bumped = produce_raw(conn, topic_name, build_batch(records(1), producer_id=producer_id, producer_epoch=1, base_sequence=0))
        assert (bumped.error_code, bumped.base_offset) == (0, 2)
        zombie = produce_raw(conn, topic_name, build_batch(records(1), producer_id=producer_id, producer_epoch=0, base_sequence=2))
        assert zombie.error_code == ErrorCode.INVALID_PRODUCER_EPOCH == 47
        assert list_offset(conn, topic_name, 0, LATEST_TIMESTAMP) == 3


# -- real clients ---------------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_java_client_idempotent_producer(bootstrap: str, topic_name: str) -> None:
    """Kafka's own producer (3.9.1), idempotent by default: every record acknowledged once, one
    producer id, sequence n at offset n."""
    client = java_client()
    create_topic(bootstrap, topic_name)
    out = client.run("IdempotentProducer", "", bootstrap, topic_name, str(MESSAGES), timeout_s=60)
    assert sorted(map(int, out.split())) == list(range(MESSAGES))
    with connect(bootstrap) as conn:
        assert_one_idempotent_stream(stored_headers(conn, topic_name), MESSAGES)


@pytest.mark.timeout(60)
def test_confluent_kafka_idempotent_producer(bootstrap: str, topic_name: str) -> None:
    create_topic(bootstrap, topic_name)
    producer = Producer({
        "bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 2,
        "batch.num.messages": 7, "message.timeout.ms": CLIENT_TIMEOUT_MS,
        "socket.timeout.ms": CLIENT_TIMEOUT_MS,
    })
    delivered: list[int] = []
    errors: list[object] = []

    def on_delivery(error: object, message: Any) -> None:
        (errors if error is not None else delivered).append(error if error is not None else message.offset())

    for i in range(MESSAGES):
        producer.produce(topic_name, value=b"m%d" % i, partition=0, on_delivery=on_delivery)
        if i % 10 == 9:
            producer.poll(0)
    assert producer.flush(CLIENT_TIMEOUT_MS / 1000) == 0 and not errors, errors
    assert sorted(delivered) == list(range(MESSAGES))
    with connect(bootstrap) as conn:
        assert_one_idempotent_stream(stored_headers(conn, topic_name), MESSAGES)


@pytest.mark.timeout(60)
def test_kafka_python_idempotent_producer(bootstrap: str, topic_name: str) -> None:
    create_topic(bootstrap, topic_name)
    producer = KafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True, linger_ms=2,
                             batch_size=200, request_timeout_ms=CLIENT_TIMEOUT_MS)
    try:
        futures = [producer.send(topic_name, value=b"m%d" % i, partition=0) for i in range(MESSAGES)]
        offsets = [f.get(timeout=CLIENT_TIMEOUT_MS / 1000).offset for f in futures]
    finally:
        producer.close(timeout=5)
    assert offsets == list(range(MESSAGES))
    with connect(bootstrap) as conn:
        assert_one_idempotent_stream(stored_headers(conn, topic_name), MESSAGES)


@pytest.mark.timeout(60)
def test_aiokafka_idempotent_producer(bootstrap: str, topic_name: str) -> None:
    create_topic(bootstrap, topic_name)

    async def run() -> list[int]:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True,
                                    linger_ms=2, max_batch_size=200, request_timeout_ms=CLIENT_TIMEOUT_MS)
        await producer.start()
        try:
            futures = [await producer.send(topic_name, value=b"m%d" % i, partition=0) for i in range(MESSAGES)]
            return [(await f).offset for f in futures]
        finally:
            await producer.stop()

    assert asyncio.run(run()) == list(range(MESSAGES))
    with connect(bootstrap) as conn:
        assert_one_idempotent_stream(stored_headers(conn, topic_name), MESSAGES)


# -- restarts: the state survives in the .snapshot files ----------------------------------------


@pytest.mark.timeout(90)
@pytest.mark.parametrize("shutdown", ["clean", "kill"])
def test_duplicate_is_recognised_after_a_restart(
    tmp_path: Path, server_factory: Callable[[Path], ServerProcess], shutdown: str,
) -> None:
    data_dir = tmp_path / "data"
    first = server_factory(data_dir)
    create_topic(first.bootstrap, "idem")
    with connect(first.bootstrap) as conn:
        producer_id, epoch = init_producer_id(conn)
        batches = [build_batch(records(3, 3 * n), producer_id=producer_id, producer_epoch=epoch,
                               base_sequence=3 * n) for n in range(4)]
        assert [produce_raw(conn, "idem", b).base_offset for b in batches] == [0, 3, 6, 9]
    if shutdown == "clean":
        assert first.stop() == 0, first.log_tail()
        assert (data_dir / "idem-0" / "00000000000000000012.snapshot").exists()
    else:
        first.kill()  # acks=-1 answers after the append; the replay rebuilds the state
    second = server_factory(data_dir)
    with connect(second.bootstrap) as conn:
        assert produce_raw(conn, "idem", batches[-1]).base_offset == 9
        older = produce_raw(conn, "idem", batches[1])
        if shutdown == "clean":
            # A snapshot keeps each producer's last batch only (Kafka's format): an older retry
            # after a clean restart no longer matches and is out of order.
            assert older.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        else:
            # After a crash the state is replayed from the log: all of the last five are known.
            assert (older.error_code, older.base_offset) == (0, 3)
        assert list_offset(conn, "idem", 0, LATEST_TIMESTAMP) == 12
        gap = produce_raw(conn, "idem", build_batch(records(1), producer_id=producer_id,
                                                    producer_epoch=epoch, base_sequence=13))
        assert gap.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
