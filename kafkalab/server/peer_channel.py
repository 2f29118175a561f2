"""Requests from this node to other nodes: the asyncio half of inter-broker traffic.

Theory of operation
-------------------
The sans-I/O broker decides *what* to ask other nodes -- a follower's Fetch, WriteTxnMarkers,
a broker's heartbeat to the controller -- and the simulation carries those requests over its
seeded network. A real process needs sockets instead: :class:`PeerChannel` is Kafka's
inter-broker ``NetworkClient`` (as ``BrokerBlockingSender`` and the controller channel use it)
cut down to what kafkalab needs. One :class:`PeerConnection` per destination node:

* connects lazily, on the first request for that node, to the address the channel was given
  for it (its ``inter.broker.listener.name`` or controller listener), within
  ``CONNECT_TIMEOUT_MS`` (``socket.connection.setup.timeout.ms``);
* frames requests with :class:`~kafkalab.client.connection.ClientProtocol`: fresh correlation
  ids, at most ``IN_FLIGHT_MAX`` unanswered, responses matched to requests in order;
* fails a request with :class:`~kafkalab.errors.NetworkError` carrying REQUEST_TIMED_OUT when no
  answer comes within ``request_timeout_ms`` (``replica.socket.timeout.ms``, 30 s) of it being
  queued, and then drops the connection (a late answer can no longer be matched);
* after a failed connect or a dropped connection fails everything queued and in flight with
  NETWORK_EXCEPTION and waits before connecting again: ``reconnect.backoff.ms`` (50 ms),
  doubling per failure up to ``reconnect.backoff.max.ms`` (1 s), with ±20 % jitter from the
  injected ``random.Random``, as Kafka's ``ClusterConnectionStates`` does;
* queues at most ``QUEUED_REQUESTS_MAX`` requests; one more raises :class:`PeerQueueFullError`
  at once, so a peer that stopped reading cannot make this node buffer without bound.

Every callback runs on the event loop thread, like every call into the broker, so the caller
hands a response straight to the broker (``replica_manager.on_fetch_response``) without locks.

Worked example: node 2 follows ``orders-0`` on node 1. Its first Fetch for node 1 opens the
connection (correlation id 0); node 1 answers after ``replica.fetch.wait.max.ms`` and the
fetcher's callback gets the decoded FetchResponse. Node 1 is SIGKILLed: the read ends, the
Fetch in flight fails with NETWORK_EXCEPTION, and the next one waits 50 ms (±10 ms) before
connecting again; the third failure in a row waits 200 ms, the sixth and later 1 000 ms.
"""

from __future__ import annotations

import asyncio
import logging
import random
import struct
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kafkalab.client.connection import ClientProtocol
from kafkalab.config.definitions import broker_default
from kafkalab.errors import ErrorCode, KafkaError, NetworkError

CONNECT_TIMEOUT_MS = 10_000  # socket.connection.setup.timeout.ms
RECONNECT_BACKOFF_MS = 50  # reconnect.backoff.ms
RECONNECT_BACKOFF_MAX_MS = 1_000  # reconnect.backoff.max.ms
RECONNECT_JITTER = 0.2  # CommonClientConfigs.RECONNECT_BACKOFF_JITTER
IN_FLIGHT_MAX = 5  # unanswered requests per connection
QUEUED_REQUESTS_MAX = 1_000  # requests waiting per peer, in flight included
RESPONSE_BYTES_MAX = 100 * 1024 * 1024  # a Fetch answer is bounded by replica.fetch.response.max.bytes
READ_CHUNK_BYTES = 256 * 1024

OnResponse = Callable[[Any], None]
OnFailure = Callable[[NetworkError], None]
AddressBook = Callable[[int], "tuple[str, int] | None"]  # node id -> (host, port), None if unknown
log = logging.getLogger("kafkalab.server.peer_channel")


class PeerQueueFullError(NetworkError):
    """A request refused at once: ``QUEUED_REQUESTS_MAX`` requests already wait for this peer."""


class UnknownPeerError(NetworkError):
    """A request for a node id the channel has no address for."""

    error_code = ErrorCode.BROKER_NOT_AVAILABLE


@dataclass(slots=True)
class OutgoingRequest:
    """One request and whom to tell how it ended. Owned by one PeerConnection."""

    api_key: int
    api_version: int
    body: Any
    on_response: OnResponse
    on_failure: OnFailure
    deadline_s: float  # the event loop's clock


class PeerConnection:
    """The connection to one node, with its queue. Owned by a PeerChannel and its event loop."""

    def __init__(self, node_id: int, address: tuple[str, int], channel: PeerChannel) -> None:
        self.node_id = node_id
        self.address = address
        self._channel = channel
        self._queued: deque[OutgoingRequest] = deque()
        self._in_flight: deque[OutgoingRequest] = deque()
        self._work = asyncio.Event()
        self._failures = 0  # consecutive failed connects or dropped connections
        self._task: asyncio.Task[None] | None = None
        self.connects = 0  # connections opened, for tests and the learner's curiosity

    @property
    def waiting(self) -> int:
        return len(self._queued) + len(self._in_flight)

    def enqueue(self, request: OutgoingRequest) -> None:
        if self.waiting >= QUEUED_REQUESTS_MAX:
            raise PeerQueueFullError(f"{self.waiting} requests already wait for node {self.node_id} at "
                                     f"{self.address[0]}:{self.address[1]}; the limit is {QUEUED_REQUESTS_MAX}")
        self._queued.append(request)
        self._work.set()
        if self._task is None or self._task.done():  # done: a bug ended it; it was logged
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"peer-{self.node_id}")
            self._task.add_done_callback(self._log_crash)

    def _log_crash(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.error("the connection task for node %s failed", self.node_id, exc_info=task.exception())
            self._fail_all(NetworkError(f"the connection task for node {self.node_id} failed: {task.exception()}"))

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        self._fail_all(NetworkError(f"the channel to node {self.node_id} was closed"))

    async def _run(self) -> None:
        """Connect when there is work, serve the connection until it fails, back off, repeat."""
        while True:
            await self._work.wait()
            self._work.clear()
            if not self._queued:
                continue
            try:
                reader, writer = await asyncio.wait_for(
                    asyncio.open_connection(*self.address), CONNECT_TIMEOUT_MS / 1000)
            except (OSError, TimeoutError) as error:
                await self._after_failure(NetworkError(
                    f"could not connect to node {self.node_id} at {self.address[0]}:{self.address[1]}: {error}"))
                continue
            self.connects += 1
            failure = NetworkError(f"the connection to node {self.node_id} ended")
            try:
                await self._serve(reader, writer)  # returns only by raising
            except (KafkaError, OSError, TimeoutError) as error:
                failure = error if isinstance(error, NetworkError) else NetworkError(
                    f"connection to node {self.node_id} failed: {error}")
            finally:
                writer.close()  # before the backoff: a dropped connection holds no socket
            await self._after_failure(failure)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Send queued requests and hand responses back until the connection fails."""
        protocol = ClientProtocol(self._channel.client_id, response_bytes_max=RESPONSE_BYTES_MAX)
        protocol.in_flight_max = IN_FLIGHT_MAX
        self._failures = 0
        read: asyncio.Task[bytes] = asyncio.ensure_future(reader.read(READ_CHUNK_BYTES))
        try:
            while True:
                self._work.clear()  # before sending: a request queued while drain() waits wakes us
                await self._send_queued(protocol, writer)
                wake = asyncio.ensure_future(self._work.wait())
                done, _ = await asyncio.wait({read, wake}, timeout=self._seconds_to_deadline(),
                                             return_when=asyncio.FIRST_COMPLETED)
                wake.cancel()
                if read in done:
                    self._receive(protocol, read.result())
                    read = asyncio.ensure_future(reader.read(READ_CHUNK_BYTES))
                self._expire(asyncio.get_running_loop().time())
        finally:
            read.cancel()

    async def _send_queued(self, protocol: ClientProtocol, writer: asyncio.StreamWriter) -> None:
        while self._queued and len(self._in_flight) < IN_FLIGHT_MAX:
            request = self._queued[0]  # still queued until written: a crash here fails it, not loses it
            try:
                data = protocol.send_request(request.api_key, request.body, api_version=request.api_version)
            except (KafkaError, AttributeError, ValueError, TypeError, struct.error) as error:  # a body the schema refuses
                self._queued.popleft()
                self._channel.call(request.on_failure, NetworkError(
                    f"cannot encode API {request.api_key} v{request.api_version} for node {self.node_id}: {error}",
                    error_code=ErrorCode.INVALID_REQUEST))
                continue
            writer.write(data)
            self._in_flight.append(self._queued.popleft())
        await asyncio.wait_for(writer.drain(), self._seconds_to_deadline())

    def _receive(self, protocol: ClientProtocol, data: bytes) -> None:
        if not data:
            raise NetworkError(f"node {self.node_id} closed the connection")
        protocol.receive_data(data)
        while (response := protocol.next_response()) is not None:
            request = self._in_flight.popleft()
            self._channel.call(request.on_response, response.body)

    def _seconds_to_deadline(self) -> float | None:
        waiting = [r.deadline_s for r in (*self._in_flight, *self._queued)]
        if not waiting:
            return None
        return max(0.0, min(waiting) - asyncio.get_running_loop().time())

    def _expire(self, now_s: float) -> None:
        """Fail a request past its deadline; one in flight takes the connection with it."""
        late_queued = [r for r in self._queued if r.deadline_s <= now_s]
        for request in late_queued:
            self._queued.remove(request)
            self._channel.call(request.on_failure, self._timed_out())
        if self._in_flight and self._in_flight[0].deadline_s <= now_s:
            raise self._timed_out()

    def _timed_out(self) -> NetworkError:
        return NetworkError(f"no response from node {self.node_id} within "
                            f"{self._channel.request_timeout_ms} ms (replica.socket.timeout.ms)",
                            error_code=ErrorCode.REQUEST_TIMED_OUT)

    async def _after_failure(self, error: NetworkError) -> None:
        log.info("%s", error)
        self._fail_all(error)
        self._failures += 1
        await asyncio.sleep(self._channel.backoff_ms(self._failures) / 1000)

    def _fail_all(self, error: NetworkError) -> None:
        while self._in_flight or self._queued:
            request = (self._in_flight or self._queued).popleft()
            self._channel.call(request.on_failure, error)


class PeerChannel:
    """Outgoing requests to other nodes, one lazily opened connection per node. Owned by one
    asyncio event loop; every method must be called on its thread."""

    def __init__(self, node_id: int, peers: Mapping[int, tuple[str, int]] | AddressBook, rng: random.Random, *,
                 request_timeout_ms: int = broker_default("replica.socket.timeout.ms")) -> None:
        self.node_id = node_id
        self.client_id = f"broker-{node_id}"
        self.request_timeout_ms = request_timeout_ms
        self._rng = rng
        # Where each node listens: fixed, or looked up when a connection is first needed (a
        # broker of a cluster finds its peers in the metadata image, where they registered).
        self._address_of: AddressBook = dict(peers).get if isinstance(peers, Mapping) else peers
        self._connections: dict[int, PeerConnection] = {}

    def send(self, destination: int, api_key: int, api_version: int, body: Any,
             on_response: OnResponse, on_failure: OnFailure, *, timeout_ms: int | None = None) -> None:
        """Queue a request for ``destination``; exactly one of the callbacks runs later.
        ``timeout_ms`` replaces the channel's request timeout for this request."""
        connection = self._connections.get(destination)
        if connection is None:
            address = self._address_of(destination)
            if address is None:
                raise UnknownPeerError(f"no address for node {destination}")
            connection = self._connections[destination] = PeerConnection(destination, address, self)
        deadline_s = asyncio.get_running_loop().time() + (timeout_ms or self.request_timeout_ms) / 1000
        connection.enqueue(OutgoingRequest(api_key, api_version, body, on_response, on_failure, deadline_s))

    def connection(self, node_id: int) -> PeerConnection | None:
        return self._connections.get(node_id)

    def backoff_ms(self, failures: int) -> float:
        """Kafka's exponential reconnect backoff: 50, 100, 200 ... 1000 ms, ±20 % jitter."""
        base = min(RECONNECT_BACKOFF_MS * 2 ** (failures - 1), RECONNECT_BACKOFF_MAX_MS)
        return base * (1 + self._rng.uniform(-RECONNECT_JITTER, RECONNECT_JITTER))

    def call(self, callback: Callable[[Any], None], argument: Any) -> None:
        """Run a caller's callback; a bug in one must not take the connection down."""
        try:
            callback(argument)
        except Exception:
            log.exception("a peer channel callback failed")

    async def close(self) -> None:
        for connection in list(self._connections.values()):
            await connection.close()
        self._connections.clear()


__all__ = ["AddressBook", "PeerChannel", "PeerConnection", "PeerQueueFullError", "UnknownPeerError"]
