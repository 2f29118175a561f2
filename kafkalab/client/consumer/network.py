"""The socket adapter: :class:`KafkaConsumer`, the sans-I/O consumer core on real TCP connections.

Theory of operation
-------------------
One non-blocking socket per broker address, each with a
:class:`~kafkalab.client.connection.ClientProtocol` that frames requests and decodes answers;
this module only moves bytes. Each turn of :meth:`KafkaConsumer.run_once`:

1. asks the core for its due requests and writes each to its broker's socket (connecting and
   negotiating API versions on first use; a request for any broker goes to a bootstrap server);
2. waits in ``select`` until a socket has bytes, the core's next deadline (a heartbeat, an auto
   commit) or a request's timeout;
3. hands every whole answer to the core, and fails every request of a broken or silent
   connection, closing it, as Kafka's ``NetworkClient`` does.

Because sockets never block, a JoinGroup parked at the coordinator for a whole rebalance does
not hold up fetches from other brokers. ``poll`` runs turns until records are ready or its
timeout passes (and, with records, one more turn that sends the fetches they made due, as
Kafka's ``KafkaConsumer.poll`` does), then calls the rebalance listener for anything assigned
or revoked meanwhile; ``commit_sync`` runs turns until its OffsetCommit is answered.

Worked example::

    consumer = KafkaConsumer({"bootstrap.servers": "127.0.0.1:9092", "group.id": "orders-app",
                              "auto.offset.reset": "earliest"})
    consumer.subscribe(["orders"])
    for record in consumer.poll(1_000):
        print(record.partition, record.offset, record.value)
    consumer.commit_sync()
    consumer.close()   # LeaveGroup, then the sockets close

Not thread-safe: one thread polls one consumer, as with Kafka's ``KafkaConsumer``.
"""

from __future__ import annotations

import select
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafkalab.client.connection import RECV_CHUNK_BYTES, ClientProtocol, parse_bootstrap
from kafkalab.client.consumer.config import consumer_config
from kafkalab.client.consumer.core import CommitCallback, ConsumerCore, RebalanceEvent, Request
from kafkalab.client.consumer.fetcher import ConsumerRecord
from kafkalab.clock import Clock, SystemClock
from kafkalab.errors import KafkaError, NetworkError, ProtocolError, UnsupportedVersionError
from kafkalab.protocol import SCHEMAS
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.storage.checkpoints import TopicPartition

SELECT_WAIT_MAX_MS = 100  # never sleep longer than this, so a caller's own timeout is honoured
CLOSE_WAIT_MS = 5_000  # how long close() waits for the LeaveGroup answer, or a last commit's
CONNECT_TIMEOUT_MS = 10_000  # socket.connection.setup.timeout.max.ms is 30 s; a local broker answers fast

Listener = Callable[[RebalanceEvent], None]


@dataclass(slots=True)
class _Connection:
    """One broker's socket, its protocol state, and what each correlation id belongs to."""

    address: tuple[str, int]
    sock: socket.socket
    protocol: ClientProtocol
    waiting: dict[int, tuple[int, int]] = field(default_factory=dict)  # correlation -> (request id, deadline)
    queued: list[tuple[Request, int]] = field(default_factory=list)  # over max.in.flight, and their deadlines


def _connect(address: tuple[str, int], client_id: str) -> _Connection:
    """Connect, negotiate versions with a blocking ApiVersions, then switch to non-blocking."""
    try:
        sock = socket.create_connection(address, timeout=CONNECT_TIMEOUT_MS / 1000)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        protocol = ClientProtocol(client_id)
        sock.sendall(protocol.send_request(ApiKey.API_VERSIONS, SCHEMAS[ApiKey.API_VERSIONS][0].cls()))
        while (response := protocol.next_response()) is None:
            chunk = sock.recv(RECV_CHUNK_BYTES)
            if not chunk:
                raise NetworkError(f"{address[0]}:{address[1]} closed the connection during ApiVersions")
            protocol.receive_data(chunk)
    except OSError as error:
        raise NetworkError(f"could not connect to {address[0]}:{address[1]}: {error}") from error
    protocol.learn_versions(response.body)
    sock.setblocking(False)
    return _Connection(address, sock, protocol)


class KafkaConsumer:
    """A consumer over TCP. Not thread-safe; close it when done."""

    def __init__(self, properties: Mapping[str, Any], *, clock: Clock | None = None) -> None:
        self.config = consumer_config(properties)
        self.clock = clock or SystemClock()
        self.core = ConsumerCore(self.config)
        self._bootstrap = parse_bootstrap(self.config.bootstrap_servers)
        self._connections: dict[tuple[str, int], _Connection] = {}
        self._listener: Listener | None = None

    # -- the application's calls, as Kafka names them ------------------------------------------------

    def subscribe(self, topics: list[str], listener: Listener | None = None) -> None:
        """Join the group; ``listener`` hears every RebalanceEvent (commit in it on ``revoked``)."""
        self._listener = listener
        self.core.subscribe(topics, self.clock.milliseconds())

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.core.assign(partitions, self.clock.milliseconds())

    def assignment(self) -> list[TopicPartition]:
        return self.core.assignment()

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.core.seek(tp, offset)

    def seek_to_beginning(self, partitions: list[TopicPartition]) -> None:
        self.core.seek_to_beginning(partitions)

    def seek_to_end(self, partitions: list[TopicPartition]) -> None:
        self.core.seek_to_end(partitions)

    def position(self, tp: TopicPartition, timeout_ms: int = 60_000) -> int:
        """The next offset to be returned for ``tp``, waiting for ListOffsets/OffsetFetch if needed."""
        end_ms = self.clock.milliseconds() + timeout_ms
        while (position := self.core.position(tp)) is None:
            if self.clock.milliseconds() >= end_ms:
                raise KafkaError(f"no position for {tp[0]}-{tp[1]} within {timeout_ms} ms")
            self.run_once(SELECT_WAIT_MAX_MS)
        return position

    def poll(self, timeout_ms: int) -> list[ConsumerRecord]:
        """Records, up to ``max.poll.records``; an empty list when none came within ``timeout_ms``."""
        end_ms = self.clock.milliseconds() + timeout_ms
        while True:
            self._run_listener()
            records = self.core.take_records(self.clock.milliseconds())
            now_ms = self.clock.milliseconds()
            if records:
                # As Kafka's KafkaConsumer.poll: send the fetches now due (a partition whose
                # buffer these records emptied) before returning, so that the broker's answer
                # travels while the application handles the records.
                self.run_once(0)
                return records
            if now_ms >= end_ms:
                return records
            self.run_once(min(end_ms - now_ms, SELECT_WAIT_MAX_MS))

    def commit_async(self, offsets: Mapping[TopicPartition, int] | None = None,
                     callback: CommitCallback | None = None) -> None:
        self.core.commit_async(offsets, callback)
        self.run_once(0)

    def commit_sync(self, offsets: Mapping[TopicPartition, int] | None = None, timeout_ms: int = 60_000) -> None:
        """Commit and wait for the answer; raises its error (Kafka's ``commitSync``)."""
        answers: list[KafkaError | None] = []
        self.core.commit_async(offsets, lambda _, error: answers.append(error))
        end_ms = self.clock.milliseconds() + timeout_ms
        while not answers and self.clock.milliseconds() < end_ms:
            self.run_once(SELECT_WAIT_MAX_MS)
        if not answers:
            raise KafkaError(f"commit_sync got no answer within {timeout_ms} ms")
        if answers[0] is not None:
            raise answers[0]

    def close(self) -> None:
        """Commit (with ``enable.auto.commit``), leave the group, close the sockets."""
        try:
            if self.config.group_id is not None and self.config.enable_auto_commit:
                self.commit_async(None, None)  # best effort, as Kafka's close: a rebalance may refuse it
            self.core.close(self.clock.milliseconds())
            end_ms = self.clock.milliseconds() + CLOSE_WAIT_MS
            while not self.core.closed and self.clock.milliseconds() < end_ms:
                self.core.take_rebalance_events()  # the final revoke needs no listener to go on
                self.run_once(SELECT_WAIT_MAX_MS)
        finally:
            for conn in self._connections.values():
                conn.sock.close()
            self._connections.clear()

    def __enter__(self) -> KafkaConsumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run_listener(self) -> None:
        for event in self.core.take_rebalance_events():
            if self._listener is not None:
                self._listener(event)

    # -- the I/O loop ---------------------------------------------------------------------------------

    def run_once(self, wait_ms: int) -> None:
        """Send what is due, wait up to ``wait_ms`` for answers, hand them to the core."""
        now_ms = self.clock.milliseconds()
        for request in self.core.poll_requests(now_ms):
            self._send(request, now_ms)
        deadline = self.core.next_deadline_ms()
        if deadline is not None:
            wait_ms = max(0, min(wait_ms, deadline - now_ms))
        readable = [c.sock for c in self._connections.values() if c.waiting]
        if readable:
            ready, _, _ = select.select(readable, [], [], wait_ms / 1000)
            for conn in [c for c in list(self._connections.values()) if c.sock in ready]:
                self._receive(conn)
        elif wait_ms > 0:
            select.select([], [], [], wait_ms / 1000)
        self._expire(self.clock.milliseconds())

    def _address(self, request: Request) -> tuple[str, int]:
        coordinator = self.core.coordinator
        if request.destination is None:
            live = [a for a in self._connections if a in self._bootstrap]
            return live[0] if live else self._bootstrap[0]
        if coordinator is not None and coordinator.node_id == request.destination:
            return coordinator.host, coordinator.port
        return self.core.brokers[request.destination]

    def _send(self, request: Request, now_ms: int) -> None:
        try:
            address = self._address(request)
            conn = self._connections.get(address)
            if conn is None:
                conn = self._connections[address] = _connect(address, self.config.client_id)
            if len(conn.waiting) >= 5:  # max.in.flight.requests.per.connection
                conn.queued.append((request, now_ms + request.timeout_ms))
                return
            version = min(request.version, conn.protocol.version_for(request.api_key))
            data = conn.protocol.send_request(request.api_key, request.body, api_version=version)
            conn.sock.setblocking(True)  # requests are small; a blocking write keeps this simple
            conn.sock.sendall(data)
            conn.sock.setblocking(False)
        except (KeyError, NetworkError, UnsupportedVersionError, OSError):
            self.core.on_failure(request.request_id, now_ms)
            return
        correlation_id = int.from_bytes(data[8:12], "big")  # size, api key, version, then the id
        conn.waiting[correlation_id] = (request.request_id, now_ms + request.timeout_ms)

    def _receive(self, conn: _Connection) -> None:
        try:
            chunk = conn.sock.recv(RECV_CHUNK_BYTES)
            if not chunk:
                raise NetworkError(f"{conn.address[0]}:{conn.address[1]} closed the connection")
            conn.protocol.receive_data(chunk)
        except BlockingIOError:
            return
        except (NetworkError, ProtocolError, OSError):
            self._drop(conn)
            return
        while conn.waiting:
            oldest = next(iter(conn.waiting))  # a connection answers in request order
            try:
                response = conn.protocol.next_response()
            except ProtocolError:  # a whole frame that does not decode: fail that request alone
                self.core.on_failure(conn.waiting.pop(oldest)[0], self.clock.milliseconds())
                continue
            if response is None:
                break
            request_id, _ = conn.waiting.pop(response.request.correlation_id)
            self.core.on_response(request_id, response.body, self.clock.milliseconds())
        queued, conn.queued = conn.queued, []
        for request, _ in queued:
            self._send(request, self.clock.milliseconds())

    def _expire(self, now_ms: int) -> None:
        for conn in list(self._connections.values()):
            if any(deadline <= now_ms for _, deadline in conn.waiting.values()):
                self._drop(conn)

    def _drop(self, conn: _Connection) -> None:
        """A broken or silent connection: close it and fail everything sent on it."""
        conn.sock.close()
        self._connections.pop(conn.address, None)
        now_ms = self.clock.milliseconds()
        for request_id, _ in conn.waiting.values():
            self.core.on_failure(request_id, now_ms)
        for request, _ in conn.queued:
            self.core.on_failure(request.request_id, now_ms)
