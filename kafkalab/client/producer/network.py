"""The socket adapter: :class:`KafkaProducer`, the sans-I/O producer on real TCP connections.

Theory of operation
-------------------
One :class:`~kafkalab.client.connection.ClientProtocol` per broker frames requests and decodes
answers; this module only moves bytes. Each turn of :meth:`KafkaProducer.run_once`:

1. asks the core for requests (``poll``) and queues each for its broker's writer thread,
   connecting (and negotiating API versions) on first use; ``ANY_NODE`` goes to a bootstrap
   server;
2. waits in ``select`` until a socket has bytes, or the core's next wake-up (a batch's
   ``linger.ms`` ends), or a request's ``request.timeout.ms`` runs out;
3. hands every whole response to the core, and fails every request of a broken or silent
   connection (which it closes, as Kafka's ``NetworkClient`` does).

Kafka runs this loop on the producer's Sender thread. Here it runs inside ``send`` (when a
batch fills or opens, when the core has something due such as a batch's ``linger.ms`` ending,
every millisecond while answers are awaited, and while waiting for metadata or memory),
``future.get``, ``flush`` and ``poll``: fire-and-forget sends make progress whenever the
application calls any of them, as with librdkafka's ``poll``. Only the copying of request bytes into the socket runs on a thread
of its own (:class:`_Writer`), which keeps the core single-threaded and still lets batching
overlap the network, the half of the two-thread design that matters for throughput.

Worked example::

    with KafkaProducer({"bootstrap.servers": "127.0.0.1:9092", "linger.ms": 5}) as producer:
        producer.send(ProducerRecord("orders", b"v1"))                    # fire-and-forget
        metadata = producer.send(ProducerRecord("orders", b"v2")).get()   # sync
        producer.send(ProducerRecord("orders", b"v3"), callback=print)    # async
"""

from __future__ import annotations

import queue
import random
import select
import socket
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafkalab.client.connection import RECV_CHUNK_BYTES, BrokerConnection, bootstrap, parse_bootstrap
from kafkalab.client.producer.config import producer_config
from kafkalab.client.producer.futures import Callback, FutureRecordMetadata
from kafkalab.client.producer.producer import (
    PendingSend,
    Producer,
    ProducerInterceptor,
    ProducerRecord,
    Serializer,
    bytes_serializer,
)
from kafkalab.client.producer.sender import ANY_NODE, OutboundRequest
from kafkalab.clock import Clock, SystemClock
from kafkalab.errors import KafkaError, NetworkError

SELECT_WAIT_MAX_MS = 100  # never sleep longer than this, so a caller's own timeout is honoured
BLOCKED_WAIT_MS = 10  # between retries of a send waiting for metadata or memory
TURN_INTERVAL_MS = 1  # while answers are awaited, send() reads them at least this often
CLOSE_DRAIN_S = 1.0  # how long close() reads a broker's last bytes after sending FIN
WRITER_POLL_S = 0.1  # how often a full queue's writer is checked for having died
WRITER_QUEUE_MAX = 8  # unwritten requests for one socket: max.in.flight (5) and a few acks=0 ones


class _Writer:
    """Writes one connection's requests, in order, on a thread of its own.

    The only thread in the producer, and it touches nothing but one socket and its queues:
    copying a 1 MB request into the kernel takes a millisecond or more, and the thread releases
    the GIL while it does, so ``send`` goes on batching meanwhile -- the reason Kafka gives the
    network its own (Sender) thread. Reading stays on the caller's thread (a socket is
    full-duplex: one thread may write while another reads).

    Both queues are ``SimpleQueue``, whose ``put`` and ``get`` run in C: with ``queue.Queue``
    (a Python condition variable) each hand-over made the two threads trade the GIL several
    times, and on a busy machine every trade waits for the scheduler."""

    def __init__(self, sock: socket.socket, name: str) -> None:
        self.sock = sock
        self.queue: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        # Bounded by tokens: write() takes one per request and the thread gives it back once
        # the request is written, so when the broker reads slower than we produce, write()
        # waits for the kernel (acks=0 requests free their buffer.memory as soon as queued).
        self.slots: queue.SimpleQueue[None] = queue.SimpleQueue()
        for _ in range(WRITER_QUEUE_MAX):
            self.slots.put(None)
        self.error: OSError | None = None
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def write(self, data: bytes) -> None:
        """Queue ``data``; waits while ``WRITER_QUEUE_MAX`` requests are unwritten, and gives up
        once the writer has died."""
        while self.error is None:
            try:
                self.slots.get(timeout=WRITER_POLL_S)
            except queue.Empty:
                continue
            self.queue.put(data)
            return

    def stop(self) -> None:
        """Stop after the requests already queued."""
        self.queue.put(None)

    def _run(self) -> None:
        while (data := self.queue.get()) is not None:
            try:
                self.sock.sendall(data)
            except OSError as error:
                self.error = error
                return
            self.slots.put(None)


def _close_gracefully(connection: BrokerConnection) -> None:
    """Close after the broker has read everything: send FIN, read until the broker closes too.

    Closing a socket whose receive buffer still holds bytes makes the kernel send a reset, and
    a reset makes the peer drop what it has not read yet -- the last requests. Kafka never
    answers acks=0 requests, but librdkafka's mock cluster does, so those bytes do arrive."""
    sock = connection.socket
    try:
        sock.shutdown(socket.SHUT_WR)
        sock.settimeout(CLOSE_DRAIN_S)
        while sock.recv(RECV_CHUNK_BYTES):
            pass
    except OSError:
        pass  # a broker already gone, or one slow to close: nothing more to save
    connection.close()


@dataclass(slots=True)
class _Link:
    """One broker connection and the core's requests waiting for its answers, in order."""

    connection: BrokerConnection
    writer: _Writer
    waiting: deque[tuple[int, int]] = field(default_factory=deque)  # (request id, deadline ms)


class KafkaProducer:
    """A producer over TCP. Not thread-safe: call it from one thread; close it when done."""

    def __init__(self, properties: Mapping[str, Any], *, interceptors: Sequence[ProducerInterceptor] = (),
                 key_serializer: Serializer = bytes_serializer, value_serializer: Serializer = bytes_serializer,
                 clock: Clock | None = None, rng: random.Random | None = None) -> None:
        self.config = producer_config(properties)
        self.clock = clock or SystemClock()
        self.core = Producer(self.config, rng=rng or random.Random(), key_serializer=key_serializer,
                             value_serializer=value_serializer, interceptors=interceptors, driver=self._run_until)
        parse_bootstrap(self.config.bootstrap_servers)  # a malformed list fails here, not at first send
        self.links: dict[int, _Link] = {}
        self._next_turn_ms = 0  # when send() must next run a turn of the loop, at the latest

    # --- the application's side ---------------------------------------------------------------

    def send(self, record: ProducerRecord, callback: Callback | None = None) -> FutureRecordMetadata:
        now = self.clock.milliseconds()
        result = self.core.send(record, now, callback)
        while isinstance(result, PendingSend):
            self.run_once(BLOCKED_WAIT_MS)
            result = self.core.resume(result, self._now())
        if now >= self._next_turn_ms or self.core.wakeup_needed:
            self.run_once(0)
        return result

    def flush(self, timeout_ms: int | None = None) -> bool:
        self.core.begin_flush()
        return self._run_until(self.core.flushed, timeout_ms)

    def poll(self, timeout_ms: int = 0) -> None:
        self.run_once(timeout_ms)

    def close(self) -> None:
        try:
            self.flush()
        finally:
            for link in self.links.values():
                link.writer.stop()  # after the bytes already queued: acks=0 requests are done once written
            for link in self.links.values():
                link.writer.thread.join(timeout=self.config.request_timeout_ms / 1000)
                _close_gracefully(link.connection)
            self.links.clear()

    def __enter__(self) -> KafkaProducer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the loop -------------------------------------------------------------------------------

    def _now(self) -> int:
        return self.clock.milliseconds()

    def _run_until(self, done: Callable[[], bool], timeout_ms: int | None) -> bool:
        deadline = None if timeout_ms is None else self._now() + timeout_ms
        while not done():
            if deadline is not None and self._now() >= deadline:
                return False
            self.run_once(SELECT_WAIT_MAX_MS)
        return True

    def run_once(self, wait_ms: int) -> None:
        """Send what the core has, wait up to ``wait_ms`` for answers (or for the core's next
        wake-up, if sooner), and hand them over."""
        now = self._now()
        for request in self.core.poll(now):
            self._send(request, now)
        wake = self.core.next_wakeup_ms(now)
        self._schedule_next_turn(now, wake)
        deadlines = [d for link in self.links.values() for _, d in link.waiting]
        for moment in ([] if wake is None else [wake]) + deadlines:
            wait_ms = min(wait_ms, max(0, moment - now))
        for node in [n for n, link in self.links.items() if link.writer.error is not None]:
            self._drop(node, now)
        readers = {link.connection.socket: node for node, link in self.links.items() if link.waiting}
        if readers:
            readable, _, _ = select.select(list(readers), [], [], wait_ms / 1000)
            for sock in readable:
                self._receive(readers[sock])
        elif wait_ms > 0:  # nothing to read: sleep until the core's wake-up (a batch's linger.ms)
            select.select([], [], [], wait_ms / 1000)
        self._expire(self._now())

    def _schedule_next_turn(self, now: int, wake: int | None) -> None:
        """When :meth:`send` must run the next turn: at the core's wake-up, and at least every
        ``TURN_INTERVAL_MS`` while answers are awaited -- or sooner, when a batch fills or opens
        (the core's ``wakeup_needed``, as Kafka's ``send`` wakes its Sender thread). Not after
        every record: a turn costs tens of microseconds, a record a few."""
        awaited = any(link.waiting for link in self.links.values())
        self._next_turn_ms = now + (TURN_INTERVAL_MS if awaited else SELECT_WAIT_MAX_MS)
        if wake is not None:
            self._next_turn_ms = max(now + 1, min(self._next_turn_ms, wake))

    def _send(self, request: OutboundRequest, now: int) -> None:
        try:
            link = self._link(request.node_id)
            data = link.connection.protocol.send_request(request.api_key, request.body,
                                                         expect_response=request.expect_response)
        except (KafkaError, OSError):
            if request.expect_response:
                self.core.on_failure(request.request_id, now)
            self._drop(request.node_id, now)
            return
        if request.expect_response:
            link.waiting.append((request.request_id, now + request.timeout_ms))
        link.writer.write(data)

    def _link(self, node_id: int) -> _Link:
        link = self.links.get(node_id)
        if link is None:
            if node_id == ANY_NODE:
                if self.links:  # any open connection will do
                    return next(iter(self.links.values()))
                connection = bootstrap(self.config.bootstrap_servers, request_timeout_ms=self.config.request_timeout_ms,
                                       client_id=self.config.client_id)
            else:
                host, port = self.core.metadata.brokers[node_id]
                connection = BrokerConnection(host, port, request_timeout_ms=self.config.request_timeout_ms,
                                              client_id=self.config.client_id)
            connection.protocol.allow_trailing_bytes = True  # as Kafka's client: see ClientProtocol
            for option, size in ((socket.SO_SNDBUF, self.config.send_buffer_bytes),
                                 (socket.SO_RCVBUF, self.config.receive_buffer_bytes)):
                if size != -1:  # send.buffer.bytes / receive.buffer.bytes; -1 keeps the OS default
                    connection.socket.setsockopt(socket.SOL_SOCKET, option, size)
            # the sender keeps max.in.flight.requests.per.connection Produce requests in flight,
            # and a Metadata or InitProducerId request may go beside them
            connection.protocol.in_flight_max = self.config.max_in_flight_requests_per_connection + 2
            link = self.links[node_id] = _Link(connection, _Writer(connection.socket, f"kafkalab-producer-{node_id}"))
        return link

    def _receive(self, node_id: int) -> None:
        link = self.links[node_id]
        try:
            chunk = link.connection.socket.recv(RECV_CHUNK_BYTES)
        except OSError:
            self._drop(node_id, self._now())
            return
        try:
            if not chunk:
                raise NetworkError(f"broker {node_id} closed the connection")
            link.connection.protocol.receive_data(chunk)
            while (response := link.connection.protocol.next_response()) is not None:
                request_id, _ = link.waiting.popleft()
                self.core.on_response(request_id, response.body, self._now())
        except (KafkaError, OSError):
            self._drop(node_id, self._now())

    def _expire(self, now: int) -> None:
        for node_id in [n for n, link in self.links.items() if link.waiting and link.waiting[0][1] <= now]:
            self._drop(node_id, now)

    def _drop(self, node_id: int, now: int) -> None:
        """Close a connection and fail everything it still owed."""
        link = self.links.pop(node_id, None)
        if link is None:
            return
        link.writer.stop()
        link.connection.close()
        for request_id, _ in link.waiting:
            self.core.on_failure(request_id, now)


__all__ = ["KafkaProducer", "ProducerRecord"]
