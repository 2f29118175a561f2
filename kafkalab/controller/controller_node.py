"""The active controller as a node on the network: what brokers send it, and what it answers.

Theory of operation
-------------------
Brokers talk to the active controller with these requests, each a real Kafka frame
(:mod:`kafkalab.protocol.messages.broker_lifecycle`, :mod:`kafkalab.protocol.messages.forwarding`,
Fetch):

==============================  ==================================================================
BrokerRegistration (62)         a new session, fenced; the answer carries the broker epoch
BrokerHeartbeat (63)            keeps the session; unfences, starts or completes a controlled shutdown
AlterPartition (56)             a leader's ISR proposal, checked and written as PartitionChangeRecord
Fetch (1) ``__cluster_metadata``  the metadata log, read by brokers as KRaft observers
Envelope (58)                   a client's admin request forwarded by a broker (KIP-590): unwrapped,
                                decided by :class:`~kafkalab.controller.controller_apis.ControllerApis`,
                                and its response wrapped back
CreateTopics (19) and the other  sent by a broker for itself (auto-created and internal topics)
forwardable APIs
AllocateProducerIds (67)        the next block of producer ids for a broker (KIP-730)
==============================  ==================================================================

An Envelope whose inner frame does not parse, or names an API that may not be forwarded, is
answered with the envelope's own error INVALID_REQUEST, as Kafka's ``EnvelopeUtils`` does.

:class:`ControllerNode` is sans-I/O like the broker: :meth:`ControllerNode.handle` takes one
frame and the time, answers go to an outbox drained by :meth:`ControllerNode.take_responses`,
and :meth:`ControllerNode.advance_clock` fences brokers whose session expired and answers parked
metadata fetches whose ``max_wait_ms`` passed. A metadata fetch at the log end is parked until
the controller's next decision, so brokers learn a change one network round trip after it
commits. Decisions are made by the :class:`~kafkalab.controller.local.LocalController` and its
:class:`~kafkalab.controller.heartbeats.BrokerHeartbeatManager`; this module only translates.

Worked example: broker 2 starts and sends BrokerRegistration; the controller writes
RegisterBrokerRecord at offset 7 (fenced) and answers ``broker_epoch 7``. The broker fetches
the log, replays it to offset 7 and heartbeats ``current_metadata_offset 7``: the controller
writes BrokerRegistrationChangeRecord (fenced -1) at 8 and answers ``is_fenced false``.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kafkalab.config.resolve import ConfigLayers, broker_value
from kafkalab.controller.config_home import MetadataConfigs
from kafkalab.controller.controller_apis import ADMIN_APIS, FORWARDABLE, ControllerApis, TopicDefaults
from kafkalab.controller.describe_quorum import QuorumNode, describe_quorum_response
from kafkalab.controller.heartbeats import BrokerControlState, BrokerHeartbeatManager, HeartbeatError, ask_of
from kafkalab.controller.local import LocalController
from kafkalab.controller.metadata_server import MetadataLogServer
from kafkalab.controller.quorum_controller import sole_voter_description
from kafkalab.controller.raft.api import FETCH_MAX_BYTES, NotLeaderError, QuorumDescription
from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.metadata.image import BrokerRegistration
from kafkalab.metadata.record_log import KRAFT_METADATA_TOPIC, MemoryRecordLog, StorageRecordLog
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.header import decode_request_body, decode_request_header, encode_response
from kafkalab.protocol.messages.broker_lifecycle import CONTROLLER_SCHEMAS
from kafkalab.protocol.messages.fetch import FETCH_RESPONSE
from kafkalab.protocol.messages.forwarding import (
    ALLOCATE_PRODUCER_IDS_RESPONSE,
    ENVELOPE_RESPONSE,
    deserialize_principal,
)

PARKED_FETCHES_MAX = 10_000  # one per broker connection; a bound against a runaway peer
_REGISTRATION, _HEARTBEAT = CONTROLLER_SCHEMAS[ApiKey.BROKER_REGISTRATION][1].cls, CONTROLLER_SCHEMAS[ApiKey.BROKER_HEARTBEAT][1].cls
_ALTER = CONTROLLER_SCHEMAS[ApiKey.ALTER_PARTITION][1].cls
_FETCH = FETCH_RESPONSE.cls


@dataclass(slots=True)
class _ParkedFetch:
    connection_id: int
    correlation_id: int
    version: int
    fetch_offset: int
    deadline_ms: int


class ControllerNode:
    """The request side of the active controller. Not thread-safe; driven by one adapter."""

    def __init__(self, controller: LocalController, cluster_id: str, heartbeats: BrokerHeartbeatManager,
                 unclean_enabled: Callable[[str], bool] = lambda topic: False,
                 properties: Mapping[str, str] | None = None, *, node: QuorumNode | None = None) -> None:
        assert isinstance(controller.log, MemoryRecordLog | StorageRecordLog), "serves a log it can read back"
        self.controller = controller
        self.cluster_id = cluster_id
        self.heartbeats = heartbeats
        self.node = node  # this controller's id and endpoint, as DescribeQuorum lists it
        self.unclean_enabled = unclean_enabled
        self.metadata = MetadataLogServer(controller.log)
        # Called with (request, response, image before) for each AlterPartition: a campaign's
        # checker audits every ISR change against who sent it.
        self.on_alter_partition: Callable[[Any, Any, Any], None] | None = None
        self._parked: list[_ParkedFetch] = []
        self._outbox: list[tuple[int, bytes]] = []
        # The admin requests: configs as ConfigRecords, over the controller's server.properties.
        self.apis = ControllerApis(controller, MetadataConfigs(controller, properties), topic_defaults(properties))
        self._handlers: dict[int, Callable[[Any, int], Any]] = {
            ApiKey.BROKER_REGISTRATION: self.handle_broker_registration,
            ApiKey.BROKER_HEARTBEAT: self.handle_broker_heartbeat,
            ApiKey.ALTER_PARTITION: self.handle_alter_partition,
            ApiKey.ENVELOPE: self.handle_envelope,
            ApiKey.ALLOCATE_PRODUCER_IDS: self.handle_allocate_producer_ids,
            ApiKey.DESCRIBE_QUORUM: self.handle_describe_quorum,
            **{api_key: functools.partial(self._admin, api_key) for api_key in ADMIN_APIS},
        }

    # --- the adapter's interface --------------------------------------------------------------

    def activate(self, now_ms: int) -> None:
        """Take over the brokers the metadata log registers, before the first request: called
        once by an adapter whose controller replayed an existing log (a restart)."""
        self.heartbeats.activate(self.controller.image.brokers.values(), now_ms)

    def handle(self, connection_id: int, frame: bytes, now_ms: int) -> None:
        """One request frame (no size prefix); its answer lands in the outbox now or later.
        A frame that does not parse, or an API the controller does not serve, gets no answer:
        the sender's request times out, as when Kafka closes the connection."""
        try:
            header = decode_request_header(frame)
            body = decode_request_body(header.api_key, header.api_version, memoryview(frame)[header.body_offset:])
        except (KafkaError, KeyError):
            return
        if header.api_key == ApiKey.FETCH:
            self._fetch(connection_id, header.correlation_id, header.api_version, body, now_ms)
            return
        handler = self._handlers.get(header.api_key)
        if handler is None:
            return
        self._respond(connection_id, header.api_key, header.api_version, header.correlation_id, handler(body, now_ms))
        self._answer_parked(now_ms, expired_only=False)

    def take_responses(self) -> list[tuple[int, bytes]]:
        """(connection id, response frame without its size prefix) for everything answered."""
        outbox, self._outbox = self._outbox, []
        return outbox

    def advance_clock(self, now_ms: int) -> None:
        """Fence every broker whose session expired, then answer expired parked fetches."""
        due_ms = self.next_deadline_ms()
        if due_ms is None or due_ms > now_ms:
            return
        for broker_id in self.heartbeats.stale_brokers(now_ms):
            self.controller.fence_broker(broker_id, self.unclean_enabled)
            self.heartbeats.fenced(broker_id)
        self._answer_parked(now_ms, expired_only=False)

    def next_deadline_ms(self) -> int | None:
        parked = min((p.deadline_ms for p in self._parked), default=None)
        session = self.heartbeats.next_deadline_ms()
        if parked is None or session is None:
            return session if parked is None else parked
        return min(parked, session)

    def metadata_changed(self, now_ms: int) -> None:
        """The controller committed records outside a request (a tool, a timer): wake fetches."""
        if self._parked and self.controller.image.offset + 1 > min(p.fetch_offset for p in self._parked):
            self._answer_parked(now_ms, expired_only=False)

    # --- BrokerRegistration, BrokerHeartbeat, AlterPartition ---------------------------------

    def handle_broker_registration(self, body: Any, now_ms: int) -> Any:
        """Kafka's ``ClusterControlManager.registerBroker``."""
        if body.cluster_id != self.cluster_id:
            return _REGISTRATION(error_code=ErrorCode.INCONSISTENT_CLUSTER_ID)
        known = self.controller.image.brokers.get(body.broker_id)
        if (known is not None and known.incarnation_id != body.incarnation_id
                and self.heartbeats.has_valid_session(body.broker_id, now_ms)):
            return _REGISTRATION(error_code=ErrorCode.DUPLICATE_BROKER_REGISTRATION)
        if known is not None and known.incarnation_id == body.incarnation_id and not known.fenced:
            return _REGISTRATION(error_code=ErrorCode.NONE, broker_epoch=known.broker_epoch)  # a retry
        listener = body.listeners[0] if body.listeners else None
        registration = BrokerRegistration(
            body.broker_id, -1, listener.host if listener else "", listener.port if listener else 0, body.rack,
            incarnation_id=body.incarnation_id)
        epoch = self.controller.register_fenced_broker(registration)
        self.heartbeats.register(body.broker_id, epoch, now_ms)
        return _REGISTRATION(error_code=ErrorCode.NONE, broker_epoch=epoch)

    def handle_broker_heartbeat(self, body: Any, now_ms: int) -> Any:
        """Kafka's ``ReplicationControlManager.processBrokerHeartbeat``."""
        try:
            session = self.heartbeats.session(body.broker_id, body.broker_epoch)
        except HeartbeatError as error:
            return _HEARTBEAT(error_code=error.error_code)
        caught_up = body.current_metadata_offset >= session.broker_epoch  # replayed its registration
        ask = ask_of(body.want_fence, body.want_shut_down, caught_up)
        broker_id = body.broker_id
        state = self.heartbeats.next_state(session, ask, lambda: self.controller.has_leaderships(broker_id),
                                           self.heartbeats.lowest_active_offset)
        if state is not session.state:
            self._enter(broker_id, state, session)
        self.heartbeats.touch(session, state, body.current_metadata_offset, now_ms)
        return _HEARTBEAT(error_code=ErrorCode.NONE, is_caught_up=caught_up, is_fenced=state.fenced,
                          should_shut_down=state.should_shut_down)

    def _enter(self, broker_id: int, state: BrokerControlState, session: Any) -> None:
        if state is BrokerControlState.UNFENCED:
            self.controller.unfence_broker(broker_id)
        elif state.fenced:
            self.controller.fence_broker(broker_id, self.unclean_enabled)
        else:
            self.controller.begin_controlled_shutdown(broker_id, self.unclean_enabled)
            session.controlled_shutdown_offset = self.controller.image.offset

    def handle_alter_partition(self, body: Any, now_ms: int) -> Any:
        """Kafka's ``ReplicationControlManager.alterPartition``: the sender's epoch first (a
        fenced or restarted leader is stale), then each partition on its own."""
        before = self.controller.image
        try:
            self.heartbeats.session(body.broker_id, body.broker_epoch)
        except HeartbeatError as error:
            return _ALTER(error_code=error.error_code, topics=())
        response = self._alter_partitions(body)
        if self.on_alter_partition is not None:
            self.on_alter_partition(body, response, before)
        return response

    def _alter_partitions(self, body: Any) -> Any:
        topics = []
        for topic in body.topics:
            name = self._topic_name(topic.topic_id)
            partitions = tuple(self._alter_one(body.broker_id, name, p) for p in topic.partitions)
            topics.append(_ALTER.TopicData(topic_id=topic.topic_id, partitions=partitions))
        return _ALTER(error_code=ErrorCode.NONE, topics=tuple(topics))

    def _alter_one(self, broker_id: int, name: str | None, p: Any) -> Any:
        answer = _ALTER.TopicData.PartitionData
        if name is None:
            return answer(partition_index=p.partition_index, error_code=ErrorCode.UNKNOWN_TOPIC_ID)
        error, registration = self.controller.alter_partition(
            broker_id, name, p.partition_index, p.leader_epoch, p.partition_epoch,
            tuple((s.broker_id, s.broker_epoch) for s in p.new_isr_with_epochs), p.leader_recovery_state)
        if error != ErrorCode.NONE or registration is None:
            return answer(partition_index=p.partition_index, error_code=error)
        return answer(partition_index=p.partition_index, error_code=ErrorCode.NONE, leader_id=registration.leader,
                      leader_epoch=registration.leader_epoch, isr=registration.isr,
                      leader_recovery_state=registration.leader_recovery_state,
                      partition_epoch=registration.partition_epoch)

    def _topic_name(self, topic_id: uuid.UUID) -> str | None:
        return next((t.name for t in self.controller.image.topics.values() if t.topic_id == topic_id), None)

    # --- Envelope, the admin APIs, AllocateProducerIds ----------------------------------------

    def handle_envelope(self, body: Any, now_ms: int) -> Any:
        """Kafka's ``EnvelopeUtils.handleEnvelopeRequest``: decode the client's frame, decide
        it, and wrap the response (the client's correlation id in its header). kafkalab has no
        ACLs, so the principal is only checked to be one; the client's address must be 4 or 16
        bytes (``InetAddress.getByAddress``)."""
        try:
            deserialize_principal(None if body.request_principal is None else bytes(body.request_principal))
        except KafkaError as error:
            return ENVELOPE_RESPONSE.cls(error_code=error.error_code)
        try:
            if len(body.client_host_address) not in (4, 16):
                raise KafkaError(f"a client address of {len(body.client_host_address)} bytes",
                                 error_code=ErrorCode.INVALID_REQUEST)
            header = decode_request_header(bytes(body.request_data))
            if header.api_key not in FORWARDABLE:
                raise KafkaError(f"API {header.api_key} is not eligible for forwarding",
                                 error_code=ErrorCode.INVALID_REQUEST)
            inner = decode_request_body(header.api_key, header.api_version,
                                        memoryview(bytes(body.request_data))[header.body_offset:])
        except (KafkaError, KeyError):
            return ENVELOPE_RESPONSE.cls(error_code=ErrorCode.INVALID_REQUEST)
        response = self._handlers[header.api_key](inner, now_ms)
        parts = encode_response(header.api_key, header.api_version, header.correlation_id, response)
        data = b"".join(p if isinstance(p, bytes) else p.read_bytes() for p in parts)
        return ENVELOPE_RESPONSE.cls(response_data=data[4:], error_code=ErrorCode.NONE)

    def _admin(self, api_key: int, body: Any, now_ms: int) -> Any:
        """A forwardable API sent by a broker for itself (AutoTopicCreationManager's CreateTopics)."""
        return self.apis.handle(api_key, body)

    def handle_describe_quorum(self, body: Any, now_ms: int) -> Any:
        """The metadata quorum as this controller knows it: a real quorum's own description, or
        this controller as a quorum of one (its log is committed as it is written)."""
        def describe() -> QuorumDescription:
            described = getattr(self.controller, "describe_quorum", None)
            if described is not None:
                return described(now_ms)
            if self.node is None:
                raise NotLeaderError("this controller was given no node id to describe its quorum with")
            return sole_voter_description(self.node.node_id, self.controller.image.offset + 1, now_ms)
        return describe_quorum_response(body, describe, self.node)

    def handle_allocate_producer_ids(self, body: Any, now_ms: int) -> Any:
        """Kafka's ``ProducerIdControlManager.generateNextProducerId``: only a broker with a
        current session gets a block (a stale epoch is refused), written as ProducerIdsRecord."""
        try:
            self.heartbeats.session(body.broker_id, body.broker_epoch)
        except HeartbeatError as error:
            return ALLOCATE_PRODUCER_IDS_RESPONSE.cls(error_code=error.error_code)
        block = self.controller.allocate_producer_ids(body.broker_id, body.broker_epoch)
        return ALLOCATE_PRODUCER_IDS_RESPONSE.cls(error_code=ErrorCode.NONE, producer_id_start=block.start,
                                                  producer_id_len=len(block))

    # --- metadata fetches ---------------------------------------------------------------------

    def _fetch(self, connection_id: int, correlation_id: int, version: int, body: Any, now_ms: int) -> None:
        wanted = [(t.topic, p) for t in body.topics for p in t.partitions]
        if len(wanted) != 1 or wanted[0][0] != KRAFT_METADATA_TOPIC or wanted[0][1].partition != 0:
            return  # the controller serves only __cluster_metadata-0
        fetch_offset = wanted[0][1].fetch_offset
        if fetch_offset != self.metadata.end_offset or body.max_wait_ms <= 0:
            self._answer_fetch(connection_id, correlation_id, version, fetch_offset)
            return
        if len(self._parked) >= PARKED_FETCHES_MAX:
            self._answer_fetch(connection_id, correlation_id, version, fetch_offset)
            return
        self._parked.append(_ParkedFetch(connection_id, correlation_id, version, fetch_offset,
                                         now_ms + body.max_wait_ms))

    def _answer_parked(self, now_ms: int, *, expired_only: bool) -> None:
        ready = [p for p in self._parked if p.deadline_ms <= now_ms
                 or (not expired_only and p.fetch_offset < self.metadata.end_offset)]
        if not ready:
            return
        self._parked = [p for p in self._parked if p not in ready]
        for parked in ready:
            self._answer_fetch(parked.connection_id, parked.correlation_id, parked.version, parked.fetch_offset)

    def _answer_fetch(self, connection_id: int, correlation_id: int, version: int, fetch_offset: int) -> None:
        end = self.metadata.end_offset
        partition = _FETCH.FetchableTopicResponse.PartitionData
        if fetch_offset > end:
            data = partition(partition_index=0, error_code=ErrorCode.OFFSET_OUT_OF_RANGE, high_watermark=end,
                             log_start_offset=0, records=None)
        else:
            data = partition(partition_index=0, error_code=ErrorCode.NONE, high_watermark=end, last_stable_offset=end,
                             log_start_offset=0, records=self.metadata.read(fetch_offset, FETCH_MAX_BYTES))
        body = _FETCH(error_code=ErrorCode.NONE, responses=(
            _FETCH.FetchableTopicResponse(topic=KRAFT_METADATA_TOPIC, partitions=(data,)),))
        self._respond(connection_id, ApiKey.FETCH, version, correlation_id, body)

    def _respond(self, connection_id: int, api_key: int, version: int, correlation_id: int, body: Any) -> None:
        parts = encode_response(api_key, version, correlation_id, body)
        data = b"".join(p if isinstance(p, bytes) else p.read_bytes() for p in parts)
        self._outbox.append((connection_id, data[4:]))


def topic_defaults(properties: Mapping[str, str] | None) -> TopicDefaults:
    """``num.partitions`` and ``default.replication.factor`` from the controller's properties."""
    layers = ConfigLayers(static=dict(properties or {}))
    partitions = broker_value(layers, None, "num.partitions")
    factor = broker_value(layers, None, "default.replication.factor")
    assert isinstance(partitions, int) and isinstance(factor, int)  # definitions.py gives defaults
    return TopicDefaults(partitions, factor)


__all__ = ["ControllerNode", "PARKED_FETCHES_MAX", "topic_defaults"]
