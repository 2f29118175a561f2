"""The broker: turns request frames into response frames, sans-I/O.

Theory of operation
-------------------
The network adapter hands the broker one whole frame at a time with the connection it came on
and the current time; the broker decodes the header, dispatches through :data:`HANDLERS` to a
``handle_<api>`` function, and puts the encoded response in its outbox. The adapter drains the
outbox with :meth:`Broker.take_responses` and writes each response to its connection::

    frame --> decode header --> HANDLERS[api_key] --> response body --> encode --> outbox
                   |                    |
                   |                    +--> PENDING (a parked fetch answers later)
                   +--> malformed / unknown API --> Outgoing(close=True)

Like Kafka's ``SocketServer``, the adapter sends one request per connection at a time and waits
for its :class:`Outgoing` before the next, so responses keep request order. Every request
produces exactly one Outgoing: a response, ``parts=None`` (a Produce with acks=0), or
``close=True`` when the stream can no longer be trusted (a frame that does not parse, an API
this broker does not implement -- Kafka closes the connection in both cases).

Worked example: frame ``00 12 00 03 00 00 00 07 ...`` (ApiVersions v3, correlation id 7) on
connection 4 yields ``Outgoing(4, [size, body...])`` whose body lists every advertised API;
``00 00 00 02 ...`` (Produce v2) yields ``Outgoing(4, None, close=True)``: v0-v2 are advertised
for librdkafka's sake but not implemented.

Time enters only as ``now_ms``. The broker owns one :class:`~kafkalab.timer.Timer` (a
hierarchical timing wheel on the clock's monotonic milliseconds) shared by everything that
waits: parked fetches in the fetch purgatory (:mod:`kafkalab.broker.delayed_fetch`), the
periodic retention, flush and checkpoint tasks (:mod:`kafkalab.broker.housekeeping`) and the
logs' ``file.delete.delay.ms`` deletions. The adapter calls :meth:`advance_clock` with the
timer's current time -- every due task runs inside that call -- and :meth:`next_deadline_ms`
tells it how long it may sleep (see :mod:`kafkalab.timer.driver`). Nothing runs behind the
adapter's back, so a ManualClock test drives retention exactly like the server does.

Admin requests (CreateTopics, configs, ElectLeaders, reassignments, DescribeQuorum) are the
controller's: a lone broker, its own controller, runs the controller's handlers in process
(:mod:`kafkalab.controller.controller_apis`); a cluster's broker forwards them in an Envelope
(:mod:`kafkalab.broker.forwarding`) among the requests it owes the controller
(:meth:`Broker.controller_requests`), with its AllocateProducerIds.

A failed disk is Kafka's log-directory failure (:mod:`kafkalab.storage.log_dir_failure`): the
first I/O error in a log directory takes it offline in :attr:`Broker.log_dir_failures`, and
from then on Produce, Fetch and ListOffsets answer KAFKA_STORAGE_ERROR (56) for its partitions
without touching its files (Kafka's ``ReplicaManager.handleLogDirFailure``). Once no directory
is online, ``log_dir_failures.all_offline`` tells the adapter to stop the process.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from typing import Any

from kafkalab.broker.delayed_fetch import FETCH_PURGE_INTERVAL, DelayedFetch
from kafkalab.broker.fetch_session import FetchSessionCache
from kafkalab.broker.replica_fetch import FollowerFetchSessions
from kafkalab.broker.coordinator_partitions import CoordinatorPartitions, internal_topic_replication_factor
from kafkalab.broker.delayed_produce import PRODUCE_PURGE_INTERVAL, DelayedProduce
from kafkalab.broker.group_log import BrokerCoordinatorLog
from kafkalab.broker.handlers import admin, configs, fetch, leader_epochs, list_offsets, metadata, produce, producer_id
from kafkalab.broker.handlers import describe_cluster
from kafkalab.broker.handlers import describe_quorum
from kafkalab.broker.handlers.consumer_groups import CONSUMER_GROUP_HANDLERS
from kafkalab.broker.handlers.groups import GROUP_HANDLERS
from kafkalab.broker.handlers.offsets import OFFSET_HANDLERS
from kafkalab.broker.handlers.txn import TXN_HANDLERS
from kafkalab.broker.handlers.txn_markers import handle_write_txn_markers
from kafkalab.broker.txn_channel import InProcessMarkerChannel, TxnMarkerChannelManager
from kafkalab.broker.log_store import LogStore, PartitionLog
from kafkalab.broker.housekeeping import Housekeeping
from kafkalab.broker.request import NO_RESPONSE, PENDING, Outgoing, Request
from kafkalab.broker.settings import BrokerSettings
from kafkalab.broker.topics import TopicRegistry
from kafkalab.broker.txn_verification import TxnVerificationChannel
from kafkalab.config import DynamicConfigStore
from kafkalab.config.resolve import broker_value
from kafkalab.broker.alter_partition import AlterPartitionManager
from kafkalab.broker.lifecycle import BrokerIdentity, BrokerLifecycleManager, ControllerRequest
from kafkalab.broker.local_metadata import open_local_controller
from kafkalab.broker.metadata_follower import MetadataFollower
from kafkalab.broker.forwarding import AutoTopicCreation, ForwardingManager
from kafkalab.controller.config_home import StoreConfigs, store_entities
from kafkalab.controller.controller_apis import FORWARDABLE, ControllerApis, TopicDefaults
from kafkalab.controller.local import LocalController
from kafkalab.metadata.image import BrokerRegistration, MetadataImage
from kafkalab.errors import KafkaError, LogDirFailureError
from kafkalab.group.consumer.coordinator import ConsumerGroupSettings
from kafkalab.group.coordinator import GroupCoordinator, GroupSettings
from kafkalab.group.ownership import load_partition, unload_partition
from kafkalab.group.partitioner import OFFSETS_TOPIC
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.header import (
    decode_request_body,
    decode_request_header,
    encode_response,
    unsupported_api_versions_response,
)
from kafkalab.protocol.types import Part
from kafkalab.protocol.versions import ADVERTISED, is_implemented
from kafkalab.purgatory import DelayedOperationPurgatory
from kafkalab.replication.partition import ReplicationSettings
from kafkalab.replication.replica_selector import selector_named
from kafkalab.replication.replica_manager import ReplicaManager
from kafkalab.storage.log_dir_failure import LogDirFailureChannel
from kafkalab.timer import Scheduler, Timer
from kafkalab.txn.coordinator import TRANSACTION_STATE_TOPIC, TransactionCoordinator, TxnSettings

OUTBOX_MAX = 100_000  # a bug guard: the adapter drains the outbox after every call
BROKER_EPOCH = 0  # a lone broker registers once; KRaft gives each registration a new epoch


Handler = Callable[["Broker", Request], Any]


class Broker:
    """A single Kafka broker over a log store. Not thread-safe; driven by one adapter.

    :func:`kafkalab.broker.startup.open_broker` assembles one over a data directory, with the
    timer shared by the log store's scheduler and the periodic tasks.
    """

    def __init__(
        self, settings: BrokerSettings, log_store: LogStore, config_store: DynamicConfigStore,
        rng: random.Random, timer: Timer, clock_ms: Callable[[], int] | None = None, *,
        in_cluster: bool = False,
    ) -> None:
        self.settings = settings
        self.log_store = log_store
        self.config_store = config_store
        self.timer = timer
        self.fetch_purgatory: DelayedOperationPurgatory[DelayedFetch] = DelayedOperationPurgatory(
            "Fetch", timer=timer, purge_interval=FETCH_PURGE_INTERVAL)
        self.produce_purgatory: DelayedOperationPurgatory[DelayedProduce] = DelayedOperationPurgatory(
            "Produce", timer=timer, purge_interval=PRODUCE_PURGE_INTERVAL)
        registration = BrokerRegistration(settings.node_id, BROKER_EPOCH, settings.host, settings.port, settings.rack)
        self.group_partitions: CoordinatorPartitions | None = None  # set once the coordinator exists
        self.txn_partitions: CoordinatorPartitions | None = None  # likewise, for __transaction_state
        self.lone = not in_cluster
        self._clock_ms = clock_ms
        self.replica_manager = ReplicaManager(
            settings.node_id, log_store, replication_settings(config_store, settings.node_id), BROKER_EPOCH,
            on_high_watermark_moved=self._high_watermark_moved)
        self.image = MetadataImage()  # the cluster as this broker last learned it
        self.lifecycle: BrokerLifecycleManager | None = None  # registration and heartbeats, in a cluster
        self.metadata_follower: MetadataFollower | None = None  # fetches __cluster_metadata, in a cluster
        self.alter_partitions: AlterPartitionManager | None = None  # ISR proposals, in a cluster
        # A lone broker decides admin requests in process, with the controller's own code; a
        # cluster's forwards them to the active controller and asks it for producer ids.
        self.controller: LocalController | None = None
        self.controller_apis: ControllerApis | None = None
        self.forwarding: ForwardingManager | None = None
        self.auto_topics: AutoTopicCreation | None = None
        self.producer_ids: producer_id.ProducerIdAllocator | producer_id.ProducerIdManager
        if not in_cluster:  # a lone broker is its own cluster, and adopts its directories
            controller = self.controller = open_local_controller(
                log_store, registration, rng, clock_ms or (lambda: 0), _broker_int(
                    config_store, str(settings.node_id), "metadata.log.max.record.bytes.between.snapshots"))
            configs = StoreConfigs(config_store)
            self.controller_apis = ControllerApis(
                controller, configs, TopicDefaults(settings.num_partitions, settings.default_replication_factor),
                str(settings.node_id))
            self.topics = TopicRegistry.lone(controller, configs, self.replica_manager, lambda: self.image)
            self.topics.restore(log_store)
            self._unsubscribe = controller.subscribe(self._apply_image)
            controller.publish()
            self.producer_ids = producer_id.ProducerIdAllocator(lambda: controller.allocate_producer_ids(
                settings.node_id, self.replica_manager.broker_epoch))
        else:  # one broker of a cluster: it registers and learns the metadata over the network
            auto_topics = self.auto_topics = AutoTopicCreation()
            self.topics = TopicRegistry.in_cluster(auto_topics, self.replica_manager, lambda: self.image)
            self._unsubscribe = lambda: None
            self.forwarding = ForwardingManager(self.respond, timer.now_ms)
            self.producer_ids = producer_id.ProducerIdManager(settings.node_id,
                                                              lambda: self.replica_manager.broker_epoch)
            incarnation_id = uuid.UUID(int=rng.getrandbits(128), version=4)  # new each process start
            self.lifecycle = BrokerLifecycleManager(BrokerIdentity(
                settings.node_id, settings.cluster_id, incarnation_id, settings.host, settings.port, settings.rack))
            self.metadata_follower = MetadataFollower(settings.node_id, settings.cluster_id)
            self.alter_partitions = AlterPartitionManager(
                settings.node_id, self.replica_manager, lambda: self.image, lambda: self.replica_manager.broker_epoch)
        self.parked_fetches: dict[int, DelayedFetch] = {}  # by connection: one request in flight each
        # KIP-392: who picks a consumer's preferred read replica (None: consumers read leaders).
        selector_class = broker_value(config_store.layers(), str(settings.node_id), "replica.selector.class")
        self.replica_selector = selector_named(None if selector_class is None else str(selector_class))
        self.housekeeping: Housekeeping | None = None  # the periodic tasks, when started
        self.client_hosts: dict[int, str] = {}  # by connection, filled in by the network adapter
        group_settings = _group_settings(config_store, str(settings.node_id))
        node = str(settings.node_id)
        # KIP-227. Session ids come from a generator of their own, seeded by node and start time,
        # so that they leave the shared generator's draws (group member ids) as they were.
        self.fetch_sessions = FetchSessionCache(
            _broker_int(config_store, node, "max.incremental.fetch.session.cache.slots"),
            random.Random(f"fetch-sessions-{node}-{timer.now_ms()}"))
        self.follower_sessions = FollowerFetchSessions()  # this broker's sessions with its leaders
        self.offsets_log = BrokerCoordinatorLog(
            self, group_settings.offsets_partitions, _broker_int(config_store, node, "offsets.topic.segment.bytes"),
            internal_topic_replication_factor(_broker_int(config_store, node, "offsets.topic.replication.factor"),
                                              lone_broker=self.lone),
            _broker_int(config_store, node, "offsets.commit.timeout.ms"))
        self.group_coordinator = GroupCoordinator(
            group_settings, self.offsets_log, timer, rng, clock_ms, topics=self._topic_metadata,
            consumer_settings=_consumer_group_settings(config_store, node, group_settings))
        self.group_partitions = CoordinatorPartitions(OFFSETS_TOPIC, self._load_groups, self._unload_groups)
        self.group_coordinator.partition_error = self._group_partition_error
        self.group_partitions.follow([(OFFSETS_TOPIC, hosted.partition.partition)
                                      for hosted in self.replica_manager
                                      if hosted.partition.topic == OFFSETS_TOPIC and hosted.partition.is_leader], ())
        self.txn_coordinator = self._transaction_coordinator(clock_ms or timer.now_ms)
        # KIP-890: a leader asks the coordinator before a transaction's first batch; requests to
        # another broker's coordinator wait in the channel for the adapter to deliver them.
        self.txn_verification = TxnVerificationChannel(self)
        self._outbox: list[Outgoing] = []
        self.errors_seen: list[str] = []  # the last few closing reasons, for the adapter to log
        self.log_dir_failures = LogDirFailureChannel(log_store.log_dirs)
        # Last: loading a partition may resend markers, which append through the whole broker.
        self.txn_partitions = CoordinatorPartitions(TRANSACTION_STATE_TOPIC, self._load_transactions,
                                                    self._unload_transactions)
        self.txn_partitions.follow([(TRANSACTION_STATE_TOPIC, hosted.partition.partition)
                                    for hosted in self.replica_manager
                                    if hosted.partition.topic == TRANSACTION_STATE_TOPIC
                                    and hosted.partition.is_leader], ())

    # --- the adapter's interface --------------------------------------------------------------

    def handle(self, connection_id: int, frame: bytes | bytearray, now_ms: int) -> None:
        """Process one request frame; its Outgoing lands in the outbox now or later."""
        try:
            header = decode_request_header(frame)
        except KafkaError as error:
            self._close(connection_id, f"unparsable request header: {error}")
            return
        implemented = is_implemented(header.api_key, header.api_version)
        if header.api_key == ApiKey.API_VERSIONS and not implemented:
            supported = ADVERTISED[ApiKey.API_VERSIONS]
            self._send(connection_id, unsupported_api_versions_response(header.correlation_id, supported))
            return
        handler = HANDLERS.get(header.api_key)
        if handler is None or not implemented:
            self._close(connection_id, f"unsupported API key {header.api_key} v{header.api_version}")
            return
        try:
            # Bytes after the last field are ignored, as Kafka's request parser does: librdkafka
            # sends Metadata v9+ "all topics" with a 4-byte null count where a 1-byte varint
            # belongs (librdkafka issue 5049), and Kafka answers it.
            body = decode_request_body(header.api_key, header.api_version, memoryview(frame)[header.body_offset :])
        except KafkaError as error:
            self._close(connection_id, f"malformed API key {header.api_key} v{header.api_version}: {error}")
            return
        kept = bytes(frame) if header.api_key in FORWARDABLE else b""  # the envelope carries it unopened
        self._dispatch(handler, Request(connection_id, header, body, now_ms, kept))

    def _dispatch(self, handler: Handler, request: Request) -> None:
        try:
            response = handler(self, request)
        except KafkaError as error:
            self.on_storage_error(error)
            self._close(request.connection_id, f"request failed: {error}")
            return
        if response is PENDING:
            return
        if response is NO_RESPONSE:
            self._outbox.append(Outgoing(request.connection_id, None))
            return
        self.respond(request.connection_id, request.header.api_key, request.header.api_version,
                     request.header.correlation_id, response)

    def dispatch_later(self, handler: Handler, request: Request) -> None:
        """Finish a request whose handler returned PENDING: run ``handler`` now, as ``handle``
        would have, and send (or park again) what it returns."""
        self._dispatch(handler, request)

    def respond(self, connection_id: int, api_key: int, api_version: int, correlation_id: int, body: Any) -> None:
        self._send(connection_id, encode_response(api_key, api_version, correlation_id, body))

    def take_responses(self) -> list[Outgoing]:
        """Everything to send since the last call, in order."""
        outbox, self._outbox = self._outbox, []
        return outbox

    def advance_clock(self, now_ms: int) -> None:
        """Run every timer task due by ``now_ms`` (the timer's monotonic milliseconds): expired
        fetches are answered, sessions and rebalances time out, periodic tasks and delayed
        deletions run; then purge completed operations from the watch lists if enough have
        piled up."""
        self.fetch_purgatory.advance_clock(now_ms)
        self.group_coordinator.advance_clock(now_ms)

    def next_deadline_ms(self) -> int | None:
        """When the timer's earliest non-empty bucket is due (monotonic ms), or None."""
        return self.timer.next_expiration_ms()

    def connection_closed(self, connection_id: int) -> None:
        """Abandon the connection's parked fetch: it completes without a response."""
        self.client_hosts.pop(connection_id, None)
        parked = self.parked_fetches.pop(connection_id, None)
        if parked is not None:
            parked.abandon()

    def shutdown(self) -> None:
        """Stop the periodic tasks, flush logs and write checkpoints; the broker must not be
        used afterwards. Pending ``.deleted`` files are left for the next start's recovery,
        which removes them, as Kafka's does. Offline directories get nothing written; one that
        fails now is recorded in :attr:`log_dir_failures` instead of raising."""
        self._leave_controller()
        if self.housekeeping is not None:
            self.housekeeping.stop()
        try:
            self.log_store.close(offline_dirs=set(self.log_dir_failures.offline))
        except LogDirFailureError as error:
            self.log_dir_failures.add_offline(error)

    def halt(self) -> None:
        """Stop as a killed process stops: release every file and write nothing -- no flush,
        no checkpoint, no clean-shutdown marker -- so the next start runs recovery. What the
        operating system already has (every write the log made) survives, as it does when
        Kafka's process is killed; losing unflushed writes is a power loss, not a kill."""
        self._leave_controller()
        if self.housekeeping is not None:
            self.housekeeping.stop()
        self.log_store.close(offline_dirs={str(d) for d in self.log_store.log_dirs})

    # --- log-directory failure (Kafka's ReplicaManager.handleLogDirFailure) --------------------

    def on_storage_error(self, error: KafkaError) -> None:
        """Called by whoever caught ``error`` from storage: a log-directory failure takes its
        directory offline; other errors concern one request only."""
        if isinstance(error, LogDirFailureError) and self.log_dir_failures.add_offline(error):
            self.errors_seen = [*self.errors_seen[-9:], f"log dir offline: {error}"]

    def check_online(self, log: PartitionLog) -> None:
        """Raise KAFKA_STORAGE_ERROR if ``log`` lives in an offline log directory."""
        if not self.log_dir_failures.offline:
            return  # the usual case, asked for every partition of every fetch: no path to build
        log_dir = log.directory.parent
        if self.log_dir_failures.is_offline(log_dir):
            raise LogDirFailureError(
                f"{log.directory.name} is in the offline log directory {log_dir}", log_dir=str(log_dir))

    # --- helpers -------------------------------------------------------------------------------

    def _transaction_coordinator(self, clock_ms: Callable[[], int]) -> TransactionCoordinator:
        """The transaction coordinator over ``__transaction_state``. A lone broker appends its
        markers in process; a cluster's sends WriteTxnMarkers to the partition leaders."""
        node = str(self.settings.node_id)
        txn_settings = TxnSettings(
            state_partitions=_broker_int(self.config_store, node, "transaction.state.log.num.partitions"),
            max_timeout_ms=_broker_int(self.config_store, node, "transaction.max.timeout.ms"),
            transactional_id_expiration_ms=_broker_int(self.config_store, node, "transactional.id.expiration.ms"))
        log = self.txn_log = BrokerCoordinatorLog(
            self, txn_settings.state_partitions, _broker_int(self.config_store, node, "transaction.state.log.segment.bytes"),
            internal_topic_replication_factor(
                _broker_int(self.config_store, node, "transaction.state.log.replication.factor"), lone_broker=self.lone),
            txn_settings.request_timeout_ms, topic=TRANSACTION_STATE_TOPIC)
        self.txn_markers = None if self.lone else TxnMarkerChannelManager(self, clock_ms)
        channel = InProcessMarkerChannel(self, clock_ms) if self.txn_markers is None else self.txn_markers
        return TransactionCoordinator(txn_settings, log, channel, lambda: producer_id.next_producer_id(self),
                                      Scheduler(self.timer), clock_ms, partition_error=self._txn_partition_error)

    def _leave_controller(self) -> None:
        """Stop following the controller's images (idempotent)."""
        self._unsubscribe()
        self._unsubscribe = lambda: None

    # --- a cluster's broker and its controller (sans-I/O: the adapter carries the requests) ----

    def _to_controller(self) -> dict[int, Any]:
        """Who sends what to the active controller, by API key: registration and heartbeats,
        ISR proposals, forwarded admin requests, auto-created topics, producer id blocks."""
        assert self.lifecycle is not None and self.alter_partitions is not None and self.forwarding is not None
        assert self.auto_topics is not None
        return {ApiKey.BROKER_REGISTRATION: self.lifecycle, ApiKey.ALTER_PARTITION: self.alter_partitions,
                ApiKey.ENVELOPE: self.forwarding, ApiKey.CREATE_TOPICS: self.auto_topics,
                ApiKey.ALLOCATE_PRODUCER_IDS: self.producer_ids}

    def controller_requests(self, now_ms: int) -> list[ControllerRequest]:
        """The requests due now for the active controller (see :meth:`_to_controller`)."""
        if self.lifecycle is None:
            return []
        requests: list[ControllerRequest] = []
        for sender in self._to_controller().values():
            requests += _as_list(sender.poll(now_ms))
        return requests

    def controller_deadline_ms(self) -> int | None:
        """When :meth:`controller_requests` next has something to send, or None."""
        if self.lifecycle is None:
            return None
        times = [t for t in (sender.next_deadline_ms() for sender in self._to_controller().values()) if t is not None]
        return min(times, default=None)

    def on_controller_response(self, request: ControllerRequest, body: Any, now_ms: int) -> None:
        assert self.lifecycle is not None, "a cluster's broker"
        if request.api_key not in (ApiKey.BROKER_REGISTRATION, ApiKey.BROKER_HEARTBEAT):
            self._to_controller()[request.api_key].on_response(request.request_id, body, now_ms)
            return
        self.lifecycle.on_response(request.request_id, request.api_key, body, now_ms)
        self._use_broker_epoch(self.lifecycle.broker_epoch)
        self._publish_metadata(now_ms)

    def on_controller_failure(self, request: ControllerRequest, now_ms: int) -> None:
        assert self.lifecycle is not None, "a cluster's broker"
        api_key = ApiKey.BROKER_REGISTRATION if request.api_key == ApiKey.BROKER_HEARTBEAT else request.api_key
        self._to_controller()[api_key].on_failure(request.request_id, now_ms)

    def _use_broker_epoch(self, epoch: int) -> None:
        """The epoch of this broker's registration goes with its ISR proposals (KIP-903)."""
        if epoch < 0 or epoch == self.replica_manager.broker_epoch:
            return
        self.replica_manager.broker_epoch = epoch
        for hosted in self.replica_manager:
            hosted.partition.local_broker_epoch = epoch

    def on_metadata_fetched(self, response: Any, now_ms: int) -> None:
        """A Fetch answer from the controller: replay its records and act on the new image."""
        assert self.metadata_follower is not None and self.lifecycle is not None, "a cluster's broker"
        image = self.metadata_follower.on_fetch_response(response)
        if image is not None:
            self.lifecycle.metadata_replayed(image.offset, now_ms)
            self._publish_metadata(now_ms)

    def _publish_metadata(self, now_ms: int) -> None:
        """Act on the replayed image -- lead, follow, serve Metadata -- once this broker has
        registered and replayed the log up to its own registration (Kafka's broker waits for
        its initial catch-up before installing its metadata publishers). Before that the log
        may still name this broker's previous incarnation as a leader."""
        assert self.metadata_follower is not None and self.lifecycle is not None
        image = self.metadata_follower.image
        if self.lifecycle.caught_up and image.offset > self.image.offset:
            self._apply_image(image)

    def _apply_image(self, image: MetadataImage) -> None:
        """Follow the controller: lead, follow or drop partitions as the new image says. A
        cluster's broker first takes the topic and broker configs the image holds (replayed
        ConfigRecords) as its dynamic configs, so new logs open with them."""
        if not self.lone and image.configs is not self.image.configs:
            for entity_type in ("topics", "brokers"):
                self.config_store.mirror(entity_type, store_entities(image, entity_type))
        self.image = image
        applied = self.replica_manager.apply_image(image, self.timer.now_ms())
        for partitions in (self.group_partitions, self.txn_partitions):
            if partitions is not None:
                partitions.follow(applied.became_leader, (*applied.became_follower, *applied.stopped))

    # --- the group coordinator follows the __consumer_offsets leaders -------------------------

    def _group_partition_error(self, partition: int) -> int:
        """NONE if this broker coordinates the groups of ``partition`` now. A lone broker also
        before ``__consumer_offsets`` exists: it will lead every partition its first write
        creates."""
        assert self.group_partitions is not None
        if self.lone and self.image.topics.get(OFFSETS_TOPIC) is None:
            return 0
        return self.group_partitions.error_for(partition)

    def _load_groups(self, partition: int) -> None:
        coordinator = self.group_coordinator
        now_ms = coordinator.now_ms if self._clock_ms is None else self._clock_ms()
        load_partition(coordinator, partition, self.offsets_log.replay_partition(partition), now_ms)

    def _unload_groups(self, partition: int) -> None:
        unload_partition(self.group_coordinator, partition)  # first: failed writes then find no group
        self.offsets_log.abandon(partition)

    # --- the transaction coordinator follows the __transaction_state leaders ------------------

    def _txn_partition_error(self, partition: int) -> int:
        """NONE if this broker coordinates the transactional ids of ``partition`` now -- or the
        topic does not exist yet (the coordinator's first write creates it, here)."""
        assert self.txn_partitions is not None
        if self.image.partition(TRANSACTION_STATE_TOPIC, partition) is None:
            return 0
        return self.txn_partitions.error_for(partition)

    def _load_transactions(self, partition: int) -> None:
        """Elected for ``partition``: its leader epoch becomes the coordinator epoch."""
        hosted = self.topics.partition(TRANSACTION_STATE_TOPIC, partition)
        assert hosted is not None, partition
        now_ms = self.timer.now_ms() if self._clock_ms is None else self._clock_ms()
        self.txn_coordinator.load_partition(partition, self.txn_log.replay_partition(partition),
                                            hosted.partition.leader_epoch, now_ms)

    def _unload_transactions(self, partition: int) -> None:
        self.txn_coordinator.unload_partition(partition)
        self.txn_log.abandon(partition)

    def _topic_metadata(self, name: str) -> tuple[uuid.UUID, int] | None:
        """(topic id, partition count) for the consumer group coordinator's assignors."""
        topic = self.topics.get(name)
        return None if topic is None else (topic.topic_id, topic.partition_count)

    def _high_watermark_moved(self, topic: str, partition: int) -> None:
        """Kafka's ``tryCompleteDelayedRequests``: a moved HW may complete acks=all produces and
        fetches waiting for bytes that are now committed."""
        key = (topic, partition)
        # The coordinators' logs exist once their partitions are followed; a HW that moves while
        # the broker registers (before that) has no coordinator write waiting on it.
        if topic == OFFSETS_TOPIC and self.group_partitions is not None:
            self.offsets_log.high_watermark_moved(partition)
        elif topic == TRANSACTION_STATE_TOPIC and self.txn_partitions is not None:
            self.txn_log.high_watermark_moved(partition)
        self.produce_purgatory.check_and_complete(key)
        self.fetch_purgatory.check_and_complete(key)

    def _send(self, connection_id: int, parts: list[Part]) -> None:
        assert len(self._outbox) < OUTBOX_MAX, "the adapter must drain the outbox"
        self._outbox.append(Outgoing(connection_id, parts))

    def _close(self, connection_id: int, reason: str) -> None:
        self.errors_seen = [*self.errors_seen[-9:], reason]
        self._outbox.append(Outgoing(connection_id, None, close=True, reason=reason))


def replication_settings(config_store: DynamicConfigStore, node_id: int) -> ReplicationSettings:
    """The broker's replication configs from its config layers."""
    lag_ms = broker_value(config_store.layers(), str(node_id), "replica.lag.time.max.ms")
    assert isinstance(lag_ms, int)  # definitions.py gives the key a default
    return ReplicationSettings(replica_lag_time_max_ms=lag_ms)


HANDLERS: dict[int, Handler] = {
    ApiKey.PRODUCE: produce.handle_produce,
    ApiKey.FETCH: fetch.handle_fetch,
    ApiKey.LIST_OFFSETS: list_offsets.handle_list_offsets,
    ApiKey.METADATA: metadata.handle_metadata,
    ApiKey.API_VERSIONS: metadata.handle_api_versions,
    ApiKey.CREATE_TOPICS: admin.handle_forwardable,
    ApiKey.DELETE_TOPICS: admin.handle_forwardable,
    ApiKey.DELETE_RECORDS: admin.handle_delete_records,
    ApiKey.INIT_PRODUCER_ID: producer_id.handle_init_producer_id,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: leader_epochs.handle_offset_for_leader_epoch,
    ApiKey.DESCRIBE_CONFIGS: configs.handle_describe_configs,
    ApiKey.ALTER_CONFIGS: admin.handle_forwardable,
    ApiKey.CREATE_PARTITIONS: admin.handle_forwardable,
    ApiKey.ELECT_LEADERS: admin.handle_forwardable,
    ApiKey.DESCRIBE_CLUSTER: describe_cluster.handle_describe_cluster,
    ApiKey.DESCRIBE_QUORUM: describe_quorum.handle_describe_quorum,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: admin.handle_forwardable,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: admin.handle_forwardable,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: admin.handle_forwardable,
    ApiKey.WRITE_TXN_MARKERS: handle_write_txn_markers,
    **GROUP_HANDLERS,
    **OFFSET_HANDLERS,
    **TXN_HANDLERS,
    **CONSUMER_GROUP_HANDLERS,
}


def _as_list(request: ControllerRequest | list[ControllerRequest] | None) -> list[ControllerRequest]:
    if request is None:
        return []
    return request if isinstance(request, list) else [request]


def _broker_int(config_store: DynamicConfigStore, broker_id: str, key: str) -> int:
    value = broker_value(config_store.layers(), broker_id, key)
    assert isinstance(value, int), (key, value)  # definitions.py gives every key a default
    return value


def _group_settings(config_store: DynamicConfigStore, broker_id: str) -> GroupSettings:
    """The group coordinator's configs, resolved as Kafka does (dynamic over static)."""
    def value(key: str) -> int:
        return _broker_int(config_store, broker_id, key)

    return GroupSettings(
        initial_rebalance_delay_ms=value("group.initial.rebalance.delay.ms"),
        min_session_timeout_ms=value("group.min.session.timeout.ms"),
        max_session_timeout_ms=value("group.max.session.timeout.ms"),
        max_size=value("group.max.size"),
        offsets_partitions=value("offsets.topic.num.partitions"),
        offsets_retention_ms=value("offsets.retention.minutes") * 60_000,
        offset_metadata_max_bytes=value("offset.metadata.max.bytes"),
    )


def _consumer_group_settings(config_store: DynamicConfigStore, broker_id: str,
                             group_settings: GroupSettings) -> ConsumerGroupSettings:
    """KIP-848 group configs. ``group.consumer.assignors`` takes short names (``uniform``) or,
    as Kafka 3.9 lists them, class names (``...assignor.UniformAssignor``)."""
    names = broker_value(config_store.layers(), broker_id, "group.consumer.assignors")
    assert isinstance(names, list)
    assignors = tuple(n.rsplit(".", 1)[-1].removesuffix("Assignor").lower() for n in names)
    return ConsumerGroupSettings(
        session_timeout_ms=_broker_int(config_store, broker_id, "group.consumer.session.timeout.ms"),
        heartbeat_interval_ms=_broker_int(config_store, broker_id, "group.consumer.heartbeat.interval.ms"),
        assignors=assignors, max_size=_broker_int(config_store, broker_id, "group.consumer.max.size"),
        offsets_partitions=group_settings.offsets_partitions,
        migration_policy=str(broker_value(config_store.layers(), broker_id, "group.consumer.migration.policy")))


__all__ = ["HANDLERS", "Broker", "Outgoing", "Request"]
