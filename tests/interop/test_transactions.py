"""Transactional producers against a real ``kafkalab server-start``: Kafka's Java client 3.9.1,
confluent-kafka (librdkafka) and aiokafka run whole transactions -- init, begin, send, offsets,
commit, abort -- and a second producer with the same ``transactional.id`` fences the first.

What the broker stored is then read back raw: each transaction's records are transactional
batches of one producer, followed by exactly one control batch, COMMIT or ABORT, carrying that
producer's id and (for a fence) the bumped epoch; offsets sent with the transaction become the
group's committed offsets only when it commits; and a read_committed consumer (confluent-kafka's
default) sees exactly the committed records, nothing of an open transaction.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest
from aiokafka import AIOKafkaProducer
from confluent_kafka import KafkaError as ConfluentError
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from kafka import KafkaAdminClient
from kafka.structs import TopicPartition as KafkaTopicPartition

from kafkalab.client.connection import BrokerConnection
from kafkalab.client.data import CONSUMER_REPLICA_ID
from kafkalab.protocol import SCHEMAS
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.records import RecordBatch, iter_batches
from kafkalab.records.control import ControlRecordType, parse_control_record
from tests.interop.support import CLIENT_TIMEOUT_MS, create_topic
from tests.interop.test_idempotence import connect
from tests.java_client import java_client


def stored_batches(conn: BrokerConnection, topic: str, partition: int = 0) -> list[RecordBatch]:
    """Every batch of the partition, markers included, from one raw read_uncommitted Fetch."""
    request = SCHEMAS[ApiKey.FETCH][0].cls
    topic_cls = request.FetchTopic
    body = request(replica_id=CONSUMER_REPLICA_ID, max_wait_ms=0, min_bytes=1, max_bytes=1 << 24,
                   isolation_level=0, topics=(topic_cls(topic=topic, partitions=(topic_cls.FetchPartition(
                       partition=partition, fetch_offset=0, partition_max_bytes=1 << 24),)),))
    (topic_response,) = conn.request(ApiKey.FETCH, body).responses
    (result,) = topic_response.partitions
    assert result.error_code == 0
    return list(iter_batches(result.records or b""))


def transactions(bootstrap: str, topic: str, partition: int = 0) -> list[tuple[str, list[bytes]]]:
    """The partition as a list of (COMMIT or ABORT, the values that transaction wrote), checking
    every data batch is transactional and every marker names the producer of what it closes."""
    with connect(bootstrap) as conn:
        batches = stored_batches(conn, topic, partition)
    out: list[tuple[str, list[bytes]]] = []
    values: list[bytes] = []
    producer_id = -1
    for batch in batches:
        header = batch.header
        assert header.is_transactional, f"batch at {header.base_offset} is not transactional"
        if producer_id >= 0:
            assert header.producer_id == producer_id
        producer_id = header.producer_id
        if not header.is_control:
            values.extend(r.value or b"" for r in batch.records)
            continue
        (marker,) = [parse_control_record(r) for r in batch.records]
        out.append((marker.type.name, values))
        values = []
    assert not values, "records after the last marker: a transaction left open"
    return out


def committed_offset(bootstrap: str, group: str, topic: str, partition: int) -> int | None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=CLIENT_TIMEOUT_MS)
    try:
        found = admin.list_group_offsets({group: None})[group]
    finally:
        admin.close()
    value = found.get(KafkaTopicPartition(topic, partition))
    return None if value is None else value.offset


@pytest.mark.timeout(180)
def test_java_client_transactions_offsets_and_fencing(bootstrap: str, topic_name: str) -> None:
    client = java_client()
    create_topic(bootstrap, topic_name, partitions=2)
    t = topic_name
    script = f"""new p1 java-app
begin p1
send p1 {t} 0 a
send p1 {t} 1 b
offsets p1 java-group {t} 0 2
commit p1
begin p1
send p1 {t} 0 c
offsets p1 java-group {t} 0 99
abort p1
begin p1
send p1 {t} 0 d
new p2 java-app
commit p1
begin p2
send p2 {t} 0 e
commit p2
"""
    lines = client.run("TransactionalProducer", script, bootstrap, timeout_s=150).split()
    out = " ".join(lines)
    assert "error commit ProducerFencedException" in out  # p1's commit after p2's initTransactions
    assert out.count("ok commit") == 2 and "ok abort" in out
    assert transactions(bootstrap, t, 0) == [
        ("COMMIT", [b"a"]), ("ABORT", [b"c"]), ("ABORT", [b"d"]), ("COMMIT", [b"e"])]
    assert transactions(bootstrap, t, 1) == [("COMMIT", [b"b"])]
    assert committed_offset(bootstrap, "java-group", t, 0) == 2  # the aborted 99 never showed
    assert read_committed(bootstrap, t, 0, expected=2) == [b"a", b"e"]
    java_reader = client.run("ReadCommittedConsumer", "", bootstrap, t, "read_committed", "2", timeout_s=60)
    assert java_reader.split() == ["value", "a", "value", "e", "end", "8"]  # 4 records, 4 markers


def read_committed(bootstrap: str, topic: str, partition: int, expected: int) -> list[bytes]:
    """What a confluent-kafka consumer (isolation.level=read_committed by default) gets from
    the start of the partition: ``expected`` values, then nothing more within a second."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{topic}",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    try:
        consumer.assign([TopicPartition(topic, partition, 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                if message.error().code() == ConfluentError._PARTITION_EOF and len(values) >= expected:
                    break
                continue
            values.append(message.value())
        return values
    finally:
        consumer.close()


def _confluent(bootstrap: str, transactional_id: str) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                     "transaction.timeout.ms": 60_000, "linger.ms": 1})


@pytest.mark.timeout(120)
def test_confluent_kafka_commit_abort_and_offsets(bootstrap: str, topic_name: str) -> None:
    create_topic(bootstrap, topic_name)
    producer = _confluent(bootstrap, "librdkafka-app")
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic_name, b"one", partition=0)
    producer.produce(topic_name, b"two", partition=0)
    metadata = _group_metadata("rd-group")
    producer.send_offsets_to_transaction([TopicPartition(topic_name, 0, 7)], metadata, 30)
    producer.commit_transaction(30)
    producer.begin_transaction()
    producer.produce(topic_name, b"three", partition=0)
    producer.flush(10)  # else abort_transaction purges it unsent
    producer.abort_transaction(30)
    assert transactions(bootstrap, topic_name) == [("COMMIT", [b"one", b"two"]), ("ABORT", [b"three"])]
    assert committed_offset(bootstrap, "rd-group", topic_name, 0) == 7
    producer.begin_transaction()
    producer.produce(topic_name, b"open", partition=0)
    producer.flush(10)  # in the log, above the last stable offset
    assert read_committed(bootstrap, topic_name, 0, expected=2) == [b"one", b"two"]
    producer.commit_transaction(30)
    assert read_committed(bootstrap, topic_name, 0, expected=3) == [b"one", b"two", b"open"]


def _group_metadata(group: str) -> object:
    """A ConsumerGroupMetadata for a group this process does not consume in: confluent-kafka
    hands out one only from a Consumer, which never joins until it polls."""
    consumer = Consumer({"bootstrap.servers": "127.0.0.1:1", "group.id": group})
    try:
        return consumer.consumer_group_metadata()
    finally:
        consumer.close()


@pytest.mark.timeout(120)
def test_confluent_kafka_second_producer_fences_the_first(bootstrap: str, topic_name: str) -> None:
    create_topic(bootstrap, topic_name)
    first = _confluent(bootstrap, "librdkafka-zombie")
    first.init_transactions(30)
    first.begin_transaction()
    first.produce(topic_name, b"zombie", partition=0)
    first.flush(10)
    second = _confluent(bootstrap, "librdkafka-zombie")
    second.init_transactions(30)  # aborts the first one's transaction and fences it
    with pytest.raises(KafkaException) as raised:
        first.commit_transaction(30)
    error = raised.value.args[0]
    assert error.fatal() or error.code() in (ConfluentError._FENCED, ConfluentError.PRODUCER_FENCED)
    second.begin_transaction()
    second.produce(topic_name, b"successor", partition=0)
    second.commit_transaction(30)
    assert transactions(bootstrap, topic_name) == [("ABORT", [b"zombie"]), ("COMMIT", [b"successor"])]


@pytest.mark.timeout(120)
def test_aiokafka_transactions(bootstrap: str, topic_name: str) -> None:
    create_topic(bootstrap, topic_name)

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="aiokafka-app",
                                    request_timeout_ms=CLIENT_TIMEOUT_MS)
        await producer.start()
        try:
            async with producer.transaction():
                await producer.send_and_wait(topic_name, b"kept", partition=0)
                await producer.send_offsets_to_transaction({_aio_tp(topic_name, 0): 3}, "aio-group")
            await producer.begin_transaction()
            await producer.send_and_wait(topic_name, b"dropped", partition=0)
            await producer.abort_transaction()
        finally:
            await producer.stop()

    asyncio.run(run())
    assert transactions(bootstrap, topic_name) == [("COMMIT", [b"kept"]), ("ABORT", [b"dropped"])]
    assert committed_offset(bootstrap, "aio-group", topic_name, 0) == 3


def _aio_tp(topic: str, partition: int) -> Callable[..., object]:
    from aiokafka.structs import TopicPartition as AioTopicPartition

    return AioTopicPartition(topic, partition)  # type: ignore[return-value]


@pytest.mark.timeout(120)
def test_transactions_tool_lists_describes_and_aborts(bootstrap: str, topic_name: str, capsys) -> None:
    """``kafkalab transactions`` against a transaction librdkafka left open."""
    from kafkalab.tools.cli import main

    def tool(*args: str) -> tuple[int, list[list[str]]]:
        status = main(["transactions", "--bootstrap-server", bootstrap, *args])
        out = capsys.readouterr()
        rows = [[cell.strip() for cell in line.split("\t")[:-1]] for line in out.out.splitlines()]
        return status, rows or [[out.err]]

    create_topic(bootstrap, topic_name)
    producer = _confluent(bootstrap, "tool-app")
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic_name, b"open", partition=0)
    producer.flush(10)
    status, rows = tool("list")
    assert status == 0 and rows[0] == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    listed = {row[0]: row[1:] for row in rows[1:]}
    assert listed["tool-app"][2] == "Ongoing"
    status, rows = tool("describe", "--transactional-id", "tool-app")
    assert status == 0 and rows[0][4] == "TransactionState"
    described = rows[1]
    assert described[1:3] == ["tool-app", listed["tool-app"][1]] and described[4] == "Ongoing"
    assert described[8] == f"{topic_name}-0" and int(described[7]) >= 0
    status, rows = tool("describe-producers", "--topic", topic_name, "--partition", "0")
    (producer_row,) = rows[1:]
    assert producer_row[0] == listed["tool-app"][1] and producer_row[5] == "0"  # open since offset 0
    status, rows = tool("describe", "--transactional-id", "nobody")
    assert status == 1 and "TRANSACTIONAL_ID_NOT_FOUND" in rows[0][0]
    # The hanging-transaction remedy: the leader writes an ABORT marker for the open transaction.
    assert tool("abort", "--topic", topic_name, "--partition", "0", "--start-offset", "0")[0] == 0
    status, rows = tool("describe-producers", "--topic", topic_name, "--partition", "0")
    assert rows[1][5] == "None"
    assert read_committed(bootstrap, topic_name, 0, expected=0) == []
    assert transactions(bootstrap, topic_name) == [("ABORT", [b"open"])]


@pytest.mark.timeout(120)
def test_java_admin_lists_and_describes_an_open_transaction(bootstrap: str, topic_name: str) -> None:
    """Kafka's own Admin client (listTransactions, describeTransactions, describeProducers)
    decodes kafkalab's answers about a transaction librdkafka left open."""
    client = java_client()
    create_topic(bootstrap, topic_name)
    producer = _confluent(bootstrap, "admin-app")
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic_name, b"x", partition=0)
    producer.produce(topic_name, b"y", partition=0)
    producer.flush(10)
    lines = client.run("TransactionsAdmin", "", bootstrap, "admin-app", topic_name, timeout_s=60).splitlines()
    listing = [line.split() for line in lines if line.startswith("listing admin-app ")]
    assert len(listing) == 1 and listing[0][3] == "Ongoing"
    producer_id = listing[0][2]
    assert f"describe Ongoing {producer_id} 0 60000 {topic_name}-0" in lines
    assert f"producer {producer_id} 0 1 0" in lines  # sequences 0-1, open since offset 0
    producer.abort_transaction(30)


@pytest.mark.timeout(120)
def test_kafka_python_transactions_and_fencing(bootstrap: str, topic_name: str) -> None:
    """kafka-python 3.0 speaks the flexible versions (AddPartitionsToTxn v3, EndTxn v3,
    TxnOffsetCommit v3, FindCoordinator v4)."""
    from kafka import KafkaProducer
    from kafka.errors import ProducerFencedError
    from kafka.structs import OffsetAndMetadata

    create_topic(bootstrap, topic_name)

    def producer() -> KafkaProducer:
        return KafkaProducer(bootstrap_servers=bootstrap, transactional_id="kafka-python-app",
                             request_timeout_ms=CLIENT_TIMEOUT_MS, max_block_ms=CLIENT_TIMEOUT_MS)

    first = producer()
    first.init_transactions()
    first.begin_transaction()
    first.send(topic_name, b"kp-1", partition=0).get(timeout=10)
    first.send_offsets_to_transaction({KafkaTopicPartition(topic_name, 0): OffsetAndMetadata(4, "", -1)}, "kp-group")
    first.commit_transaction()
    first.begin_transaction()
    first.send(topic_name, b"kp-2", partition=0).get(timeout=10)
    second = producer()
    second.init_transactions()  # aborts kp-2 and fences the first producer
    with pytest.raises(ProducerFencedError):
        first.commit_transaction()
    first.close(timeout=5)
    second.close(timeout=5)
    assert transactions(bootstrap, topic_name) == [("COMMIT", [b"kp-1"]), ("ABORT", [b"kp-2"])]
    assert committed_offset(bootstrap, "kp-group", topic_name, 0) == 4


@pytest.mark.timeout(120)
def test_first_transactional_id_on_a_fresh_server(server_factory, tmp_path) -> None:
    """On a server whose ``__transaction_state`` does not exist yet, the first FindCoordinator
    creates it and answers COORDINATOR_NOT_AVAILABLE (Kafka's ``getCoordinator``); librdkafka
    retries and runs its transaction to the end."""
    bootstrap = server_factory(tmp_path / "data").bootstrap
    create_topic(bootstrap, "fresh")
    with connect(bootstrap) as conn:
        found = conn.request(ApiKey.FIND_COORDINATOR, SCHEMAS[ApiKey.FIND_COORDINATOR][0].cls(
            key="raw-app", key_type=1, coordinator_keys=("raw-app",)))
    answer = found.coordinators[0] if found.coordinators else found
    assert answer.error_code == 15  # COORDINATOR_NOT_AVAILABLE, while the topic is being made
    producer = _confluent(bootstrap, "librdkafka-first")
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce("fresh", b"one", partition=0)
    producer.commit_transaction(30)
    assert transactions(bootstrap, "fresh", 0) == [("COMMIT", [b"one"])]


@pytest.mark.slow  # a JVM and a fresh server: ~5 s
@pytest.mark.timeout(120)
def test_java_client_first_transactional_id_on_a_fresh_server(server_factory, tmp_path) -> None:
    """Kafka's Java client, the first to ask for a transaction coordinator on a fresh server,
    gets COORDINATOR_NOT_AVAILABLE, retries, and commits."""
    client = java_client()
    bootstrap = server_factory(tmp_path / "data").bootstrap
    create_topic(bootstrap, "fresh")
    out = client.run("TransactionalProducer", "new p1 java-first\nbegin p1\nsend p1 fresh 0 a\ncommit p1\n",
                     bootstrap, timeout_s=60)
    assert "ok commit" in out
    assert transactions(bootstrap, "fresh", 0) == [("COMMIT", [b"a"])]


@pytest.mark.timeout(120)
def test_console_consumer_isolation_levels(bootstrap: str, topic_name: str, capsys) -> None:
    """``kafkalab console-consumer --isolation-level`` against librdkafka's read_committed
    consumer on a log holding a committed, an aborted and an open transaction."""
    from kafkalab.tools.cli import main

    create_topic(bootstrap, topic_name)
    producer = _confluent(bootstrap, "console-app")
    producer.init_transactions(30)
    for values, commit in (([b"one", b"two"], True), ([b"three"], False), ([b"four"], None)):
        producer.begin_transaction()
        for value in values:
            producer.produce(topic_name, value, partition=0)
        producer.flush(10)
        if commit is not None:
            (producer.commit_transaction if commit else producer.abort_transaction)(30)

    def console(*extra: str) -> list[str]:
        capsys.readouterr()
        assert main(["console-consumer", "--bootstrap-server", bootstrap, "--topic", topic_name,
                     "--from-beginning", "--timeout-ms", "300", "--property", "print.offset=true",
                     *extra]) == 0
        return capsys.readouterr().out.splitlines()

    # Offsets: one 0, two 1, COMMIT 2, three 3, ABORT 4, four 5 (open).
    everything = ["Offset:0\tone", "Offset:1\ttwo", "Offset:3\tthree", "Offset:5\tfour"]
    assert console() == everything  # read_uncommitted is the default, as in Kafka's tool
    assert console("--isolation-level", "read_committed") == ["Offset:0\tone", "Offset:1\ttwo"]
    producer.commit_transaction(30)
    assert console("--isolation-level", "read_committed") == ["Offset:0\tone", "Offset:1\ttwo", "Offset:5\tfour"]
    assert read_committed(bootstrap, topic_name, 0, expected=3) == [b"one", b"two", b"four"]
    assert console("--isolation-level", "read_uncommitted") == everything
