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

Time enters only as ``now_ms``; :meth:`advance_clock` expires parked fetches and
:meth:`next_deadline_ms` tells the adapter how long it may sleep.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from kafkalab.broker.delayed_fetch import FetchPurgatory
from kafkalab.broker.handlers import admin, configs, fetch, list_offsets, metadata, produce, producer_id
from kafkalab.broker.log_store import LogStore
from kafkalab.broker.request import NO_RESPONSE, PENDING, Outgoing, Request
from kafkalab.broker.settings import BrokerSettings
from kafkalab.broker.topics import TopicRegistry
from kafkalab.config import DynamicConfigStore
from kafkalab.errors import KafkaError
from kafkalab.protocol.header import (
    API_VERSIONS_KEY,
    RequestHeader,
    decode_request_header,
    encode_response,
    unsupported_api_versions_response,
)
from kafkalab.protocol.messages import SCHEMAS
from kafkalab.protocol.types import Part
from kafkalab.protocol.versions import ADVERTISED

OUTBOX_MAX = 100_000  # a bug guard: the adapter drains the outbox after every call


Handler = Callable[["Broker", Request], Any]


class Broker:
    """A single Kafka broker over a log store. Not thread-safe; driven by one adapter."""

    def __init__(
        self, settings: BrokerSettings, log_store: LogStore, config_store: DynamicConfigStore,
        rng: random.Random,
    ) -> None:
        self.settings = settings
        self.log_store = log_store
        self.config_store = config_store
        self.topics = TopicRegistry(log_store, rng)
        self.fetch_purgatory = FetchPurgatory()
        self.producer_ids: producer_id.ProducerIdAllocator | None = None  # made on first use
        self._outbox: list[Outgoing] = []
        self.errors_seen: list[str] = []  # the last few closing reasons, for the adapter to log

    # --- the adapter's interface --------------------------------------------------------------

    def handle(self, connection_id: int, frame: bytes, now_ms: int) -> None:
        """Process one request frame; its Outgoing lands in the outbox now or later."""
        try:
            header = decode_request_header(frame)
        except KafkaError as error:
            self._close(connection_id, f"unparsable request header: {error}")
            return
        if header.api_key == API_VERSIONS_KEY and not _implemented(header):
            supported = ADVERTISED[API_VERSIONS_KEY]
            self._send(connection_id, unsupported_api_versions_response(header.correlation_id, supported))
            return
        handler = HANDLERS.get(header.api_key)
        if handler is None or not _implemented(header):
            self._close(connection_id, f"unsupported API key {header.api_key} v{header.api_version}")
            return
        try:
            body = SCHEMAS[header.api_key][0].decode(memoryview(frame)[header.body_offset :], header.api_version)
        except KafkaError as error:
            self._close(connection_id, f"malformed API key {header.api_key} v{header.api_version}: {error}")
            return
        self._dispatch(handler, Request(connection_id, header, body, now_ms))

    def _dispatch(self, handler: Handler, request: Request) -> None:
        try:
            response = handler(self, request)
        except KafkaError as error:
            self._close(request.connection_id, f"request failed: {error}")
            return
        if response is PENDING:
            return
        if response is NO_RESPONSE:
            self._outbox.append(Outgoing(request.connection_id, None))
            return
        self.respond(request.connection_id, request.header.api_key, request.header.api_version,
                     request.header.correlation_id, response)

    def respond(self, connection_id: int, api_key: int, api_version: int, correlation_id: int, body: Any) -> None:
        self._send(connection_id, encode_response(api_key, api_version, correlation_id, body))

    def take_responses(self) -> list[Outgoing]:
        """Everything to send since the last call, in order."""
        outbox, self._outbox = self._outbox, []
        return outbox

    def advance_clock(self, now_ms: int) -> None:
        """Answer every parked fetch whose deadline has passed."""
        for parked in self.fetch_purgatory.expire(now_ms):
            fetch.complete_delayed_fetch(self, parked)

    def next_deadline_ms(self) -> int | None:
        return self.fetch_purgatory.next_deadline_ms()

    def connection_closed(self, connection_id: int) -> None:
        self.fetch_purgatory.remove_connection(connection_id)

    def shutdown(self) -> None:
        """Flush logs and write checkpoints; the broker must not be used afterwards."""
        self.log_store.flush()
        self.log_store.close()

    # --- helpers -------------------------------------------------------------------------------

    def _send(self, connection_id: int, parts: list[Part]) -> None:
        assert len(self._outbox) < OUTBOX_MAX, "the adapter must drain the outbox"
        self._outbox.append(Outgoing(connection_id, parts))

    def _close(self, connection_id: int, reason: str) -> None:
        self.errors_seen = [*self.errors_seen[-9:], reason]
        self._outbox.append(Outgoing(connection_id, None, close=True, reason=reason))


def _implemented(header: RequestHeader) -> bool:
    pair = SCHEMAS.get(header.api_key)
    return pair is not None and pair[0].valid[0] <= header.api_version <= pair[0].valid[1]


HANDLERS: dict[int, Handler] = {
    0: produce.handle_produce,
    1: fetch.handle_fetch,
    2: list_offsets.handle_list_offsets,
    3: metadata.handle_metadata,
    10: metadata.handle_find_coordinator,
    18: metadata.handle_api_versions,
    19: admin.handle_create_topics,
    20: admin.handle_delete_topics,
    21: admin.handle_delete_records,
    22: producer_id.handle_init_producer_id,
    32: configs.handle_describe_configs,
    33: configs.handle_alter_configs,
    37: admin.handle_create_partitions,
    44: configs.handle_incremental_alter_configs,
}


__all__ = ["HANDLERS", "Broker", "Outgoing", "Request"]
