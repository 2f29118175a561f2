"""InitProducerId: hand out producer ids to idempotent producers.

Ids must never repeat, even across restarts, or a future sequence check could mistake a new
producer's batch for an old one's duplicate. As in Kafka, the broker draws ids from blocks of
1000 that the controller allocates (AllocateProducerIds, KIP-730): each block is a
ProducerIdsRecord in the metadata log, so a restarted node replays it and starts past it. The
first block of a new cluster is 0-999, the next 1000-1999, whichever broker asks.
A request with a transactional id goes to the transaction coordinator
(:meth:`kafkalab.txn.coordinator.TransactionCoordinator.init_producer_id`), which takes its new
producer ids from the same allocator (:func:`next_producer_id`).

A lone broker is its own controller and gets a block in process (:class:`ProducerIdAllocator`).
A cluster's broker asks the controller over the network (:class:`ProducerIdManager`, Kafka's
``RPCProducerIdManager``): it asks for the next block once 90% of the current one is used, so
producers rarely wait; an InitProducerId that finds no id left is parked until the block
arrives, and answered COORDINATOR_LOAD_IN_PROGRESS (14, retriable) if the controller cannot be
reached or refuses -- the producer retries after its backoff.

Worked example: broker 2's first InitProducerId finds no block, parks, and sends
AllocateProducerIds{broker_id 2, broker_epoch 7}; the controller writes ProducerIdsRecord
(next 1000) and answers start 0, length 1000; the parked request is answered producer id 0.
The 900th id sent asks for the next block (1000-1999) in the background.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kafkalab.broker.lifecycle import ControllerRequest
from kafkalab.broker.request import PENDING, Request, answer_later
from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.messages.forwarding import ALLOCATE_PRODUCER_IDS_REQUEST, ALLOCATE_PRODUCER_IDS_VERSION
from kafkalab.protocol.messages.init_producer_id import INIT_PRODUCER_ID_RESPONSE
from kafkalab.txn.coordinator import InitProducerIdResult

if TYPE_CHECKING:
    from kafkalab.broker.broker import Broker


class ProducerIdAllocator:
    """Producer ids from blocks the caller fetches synchronously: a lone broker, its own
    controller. Not thread-safe; owned by the broker."""

    def __init__(self, next_block: Callable[[], range]) -> None:
        self._next_block = next_block
        self._block = range(0)
        self._index = 0

    def ready(self) -> bool:
        return True  # a block is always at hand

    def wait(self, on_block: Callable[[bool], None]) -> None:
        on_block(True)  # nothing to wait for

    def allocate(self) -> int:
        if self._index >= len(self._block):
            self._block, self._index = self._next_block(), 0
            assert len(self._block) > 0, "the controller allocates non-empty blocks"
        producer_id = self._block[self._index]
        self._index += 1
        return producer_id


PREFETCH_FRACTION = 0.9  # RPCProducerIdManager asks for the next block at 90% of the current
ALLOCATE_TIMEOUT_MS = 30_000  # controller.socket.timeout.ms
ALLOCATE_BACKOFF_MS = 50  # RPCProducerIdManager.RetryBackoffMs after a failed request
WAITERS_MAX = 100_000  # parked InitProducerIds at most: one per client connection


class ProducerIdManager:
    """Producer ids from blocks asked of the controller over the network (Kafka's
    ``RPCProducerIdManager``), sans-I/O: :meth:`poll` gives the AllocateProducerIds to send.
    Not thread-safe; owned by the broker."""

    def __init__(self, broker_id: int, broker_epoch: Callable[[], int]) -> None:
        self.broker_id = broker_id
        self._broker_epoch = broker_epoch
        self._block = range(0)
        self._index = 0
        self._next: range | None = None  # the prefetched block
        self._wanted = False
        self._in_flight: int | None = None
        self._not_before_ms = 0  # the backoff after a failure
        self._waiters: list[Callable[[bool], None]] = []
        self._ids = itertools.count(1)

    def ready(self) -> bool:
        return self._index < len(self._block) or self._next is not None

    def allocate(self) -> int:
        if self._index >= len(self._block):
            if self._next is None:
                raise ProducerIdsUnavailable("Producer ID block is full. Waiting for next block",
                                             error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
            self._block, self._index, self._next = self._next, 0, None
        producer_id = self._block[self._index]
        self._index += 1
        if self._next is None and self._index >= PREFETCH_FRACTION * len(self._block):
            self._wanted = True
        return producer_id

    def wait(self, on_block: Callable[[bool], None]) -> None:
        """Call ``on_block(True)`` once an id is ready, ``on_block(False)`` if the controller
        cannot give a block now."""
        if len(self._waiters) >= WAITERS_MAX:
            on_block(False)
            return
        self._waiters.append(on_block)
        self._wanted = True

    def poll(self, now_ms: int) -> list[ControllerRequest]:
        if not self._wanted or self._in_flight is not None or now_ms < self._not_before_ms:
            return []
        if self._broker_epoch() < 0:
            return []  # not registered yet: the controller checks the epoch
        self._wanted = False
        self._in_flight = next(self._ids)
        body = ALLOCATE_PRODUCER_IDS_REQUEST.cls(broker_id=self.broker_id, broker_epoch=self._broker_epoch())
        return [ControllerRequest(self._in_flight, ApiKey.ALLOCATE_PRODUCER_IDS, ALLOCATE_PRODUCER_IDS_VERSION, body,
                                  ALLOCATE_TIMEOUT_MS)]

    def next_deadline_ms(self) -> int | None:
        waiting = self._wanted and self._in_flight is None and self._broker_epoch() >= 0
        return self._not_before_ms if waiting else None

    def on_response(self, request_id: int, body: Any, now_ms: int) -> None:
        if request_id != self._in_flight:
            return
        self._in_flight = None
        if body.error_code != ErrorCode.NONE or body.producer_id_len <= 0:
            self.on_failure(request_id, now_ms, in_flight=False)
            return
        block = range(body.producer_id_start, body.producer_id_start + body.producer_id_len)
        if self._index >= len(self._block):
            self._block, self._index = block, 0
        else:
            self._next = block
        self._wake(True)

    def on_failure(self, request_id: int, now_ms: int, *, in_flight: bool = True) -> None:
        if in_flight and request_id != self._in_flight:
            return
        self._in_flight = None
        self._not_before_ms = now_ms + ALLOCATE_BACKOFF_MS
        self._wanted = not self.ready()  # ask again after the backoff, for the next producer
        self._wake(False)

    def _wake(self, ok: bool) -> None:
        waiters, self._waiters = self._waiters, []
        for on_block in waiters:
            on_block(ok)


class ProducerIdsUnavailable(KafkaError):
    """No producer id is left in this broker's blocks; the next one is on its way."""


def next_producer_id(broker: Broker) -> int:
    """A producer id never handed out before, from this broker's current block."""
    return broker.producer_ids.allocate()


def handle_init_producer_id(broker: Broker, request: Request) -> Any:
    body = request.body
    R = INIT_PRODUCER_ID_RESPONSE.cls
    if body.transactional_id is not None and (body.producer_id < 0) != (body.producer_epoch < 0):
        return R(error_code=ErrorCode.INVALID_REQUEST)  # KIP-360 names both or neither
    if body.transactional_id is None and body.producer_id >= 0:  # v3+: an existing producer bumps its epoch
        return R(error_code=0, producer_id=body.producer_id, producer_epoch=min(body.producer_epoch + 1, 32767))
    if not broker.producer_ids.ready():
        def block_arrived(ok: bool) -> None:
            if ok:
                broker.dispatch_later(handle_init_producer_id, request)
            else:
                header = request.header
                broker.respond(request.connection_id, header.api_key, header.api_version, header.correlation_id,
                               R(error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS))
        broker.producer_ids.wait(block_arrived)
        return PENDING  # answered once the controller's block arrives
    if body.transactional_id is not None:
        expected = (body.producer_id, body.producer_epoch) if body.producer_id >= 0 else None

        def response(result: InitProducerIdResult) -> Any:
            return R(error_code=result.error_code, producer_id=result.producer_id, producer_epoch=result.producer_epoch)
        broker.txn_coordinator.init_producer_id(body.transactional_id, body.transaction_timeout_ms, expected,
                                                request.now_ms, answer_later(broker.respond, request, response))
        return PENDING  # answered once the coordinator's record is committed
    return R(error_code=0, producer_id=next_producer_id(broker), producer_epoch=0)


__all__ = ["ProducerIdAllocator", "ProducerIdManager", "ProducerIdsUnavailable", "handle_init_producer_id",
           "next_producer_id"]
