"""The peer channel against a fake peer: a socket server that speaks ApiVersions v0 by hand.

The fake peer parses each request header and writes each response with ``struct``, from the
layout in Kafka's JSON specs (ApiVersionsRequest/Response v0: request header v1, an empty body;
response: correlation id, error code, [api key, min, max]) -- not with kafkalab's codec -- and
can stay silent or hang up, so timeouts, reconnects and backoff are exercised over real sockets.
"""

from __future__ import annotations

import asyncio
import random
import struct
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from kafkalab.client.launcher import unused_port
from kafkalab.errors import ErrorCode, NetworkError
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.server import peer_channel
from kafkalab.server.peer_channel import PeerChannel, PeerQueueFullError, UnknownPeerError

WAIT_S = 5.0  # every await in these tests is bounded


class FakePeer:
    """Answers ApiVersions v0 with one entry (api key 18, 0..3) unless told to stay silent."""

    def __init__(self, *, silent: bool = False, hang_up_after: int | None = None, wrong_correlation: bool = False):
        self.silent, self.hang_up_after, self.wrong_correlation = silent, hang_up_after, wrong_correlation
        self.correlation_ids: list[int] = []
        self.client_ids: list[str] = []
        self.connections = 0
        self.closed = asyncio.Event()
        self.server: asyncio.base_events.Server | None = None

    async def start(self, port: int = 0) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", port)
        return int(self.server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                frame = await reader.readexactly(size)
                api_key, version, correlation_id, client_length = struct.unpack(">hhih", frame[:10])
                assert (api_key, version) == (ApiKey.API_VERSIONS, 0)
                self.client_ids.append(frame[10:10 + client_length].decode())
                self.correlation_ids.append(correlation_id)
                if self.hang_up_after is not None and len(self.correlation_ids) > self.hang_up_after:
                    break
                if self.silent:
                    continue
                answer_id = correlation_id + 1 if self.wrong_correlation else correlation_id
                body = struct.pack(">ihihhh", answer_id, 0, 1, 18, 0, 3)
                writer.write(struct.pack(">i", len(body)) + body)
                await writer.drain()
        except asyncio.IncompleteReadError:
            pass
        finally:
            writer.close()
            self.closed.set()


def run(scenario: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(asyncio.wait_for(scenario(), 4 * WAIT_S))


class Outcomes:
    """Collects how requests ended; ``wait(n)`` returns once n have."""

    def __init__(self) -> None:
        self.responses: list[Any] = []
        self.failures: list[NetworkError] = []
        self._changed = asyncio.Event()

    def on_response(self, body: Any) -> None:
        self.responses.append(body)
        self._changed.set()

    def on_failure(self, error: NetworkError) -> None:
        self.failures.append(error)
        self._changed.set()

    async def wait(self, count: int) -> None:
        async with asyncio.timeout(WAIT_S):
            while len(self.responses) + len(self.failures) < count:
                self._changed.clear()
                await self._changed.wait()


def send(channel: PeerChannel, outcomes: Outcomes, node: int = 1) -> None:
    from kafkalab.protocol import SCHEMAS

    body = SCHEMAS[ApiKey.API_VERSIONS][0].cls()
    channel.send(node, ApiKey.API_VERSIONS, 0, body, outcomes.on_response, outcomes.on_failure)


def test_connects_lazily_and_matches_responses_in_order() -> None:
    async def scenario() -> None:
        peer = FakePeer()
        port = await peer.start()
        channel = PeerChannel(2, {1: ("127.0.0.1", port)}, random.Random(1))
        await asyncio.sleep(0.05)
        assert peer.connections == 0 and channel.connection(1) is None  # nothing sent, nothing opened
        outcomes = Outcomes()
        for _ in range(7):  # more than IN_FLIGHT_MAX: the rest wait their turn
            send(channel, outcomes)
        await outcomes.wait(7)
        assert not outcomes.failures
        assert [(a.api_key, a.min_version, a.max_version) for r in outcomes.responses for a in r.api_keys] == [(18, 0, 3)] * 7
        assert peer.correlation_ids == list(range(7)) and set(peer.client_ids) == {"broker-2"}
        assert peer.connections == 1
        await channel.close()
        await peer.stop()

    run(scenario)


def test_silent_peer_times_out_and_the_connection_is_dropped() -> None:
    async def scenario() -> None:
        peer = FakePeer(silent=True)
        port = await peer.start()
        channel = PeerChannel(2, {1: ("127.0.0.1", port)}, random.Random(1), request_timeout_ms=200)
        outcomes = Outcomes()
        started = asyncio.get_running_loop().time()
        send(channel, outcomes)
        await outcomes.wait(1)
        elapsed = asyncio.get_running_loop().time() - started
        assert [f.error_code for f in outcomes.failures] == [ErrorCode.REQUEST_TIMED_OUT]
        assert 0.19 <= elapsed < 2.0
        async with asyncio.timeout(WAIT_S):
            await peer.closed.wait()  # a late answer could not be matched any more
        await channel.close()
        await peer.stop()

    run(scenario)


def test_unreachable_peer_fails_then_reconnects_once_it_listens() -> None:
    async def scenario() -> None:
        port = unused_port()
        channel = PeerChannel(2, {1: ("127.0.0.1", port)}, random.Random(1))
        outcomes = Outcomes()
        send(channel, outcomes)
        await outcomes.wait(1)
        assert [f.error_code for f in outcomes.failures] == [ErrorCode.NETWORK_EXCEPTION]
        peer = FakePeer()
        await peer.start(port)
        send(channel, outcomes)  # sent after the reconnect backoff (50 ms +- 20 %)
        await outcomes.wait(2)
        assert len(outcomes.responses) == 1 and peer.connections == 1
        await channel.close()
        await peer.stop()

    run(scenario)


def test_peer_hanging_up_fails_the_request_in_flight_and_the_next_reconnects() -> None:
    async def scenario() -> None:
        peer = FakePeer(hang_up_after=0)
        port = await peer.start()
        channel = PeerChannel(2, {1: ("127.0.0.1", port)}, random.Random(1))
        outcomes = Outcomes()
        send(channel, outcomes)
        await outcomes.wait(1)
        assert [f.error_code for f in outcomes.failures] == [ErrorCode.NETWORK_EXCEPTION]
        peer.hang_up_after = None
        send(channel, outcomes)
        await outcomes.wait(2)
        assert len(outcomes.responses) == 1
        connection = channel.connection(1)
        assert connection is not None and connection.connects == 2 and peer.connections == 2
        await channel.close()
        await peer.stop()

    run(scenario)


def test_a_response_with_the_wrong_correlation_id_fails_the_connection() -> None:
    async def scenario() -> None:
        peer = FakePeer(wrong_correlation=True)
        port = await peer.start()
        channel = PeerChannel(2, {1: ("127.0.0.1", port)}, random.Random(1))
        outcomes = Outcomes()
        send(channel, outcomes)
        await outcomes.wait(1)
        assert len(outcomes.failures) == 1 and "correlation id 1" in str(outcomes.failures[0])
        await channel.close()
        await peer.stop()

    run(scenario)


def test_queue_is_bounded_and_unknown_nodes_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(peer_channel, "QUEUED_REQUESTS_MAX", 3)

    async def scenario() -> None:
        peer = FakePeer(silent=True)
        port = await peer.start()
        channel = PeerChannel(2, {1: ("127.0.0.1", port)}, random.Random(1))
        outcomes = Outcomes()
        for _ in range(3):
            send(channel, outcomes)
        with pytest.raises(PeerQueueFullError, match="3 requests already wait for node 1"):
            send(channel, outcomes)
        with pytest.raises(UnknownPeerError) as unknown:
            send(channel, outcomes, node=9)
        assert unknown.value.error_code == ErrorCode.BROKER_NOT_AVAILABLE
        await channel.close()  # closing fails what still waits: every request ends exactly once
        assert len(outcomes.failures) == 3 and not outcomes.responses
        await peer.stop()

    run(scenario)


def test_reconnect_backoff_doubles_up_to_the_maximum_with_jitter() -> None:
    channel = PeerChannel(2, {}, random.Random(5))
    for failures, base in [(1, 50), (2, 100), (3, 200), (5, 800), (6, 1000), (30, 1000)]:
        for _ in range(50):
            assert base * 0.8 <= channel.backoff_ms(failures) <= base * 1.2


def test_a_body_the_schema_refuses_fails_alone() -> None:
    async def scenario() -> None:
        peer = FakePeer()
        port = await peer.start()
        channel = PeerChannel(2, {1: ("127.0.0.1", port)}, random.Random(1))
        outcomes = Outcomes()
        channel.send(1, ApiKey.METADATA, 0, object(), outcomes.on_response, outcomes.on_failure)
        send(channel, outcomes)  # the next request on the same connection still goes through
        await outcomes.wait(2)
        assert [f.error_code for f in outcomes.failures] == [ErrorCode.INVALID_REQUEST]
        assert len(outcomes.responses) == 1 and len(peer.correlation_ids) == 1  # only the good one was sent
        await channel.close()
        await peer.stop()

    run(scenario)
