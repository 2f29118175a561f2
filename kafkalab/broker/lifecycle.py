"""A broker's life as the controller sees it: register, catch up, unfence, heartbeat, shut down.

Theory of operation
-------------------
Mirrors Kafka's ``BrokerLifecycleManager``. A KRaft broker starts by sending BrokerRegistration
with a fresh *incarnation id* (a random uuid per process start); the controller answers with the
*broker epoch*. The broker then heartbeats every ``broker.heartbeat.interval.ms`` (2 s), saying
how far it has replayed the metadata log. It starts fenced -- no leaderships, no ISR membership
-- and asks to be unfenced (``want_fence`` false) once it has replayed the log up to its own
registration. On SIGTERM it heartbeats ``want_shut_down``; the controller moves its leaderships
away and answers ``should_shut_down`` once it leads nothing. States and events are
:data:`TRANSITIONS`, a table keyed by (state, event)::

    STARTING --registered--> RECOVERY --unfenced--> RUNNING --shutdown asked--> PENDING_CONTROLLED_SHUTDOWN
        ^                       ^  \\_fenced_________/  |                            |
        +--- epoch lost --------+------------------------+                            +--should shut down--> SHUTTING_DOWN

A registration the controller refuses (DUPLICATE_BROKER_REGISTRATION while the previous
incarnation's session lasts) is sent again after a backoff that doubles from 100 ms up to half
the session timeout, as Kafka's does. One request is in flight at a time; a heartbeat that gets
no answer within the heartbeat interval is given up and the next one sent.

The manager is sans-I/O: :meth:`BrokerLifecycleManager.poll` returns the request to send (if
one is due), the adapter sends it and reports back with ``on_response`` or ``on_failure``.

Worked example: broker 2 starts at t=0, registers (epoch 7 at t=2), heartbeats at t=2 with
offset 3 (``want_fence`` true: not caught up), then at t=4 -- its metadata fetch has just
replayed offset 7, so it does not wait for the interval -- with ``want_fence`` false; the answer ``is_fenced false`` makes it RUNNING. Its next
heartbeats follow every 2000 ms.
"""

from __future__ import annotations

import enum
import itertools
import uuid
from dataclasses import dataclass
from typing import Any

from kafkalab.config.definitions import broker_default
from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.messages.broker_lifecycle import (
    BROKER_HEARTBEAT_REQUEST,
    BROKER_HEARTBEAT_VERSION,
    BROKER_REGISTRATION_REQUEST,
    BROKER_REGISTRATION_VERSION,
)
from kafkalab.metadata.records import METADATA_VERSION_FEATURE, METADATA_VERSION_LEVEL
from kafkalab.metadata.snapshot import LISTENER_NAME, MIN_METADATA_VERSION_LEVEL, SECURITY_PROTOCOL_PLAINTEXT

BROKER_HEARTBEAT_INTERVAL_MS: int = broker_default("broker.heartbeat.interval.ms")
RESEND_BACKOFF_INITIAL_MS = 100  # Kafka's lifecycle manager: first resend after 100 ms ...
RESEND_BACKOFF_MAX_MS = 4_500  # ... doubling up to broker.session.timeout.ms / 2


class BrokerState(enum.Enum):
    """Kafka's ``BrokerState`` values a KRaft broker goes through."""

    STARTING = 1
    RECOVERY = 2
    RUNNING = 3
    PENDING_CONTROLLED_SHUTDOWN = 6
    SHUTTING_DOWN = 7


class Event(enum.Enum):
    REGISTERED = "registration accepted"
    UNFENCED = "heartbeat: not fenced"
    FENCED = "heartbeat: fenced"
    EPOCH_LOST = "heartbeat: not registered or stale epoch"
    SHUTDOWN_ASKED = "controlled shutdown begins"
    SHOULD_SHUT_DOWN = "heartbeat: should shut down"


B, E = BrokerState, Event
TRANSITIONS: dict[tuple[BrokerState, Event], BrokerState] = {
    (B.STARTING, E.REGISTERED): B.RECOVERY,
    (B.STARTING, E.SHUTDOWN_ASKED): B.SHUTTING_DOWN,  # never registered: nothing to hand over
    (B.RECOVERY, E.UNFENCED): B.RUNNING,
    (B.RECOVERY, E.FENCED): B.RECOVERY,
    (B.RECOVERY, E.EPOCH_LOST): B.STARTING,
    (B.RECOVERY, E.SHUTDOWN_ASKED): B.PENDING_CONTROLLED_SHUTDOWN,
    (B.RECOVERY, E.SHOULD_SHUT_DOWN): B.SHUTTING_DOWN,
    (B.RUNNING, E.UNFENCED): B.RUNNING,
    (B.RUNNING, E.FENCED): B.RECOVERY,  # the controller lost our session: catch up, unfence again
    (B.RUNNING, E.EPOCH_LOST): B.STARTING,
    (B.RUNNING, E.SHUTDOWN_ASKED): B.PENDING_CONTROLLED_SHUTDOWN,
    (B.PENDING_CONTROLLED_SHUTDOWN, E.UNFENCED): B.PENDING_CONTROLLED_SHUTDOWN,
    (B.PENDING_CONTROLLED_SHUTDOWN, E.FENCED): B.PENDING_CONTROLLED_SHUTDOWN,
    (B.PENDING_CONTROLLED_SHUTDOWN, E.EPOCH_LOST): B.SHUTTING_DOWN,
    (B.PENDING_CONTROLLED_SHUTDOWN, E.SHUTDOWN_ASKED): B.PENDING_CONTROLLED_SHUTDOWN,
    (B.PENDING_CONTROLLED_SHUTDOWN, E.SHOULD_SHUT_DOWN): B.SHUTTING_DOWN,
    **{(B.SHUTTING_DOWN, event): B.SHUTTING_DOWN for event in Event},
}


class LifecycleError(KafkaError):
    """An event the lifecycle table has no transition for."""


def next_state(state: BrokerState, event: Event) -> BrokerState:
    key = (state, event)
    if key not in TRANSITIONS:
        raise LifecycleError(f"broker lifecycle: no transition from {state.name} on {event.name}",
                             error_code=ErrorCode.UNKNOWN_SERVER_ERROR)
    return TRANSITIONS[key]


@dataclass(frozen=True, slots=True)
class ControllerRequest:
    """A request for the active controller; the adapter answers with ``on_response``."""

    request_id: int
    api_key: int
    version: int
    body: Any
    timeout_ms: int


@dataclass(frozen=True, slots=True)
class BrokerIdentity:
    broker_id: int
    cluster_id: str
    incarnation_id: uuid.UUID
    host: str
    port: int
    rack: str | None = None


class BrokerLifecycleManager:
    """One broker's registration and heartbeats. Not thread-safe; owned by the broker."""

    def __init__(self, identity: BrokerIdentity, heartbeat_interval_ms: int = BROKER_HEARTBEAT_INTERVAL_MS) -> None:
        self.identity = identity
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.state = BrokerState.STARTING
        self.broker_epoch = -1
        self.metadata_offset = -1  # how far the broker has replayed __cluster_metadata
        self.ready_to_unfence = True  # Kafka's setReadyToUnfence: the broker's own start-up is done
        self.fenced = True
        self._in_flight: int | None = None
        self._next_send_ms = 0
        self._backoff_ms = RESEND_BACKOFF_INITIAL_MS
        self._ids = itertools.count(1)

    def _move(self, event: Event) -> None:
        self.state = next_state(self.state, event)

    # --- what the adapter calls ---------------------------------------------------------------

    def poll(self, now_ms: int) -> ControllerRequest | None:
        """The next request to send now, if one is due and none is in flight."""
        if self._in_flight is not None or now_ms < self._next_send_ms or self.state is BrokerState.SHUTTING_DOWN:
            return None
        request_id = next(self._ids)
        self._in_flight = request_id
        if self.state is BrokerState.STARTING:
            return ControllerRequest(request_id, ApiKey.BROKER_REGISTRATION, BROKER_REGISTRATION_VERSION,
                                     self._registration(), self.heartbeat_interval_ms)
        return ControllerRequest(request_id, ApiKey.BROKER_HEARTBEAT, BROKER_HEARTBEAT_VERSION,
                                 self._heartbeat(), self.heartbeat_interval_ms)

    def next_deadline_ms(self) -> int | None:
        if self._in_flight is not None or self.state is BrokerState.SHUTTING_DOWN:
            return None
        return self._next_send_ms

    def on_response(self, request_id: int, api_key: int, body: Any, now_ms: int) -> None:
        if request_id != self._in_flight:
            return  # the answer to a request already given up
        self._in_flight = None
        if api_key == ApiKey.BROKER_REGISTRATION:
            self._registered(body, now_ms)
        else:
            self._heartbeat_answered(body, now_ms)

    def on_failure(self, request_id: int, now_ms: int) -> None:
        """No answer in time (the controller is unreachable): try again after a backoff."""
        if request_id == self._in_flight:
            self._in_flight = None
            self._retry_later(now_ms)

    def metadata_replayed(self, offset: int, now_ms: int) -> None:
        """The broker's metadata image now includes every record up to ``offset``. Having just
        replayed its own registration, a fenced broker asks to be unfenced at once."""
        was_caught_up = self.caught_up
        self.metadata_offset = max(self.metadata_offset, offset)
        if self.state is BrokerState.RECOVERY and self.caught_up and not was_caught_up:
            self._next_send_ms = min(self._next_send_ms, now_ms)

    def begin_controlled_shutdown(self, now_ms: int) -> None:
        """SIGTERM: ask the controller to move leaderships away before stopping."""
        self._move(Event.SHUTDOWN_ASKED)
        self._next_send_ms = now_ms  # heartbeat now, not at the next interval

    @property
    def caught_up(self) -> bool:
        return self.broker_epoch >= 0 and self.metadata_offset >= self.broker_epoch

    # --- answers --------------------------------------------------------------------------------

    def _registered(self, body: Any, now_ms: int) -> None:
        if body.error_code != ErrorCode.NONE or self.state is not BrokerState.STARTING:
            self._retry_later(now_ms)
            return
        self.broker_epoch = body.broker_epoch
        self._backoff_ms = RESEND_BACKOFF_INITIAL_MS
        self._move(Event.REGISTERED)
        self._next_send_ms = now_ms  # the first heartbeat goes at once

    def _heartbeat_answered(self, body: Any, now_ms: int) -> None:
        if body.error_code in (ErrorCode.BROKER_ID_NOT_REGISTERED, ErrorCode.STALE_BROKER_EPOCH):
            self._move(Event.EPOCH_LOST)
            self.broker_epoch = -1
            self._next_send_ms = now_ms
            return
        if body.error_code != ErrorCode.NONE:
            self._retry_later(now_ms)
            return
        self.fenced = body.is_fenced
        if body.should_shut_down:
            self._move(Event.SHOULD_SHUT_DOWN)
            return
        self._move(Event.FENCED if body.is_fenced else Event.UNFENCED)
        self._next_send_ms = now_ms + self.heartbeat_interval_ms  # in controlled shutdown too, as Kafka

    def _retry_later(self, now_ms: int) -> None:
        self._next_send_ms = now_ms + self._backoff_ms
        self._backoff_ms = min(self._backoff_ms * 2, RESEND_BACKOFF_MAX_MS)

    # --- requests -------------------------------------------------------------------------------

    def _registration(self) -> Any:
        cls = BROKER_REGISTRATION_REQUEST.cls
        i = self.identity
        return cls(broker_id=i.broker_id, cluster_id=i.cluster_id, incarnation_id=i.incarnation_id,
                   listeners=(cls.Listener(LISTENER_NAME, i.host, i.port, SECURITY_PROTOCOL_PLAINTEXT),),
                   features=(cls.Feature(METADATA_VERSION_FEATURE, MIN_METADATA_VERSION_LEVEL, METADATA_VERSION_LEVEL),),
                   rack=i.rack, log_dirs=(), previous_broker_epoch=-1)

    def _heartbeat(self) -> Any:
        shutting_down = self.state is BrokerState.PENDING_CONTROLLED_SHUTDOWN
        want_fence = not shutting_down and not (self.caught_up and self.ready_to_unfence)
        return BROKER_HEARTBEAT_REQUEST.cls(
            broker_id=self.identity.broker_id, broker_epoch=self.broker_epoch,
            current_metadata_offset=self.metadata_offset, want_fence=want_fence, want_shut_down=shutting_down)


__all__ = [
    "BROKER_HEARTBEAT_INTERVAL_MS", "BrokerIdentity", "BrokerLifecycleManager", "BrokerState",
    "ControllerRequest", "Event", "LifecycleError", "TRANSITIONS", "next_state",
]
