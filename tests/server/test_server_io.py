"""The server's event-loop costs per request: how responses are written and when the timer wakes.

These run the server in-process on a real socket (asyncio.run, no sleeps beyond a fetch's own
short max_wait_ms) and check the write path and the timer-wake rule directly, so a change that
puts back a per-request cost fails here rather than only as a slower benchmark.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from kafkalab.broker.request import Outgoing
from kafkalab.protocol.framing import size_prefix
from kafkalab.protocol.header import decode_response, encode_request
from kafkalab.storage.positions import FileSlice
from kafkalab.server import KafkaServer
from kafkalab.server import connection as connection_module
from kafkalab.server.connection import Connection, coalesce
from tests.broker._harness import batch, decode_records

pytestmark = pytest.mark.timeout(60)
STEP_S = 10.0  # generous bound on any one network step on a loaded CI core


def test_coalesce_joins_in_memory_runs_and_keeps_file_slices_in_place(tmp_path):
    piece = FileSlice(tmp_path / "x.log", 0, 3)
    assert coalesce([b"ab", b"cd", piece, b"e", b"f", piece]) == [b"abcd", piece, b"ef", piece]
    assert coalesce([piece]) == [piece]
    assert coalesce([b"only"]) == [b"only"]
    assert coalesce([]) == []


# 700 kB usually fits the socket buffer in one direct sendfile; 12 MiB cannot, so the rest goes
# through loop.sendfile while the client is still reading.
@pytest.mark.parametrize("slice_bytes", [700_000, 12 << 20])
def test_response_parts_arrive_byte_exact_with_one_write_per_in_memory_run(tmp_path, monkeypatch, slice_bytes):
    segment = tmp_path / "00000000000000000000.log"
    segment.write_bytes(bytes(range(256)) * (13 << 12))  # 13 MiB
    piece = FileSlice(segment, 1000, slice_bytes)
    head = [size_prefix(6 + piece.size_bytes + 2), b"\x00\x00\x00\x07", b"hd"]
    parts: list[bytes | FileSlice] = [*head, piece, b"\x00", b"\x01"]
    expected = b"".join(p if isinstance(p, bytes) else p.read_bytes() for p in parts)
    writes: list[int] = []  # in-memory sends, direct (os.write) or through the transport
    transport_class = asyncio.selector_events._SelectorSocketTransport
    original_write = transport_class.write
    original_os_write = os.write

    def counting_write(self: Any, data: Any) -> None:
        if isinstance(self.get_protocol(), Connection):  # the server's side only
            writes.append(len(data))
        original_write(self, data)

    def counting_os_write(descriptor: int, data: Any) -> int:
        sent = original_os_write(descriptor, data)
        writes.append(sent)
        return sent

    monkeypatch.setattr(transport_class, "write", counting_write)
    monkeypatch.setattr(connection_module.os, "write", counting_os_write)
    handed_over: list[int] = []
    original_sendfile = asyncio.base_events.BaseEventLoop.sendfile

    async def counting_sendfile(self: Any, transport: Any, file: Any, offset: int = 0, count: Any = None,
                                **kwargs: Any) -> int:
        handed_over.append(count)
        return await original_sendfile(self, transport, file, offset, count, **kwargs)

    monkeypatch.setattr(asyncio.base_events.BaseEventLoop, "sendfile", counting_sendfile)

    async def scenario() -> bytes:
        def submit(connection: Connection, frame: bytes) -> None:
            assert frame == b"ping"
            connection.deliver(Outgoing(connection.connection_id, parts))

        server = await _serve(submit)
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(size_prefix(4) + b"ping")
        received = await asyncio.wait_for(reader.readexactly(len(expected)), STEP_S)
        writer.close()
        server.close()
        await server.wait_closed()
        return received

    assert asyncio.run(scenario()) == expected
    # size prefix + header in one send, the two trailing bytes in another; the slice by sendfile
    assert writes == [4 + 4 + 2, 2]
    if slice_bytes > 4 << 20:  # more than any loopback socket buffer: part went by loop.sendfile
        assert len(handed_over) == 1 and 0 < handed_over[0] < slice_bytes
    else:
        assert handed_over == []  # all sent at once: no loop.sendfile, no drain


def test_a_slice_past_the_end_of_its_file_closes_the_connection(tmp_path):
    """A slice the file cannot fill (the segment was truncated under it) must not leave the
    client waiting for bytes that never come: the connection is closed."""
    segment = tmp_path / "00000000000000000000.log"
    segment.write_bytes(b"abc")

    async def scenario() -> bytes:
        def submit(connection: Connection, frame: bytes) -> None:
            connection.deliver(Outgoing(connection.connection_id, [b"\x00\x00\x00\x0a", FileSlice(segment, 0, 10)]))

        server = await _serve(submit)
        reader, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
        writer.write(size_prefix(1) + b"a")
        received = await asyncio.wait_for(reader.read(), STEP_S)  # until the server closes
        writer.close()
        server.close()
        await server.wait_closed()
        return received

    assert asyncio.run(scenario()) == b"\x00\x00\x00\x0aabc"


async def _serve(submit: Any) -> asyncio.Server:
    """A listener whose connections hand every frame to ``submit(connection, frame)``."""
    return await asyncio.get_running_loop().create_server(lambda: Connection(1, submit, 1024), "127.0.0.1", 0)


class CountingEvent(asyncio.Event):
    """An Event that counts how often it is set."""

    def __init__(self) -> None:
        super().__init__()
        self.set_count = 0

    def set(self) -> None:
        self.set_count += 1
        super().set()


class Client:
    """A raw Kafka client on one asyncio connection."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer, self.correlation_id = reader, writer, 0

    def send(self, api_key: int, version: int, body: Any) -> int:
        self.correlation_id += 1
        self.writer.write(encode_request(api_key, version, self.correlation_id, "io-test", body))
        return self.correlation_id

    async def receive(self, api_key: int, version: int) -> Any:
        size = int.from_bytes(await asyncio.wait_for(self.reader.readexactly(4), STEP_S), "big")
        frame = await asyncio.wait_for(self.reader.readexactly(size), STEP_S)
        return decode_response(api_key, version, frame)[1]

    async def call(self, api_key: int, version: int, body: Any) -> Any:
        self.send(api_key, version, body)
        return await self.receive(api_key, version)


async def _until(condition: Any) -> None:
    """Yield to the loop until ``condition()`` holds (bounded by STEP_S)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + STEP_S
    while not condition():
        assert loop.time() < deadline, "condition not reached"
        await asyncio.sleep(0.001)


def _fetch_body(offset: int, max_wait_ms: int) -> dict[str, Any]:
    return {"max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
            "topics": [{"topic": "w", "partitions": [
                {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}]}]}


def test_timer_task_is_woken_only_by_requests_that_queue_an_earlier_deadline(tmp_path: Path):
    """Produces and fetches that are answered at once leave the timer task asleep; a fetch
    parked for less than the timer's current sleep wakes it (and is answered); a fetch parked
    for longer than that sleep does not need to."""

    async def scenario() -> None:
        server = KafkaServer(tmp_path / "data", {}, port=0, seed=1)
        _, port = await server.start()
        wake = server._wake = CountingEvent()
        try:
            client = Client(*await asyncio.open_connection("127.0.0.1", port))
            topic = {"name": "w", "num_partitions": 1, "replication_factor": 1, "configs": []}
            await client.call(19, 7, {"topics": [topic], "timeout_ms": 1000})
            await asyncio.sleep(0)  # let the timer task go back to sleep after startup
            baseline = wake.set_count
            produce = {"acks": 1, "timeout_ms": 1000, "topic_data": [
                {"name": "w", "partition_data": [{"index": 0, "records": batch([b"a", b"b"])}]}]}
            for _ in range(5):
                await client.call(0, 7, produce)
            fetched = await client.call(1, 12, _fetch_body(0, max_wait_ms=500))
            assert [v for _, _, v, _ in decode_records(fetched.responses[0].partitions[0].records)][:2] == [b"a", b"b"]
            assert wake.set_count == baseline  # nothing was parked: the timer slept on

            parked = await client.call(1, 12, _fetch_body(10, max_wait_ms=20))
            assert parked.responses[0].partitions[0].records in (b"", None)
            assert wake.set_count == baseline + 1  # 20 ms is sooner than the timer's sleep

            client.send(1, 12, _fetch_body(10, max_wait_ms=60_000))
            await _until(lambda: server.broker is not None and bool(server.broker.parked_fetches))
            assert wake.set_count == baseline + 1  # due long after the timer's next wake-up
            client.writer.close()
        finally:
            await server.stop()

    asyncio.run(scenario())


def test_requests_answered_at_once_are_handled_inline_and_a_parked_fetch_keeps_request_order(tmp_path: Path,
                                                                                              monkeypatch):
    """A fetch that finds records and a produce are answered inside the ``buffer_updated`` that
    brought them (no task, no queue). A parked fetch holds back the requests pipelined behind
    it: they are handled only after its response is written, so responses keep request order."""
    events: list[str] = []
    inside = [0]
    original_received = Connection.buffer_updated
    original_deliver = Connection.deliver

    def received(self: Connection, nbytes: int) -> None:
        inside[0] += 1
        try:
            original_received(self, nbytes)
        finally:
            inside[0] -= 1

    def deliver(self: Connection, outgoing: Outgoing) -> None:
        events.append("inline" if inside[0] else "later")
        original_deliver(self, outgoing)

    monkeypatch.setattr(Connection, "buffer_updated", received)
    monkeypatch.setattr(Connection, "deliver", deliver)

    async def scenario() -> list[int]:
        server = KafkaServer(tmp_path / "data", {}, port=0, seed=1)
        _, port = await server.start()
        try:
            client = Client(*await asyncio.open_connection("127.0.0.1", port))
            topic = {"name": "w", "num_partitions": 1, "replication_factor": 1, "configs": []}
            await client.call(19, 7, {"topics": [topic], "timeout_ms": 1000})
            produce = {"acks": 1, "timeout_ms": 1000, "topic_data": [
                {"name": "w", "partition_data": [{"index": 0, "records": batch([b"a"])}]}]}
            await client.call(0, 7, produce)
            await client.call(1, 12, _fetch_body(0, max_wait_ms=500))
            assert events == ["inline"] * 3
            events.clear()
            # One write: a fetch at the end of the log (parked for 30 ms), then two ApiVersions.
            versions = {"client_software_name": "t", "client_software_version": "1"}
            sent = [client.send(1, 12, _fetch_body(1, max_wait_ms=30)), client.send(18, 3, versions),
                    client.send(18, 3, versions)]
            received_ids = []
            for api_key, version in ((1, 12), (18, 3), (18, 3)):
                size = int.from_bytes(await asyncio.wait_for(client.reader.readexactly(4), STEP_S), "big")
                frame = await asyncio.wait_for(client.reader.readexactly(size), STEP_S)
                received_ids.append(decode_response(api_key, version, frame)[0])
            # the parked fetch is answered by the timer; the ApiVersions behind it follow from
            # that delivery, not from a buffer_updated of their own
            assert events == ["later", "later", "later"]
            assert received_ids == sent
            client.writer.close()
            return received_ids
        finally:
            await server.stop()

    asyncio.run(scenario())


class FakeTransport(asyncio.Transport):
    """Records flow-control calls; has no socket, so a response would go the transport's road."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    def pause_reading(self) -> None:
        self.calls.append("pause")

    def resume_reading(self) -> None:
        self.calls.append("resume")

    def close(self) -> None:
        self.calls.append("close")


def receive(connection: Connection, data: bytes) -> None:
    """What the event loop does with ``data`` arriving on the socket: ``recv_into`` the buffer
    the connection offers, then ``buffer_updated``, until all of it is in."""
    view = memoryview(data)
    while view:
        target = connection.get_buffer(-1)
        count = min(len(target), len(view))
        target[:count] = view[:count]
        connection.buffer_updated(count)
        view = view[count:]


def test_a_busy_connection_stops_reading_beyond_its_pause_limit_and_resumes_after_the_answer():
    """While a request is in the broker, pipelined frames wait in the decoder; past
    PAUSE_READING_BYTES the socket is no longer read, and reading resumes once the request is
    answered and the waiting frames are handled."""
    submitted: list[bytes] = []

    async def scenario() -> list[str]:
        connection = Connection(1, lambda conn, frame: submitted.append(frame), 1 << 20)
        transport = FakeTransport()
        connection.connection_made(transport)
        frame = size_prefix(1000) + bytes(1000)
        receive(connection, frame)  # the first request goes to the broker and stays there
        chunk = frame * 100
        while connection_module.PAUSE_READING_BYTES >= connection._decoder.buffered_bytes:
            assert transport.calls == []
            receive(connection, chunk)
        assert transport.calls == ["pause"] and len(submitted) == 1
        for _ in range(connection._decoder.buffered_bytes // len(frame) + 1):
            connection.deliver(Outgoing(1, None))  # answer (acks=0 style): the next frame goes in
        assert transport.calls == ["pause", "resume"]
        assert connection._decoder.buffered_bytes == 0
        connection.connection_lost(None)
        return transport.calls

    asyncio.run(scenario())
    assert len(submitted) > connection_module.PAUSE_READING_BYTES // 1004
