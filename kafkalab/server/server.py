"""The network server: an asyncio TCP listener around the sans-I/O broker.

Theory of operation
-------------------
This is the only place in kafkalab that touches sockets. It owns three things:

* the listener, bound to 127.0.0.1 unless remote access is explicitly allowed;
* one :class:`~kafkalab.server.connection.Connection` task per client;
* a timer task that drives the broker's one timing wheel from the ``SystemClock``: it calls
  ``broker.advance_clock(now_ms)`` and then sleeps as long as
  :class:`~kafkalab.timer.TimerDriver` says -- until the earliest bucket is due, at most 200 ms
  (Kafka's expiration reaper). Parked fetches (fetch.max.wait.ms), the retention check, the
  flusher, the checkpoints and ``file.delete.delay.ms`` deletions all run inside that call.

Every call into the broker happens on the event loop thread, so the broker needs no locks.
After each call the server drains the broker's outbox and hands every Outgoing to its
connection. Worked example: a consumer's Fetch with max_wait_ms=500 is parked at t=1000; the
timer task sleeps in steps of at most 200 ms, calls ``advance_clock(1500)`` once the clock has
passed the fetch's bucket and the empty fetch response reaches the consumer. A request wakes the
timer task early only when it queued a task due before the task's current sleep ends (a fetch
parked with max_wait_ms=20 while the timer sleeps until t+200); any other request leaves it
asleep, which saves two loop iterations per request.

Shutdown (SIGTERM, SIGINT or :meth:`KafkaServer.stop`) of a cluster's broker begins with a
controlled shutdown: the controller moves the broker's leaderships to other in-sync replicas
while it still serves. Then the server stops accepting, closes every connection,
then flushes every log and writes the checkpoints and the clean-shutdown marker, so a restart
on the same data directory serves everything that was acknowledged.

A broker whose every log directory has failed (deleted, unwritable: see
:mod:`kafkalab.storage.log_dir_failure`) can serve nothing, so the server stops itself and
:attr:`KafkaServer.failure` says why (Kafka's "Shutdown broker because all log dirs in ... have
failed"); a directory that fails during the shutdown itself is reported the same way. The
caller owning the process turns that into a non-zero exit status (``kafkalab server-start``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import itertools
import logging
import random
from collections.abc import Mapping, Sequence
from pathlib import Path

from kafkalab.broker.broker import Broker
from kafkalab.broker.lifecycle import BrokerState
from kafkalab.broker.request import Outgoing
from kafkalab.broker.settings import BrokerSettings
from kafkalab.broker.startup import open_broker, static_properties
from kafkalab.clock import Clock, SystemClock
from kafkalab.config.resolve import broker_value
from kafkalab.errors import ConfigError, KafkaError
from kafkalab.protocol.framing import FRAME_BYTES_MAX
from kafkalab.server.connection import Connection
from kafkalab.server.peer_channel import PeerChannel
from kafkalab.server.peer_driver import PeerDriver
from kafkalab.timer import TimerDriver

CONNECTIONS_MAX = 1000  # max.connections is unbounded in Kafka; a teaching broker caps it
# How long SIGTERM lets the controller move a broker's leaderships away before the broker stops
# anyway: well inside server-start's 10 s shutdown bound, and a controller answers in one or two
# heartbeats when it is up.
CONTROLLED_SHUTDOWN_WAIT_S = 5.0
CONTROLLED_SHUTDOWN_POLL_S = 0.02

log = logging.getLogger("kafkalab.server")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class KafkaServer:
    """A broker behind a TCP listener. Owned by one asyncio event loop."""

    def __init__(
        self, data_dir: Path, properties: Mapping[str, str], *, host: str = "127.0.0.1",
        port: int = 9092, allow_remote: bool = False, clock: Clock | None = None, seed: int | None = None,
        cluster_id: str | None = None, advertised: tuple[str, int] | None = None,
        extra_listeners: Sequence[tuple[str, int]] = (),
        peers: Mapping[int, tuple[str, int]] | None = None,
        controller_address: tuple[int, tuple[str, int]] | None = None,
    ) -> None:
        for listen_host in (host, *(h for h, _ in extra_listeners)):
            if not is_loopback(listen_host) and not allow_remote:
                raise ConfigError(
                    f"refusing to listen on {listen_host!r}: kafkalab serves 127.0.0.1 unless remote access "
                    "is allowed explicitly (--allow-remote)"
                )
        self.data_dir = Path(data_dir)
        self.properties = dict(properties)
        self.host = host
        self.port = port
        self.clock = clock or SystemClock()
        # A KRaft node (server.properties with process.roles): the cluster id from meta.properties,
        # the advertised broker endpoint (port 0: the bound port), and its other listeners (the
        # controller's), bound beside the main one and served by the same broker.
        self._cluster_id = cluster_id
        self._advertised = advertised
        self._extra_listeners = tuple(extra_listeners)
        self._extra_servers: list[asyncio.base_events.Server] = []
        self.extra_addresses: list[tuple[str, int]] = []
        # A member of a cluster: where its controller listens (None: the node is its own cluster)
        # and where the other nodes listen, for the requests it sends them (followers' Fetch, markers).
        self._peers = dict(peers) if peers is not None else None
        self._controller_address = controller_address  # (controller id, its controller listener)
        # A broker of a cluster learns the metadata from the controller over the network, and
        # finds the other brokers where they registered unless ``peers`` fixes their addresses.
        self.peers: PeerDriver | None = None
        self._rng = random.Random(seed)
        self._frame_bytes_max = int(self.properties.get("socket.request.max.bytes", FRAME_BYTES_MAX))
        self._connections: dict[int, Connection] = {}
        self._ids = itertools.count(1)
        self._wake = asyncio.Event()
        self._timer_wakes_at_ms = 0  # when the timer task's current sleep ends (timer's clock)
        self._stopped = asyncio.Event()
        self._server: asyncio.base_events.Server | None = None
        self._timer: asyncio.Task[None] | None = None
        self._stop_task: asyncio.Task[None] | None = None
        self.stopping = asyncio.Event()  # set when a shutdown begins, for whoever owns the process
        self.failure: str | None = None  # why the server stopped itself, if it did
        self.broker: Broker | None = None

    async def start(self) -> tuple[str, int]:
        """Open the data directory, bind, and start serving; returns the bound (host, port)."""
        _, unknown = static_properties({}, self.properties)  # bad values fail here, before binding
        for key in unknown:
            log.warning("the configuration %r was supplied but isn't a known broker config", key)
        self._server = await asyncio.get_running_loop().create_server(
            self._new_connection, self.host, self.port, reuse_address=True)
        bound_host, bound_port = self._server.sockets[0].getsockname()[:2]
        try:
            for extra_host, extra_port in self._extra_listeners:
                extra = await asyncio.get_running_loop().create_server(
                    self._new_connection, extra_host, extra_port, reuse_address=True)
                self._extra_servers.append(extra)
                self.extra_addresses.append(extra.sockets[0].getsockname()[:2])
            settings = self._settings(bound_host, bound_port)
            self.broker = open_broker(self.data_dir, self.properties, settings, self.clock, self._rng,
                                      in_cluster=self._controller_address is not None)
            if self._controller_address is not None:
                timeout_ms = broker_value(self.broker.config_store.layers(), str(settings.node_id),
                                          "replica.socket.timeout.ms")
                assert isinstance(timeout_ms, int)
                channel = PeerChannel(settings.node_id, self._peer_address if self._peers is None else self._peers,
                                      random.Random(self._rng.getrandbits(64)), request_timeout_ms=timeout_ms)
                controller_id, address = self._controller_address
                to_controller = (controller_id, PeerChannel(
                    settings.node_id, {controller_id: address}, random.Random(self._rng.getrandbits(64))))
                self.peers = PeerDriver(self.broker, channel, self._after_peer_answer, to_controller)
        except BaseException:
            for server in (self._server, *self._extra_servers):
                server.close()
            raise
        self._timer = asyncio.create_task(self._run_timer(self.broker))
        return bound_host, bound_port

    def _peer_address(self, node_id: int) -> tuple[str, int] | None:
        """Where broker ``node_id`` listens, as it registered (the metadata image's endpoint)."""
        registration = None if self.broker is None else self.broker.image.brokers.get(node_id)
        return None if registration is None else (registration.host, registration.port)

    def _settings(self, bound_host: str, bound_port: int) -> BrokerSettings:
        settings = BrokerSettings.from_properties(self.properties, bound_host=bound_host, bound_port=bound_port)
        if self._advertised is not None:
            host, port = self._advertised
            settings = dataclasses.replace(settings, host=host or bound_host, port=port or bound_port)
        if self._cluster_id is not None:
            settings = dataclasses.replace(settings, cluster_id=self._cluster_id)
        return settings

    def _new_connection(self) -> Connection:
        """The protocol factory: one :class:`Connection` per accepted socket."""
        return Connection(next(self._ids), self._submit, self._frame_bytes_max,
                          on_open=self._connection_opened, on_close=self._connection_closed)

    def _connection_opened(self, connection: Connection) -> bool:
        if self.broker is None or len(self._connections) >= CONNECTIONS_MAX:
            return False
        self._connections[connection.connection_id] = connection
        peer = connection.peer
        if isinstance(peer, tuple) and peer:
            self.broker.client_hosts[connection.connection_id] = f"/{peer[0]}"  # Kafka's client_host form
        return True

    def _connection_closed(self, connection: Connection) -> None:
        if self._connections.pop(connection.connection_id, None) is not None and self.broker is not None:
            self.broker.connection_closed(connection.connection_id)

    def _submit(self, connection: Connection, frame: bytes | bytearray) -> None:
        """Hand one frame to the broker (called from the connection's ``buffer_updated``) and
        deliver whatever the broker answered, this connection's response included."""
        assert self.broker is not None
        connection_id = connection.connection_id
        try:
            self.broker.handle(connection_id, frame, self.clock.milliseconds())
        except Exception:  # a bug in a handler must cost one connection, not the server
            log.exception("unexpected error handling a request on connection %s", connection_id)
            self._deliver_all()
            connection.deliver(Outgoing(connection_id, None, close=True, reason="internal error"))
            return
        self._deliver_all()
        if self.peers is not None:
            self.peers.pump()
        self._stop_if_no_log_dir_left()
        # Wake the timer task only if this request queued a task due before the timer task's
        # sleep ends (a parked fetch with a short max_wait_ms). Waking it after every request
        # cost two extra loop iterations per request, which a produce stream felt.
        next_ms = self.broker.next_deadline_ms()
        if next_ms is not None and next_ms < self._timer_wakes_at_ms:
            self._wake.set()

    def _after_peer_answer(self) -> None:
        """Another node answered: deliver what the broker now has for clients, send what it
        now has for other nodes (a follower's next Fetch)."""
        self._deliver_all()
        if self.peers is not None:
            self.peers.pump()

    def _deliver_all(self) -> None:
        assert self.broker is not None
        for outgoing in self.broker.take_responses():
            connection = self._connections.get(outgoing.connection_id)
            if connection is not None:
                connection.deliver(outgoing)

    async def _run_timer(self, broker: Broker) -> None:
        """Advance the broker's timer to now, deliver what it produced, sleep until the next
        bucket is due (or a request wakes us: it may have parked an earlier fetch)."""
        driver = TimerDriver(broker.timer)
        while True:
            now_ms = broker.timer.now_ms()
            try:
                broker.advance_clock(now_ms)
            except Exception:  # a failing task must not stop every later timeout
                log.exception("unexpected error running the broker's timer tasks")
            self._deliver_all()
            if self.peers is not None:
                self.peers.pump()
            if broker.housekeeping is not None and broker.housekeeping.errors:
                for error in broker.housekeeping.errors:
                    log.warning("periodic task failed: %s", error)
                broker.housekeeping.errors.clear()
            self._stop_if_no_log_dir_left()
            self._wake.clear()
            wait_ms = driver.wait_ms(now_ms)
            self._timer_wakes_at_ms = now_ms + wait_ms
            try:
                async with asyncio.timeout(wait_ms / 1000):
                    await self._wake.wait()
            except TimeoutError:
                pass

    def _stop_if_no_log_dir_left(self) -> None:
        """With every log directory offline nothing can be served: stop, as Kafka halts."""
        broker = self.broker
        if broker is None or self.stopping.is_set() or not broker.log_dir_failures.all_offline:
            return
        self.failure = broker.log_dir_failures.shutdown_message()
        log.error("%s", self.failure)
        self._stop_task = asyncio.ensure_future(self.stop())

    async def serve_until_stopped(self) -> None:
        await self._stopped.wait()

    async def stop(self) -> None:
        """Stop accepting, drop every connection, flush and checkpoint every log. A second call
        while the first runs only waits for it."""
        if self.stopping.is_set():
            await self._stopped.wait()
            return
        self.stopping.set()
        await self._controlled_shutdown()
        await self._close_sockets("the server is stopping")
        await asyncio.sleep(0)  # let the transports report connection_lost
        for server in (self._server, *self._extra_servers):
            if server is not None:
                await server.wait_closed()
        try:
            if self.broker is not None:
                self._shut_down_broker(self.broker)
        finally:
            self.broker = None
            self._stopped.set()

    async def _controlled_shutdown(self) -> None:
        """A running broker of a cluster first asks the controller to move its leaderships
        away (heartbeat ``want_shut_down``), serving clients meanwhile, until the controller
        answers ``should_shut_down`` or ``CONTROLLED_SHUTDOWN_WAIT_S`` passes; then it stops
        anyway, as Kafka's broker does when its controlled shutdown times out."""
        broker = self.broker
        lifecycle = None if broker is None else broker.lifecycle
        if broker is None or lifecycle is None or self.peers is None or lifecycle.state is not BrokerState.RUNNING:
            return
        lifecycle.begin_controlled_shutdown(broker.timer.now_ms())
        self.peers.pump()
        try:
            async with asyncio.timeout(CONTROLLED_SHUTDOWN_WAIT_S):
                while lifecycle.state is not BrokerState.SHUTTING_DOWN:
                    await asyncio.sleep(CONTROLLED_SHUTDOWN_POLL_S)
        except TimeoutError:
            log.warning("the controller did not release broker %s within %s s; stopping anyway",
                        broker.settings.node_id, CONTROLLED_SHUTDOWN_WAIT_S)

    async def _close_sockets(self, reason: str) -> None:
        """Stop listening and the timer, close every client connection with ``reason``, and
        close the connections to other nodes."""
        self.stopping.set()
        for server in (self._server, *self._extra_servers):
            if server is not None:
                server.close()
        if self._timer is not None:
            self._timer.cancel()
        for connection in list(self._connections.values()):
            connection.close(reason)
        if self.peers is not None:
            await self.peers.channel.close()
            if self.peers.controller is not None:
                await self.peers.controller[1].close()
            await self.peers.close()

    async def halt(self) -> None:
        """Stop as SIGKILL stops a process, for failover tests in one process: the sockets
        close (the operating system would close them), nothing is flushed or checkpointed."""
        await self._close_sockets("killed")
        if self.broker is not None:
            self.broker.halt()
        self.broker = None
        self._stopped.set()

    def _shut_down_broker(self, broker: Broker) -> None:
        try:
            broker.shutdown()
        except (KafkaError, OSError) as error:  # the process must end even if a write fails
            log.exception("the broker's shutdown failed")
            self.failure = self.failure or f"shutdown failed: {error}"
        if broker.log_dir_failures.all_offline and self.failure is None:
            self.failure = broker.log_dir_failures.shutdown_message()
            log.error("%s", self.failure)
