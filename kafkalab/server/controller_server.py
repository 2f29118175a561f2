"""The active controller behind a TCP listener: the controller half of a cluster's network.

Theory of operation
-------------------
:class:`~kafkalab.controller.controller_node.ControllerNode` is sans-I/O: it takes request
frames and leaves answer frames in an outbox. :class:`ControllerServer` is its asyncio adapter,
the controller listener of a KRaft node (``controller.listener.names``): brokers connect to it
and send BrokerRegistration, BrokerHeartbeat, AlterPartition and their Fetch of
``__cluster_metadata``; each frame goes to ``node.handle`` and every answer back to the
connection it names. A timer task calls ``node.advance_clock`` when the node's next deadline
comes -- a broker's session expiring (it is fenced), a parked metadata fetch's
``max_wait_ms`` -- and at least every ``TICK_MAX_S``, which also wakes the fetches parked when a
tool or a test changed the metadata directly (``metadata_changed``).

Worked example: broker 2 connects and sends BrokerRegistration (connection 1, correlation id
0); the node writes RegisterBrokerRecord and the answer goes back on connection 1 at once.
Broker 2's metadata Fetch at the log end is parked; 500 ms later the timer task answers it
empty, unless a record was committed first, which answers it straight away.
"""

from __future__ import annotations

import asyncio
import itertools
import logging

from kafkalab.clock import Clock
from kafkalab.controller.controller_node import ControllerNode
from kafkalab.errors import ProtocolError
from kafkalab.protocol.framing import FRAME_BYTES_MAX, NEED_DATA, FrameDecoder, size_prefix

TICK_MAX_S = 0.1  # the longest the timer task sleeps; a change made outside a request waits at most this
CONNECTIONS_MAX = 1_000  # brokers of a teaching cluster; a bound against a runaway peer

log = logging.getLogger("kafkalab.server.controller")


class _ControllerConnection(asyncio.Protocol):
    """One broker's connection to the controller. Owned by a ControllerServer."""

    def __init__(self, server: ControllerServer, connection_id: int) -> None:
        self.server = server
        self.connection_id = connection_id
        self.decoder = FrameDecoder(FRAME_BYTES_MAX)
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if not self.server.opened(self):
            transport.close()

    def data_received(self, data: bytes) -> None:
        self.decoder.feed(data)
        try:
            while (frame := self.decoder.next_frame()) is not NEED_DATA:
                self.server.request(self.connection_id, bytes(frame))
        except ProtocolError as error:  # a frame above the size bound: the stream is lost
            log.warning("closing controller connection %s: %s", self.connection_id, error)
            if self.transport is not None:
                self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.server.closed(self)


class ControllerServer:
    """A ControllerNode behind a TCP listener. Owned by one asyncio event loop."""

    def __init__(self, node: ControllerNode, clock: Clock, host: str = "127.0.0.1", port: int = 0) -> None:
        self.node = node
        self.clock = clock
        self.host, self.port = host, port
        self._connections: dict[int, _ControllerConnection] = {}
        self._ids = itertools.count(1)
        self._server: asyncio.base_events.Server | None = None
        self._timer: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    async def start(self) -> tuple[str, int]:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: _ControllerConnection(self, next(self._ids)), self.host, self.port, reuse_address=True)
        self._timer = loop.create_task(self._run_timer(), name="controller-timer")
        host, port = self._server.sockets[0].getsockname()[:2]
        return host, port

    async def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self._server is not None:
            self._server.close()
        for connection in list(self._connections.values()):
            if connection.transport is not None:
                connection.transport.close()
        if self._server is not None:
            await self._server.wait_closed()

    def metadata_changed(self) -> None:
        """A tool or a test committed records directly: answer the parked metadata fetches."""
        self._wake.set()

    def opened(self, connection: _ControllerConnection) -> bool:
        if len(self._connections) >= CONNECTIONS_MAX:
            return False
        self._connections[connection.connection_id] = connection
        return True

    def closed(self, connection: _ControllerConnection) -> None:
        self._connections.pop(connection.connection_id, None)

    def request(self, connection_id: int, frame: bytes) -> None:
        self.node.handle(connection_id, frame, self.clock.milliseconds())
        self._deliver()

    def _deliver(self) -> None:
        for connection_id, frame in self.node.take_responses():
            connection = self._connections.get(connection_id)
            if connection is not None and connection.transport is not None:
                connection.transport.write(size_prefix(len(frame)) + frame)

    async def _run_timer(self) -> None:
        while True:
            now_ms = self.clock.milliseconds()
            self.node.advance_clock(now_ms)
            self.node.metadata_changed(now_ms)
            self._deliver()
            next_ms = self.node.next_deadline_ms()
            wait_s = TICK_MAX_S if next_ms is None else min(TICK_MAX_S, max(0.0, (next_ms - now_ms) / 1000))
            self._wake.clear()
            try:
                async with asyncio.timeout(wait_s):
                    await self._wake.wait()
            except TimeoutError:
                pass


__all__ = ["ControllerServer"]
