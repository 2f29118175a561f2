"""Carrying one broker's requests to other nodes: the process runtime's half of replication.

Theory of operation
-------------------
The sans-I/O broker keeps what it wants to ask other nodes in its components; the simulation
(:mod:`kafkalab.sim.cluster`) takes those requests out and carries them over its seeded network.
:class:`PeerDriver` takes the same requests out of a broker in a real process and hands them
to a :class:`~kafkalab.server.peer_channel.PeerChannel`, which carries them over TCP:

* each follower fetcher (``replica_manager.fetchers``, one per leader) sends its next Fetch
  once the last one is answered -- Kafka's ``ReplicaFetcherThread`` loop; a failed Fetch waits
  ``replica.fetch.backoff.ms`` (1 s) before the next, as Kafka's fetcher backs off;
* the transaction coordinator's queued WriteTxnMarkers go to the partitions' leaders;
* a partition leader's KIP-890 verification questions go to the transaction coordinators;
* in a cluster with a controller on the network, the broker's BrokerRegistration,
  BrokerHeartbeat, AlterPartition, forwarded admin requests (Envelope), auto-created topics
  (CreateTopics) and AllocateProducerIds go to the controller over a channel of their own, and
  its Fetch of ``__cluster_metadata`` over another (Kafka's ``NodeToControllerChannelManager``
  and metadata fetcher use their own network clients too). A connection answers its requests
  in order, so a metadata fetch the controller parks for up to 500 ms would otherwise hold
  back the answer to every request sent after it.

Every answer goes back into the broker, whose outbox may then hold responses for clients (an
acks=all Produce completed by the follower's fetch moving the HW), so the driver calls the
server's ``on_change`` after each. The server calls :meth:`PeerDriver.pump` after every request
it handled and every timer tick: that is when a fetcher may have new work.

Worked example: broker 2 follows ``orders-0`` led by broker 1. ``pump`` finds fetcher 1 idle
and sends ``Fetch(replica_id=2, orders-0 @ 0)`` to broker 1's inter-broker listener. Broker 1
parks it for up to ``replica.fetch.wait.max.ms`` (500 ms); a producer's batch arrives, the
parked Fetch completes with it, broker 2 appends it and immediately sends ``Fetch(@ 3)``, whose
arrival tells broker 1 that broker 2 has the batch: the HW moves to 3 and the acks=all Produce is
answered.
"""

from __future__ import annotations

import asyncio
import functools
import random
from collections.abc import Callable
from typing import Any

from kafkalab.broker.broker import Broker
from kafkalab.broker.lifecycle import ControllerRequest
from kafkalab.broker.metadata_follower import METADATA_FETCH_VERSION
from kafkalab.broker.replica_fetch import FETCH_VERSION
from kafkalab.broker.txn_channel import WRITE_TXN_MARKERS_VERSION
from kafkalab.broker.txn_verification import VERIFY_VERSION
from kafkalab.errors import NetworkError
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.server.peer_channel import PeerChannel

REPLICA_FETCH_BACKOFF_S = 1.0  # replica.fetch.backoff.ms
METADATA_REQUEST_TIMEOUT_MS = 2_000  # controller.quorum.request.timeout.ms: bounds a metadata fetch


class PeerDriver:
    """Moves one broker's outgoing requests onto a PeerChannel and the answers back. Owned by
    the server's event loop."""

    def __init__(self, broker: Broker, channel: PeerChannel, on_change: Callable[[], None],
                 controller: tuple[int, PeerChannel] | None = None) -> None:
        self.broker = broker
        self.channel = channel
        self.on_change = on_change
        self.controller = controller  # (the active controller's id, the channel to it)
        self.metadata_channel: PeerChannel | None = None  # opened beside it on first use
        self._fetching_from: set[int] = set()  # leaders with a Fetch in flight
        self._backoff_until_s: dict[int, float] = {}  # leader -> when a failed fetcher may fetch again
        self.fetch_failures: list[NetworkError] = []  # the latest few, for logs and tests

    def pump(self) -> None:
        """Send whatever the broker has for other nodes now."""
        self._send_fetches()
        self._send_txn_markers()
        self._send_txn_verifications()
        if self.controller is not None:
            self._send_to_controller(*self.controller)

    def _send_to_controller(self, controller_id: int, channel: PeerChannel) -> None:
        now_ms = self.broker.timer.now_ms()
        for request in self.broker.controller_requests(now_ms):
            channel.send(controller_id, request.api_key, request.version, request.body,
                         functools.partial(self._controller_answered, request),
                         functools.partial(self._controller_failed, request), timeout_ms=request.timeout_ms)
        follower = self.broker.metadata_follower
        body = None if follower is None else follower.next_fetch()
        if follower is not None and body is not None:
            self._metadata_channel(controller_id, channel).send(
                controller_id, ApiKey.FETCH, METADATA_FETCH_VERSION, body, self._metadata_fetched,
                lambda error: follower.on_failure(), timeout_ms=METADATA_REQUEST_TIMEOUT_MS)

    def _metadata_channel(self, controller_id: int, channel: PeerChannel) -> PeerChannel:
        """The channel for metadata fetches, to the address the controller channel uses (known
        once that channel has sent its first request, the registration); the controller
        channel itself until then."""
        if self.metadata_channel is None:
            connection = channel.connection(controller_id)
            if connection is None:
                return channel
            self.metadata_channel = PeerChannel(channel.node_id, {controller_id: connection.address},
                                                random.Random(channel.node_id))
        return self.metadata_channel

    async def close(self) -> None:
        """Close the channels the driver opened itself."""
        if self.metadata_channel is not None:
            await self.metadata_channel.close()

    def _controller_answered(self, request: ControllerRequest, body: Any) -> None:
        self.broker.on_controller_response(request, body, self.broker.timer.now_ms())
        self.on_change()  # an accepted ISR may complete acks=all produces

    def _controller_failed(self, request: ControllerRequest, error: NetworkError) -> None:
        self.broker.on_controller_failure(request, self.broker.timer.now_ms())

    def _metadata_fetched(self, response: Any) -> None:
        self.broker.on_metadata_fetched(response, self.broker.timer.now_ms())
        self.on_change()  # the next fetch, and whatever the new image changed

    def _send_fetches(self) -> None:
        now_s = asyncio.get_running_loop().time()
        node_id = self.broker.settings.node_id
        for leader_id, fetcher in sorted(self.broker.replica_manager.fetchers.items()):
            if leader_id in self._fetching_from or self._backoff_until_s.get(leader_id, 0.0) > now_s:
                continue
            fetches = fetcher.next_fetch()
            if not fetches:
                continue
            self._fetching_from.add(leader_id)
            body = self.broker.follower_sessions.request(node_id, leader_id, fetches)
            self.channel.send(leader_id, ApiKey.FETCH, FETCH_VERSION, body,
                              functools.partial(self._fetch_answered, leader_id),
                              functools.partial(self._fetch_failed, leader_id))

    def _fetch_answered(self, leader_id: int, response: Any) -> None:
        self._fetching_from.discard(leader_id)
        self.broker.replica_manager.on_fetch_response(leader_id, self.broker.follower_sessions.results(leader_id, response))
        self.on_change()

    def _fetch_failed(self, leader_id: int, error: NetworkError) -> None:
        self._fetching_from.discard(leader_id)
        self.broker.follower_sessions.failed(leader_id)
        self._backoff_until_s[leader_id] = asyncio.get_running_loop().time() + REPLICA_FETCH_BACKOFF_S
        self.fetch_failures = [*self.fetch_failures[-9:], error]

    def _send_txn_markers(self) -> None:
        channel = self.broker.txn_markers
        if channel is None:
            return  # a lone broker appends its markers in process
        for batch in channel.take_requests():
            self.channel.send(batch.destination, ApiKey.WRITE_TXN_MARKERS, WRITE_TXN_MARKERS_VERSION, batch.body,
                              functools.partial(self._answered, channel.on_response, batch.request_id),
                              functools.partial(self._failed, channel.on_failure, batch.request_id))

    def _send_txn_verifications(self) -> None:
        channel = self.broker.txn_verification
        for batch in channel.take_requests():
            self.channel.send(batch.destination, ApiKey.ADD_PARTITIONS_TO_TXN, VERIFY_VERSION, batch.body,
                              functools.partial(self._answered, channel.on_response, batch.request_id),
                              functools.partial(self._failed, channel.on_failure, batch.request_id))

    def _answered(self, on_response: Callable[[int, Any], None], request_id: int, response: Any) -> None:
        on_response(request_id, response)
        self.on_change()  # a held Produce or a completed transaction may have answers now

    def _failed(self, on_failure: Callable[[int], None], request_id: int, error: NetworkError) -> None:
        on_failure(request_id)  # the component retries after its own backoff
        self.on_change()


__all__ = ["PeerDriver", "REPLICA_FETCH_BACKOFF_S"]
