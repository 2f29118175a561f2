"""A cluster of real brokers in one process, on one ManualClock, talking through a seeded network.

Theory of operation
-------------------
Each node is a full :class:`~kafkalab.broker.broker.Broker` over its own data directory. Every
message between nodes -- a follower's Fetch to its leader and the leader's answer, a client's
Produce and its acknowledgement -- is a real Kafka request or response, encoded to bytes and
decoded again, carried by :class:`~kafkalab.sim.network.Network`, which may delay, drop,
duplicate, reorder or cut it. Nothing reads the wall clock: :meth:`SimCluster.run_for` moves the
:class:`~kafkalab.clock.ManualClock` from event to event (the next delivery, the next timer task
on any broker), so a run is a function of its seed and replays exactly.

The loop, per step::

    t = earliest of (network deliveries, brokers' timer deadlines, the run's end)
    clock := t; every broker runs its due timer tasks (parked fetches expire, the ISR check)
    deliver every message due at t:  request  -> broker.handle -> responses onto the network
                                     response -> the follower's fetcher, or the client's future
    every follower with no fetch in flight to a leader sends its next Fetch
    every transaction coordinator sends its queued WriteTxnMarkers to the partition leaders
    every broker sends what it owes the controller: BrokerRegistration, BrokerHeartbeat,
    AlterPartition, and a Fetch of ``__cluster_metadata`` when none is in flight

The controller is a node of its own on the network, ``"controller"``: a
:class:`~kafkalab.controller.controller_node.ControllerNode` over the cluster's
:class:`~kafkalab.controller.local.LocalController`. Brokers register with it, heartbeat every
2 s, propose ISR changes with AlterPartition, and learn the metadata by fetching its log and
replaying the records, as KRaft brokers do; a broker silent for ``broker.session.timeout.ms``
(9 s) is fenced. A client's admin requests (CreateTopics, configs, ElectLeaders ...) reach the
controller as Envelopes forwarded by the broker they were sent to, and brokers ask it for
producer id blocks; tests, tools and the book's cells may also call the LocalController directly
(:meth:`SimCluster.create_topic`), as an admin tool beside the controller would.

Worked example: ``SimCluster(tmp, nodes=3, seed=7)`` starts brokers 1, 2 and 3;
``create_topic("orders", 1, 3)`` places replicas [3, 1, 2], so broker 3 leads (the call returns
once every running broker has fetched the new records, a couple of simulated ms); a
``produce("orders", 0, batch, acks=-1)`` is answered once both followers' next fetches report
the batch -- a few simulated milliseconds later with the default 1 ms links. Cut a follower off
with ``network.isolate`` and the same produce waits until the leader's ISR check (every 15 s)
finds it 30 s behind and the controller accepts the smaller ISR.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkalab.broker.broker import Broker
from kafkalab.broker.replica_fetch import FETCH_VERSION, follower_fetch_request
from kafkalab.broker.settings import BrokerSettings
from kafkalab.broker.startup import open_broker
from kafkalab.broker.txn_channel import WRITE_TXN_MARKERS_VERSION
from kafkalab.broker.txn_verification import VERIFY_VERSION
from kafkalab.client.consumer import ConsumerCore, RebalanceEvent, Request
from kafkalab.client.membership import GroupMember, MemberConfig, Outgoing
from kafkalab.client.data import PARTITION_FETCH_MAX_BYTES
from kafkalab.clock import ManualClock
from kafkalab.broker.lifecycle import BrokerState, ControllerRequest
from kafkalab.broker.metadata_follower import METADATA_FETCH_VERSION
from kafkalab.controller.controller_node import ControllerNode
from kafkalab.controller.describe_quorum import QuorumNode
from kafkalab.controller.heartbeats import BROKER_SESSION_TIMEOUT_MS, BrokerHeartbeatManager
from kafkalab.controller.leader_balance import LeaderBalancer, balancing_interval_ms
from kafkalab.controller.local import LocalController
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.header import decode_response, encode_request
from kafkalab.replication.fetcher import PartitionFetch
from kafkalab.sim.network import LinkFaults, Network
from kafkalab.sim.node import SimClient, SimNode
from kafkalab.storage.power_loss import LostTail, lose_unflushed, unflushed_tails

START_MS = 1_700_000_000_000  # a fixed start so timestamps replay
CLIENT = "client"
CONNECTION_BASE = 1_000  # a broker sees node n's requests on connection 1000 + n (0: the client)
STEPS_MAX = 10_000_000  # a bug guard for run_for: no simulated interval needs more steps
PRODUCE_VERSION = 7
METADATA_VERSION = 12
REQUEST_TIMEOUT_MS = 30_000  # replica.socket.timeout.ms and the clients' request.timeout.ms
CONTROLLER = "controller"  # the active controller's address on the network
CONTROLLER_ID = 0  # its node id (brokers are 1 ... n)
METADATA_REQUEST_TIMEOUT_MS = 2_000  # controller.quorum.request.timeout.ms: a metadata fetch's bound
METADATA_WAIT_MS = 30_000  # how long create_topic and start-up wait for brokers to learn the metadata
CONTROLLED_SHUTDOWN_WAIT_MS = 30_000  # how long stop() lets the controller move leaderships
MEMBER_CONNECTION_BASE = 100_000  # a broker sees group member i's requests on connection 100000 + i


@dataclass(slots=True)
class _Pending:
    """A request in flight: what it was, what to do with its answer, and when to give up."""

    api_key: int
    version: int
    on_response: Callable[[Any], None]
    deadline_ms: int
    on_timeout: Callable[[], None]
    src: int | str
    dst: int | str = -1


class SimCluster:
    """Brokers, a controller and a client in one deterministic simulation. Not thread-safe."""

    def __init__(self, data_dir: Path, *, nodes: int = 3, seed: int = 0, faults: LinkFaults | None = None,
                 properties: dict[str, str] | None = None, racks: dict[int, str] | None = None) -> None:
        self.seed = seed
        self.racks = dict(racks or {})  # broker.rack of each node that has one
        self.data_dir = Path(data_dir)
        # Like Kafka's example single-node server.properties, a cluster smaller than the default
        # offsets.topic.replication.factor (3) is configured to its size; the brokers refuse to
        # create __consumer_offsets while fewer brokers are registered than the factor says.
        self.properties = {"offsets.topic.replication.factor": str(min(nodes, 3)), **(properties or {})}
        rng = self._rng = random.Random(seed)
        self.clock = ManualClock(now_ms=START_MS)
        self.network = Network(random.Random(rng.getrandbits(64)), faults or LinkFaults())
        self.controller = LocalController([], random.Random(rng.getrandbits(64)), clock_ms=self.clock.milliseconds)
        self.controller_node = ControllerNode(
            self.controller, BrokerSettings(node_id=0).cluster_id, BrokerHeartbeatManager(BROKER_SESSION_TIMEOUT_MS),
            self._unclean_enabled, self.properties, node=QuorumNode(CONTROLLER_ID, CONTROLLER, 0))
        self.controller_node.on_alter_partition = lambda request, response, before: self._notify(
            "alter-partition", request.broker_id, (request, response, before))
        self.nodes: dict[int, SimNode] = {}
        self._correlation_ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._watchers: list[Callable[[str, int, Any], None]] = []
        self.members: dict[str, GroupMember] = {}  # consumers in groups, by name
        self.consumers: dict[str, ConsumerCore] = {}  # kafkalab's whole consumers, by name
        self.consumer_events: list[tuple[int, str, RebalanceEvent]] = []  # what their listeners heard
        self._member_connections: dict[str, int] = {}
        self._clients: list[SimClient] = []
        for node_id in range(1, nodes + 1):
            self.nodes[node_id] = SimNode(node_id, self._open(node_id))
        interval_ms = balancing_interval_ms(self.properties)  # auto.leader.rebalance.enable
        self.leader_balancer = None if interval_ms is None else LeaderBalancer(
            self.controller, interval_ms, self.clock.milliseconds)
        if self.leader_balancer is not None:
            self.add_client(self.leader_balancer)
        # Like a real cluster's start: every broker registers, catches up and is unfenced.
        self.run_until(lambda: all(n.broker.lifecycle is not None and n.broker.lifecycle.state is BrokerState.RUNNING
                                   for n in self.nodes.values()) and self._metadata_propagated(), METADATA_WAIT_MS)

    def _open(self, node_id: int) -> Broker:
        settings = BrokerSettings(node_id=node_id, port=9090 + node_id, rack=self.racks.get(node_id))
        return open_broker(self.data_dir / f"node-{node_id}", self.properties, settings, self.clock,
                           random.Random(self._rng.getrandbits(64)), in_cluster=True)

    def watch(self, watcher: Callable[[str, int, Any], None]) -> None:
        """Call ``watcher(kind, node_id, detail)`` on every ``"crash"`` (detail None),
        ``"restart"`` (detail: the new broker, so its replica manager can be subscribed to),
        ``"produce-answer"`` (detail: ``(topic, partition, response)``, the decoded partition
        response; node_id the leader it was sent to), a group member's ``"group-request"`` and
        ``"group-response"`` (detail: ``(member name, api_key, body)``; node_id the broker), and
        every ``"alter-partition"`` the controller answers (detail: ``(request, response, image
        before)``; node_id the sender)."""
        self._watchers.append(watcher)

    def add_client(self, client: SimClient) -> None:
        """Run ``client`` with the cluster: ticked every step, woken at its deadlines."""
        self._clients.append(client)

    def send_request(self, dst: int, api_key: int, version: int, body: Any, on_response: Callable[[Any], None],
                     *, timeout_ms: int = REQUEST_TIMEOUT_MS, on_timeout: Callable[[], None] = lambda: None,
                     expect_response: bool = True) -> None:
        """Send a client's request to broker ``dst``; ``expect_response=False`` is a Produce with
        acks=0, which no broker answers (nothing waits for it)."""
        if expect_response:
            self._send(CLIENT, dst, api_key, version, body, on_response, timeout_ms=timeout_ms, on_timeout=on_timeout)
            return
        frame = encode_request(api_key, version, next(self._correlation_ids), f"sim-{CLIENT}", body)[4:]
        self.network.send(CLIENT, dst, ("request", 0, frame), self.clock.milliseconds())

    def _notify(self, kind: str, node_id: int, detail: Any) -> None:
        for watcher in self._watchers:
            watcher(kind, node_id, detail)

    # --- faults --------------------------------------------------------------------------------

    def crash(self, node_id: int, *, power_loss: bool = False) -> list[LostTail]:
        """Kill a broker: its memory and everything in flight to or from it are lost; its files
        stay as written -- unless ``power_loss``, when each segment also loses a seeded part of
        what it wrote since its last fsync (:mod:`kafkalab.storage.power_loss`); returns what
        was lost. Its heartbeats stop, so the controller fences it once
        ``broker.session.timeout.ms`` has passed since the last one."""
        node = self.nodes[node_id]
        assert node.alive, f"broker {node_id} is already down"
        node.alive = False
        tails = unflushed_tails(hosted.log for hosted in node.broker.replica_manager) if power_loss else []
        node.broker.halt()
        lost = lose_unflushed(tails, self._rng) if power_loss else []
        self._gone(node)
        return lost

    def _gone(self, node: SimNode) -> None:
        """A stopped or killed broker leaves the network: its messages in flight are lost, its
        own requests forgotten, and whoever waits on it learns that the connection closed."""
        node.fetching_from.clear()
        self.network.drop_node(node.node_id)
        for correlation_id in [c for c, p in self._pending.items() if p.src == node.node_id]:
            del self._pending[correlation_id]
        self._connections_closed(node.node_id)
        self._notify("crash", node.node_id, None)

    def _connections_closed(self, node_id: int) -> None:
        """A killed process's sockets are closed by its operating system: everyone waiting on a
        request to it learns at once that the connection dropped (Kafka's clients then refresh
        their metadata and retry), instead of waiting out ``request.timeout.ms``."""
        for correlation_id in [c for c, p in self._pending.items() if p.dst == node_id]:
            pending = self._pending.pop(correlation_id, None)
            if pending is not None:
                pending.on_timeout()

    def stop(self, node_id: int, *, wait_ms: int = CONTROLLED_SHUTDOWN_WAIT_MS) -> bool:
        """SIGTERM: a controlled shutdown. The broker heartbeats ``want_shut_down``, the
        controller moves its leaderships to other in-sync replicas and answers
        ``should_shut_down`` once it leads nothing; then the broker closes its logs cleanly.
        Returns whether the controller released it within ``wait_ms`` (if not, it stops anyway,
        as Kafka's broker does when its controlled shutdown times out)."""
        node = self.nodes[node_id]
        assert node.alive, f"broker {node_id} is already down"
        lifecycle = node.broker.lifecycle
        assert lifecycle is not None
        lifecycle.begin_controlled_shutdown(self.clock.milliseconds())
        released = self.run_until(lambda: lifecycle.state is BrokerState.SHUTTING_DOWN, wait_ms)
        node.alive = False
        node.broker.shutdown()
        self._gone(node)
        return released

    def restart(self, node_id: int) -> None:
        """Start a crashed broker again on its directory: recovery runs, it registers anew."""
        node = self.nodes[node_id]
        assert not node.alive, f"broker {node_id} is running"
        node.broker = self._open(node_id)
        node.alive = True
        self._notify("restart", node_id, node.broker)

    # --- what a test or a notebook does --------------------------------------------------------

    def create_topic(self, name: str, partitions: int, replication_factor: int) -> None:
        """Create a topic at the controller and run until every running broker has fetched it."""
        self.controller.create_topic(name, partitions, replication_factor)
        self.await_metadata()

    def await_metadata(self, wait_ms: int = METADATA_WAIT_MS) -> bool:
        """Run until every running broker has replayed the controller's whole metadata log
        (a direct call on :attr:`controller` reaches the brokers a fetch later)."""
        return self.run_until(self._metadata_propagated, wait_ms)

    def _metadata_propagated(self) -> bool:
        end = self.controller.image.offset
        return all(n.broker.image.offset >= end for n in self._alive()
                   if n.broker.lifecycle is not None and n.broker.lifecycle.state is BrokerState.RUNNING)

    def leader(self, topic: str, partition: int) -> int:
        registration = self.controller.image.partition(topic, partition)
        assert registration is not None, f"no such partition {topic}-{partition}"
        return registration.leader

    def produce(self, topic: str, partition: int, batch: bytes, *, acks: int = -1,
                timeout_ms: int = 30_000, wait_ms: int = 60_000) -> Any:
        """Send one batch to the partition's leader as a client would; run until answered
        (None if no answer came within ``wait_ms``)."""
        answers: list[Any] = []
        self.send_produce(topic, partition, batch, answers.append, acks=acks, timeout_ms=timeout_ms)
        self.run_until(lambda: bool(answers), wait_ms)
        return answers[0] if answers else None

    def send_produce(self, topic: str, partition: int, batch: bytes, on_answer: Callable[[Any], None],
                     *, acks: int = -1, timeout_ms: int = 30_000) -> None:
        """Send one batch to the partition's leader without waiting: ``on_answer`` gets the
        partition response once it arrives, as the simulation runs on."""
        leader = self.leader(topic, partition)
        body = {"acks": acks, "timeout_ms": timeout_ms, "topic_data": [
            {"name": topic, "partition_data": [{"index": partition, "records": batch}]}]}

        def answered(response: Any) -> None:
            answer = response.responses[0].partition_responses[0]
            self._notify("produce-answer", leader, (topic, partition, answer))
            on_answer(answer)
        self._send(CLIENT, leader, ApiKey.PRODUCE, PRODUCE_VERSION, body, answered,
                   timeout_ms=timeout_ms + REQUEST_TIMEOUT_MS)

    def consume(self, topic: str, partition: int, offset: int, *, wait_ms: int = 60_000) -> Any:
        """Fetch from the partition's leader as a consumer does (replica id -1, no waiting for
        data); run until answered and return the partition's part of the Fetch response."""
        answers: list[Any] = []
        fetch = PartitionFetch(topic, partition, offset, -1, -1, -1, PARTITION_FETCH_MAX_BYTES)
        body = dataclasses.replace(follower_fetch_request(-1, [fetch]), max_wait_ms=0, min_bytes=0)
        self._send(CLIENT, self.leader(topic, partition), ApiKey.FETCH, FETCH_VERSION, body,
                   lambda response: answers.append(response.responses[0].partitions[0]))
        self.run_until(lambda: bool(answers), wait_ms)
        return answers[0] if answers else None

    def metadata(self, via: int, topics: list[str], *, wait_ms: int = 60_000) -> Any:
        """Ask broker ``via`` for ``topics`` as a client's Metadata request does (no auto-creation);
        run until answered and return the MetadataResponse (None if no answer came)."""
        answers: list[Any] = []
        body = {"topics": [{"name": name} for name in topics], "allow_auto_topic_creation": False}
        self._send(CLIENT, via, ApiKey.METADATA, METADATA_VERSION, body, answers.append)
        self.run_until(lambda: bool(answers), wait_ms)
        return answers[0] if answers else None

    # --- consumer group members ----------------------------------------------------------------

    def add_member(self, name: str, config: MemberConfig) -> GroupMember:
        """Start a consumer called ``name`` in a group; its requests cross the network like any
        client's, on a connection of its own."""
        assert name not in self.members and name not in self.nodes, f"{name!r} is taken"
        member = GroupMember(config)
        self.members[name] = member
        self._member_connections.setdefault(name, MEMBER_CONNECTION_BASE + len(self._member_connections))
        member.start(self.clock.milliseconds())
        return member

    def stop_member(self, name: str, *, leave: bool = True) -> None:
        """Close the consumer (it sends LeaveGroup) or, with ``leave=False``, kill it: it goes
        silent and the coordinator notices only when its session times out."""
        if leave:
            self.members[name].leave(self.clock.milliseconds())
            return
        del self.members[name]
        for correlation_id in [c for c, p in self._pending.items() if p.src == name]:
            del self._pending[correlation_id]
        self.network.drop_node(name)

    def add_consumer(self, name: str, consumer: ConsumerCore) -> ConsumerCore:
        """Run a :class:`ConsumerCore` (already subscribed or assigned) on a connection of its
        own; its rebalance listener events are taken as they come, so it never waits on them."""
        assert name not in self.consumers and name not in self.members and name not in self.nodes, f"{name!r} is taken"
        self.consumers[name] = consumer
        self._member_connections.setdefault(name, MEMBER_CONNECTION_BASE + len(self._member_connections))
        return consumer

    def kill_consumer(self, name: str) -> None:
        """The consumer's process dies: it goes silent; its group notices when its session times out."""
        del self.consumers[name]
        for correlation_id in [c for c, p in self._pending.items() if p.src == name]:
            del self._pending[correlation_id]
        self.network.drop_node(name)

    def _poll_members(self) -> None:
        now_ms = self.clock.milliseconds()
        for name, member in list(self.members.items()):
            for out in member.poll(now_ms):
                self._send_for_member(name, member, out)
        for name, consumer in list(self.consumers.items()):
            self.consumer_events += [(now_ms, name, e) for e in consumer.take_rebalance_events()]
            for request in consumer.poll_requests(now_ms):
                self._send_for_consumer(name, consumer, request)

    def _send_for_consumer(self, name: str, consumer: ConsumerCore, request: Request) -> None:
        alive = [n.node_id for n in self._alive()]
        destination = request.destination if request.destination is not None else (min(alive) if alive else -1)
        self._send(name, destination, request.api_key, request.version, request.body,
                   lambda response: consumer.on_response(request.request_id, response, self.clock.milliseconds()),
                   timeout_ms=request.timeout_ms,
                   on_timeout=lambda: consumer.on_failure(request.request_id, self.clock.milliseconds()))

    def _send_for_member(self, name: str, member: GroupMember, out: Outgoing) -> None:
        alive = [n.node_id for n in self._alive()]
        destination = out.destination if out.destination is not None else (min(alive) if alive else -1)
        self._notify("group-request", destination, (name, out.api_key, out.body))

        def answered(response: Any) -> None:
            self._notify("group-response", destination, (name, out.api_key, response))
            member.on_response(out.api_key, response, self.clock.milliseconds(), out.request_id)

        self._send(name, destination, out.api_key, out.version, out.body, answered, timeout_ms=out.timeout_ms,
                   on_timeout=lambda: member.on_failure(out.api_key, self.clock.milliseconds(), out.request_id))

    def run_for(self, duration_ms: int) -> None:
        self.run_until(lambda: False, duration_ms)

    def run_until(self, done: Callable[[], bool], max_ms: int) -> bool:
        """Step until ``done()`` or ``max_ms`` of simulated time pass; returns ``done()``."""
        end_ms = self.clock.milliseconds() + max_ms
        for _ in range(STEPS_MAX):
            for client in self._clients:
                client.on_tick(self.clock.milliseconds())
            self._send_fetches()
            self._send_txn_markers()
            self._poll_members()
            self._send_to_controller()
            if done():
                return True
            next_ms = self._next_event_ms()
            if next_ms is None or next_ms > end_ms:
                self.clock.set_ms(max(end_ms, self.clock.milliseconds()))
                self._advance_timers()
                return done()
            self.clock.set_ms(max(next_ms, self.clock.milliseconds()))
            self._advance_timers()
            self._deliver()
            self._expire_requests()
        raise AssertionError(f"seed {self.seed}: more than {STEPS_MAX} steps in {max_ms} ms")

    # --- the loop's parts ------------------------------------------------------------------------

    def _next_event_ms(self) -> int | None:
        candidates = [self.controller_node.next_deadline_ms(), self.network.next_delivery_ms()]
        for node in self._alive():
            candidates += (node.broker.next_deadline_ms(), node.broker.controller_deadline_ms())
        times = [t for t in candidates if t is not None]
        times.extend(p.deadline_ms for p in self._pending.values())
        times.extend(t for t in (m.next_deadline_ms() for m in self.members.values()) if t is not None)
        times.extend(t for t in (c.next_deadline_ms() for c in self._clients) if t is not None)
        times.extend(t for t in (c.next_deadline_ms() for c in self.consumers.values()) if t is not None)
        return min(times) if times else None

    def _expire_requests(self) -> None:
        """A request unanswered by its deadline is given up, as a client's request.timeout.ms
        does (its connection is presumed dead); the fetcher may then fetch again."""
        now_ms = self.clock.milliseconds()
        for correlation_id in [c for c, p in self._pending.items() if p.deadline_ms <= now_ms]:
            self._pending.pop(correlation_id).on_timeout()

    def _unclean_enabled(self, topic: str) -> bool:
        """``unclean.leader.election.enable``, set for the whole cluster (default false)."""
        return self.properties.get("unclean.leader.election.enable", "false").lower() == "true"

    def _alive(self) -> list[SimNode]:
        return [node for node in self.nodes.values() if node.alive]

    def _advance_timers(self) -> None:
        now_ms = self.clock.milliseconds()
        self.controller_node.advance_clock(now_ms)
        self._ship_controller_responses()
        for node in self._alive():
            broker = node.broker
            due_ms = broker.next_deadline_ms()
            if due_ms is not None and due_ms <= broker.timer.now_ms():  # else nothing would run
                broker.advance_clock(broker.timer.now_ms())
            self._ship_responses(node)

    def _deliver(self) -> None:
        for delivery in self.network.deliver(self.clock.milliseconds()):
            kind, correlation_id, frame = delivery.message
            if kind == "request" and delivery.dst == CONTROLLER:
                self.controller_node.handle(self._connection_of(delivery.src), frame, self.clock.milliseconds())
                self._ship_controller_responses()
            elif kind == "request":
                node = self.nodes.get(int(str(delivery.dst)))  # -1: sent while nobody led
                if node is None or not node.alive:
                    self._refused(delivery.src, correlation_id)
                    continue
                connection = self._connection_of(delivery.src)
                node.broker.handle(connection, frame, self.clock.milliseconds())
                self._ship_responses(node)
            else:
                pending = self._pending.pop(correlation_id, None)
                if pending is not None:  # None: a duplicate answer, already handled
                    pending.on_response(decode_response(pending.api_key, pending.version, frame)[1])

    def _refused(self, src: Any, correlation_id: int) -> None:
        """A request reached a node that is down. A client's connection attempt is refused
        at once (it then refreshes its metadata and retries after its backoff); a broker's
        request is lost and times out, as before, so its fetcher does not spin."""
        if src in self.nodes:
            return
        pending = self._pending.pop(correlation_id, None)
        if pending is not None:
            pending.on_timeout()

    def _ship_responses(self, node: SimNode) -> None:
        for out in node.broker.take_responses():
            if out.parts is None:
                continue
            data = b"".join(p if isinstance(p, bytes) else p.read_bytes() for p in out.parts)
            destination = self._owner_of(out.connection_id)
            correlation_id = int.from_bytes(data[4:8], "big")
            self.network.send(node.node_id, destination, ("response", correlation_id, data[4:]),
                              self.clock.milliseconds())
        self._send_txn_verifications(node)

    def _send_txn_verifications(self, node: SimNode) -> None:
        """A partition leader's KIP-890 questions go to the transaction coordinators' brokers."""
        channel = node.broker.txn_verification
        for batch in channel.take_requests():
            self._send(node.node_id, batch.destination, ApiKey.ADD_PARTITIONS_TO_TXN, VERIFY_VERSION, batch.body,
                       functools.partial(self._verification_answered, node, channel, batch.request_id),
                       on_timeout=functools.partial(channel.on_failure, batch.request_id))

    def _verification_answered(self, node: SimNode, channel: Any, request_id: int, response: Any) -> None:
        channel.on_response(request_id, response)
        self._ship_responses(node)  # the Produce it held is answered now

    def _connection_of(self, src: Any) -> int:
        """The connection a broker sees a sender's requests on."""
        if src in self._member_connections:
            return self._member_connections[src]
        return CONNECTION_BASE + (0 if src == CLIENT else int(str(src)))

    def _owner_of(self, connection_id: int) -> int | str:
        if connection_id >= MEMBER_CONNECTION_BASE:
            return next(n for n, c in self._member_connections.items() if c == connection_id)
        source = connection_id - CONNECTION_BASE
        return CLIENT if source == 0 else source

    def _send(self, src: int | str, dst: int | str, api_key: int, version: int, body: Any,
              on_response: Callable[[Any], None], *, timeout_ms: int = REQUEST_TIMEOUT_MS,
              on_timeout: Callable[[], None] = lambda: None) -> None:
        correlation_id = next(self._correlation_ids)
        frame = encode_request(api_key, version, correlation_id, f"sim-{src}", body)[4:]
        deadline_ms = self.clock.milliseconds() + timeout_ms
        self._pending[correlation_id] = _Pending(api_key, version, on_response, deadline_ms, on_timeout, src, dst)
        self.network.send(src, dst, ("request", correlation_id, frame), self.clock.milliseconds())

    def _send_fetches(self) -> None:
        """Kafka runs one fetcher per leader; each sends its next Fetch once the last is answered."""
        for node in self._alive():
            for leader_id, fetcher in sorted(node.broker.replica_manager.fetchers.items()):
                if leader_id in node.fetching_from or leader_id not in self.nodes:
                    continue
                fetches = fetcher.next_fetch()
                if not fetches:
                    continue
                node.fetching_from.add(leader_id)
                body = node.broker.follower_sessions.request(node.node_id, leader_id, fetches)
                self._send(node.node_id, leader_id, ApiKey.FETCH, FETCH_VERSION, body,
                           self._fetch_answered(node, leader_id),
                           on_timeout=functools.partial(self._fetch_timed_out, node, leader_id))

    def _send_txn_markers(self) -> None:
        """Each transaction coordinator's queued WriteTxnMarkers go to the partition leaders."""
        for node in self._alive():
            channel = node.broker.txn_markers
            if channel is None:
                continue  # a lone broker appends its markers in process
            for batch in channel.take_requests():
                self._send(node.node_id, batch.destination, ApiKey.WRITE_TXN_MARKERS, WRITE_TXN_MARKERS_VERSION,
                           batch.body, functools.partial(channel.on_response, batch.request_id),
                           on_timeout=functools.partial(channel.on_failure, batch.request_id))

    def _fetch_answered(self, node: SimNode, leader_id: int) -> Callable[[Any], None]:
        def on_response(response: Any) -> None:
            node.fetching_from.discard(leader_id)
            node.broker.replica_manager.on_fetch_response(leader_id, node.broker.follower_sessions.results(
                leader_id, response))
        return on_response

    def _fetch_timed_out(self, node: SimNode, leader_id: int) -> None:
        node.fetching_from.discard(leader_id)
        node.broker.follower_sessions.failed(leader_id)

    def _send_to_controller(self) -> None:
        """Each broker's registration, heartbeat and AlterPartition requests, and its metadata
        fetch; and the answers to requests that reached the controller outside the network (a
        test's or a tool's direct call) for brokers waiting on a fetch."""
        now_ms = self.clock.milliseconds()
        self.controller_node.metadata_changed(now_ms)
        self._ship_controller_responses()
        for node in self._alive():
            broker = node.broker
            for request in broker.controller_requests(now_ms):
                self._send(node.node_id, CONTROLLER, request.api_key, request.version, request.body,
                           functools.partial(self._controller_answered, node, broker, request),
                           timeout_ms=request.timeout_ms,
                           on_timeout=functools.partial(self._controller_failed, broker, request))
            follower = broker.metadata_follower
            body = None if follower is None else follower.next_fetch()
            if follower is not None and body is not None:
                self._send(node.node_id, CONTROLLER, ApiKey.FETCH, METADATA_FETCH_VERSION, body,
                           functools.partial(self._metadata_fetched, node, broker),
                           timeout_ms=METADATA_REQUEST_TIMEOUT_MS, on_timeout=follower.on_failure)

    def _controller_answered(self, node: SimNode, broker: Broker, request: ControllerRequest, body: Any) -> None:
        if node.alive and node.broker is broker:
            broker.on_controller_response(request, body, self.clock.milliseconds())
            self._ship_responses(node)  # an accepted ISR may complete acks=all produces

    def _controller_failed(self, broker: Broker, request: ControllerRequest) -> None:
        broker.on_controller_failure(request, self.clock.milliseconds())

    def _metadata_fetched(self, node: SimNode, broker: Broker, response: Any) -> None:
        if node.alive and node.broker is broker:
            broker.on_metadata_fetched(response, self.clock.milliseconds())
            self._ship_responses(node)

    def _ship_controller_responses(self) -> None:
        for connection_id, frame in self.controller_node.take_responses():
            destination = self._owner_of(connection_id)
            correlation_id = int.from_bytes(frame[0:4], "big")
            self.network.send(CONTROLLER, destination, ("response", correlation_id, frame), self.clock.milliseconds())

    def close(self) -> None:
        for node in self._alive():
            node.broker.shutdown()


__all__ = ["BROKER_SESSION_TIMEOUT_MS", "CLIENT", "CONTROLLER", "START_MS", "SimClient", "SimCluster", "SimNode"]
