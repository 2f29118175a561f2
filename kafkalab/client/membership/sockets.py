"""A blocking socket adapter for :class:`~kafkalab.client.membership.member.GroupMember`.

It is the whole I/O side of group membership, in the way h11's example server is the I/O side of
HTTP: ask the member what to send, send it on a :class:`~kafkalab.client.connection.BrokerConnection`
(to the bootstrap broker, or to the coordinator once known), hand back the answer or the
failure, and sleep until the member's next deadline. Versions are negotiated per API: the lower
of what the member speaks and what the broker advertises.

Worked example::

    runner = SocketMember("127.0.0.1:9092", MemberConfig("orders-app", ("orders",)))
    runner.run_until(lambda m: m.state is MemberState.STABLE, timeout_ms=30_000)
    runner.member.owned        # (("orders", 0), ("orders", 1), ...)
    runner.close()             # LeaveGroup, then the sockets close

Not thread-safe; one thread drives one member, as a Kafka consumer's ``poll`` loop does.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from kafkalab.client.connection import BrokerConnection, bootstrap
from kafkalab.client.membership.member import JOIN_GROUP_TIMEOUT_LAPSE_MS, GroupMember, MemberConfig, Outgoing
from kafkalab.client.membership.state import MemberState
from kafkalab.clock import Clock, SystemClock
from kafkalab.errors import NetworkError, UnsupportedVersionError

IDLE_SLEEP_MAX_MS = 100  # never sleep longer than this between polls, so run_until's check stays live
CLOSE_WAIT_MS = 5_000  # how long close() waits for the LeaveGroup answer


class SocketMember:
    """Runs one :class:`GroupMember` over blocking sockets. Not thread-safe."""

    def __init__(self, bootstrap_servers: str, config: MemberConfig, *, clock: Clock | None = None,
                 client_id: str = "kafkalab-consumer") -> None:
        self.clock = clock or SystemClock()
        self.member = GroupMember(config)
        # A JoinGroup may be parked for the whole rebalance timeout, so sockets wait that long.
        self._timeout_ms = max(config.request_timeout_ms, config.rebalance_timeout_ms + JOIN_GROUP_TIMEOUT_LAPSE_MS)
        self._client_id = client_id
        self._servers = bootstrap_servers
        self._bootstrap: BrokerConnection | None = None
        self._coordinator_conn: BrokerConnection | None = None
        self.member.start(self.clock.milliseconds())

    def run_until(self, done: Callable[[GroupMember], bool], timeout_ms: int) -> bool:
        """Drive the member until ``done(member)`` or ``timeout_ms`` pass; returns ``done(member)``."""
        end_ms = self.clock.milliseconds() + timeout_ms
        while not done(self.member) and self.clock.milliseconds() < end_ms:
            self.step()
        return done(self.member)

    def step(self) -> None:
        """Send what is due (waiting for its answer), or sleep until something is."""
        now_ms = self.clock.milliseconds()
        outgoing = self.member.poll(now_ms)
        for out in outgoing:
            self._exchange(out)
        if not outgoing:
            deadline = self.member.next_deadline_ms()
            wait_ms = IDLE_SLEEP_MAX_MS if deadline is None else min(IDLE_SLEEP_MAX_MS, max(0, deadline - now_ms))
            time.sleep(wait_ms / 1000)

    def _exchange(self, out: Outgoing) -> None:
        try:
            conn = self._connection(out)
            version = min(out.version, conn.protocol.version_for(out.api_key))
            response = conn.request(out.api_key, out.body, api_version=version)
        except (NetworkError, UnsupportedVersionError):
            self._drop_connections()  # a connection that failed mid-request is out of step
            self.member.on_failure(out.api_key, self.clock.milliseconds(), out.request_id)
            return
        self.member.on_response(out.api_key, response, self.clock.milliseconds(), out.request_id)

    def _connection(self, out: Outgoing) -> BrokerConnection:
        if self._bootstrap is None:
            self._bootstrap = bootstrap(self._servers, request_timeout_ms=self._timeout_ms, client_id=self._client_id)
        coordinator = self.member.coordinator
        if out.destination is None or coordinator is None:
            return self._bootstrap
        if (coordinator.host, coordinator.port) == (self._bootstrap.host, self._bootstrap.port):
            return self._bootstrap
        if self._coordinator_conn is None or (self._coordinator_conn.host, self._coordinator_conn.port) != (
                coordinator.host, coordinator.port):
            self._drop_connections(keep_bootstrap=True)
            self._coordinator_conn = BrokerConnection(coordinator.host, coordinator.port,
                                                      request_timeout_ms=self._timeout_ms, client_id=self._client_id)
        return self._coordinator_conn

    def _drop_connections(self, *, keep_bootstrap: bool = False) -> None:
        if self._coordinator_conn is not None:
            self._coordinator_conn.close()
            self._coordinator_conn = None
        if self._bootstrap is not None and not keep_bootstrap:
            self._bootstrap.close()
            self._bootstrap = None

    def close(self) -> None:
        """Leave the group (LeaveGroup, unless static) and close the sockets."""
        try:
            self.member.leave(self.clock.milliseconds())
            self.run_until(lambda m: m.state in (MemberState.LEFT, MemberState.FATAL), CLOSE_WAIT_MS)
        finally:
            self._drop_connections()
