"""The asyncio server as a subprocess: startup, robustness, shutdown and restart, real clients."""

from __future__ import annotations

import signal
import socket
import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from kafkalab.protocol.framing import size_prefix
from tests.broker._harness import batch, decode_records
from tests.server._server_process import ServerProcess, api_versions_works, call, read_frame, wait_closed

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def server(tmp_path):
    process = ServerProcess(tmp_path / "data").start()
    yield process
    process.kill()


def _create_topic(sock: socket.socket, topic: str) -> None:
    body = {"topics": [{"name": topic, "num_partitions": 1, "replication_factor": 1}], "timeout_ms": 1000}
    assert call(sock, 19, 7, body, 3).topics[0].error_code == 0  # a produce never creates one


def _produce(sock: socket.socket, topic: str, values: list[bytes], correlation_id: int = 7) -> int:
    # As a real producer does: Metadata first, which creates the topic (Produce never does).
    metadata = {"topics": [{"name": topic}], "allow_auto_topic_creation": True}
    assert call(sock, 3, 12, metadata, correlation_id).topics[0].error_code == 0
    body = {"acks": -1, "timeout_ms": 1000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": batch(values)}]}]}
    response = call(sock, 0, 7, body, correlation_id)
    partition = response.responses[0].partition_responses[0]
    assert partition.error_code == 0
    return partition.base_offset


def _fetch_all(sock: socket.socket, topic: str, offset: int = 0, max_wait_ms: int = 0) -> list:
    body = {"max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
            "topics": [{"topic": topic, "partitions": [
                {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}]}]}
    data = call(sock, 1, 11, body, 9).responses[0].partitions[0]
    return decode_records(data.records or b"")


def test_started_line_and_loopback_only(server, tmp_path):
    assert server.port > 0
    assert api_versions_works(server)
    refused = ServerProcess(tmp_path / "other", "--host", "0.0.0.0")
    with pytest.raises(AssertionError, match="did not start"):
        refused.start()


def test_malformed_frames_close_only_that_connection(server):
    with server.connect() as good:
        _create_topic(good, "t")
        _produce(good, "t", [b"kept"])
        with server.connect() as bad:
            bad.sendall(size_prefix(6) + b"\x00\x03\x00\x04\x00\x00")  # truncated header
            assert wait_closed(bad)
        with server.connect() as unknown:
            unknown.sendall(size_prefix(10) + b"\x01\x00\x00\x00\x00\x00\x00\x01\xff\xff")
            assert wait_closed(unknown)
        with server.connect() as huge:
            huge.sendall(size_prefix(200 * 1024 * 1024))  # over socket.request.max.bytes
            assert wait_closed(huge)
        with server.connect() as negative:
            negative.sendall(b"\xff\xff\xff\xf0")
            assert wait_closed(negative)
        with server.connect() as vanishing:
            vanishing.sendall(size_prefix(100) + b"\x00\x12")  # half a frame, then gone
        assert [v for _, _, v, _ in _fetch_all(good, "t")] == [b"kept"]


def test_pipelined_requests_are_answered_in_order(server):
    with server.connect() as sock:
        from kafkalab.protocol.header import encode_request

        requests = b"".join(
            encode_request(18, 3, cid, "p", {"client_software_name": "p", "client_software_version": "1"})
            for cid in range(1, 6)
        )
        sock.sendall(requests)
        ids = [int.from_bytes(read_frame(sock)[:4], "big") for _ in range(5)]
        assert ids == [1, 2, 3, 4, 5]


def test_delayed_fetch_waits_then_completes_on_produce(server):
    with server.connect() as consumer, server.connect() as producer:
        _create_topic(producer, "d")
        _produce(producer, "d", [b"first"])
        started = time.monotonic()
        assert _fetch_all(consumer, "d", offset=1, max_wait_ms=300) == []
        assert time.monotonic() - started >= 0.25  # the fetch waited for max_wait_ms
        from kafkalab.protocol.header import encode_request

        body = {"max_wait_ms": 10_000, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
                "topics": [{"topic": "d", "partitions": [
                    {"partition": 0, "fetch_offset": 1, "partition_max_bytes": 1 << 20}]}]}
        consumer.sendall(encode_request(1, 11, 42, "c", body))
        time.sleep(0.2)
        started = time.monotonic()
        _produce(producer, "d", [b"second"])
        frame = read_frame(consumer)
        assert time.monotonic() - started < 5  # answered by the produce, not the 10 s wait
        assert int.from_bytes(frame[:4], "big") == 42


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_restart_serves_everything_acknowledged(tmp_path, signum):
    first = ServerProcess(tmp_path / "data").start()
    try:
        with first.connect() as sock:
            _create_topic(sock, "r")
            for i in range(20):
                _produce(sock, "r", [b"v%d" % i, b"w%d" % i], correlation_id=100 + i)
        code = first.stop(signum)
        assert code == (0 if signum == signal.SIGTERM else -signal.SIGKILL)
    finally:
        first.kill()
    clean = (tmp_path / "data" / ".kafka_cleanshutdown").exists()
    assert clean == (signum == signal.SIGTERM)
    second = ServerProcess(tmp_path / "data").start()
    try:
        with second.connect() as sock:
            records = _fetch_all(sock, "r")
        assert [o for o, *_ in records] == list(range(40))
        assert records[-1][2] == b"w19"
    finally:
        second.kill()


def test_kafka_python_produces_and_consumes_keyed_records_with_headers(server):
    producer = KafkaProducer(bootstrap_servers=server.bootstrap, request_timeout_ms=10_000,
                             max_block_ms=10_000, acks="all")
    try:
        for i in range(5):
            producer.send("smoke", key=b"k%d" % i, value=b"v%d" % i,
                          headers=[("trace", b"%d" % i)]).get(timeout=10)
    finally:
        producer.close(timeout=5)
    consumer = KafkaConsumer(bootstrap_servers=server.bootstrap, consumer_timeout_ms=3000,
                             enable_auto_commit=False, group_id=None, request_timeout_ms=10_000)
    try:
        partition = TopicPartition("smoke", 0)
        consumer.assign([partition])
        consumer.seek_to_beginning(partition)
        got = [(m.offset, m.key, m.value, list(m.headers)) for m in consumer]
        assert consumer.end_offsets([partition]) == {partition: 5}
    finally:
        consumer.close()
    assert got == [(i, b"k%d" % i, b"v%d" % i, [("trace", b"%d" % i)]) for i in range(5)]


def test_librdkafka_fetch_of_available_data_is_not_parked_for_fetch_wait_max_ms(server):
    """Records already in the log come back at once, not after fetch.wait.max.ms (30 s here):
    a fetch is parked only while the log holds fewer than fetch.min.bytes past its offset."""
    from confluent_kafka import Consumer, Producer
    from confluent_kafka import TopicPartition as Partition

    producer = Producer({"bootstrap.servers": server.bootstrap, "linger.ms": 0, "acks": 1})
    for i in range(50):
        producer.produce("avail", b"v%d" % i, partition=0)
    assert producer.flush(20) == 0
    consumer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": "avail",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 30_000})
    try:
        started = time.monotonic()
        consumer.assign([Partition("avail", 0, 0)])
        got: list[bytes] = []
        while len(got) < 50 and time.monotonic() - started < 20:
            got += [m.value() for m in consumer.consume(50 - len(got), timeout=1) if m.error() is None]
        elapsed_s = time.monotonic() - started
    finally:
        consumer.close()
    assert got == [b"v%d" % i for i in range(50)]
    assert elapsed_s < 15  # a parked fetch would take the whole 30 s
