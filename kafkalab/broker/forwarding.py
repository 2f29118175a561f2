"""A cluster broker's admin requests on their way to the active controller: Envelope forwarding
(KIP-590) and topic auto-creation.

Theory of operation
-------------------
Mirrors Kafka's ``ForwardingManager`` and ``AutoTopicCreationManager``. A KRaft broker decides no
admin request itself. :class:`ForwardingManager` wraps each forwardable request it receives
(:data:`~kafkalab.controller.controller_apis.FORWARDABLE`) in an EnvelopeRequest -- the client's
frame unopened, its principal, its address -- and queues it for the controller; the adapter
carries it like the broker's heartbeats (:meth:`kafkalab.broker.broker.Broker.controller_requests`).
The answer's ``response_data`` is the response the controller wrote for the client; the broker
decodes it and answers the client's connection with it. What the client sees when it fails:

========================================  ====================================================
the envelope answers NOT_CONTROLLER, or   sent again (the adapter finds the active controller),
no answer within the request timeout      until ``FORWARD_RETRY_TIMEOUT_MS`` after it arrived
the retries ran out                       the request's error response, REQUEST_TIMED_OUT (7)
another envelope error, or response data  the request's error response, UNKNOWN_SERVER_ERROR (-1)
that does not parse
========================================  ====================================================

An error response fills every topic, resource or partition of the request with the error, as
Kafka's ``AbstractRequest.getErrorResponse`` does (:func:`error_response`).

:class:`AutoTopicCreation` sends plain CreateTopics requests for topics a broker creates on its
own -- a Metadata request's missing topic when ``auto.create.topics.enable`` is set,
``__consumer_offsets`` and ``__transaction_state`` on FindCoordinator -- at most one in flight
per topic; until the new topic reaches the broker's image the caller answers as Kafka does
(LEADER_NOT_AVAILABLE, COORDINATOR_NOT_AVAILABLE), and the client retries.

Worked example: a client's DeleteTopics v4 (correlation id 12) reaches broker 2 at t=0: an
Envelope goes to the controller, which answers at t=3 with response data whose header says
correlation id 12; broker 2 decodes the DeleteTopics v4 response inside and sends it to the
client. Had the controller been unreachable until t=60 000, the client would have got
``orders: REQUEST_TIMED_OUT``.
"""

from __future__ import annotations

import ipaddress
import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kafkalab.broker.lifecycle import ControllerRequest
from kafkalab.broker.request import Request
from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.header import decode_response
from kafkalab.protocol.messages.configs import ALTER_CONFIGS_RESPONSE, INCREMENTAL_ALTER_CONFIGS_RESPONSE
from kafkalab.protocol.messages.elect_leaders import ELECT_LEADERS_RESPONSE
from kafkalab.protocol.messages.forwarding import ANONYMOUS_PRINCIPAL, ENVELOPE_REQUEST, ENVELOPE_VERSION
from kafkalab.protocol.messages.reassignments import (
    ALTER_PARTITION_REASSIGNMENTS_RESPONSE,
    LIST_PARTITION_REASSIGNMENTS_RESPONSE,
)
from kafkalab.protocol.messages.topics import (
    CREATE_PARTITIONS_RESPONSE,
    CREATE_TOPICS_REQUEST,
    CREATE_TOPICS_RESPONSE,
    DELETE_TOPICS_RESPONSE,
)

FORWARD_RETRY_TIMEOUT_MS = 60_000  # BrokerServer's forwarding channel: retryTimeoutMs
CONTROLLER_REQUEST_TIMEOUT_MS = 30_000  # controller.socket.timeout.ms: one attempt's bound
RETRY_BACKOFF_MS = 100  # retry.backoff.ms: after NOT_CONTROLLER or a lost attempt
FORWARDS_MAX = 10_000  # queued forwards at most: one per client connection in practice
CREATE_TOPICS_VERSION = 7  # what AutoTopicCreationManager sends (the newest kafkalab decodes)
LOOPBACK = bytes([127, 0, 0, 1])

Respond = Callable[[int, int, int, int, Any], None]  # Broker.respond


@dataclass(slots=True)
class _Forward:
    request: Request
    envelope: Any
    deadline_ms: int
    next_send_ms: int
    in_flight: int | None = None  # the attempt's request id


class ForwardingManager:
    """One broker's forwarded requests. Not thread-safe; owned by the broker."""

    def __init__(self, respond: Respond, now_ms: Callable[[], int]) -> None:
        self._respond = respond
        self._now_ms = now_ms  # the clock ``poll`` and the answers are given (the broker's timer)
        self._forwards: list[_Forward] = []
        self._ids = itertools.count(1)

    def forward(self, request: Request, client_host: str | None) -> None:
        """Queue ``request`` (its frame kept in ``request.frame``) for the controller."""
        if len(self._forwards) >= FORWARDS_MAX:
            self._answer_error(request, ErrorCode.REQUEST_TIMED_OUT)  # a bound, not a normal path
            return
        envelope = ENVELOPE_REQUEST.cls(request_data=request.frame, request_principal=ANONYMOUS_PRINCIPAL,
                                        client_host_address=_address_bytes(client_host))
        now_ms = self._now_ms()
        self._forwards.append(_Forward(request, envelope, now_ms + FORWARD_RETRY_TIMEOUT_MS, now_ms))

    def poll(self, now_ms: int) -> list[ControllerRequest]:
        """Envelopes due now; forwards whose retries ran out are answered REQUEST_TIMED_OUT."""
        for expired in [f for f in self._forwards if f.in_flight is None and f.deadline_ms <= now_ms]:
            self._finish(expired, None)
        due = []
        for forward in self._forwards:
            if forward.in_flight is None and forward.next_send_ms <= now_ms:
                forward.in_flight = next(self._ids)
                due.append(ControllerRequest(forward.in_flight, ApiKey.ENVELOPE, ENVELOPE_VERSION, forward.envelope,
                                             CONTROLLER_REQUEST_TIMEOUT_MS))
        return due

    def next_deadline_ms(self) -> int | None:
        waiting = [min(f.next_send_ms, f.deadline_ms) for f in self._forwards if f.in_flight is None]
        return min(waiting, default=None)

    def on_response(self, request_id: int, body: Any, now_ms: int) -> None:
        forward = self._attempt(request_id)
        if forward is None:
            return  # an attempt already given up
        if body.error_code == ErrorCode.NOT_CONTROLLER:
            self._retry(forward, now_ms)
            return
        self._finish(forward, None if body.error_code != ErrorCode.NONE else body.response_data,
                     ErrorCode.UNKNOWN_SERVER_ERROR)

    def on_failure(self, request_id: int, now_ms: int) -> None:
        forward = self._attempt(request_id)
        if forward is not None:
            self._retry(forward, now_ms)

    def _attempt(self, request_id: int) -> _Forward | None:
        return next((f for f in self._forwards if f.in_flight == request_id), None)

    def _retry(self, forward: _Forward, now_ms: int) -> None:
        forward.in_flight = None
        forward.next_send_ms = now_ms + RETRY_BACKOFF_MS
        if forward.next_send_ms >= forward.deadline_ms:
            self._finish(forward, None)

    def _finish(self, forward: _Forward, response_data: bytes | None,
                error: ErrorCode = ErrorCode.REQUEST_TIMED_OUT) -> None:
        """Answer the client with the controller's response, or with ``error``."""
        self._forwards.remove(forward)
        request = forward.request
        header = request.header
        if response_data is not None:
            try:
                _correlation_id, body = decode_response(header.api_key, header.api_version, bytes(response_data))
            except (KafkaError, KeyError, ValueError):
                body = None
            if body is not None:
                self._respond(request.connection_id, header.api_key, header.api_version, header.correlation_id, body)
                return
            error = ErrorCode.UNKNOWN_SERVER_ERROR
        self._answer_error(request, error)

    def _answer_error(self, request: Request, error: ErrorCode) -> None:
        header = request.header
        self._respond(request.connection_id, header.api_key, header.api_version, header.correlation_id,
                      error_response(header.api_key, request.body, error))


class AutoTopicCreation:
    """Topics this broker asks the controller to create (Kafka's ``AutoTopicCreationManager``).
    Not thread-safe; owned by the broker."""

    def __init__(self) -> None:
        self._queued: dict[str, Any] = {}  # topic -> its CreatableTopic, not yet sent
        self._in_flight: dict[int, list[str]] = {}  # request id -> the topics it creates
        self._ids = itertools.count(1)

    def create(self, name: str, partitions: int, replication_factor: int, configs: Mapping[str, str]) -> None:
        """Ask for ``name`` once; a topic already asked for is not asked for again until the
        answer (or its failure) arrives."""
        if name in self._queued or any(name in names for names in self._in_flight.values()):
            return
        topic = CREATE_TOPICS_REQUEST.cls.CreatableTopic
        self._queued[name] = topic(name=name, num_partitions=partitions, replication_factor=replication_factor,
                                   assignments=(), configs=tuple(topic.CreatableTopicConfig(k, v)
                                                                 for k, v in sorted(configs.items())))

    def poll(self, now_ms: int) -> list[ControllerRequest]:
        if not self._queued:
            return []
        request_id = next(self._ids)
        self._in_flight[request_id] = list(self._queued)
        body = CREATE_TOPICS_REQUEST.cls(topics=tuple(self._queued.values()), timeout_ms=CONTROLLER_REQUEST_TIMEOUT_MS,
                                         validate_only=False)
        self._queued = {}
        return [ControllerRequest(request_id, ApiKey.CREATE_TOPICS, CREATE_TOPICS_VERSION, body,
                                  CONTROLLER_REQUEST_TIMEOUT_MS)]

    def next_deadline_ms(self) -> int | None:
        return 0 if self._queued else None

    def on_response(self, request_id: int, body: Any, now_ms: int) -> None:
        """Done either way: a refused topic (too few brokers) is asked for again at the
        client's next retry, when more brokers may have registered."""
        self._in_flight.pop(request_id, None)

    def on_failure(self, request_id: int, now_ms: int) -> None:
        self._in_flight.pop(request_id, None)


def error_response(api_key: int, body: Any, error: ErrorCode) -> Any:
    """Kafka's ``AbstractRequest.getErrorResponse``: the response to ``body`` with ``error`` on
    everything it asked about."""
    message = error.name
    if api_key == ApiKey.CREATE_TOPICS:
        R = CREATE_TOPICS_RESPONSE.cls
        return R(topics=tuple(R.CreatableTopicResult(name=t.name, error_code=error, error_message=message)
                              for t in body.topics))
    if api_key == ApiKey.DELETE_TOPICS:
        D = DELETE_TOPICS_RESPONSE.cls
        return D(responses=tuple(D.DeletableTopicResult(name=n, error_code=error, error_message=message)
                                 for n in body.topic_names))
    if api_key == ApiKey.CREATE_PARTITIONS:
        P = CREATE_PARTITIONS_RESPONSE.cls
        return P(results=tuple(P.CreatePartitionsTopicResult(t.name, error, message) for t in body.topics))
    if api_key in (ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS):
        A = ALTER_CONFIGS_RESPONSE.cls if api_key == ApiKey.ALTER_CONFIGS else INCREMENTAL_ALTER_CONFIGS_RESPONSE.cls
        return A(responses=tuple(A.AlterConfigsResourceResponse(error, message, r.resource_type, r.resource_name)
                                 for r in body.resources))
    if api_key == ApiKey.ELECT_LEADERS:
        E = ELECT_LEADERS_RESPONSE.cls
        topics = body.topic_partitions or ()
        return E(error_code=error, replica_election_results=tuple(E.ReplicaElectionResult(
            topic=t.topic, partition_result=tuple(E.ReplicaElectionResult.PartitionResult(
                partition_id=p, error_code=error, error_message=message) for p in t.partitions)) for t in topics))
    if api_key == ApiKey.ALTER_PARTITION_REASSIGNMENTS:
        return ALTER_PARTITION_REASSIGNMENTS_RESPONSE.cls(error_code=error, error_message=message)
    assert api_key == ApiKey.LIST_PARTITION_REASSIGNMENTS, f"API {api_key} is not forwarded"
    return LIST_PARTITION_REASSIGNMENTS_RESPONSE.cls(error_code=error, error_message=message)


def _address_bytes(host: str | None) -> bytes:
    """The client's IP address as raw bytes (Kafka's ``InetAddress.getAddress``)."""
    if host is None:
        return LOOPBACK  # the simulation's clients have no address
    try:
        return ipaddress.ip_address(host).packed
    except ValueError:
        return LOOPBACK


__all__ = ["AutoTopicCreation", "FORWARD_RETRY_TIMEOUT_MS", "ForwardingManager", "error_response"]
