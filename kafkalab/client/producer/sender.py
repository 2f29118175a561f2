"""The Sender: turns ready batches into per-broker Produce requests and handles the answers.

Theory of operation
-------------------
In Kafka the sender is a thread of its own, so ``send`` never waits for the network; here it is
a sans-I/O object the adapter calls. :meth:`Sender.poll` returns the requests to send now, as
:class:`OutboundRequest` values; the adapter sends them and hands back each answer
(:meth:`~Sender.on_response`) or the failure of its connection (:meth:`~Sender.on_failure`).
Each poll, in order:

1. batches that waited ``delivery.timeout.ms`` in the accumulator fail with a timeout;
2. Metadata is requested when a topic is new or a leader moved;
3. with ``enable.idempotence`` the producer first gets a producer id and epoch (InitProducerId);
4. for every broker with a ready partition and fewer than
   ``max.in.flight.requests.per.connection`` requests in flight, one Produce request carries one
   batch from each of its partitions.

An answer completes each batch, or puts it back for a retry (a retriable error, fewer than
``retries`` attempts, and ``delivery.timeout.ms`` not yet over), or fails it.

Too large. A batch of several records refused with MESSAGE_TOO_LARGE (the topic's
``max.message.bytes`` is below what the producer packed) is split into smaller batches that go
back to the head of the partition's queue, as Kafka's ``Sender.completeBatch`` does; this is
not counted as a retry. A single record refused so fails its future with
``RecordTooLargeError`` (Kafka's ``RecordTooLargeException``). Worked example: ``batch.size``
16384 and ``max.message.bytes`` 4000: a batch of fifteen 1 KiB records (about 15.5 KB) is
refused and split into parts of at most half its bytes (7 + 7 + 1 records); each part of 7 is
refused and split again (3 + 3 + 1), and batches of at most 3 records (about 3.2 KB) are
written, in the records' order.

Ordering. Without idempotence a retried batch simply goes again: with several requests in flight
the batch behind it may already be written, so the partition ends up out of order. With
idempotence every batch carries its producer id, epoch and a *base sequence* per partition,
assigned when first drained; the broker refuses a gap (OUT_OF_ORDER_SEQUENCE_NUMBER) and
recognises a resend (DUPLICATE_SEQUENCE_NUMBER), and a retry is sent only when nothing of its
partition is in flight, so batches are written in sequence order. Worked example (in flight 5):
batches with sequences 0, 3, 6 go out; 0 times out, 3 and 6 get OUT_OF_ORDER_SEQUENCE_NUMBER
(the broker has nothing before 3); all three are retried, in order, one at a time.

Epoch bumps (KIP-360): UNKNOWN_PRODUCER_ID (the broker forgot the producer) or an
OUT_OF_ORDER_SEQUENCE_NUMBER with no earlier batch outstanding (records were lost) make the
sender wait until nothing is in flight, ask InitProducerId for the next epoch of the same
producer id, and restart every partition's sequence at 0. The out-of-order batch fails; the
unknown-producer one is retried under the new epoch.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from kafkalab.client.producer.accumulator import ProducerBatch, RecordAccumulator, TopicPartition
from kafkalab.client.producer.config import ProducerConfig
from kafkalab.client.producer.errors import DeliveryTimeoutError, ProduceFailedError
from kafkalab.client.producer.metadata import ClusterMetadata
from kafkalab.errors import ErrorCode, KafkaError, RecordTooLargeError
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.records.header import NO_SEQUENCE, increment_sequence

ANY_NODE = -1  # "any broker will do": the adapter picks a bootstrap server
RETRIABLE = frozenset({
    ErrorCode.CORRUPT_MESSAGE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.LEADER_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NETWORK_EXCEPTION,
    ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH,
})
STALE_METADATA = frozenset({
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.NETWORK_EXCEPTION, ErrorCode.REQUEST_TIMED_OUT, ErrorCode.FENCED_LEADER_EPOCH,
    ErrorCode.KAFKA_STORAGE_ERROR,
})
RECONNECT_BACKOFF_MAX_MS = 1_000  # reconnect.backoff.max.ms: how long a failed node is passed over
IDEMPOTENT_TXN_TIMEOUT_MS = 60_000  # transaction.timeout.ms default; unused without a transactional id


@dataclass(frozen=True, slots=True)
class OutboundRequest:
    """A request the adapter must send to ``node_id`` (``ANY_NODE``: any broker it can reach)."""

    request_id: int
    node_id: int
    api_key: int
    body: dict[str, Any]
    expect_response: bool = True
    timeout_ms: int = 30_000


@dataclass(slots=True)
class InFlight:
    request: OutboundRequest
    sent_ms: int
    batches: dict[TopicPartition, ProducerBatch] = field(default_factory=dict)


class Sender:
    """Drains the accumulator into requests and settles batches. Not thread-safe; owned by one
    producer, whose adapter calls ``poll`` and passes back every answer."""

    def __init__(self, config: ProducerConfig, accumulator: RecordAccumulator, metadata: ClusterMetadata) -> None:
        self.config, self.accumulator, self.metadata = config, accumulator, metadata
        self.in_flight: dict[int, InFlight] = {}
        self.per_node: Counter[int] = Counter()
        self.failed_ms: dict[int, int] = {}  # node -> when its connection last failed
        self.per_partition: Counter[TopicPartition] = Counter()
        self.producer_id, self.producer_epoch = -1, -1
        self.next_sequence: dict[TopicPartition, int] = {}
        self.epoch_bump_needed = False
        self.failures: list[tuple[ProducerBatch, ErrorCode]] = []  # every failed batch, for the book
        self.splits = 0  # batches made by splitting refused ones (Kafka's batch-split-rate metric)
        self._ids = itertools.count(1)
        self._metadata_in_flight = False
        self._producer_id_in_flight = False
        self._last_metadata_ms: int | None = None
        self._last_producer_id_ms: int | None = None

    # --- the loop -------------------------------------------------------------------------------

    def poll(self, now_ms: int) -> list[OutboundRequest]:
        for batch in self.accumulator.expired(now_ms):
            self._fail(batch, DeliveryTimeoutError(
                f"Expiring {batch.record_count} record(s) for {batch.topic}-{batch.partition}: "
                f"{now_ms - batch.created_ms} ms has passed since batch creation"), ErrorCode.REQUEST_TIMED_OUT)
        out: list[OutboundRequest] = []
        self._maybe_request_metadata(now_ms, out)
        if self.config.enable_idempotence and not self._have_producer_id():
            self._maybe_init_producer_id(now_ms, out)
            return out
        ready = self.accumulator.ready(self.metadata.leader, now_ms, self._muted)
        for topic in ready.unknown_leader_topics:
            self.metadata.want(topic)
        for node in sorted(ready.nodes):
            if self.per_node[node] >= self.config.max_in_flight_requests_per_connection:
                continue
            batches = self.accumulator.drain(self.metadata.leader, node, now_ms, self._can_send)
            if batches:
                out.append(self._produce_request(node, batches, now_ms))
        return out

    def next_wakeup_ms(self, now_ms: int) -> int | None:
        """When ``poll`` may have something new to do without any answer arriving."""
        ready = self.accumulator.ready(self.metadata.leader, now_ms, self._muted)
        times = [] if ready.next_check_ms is None else [ready.next_check_ms]
        oldest = [b.created_ms for b in self.accumulator.queued()]
        if oldest:
            times.append(min(oldest) + self.config.delivery_timeout_ms)
        if self.metadata.updated_ms is not None:
            times.append(self.metadata.updated_ms + self.metadata.max_age_ms)
        if self._last_metadata_ms is not None and self.metadata.update_requested:
            times.append(self._last_metadata_ms + self.config.retry_backoff_ms)
        if self.config.enable_idempotence and not self._have_producer_id() and self._last_producer_id_ms is not None:
            times.append(self._last_producer_id_ms + self.config.retry_backoff_ms)
        later = [t for t in times if t > now_ms]  # what is due now, poll does now
        return min(later) if later else None

    def has_work(self) -> bool:
        return bool(self.in_flight) or self.accumulator.has_undrained()

    # --- requests -------------------------------------------------------------------------------

    def _request(self, node: int, api_key: int, body: dict[str, Any], now_ms: int,
                 expect_response: bool = True) -> OutboundRequest:
        request = OutboundRequest(next(self._ids), node, api_key, body, expect_response,
                                  self.config.request_timeout_ms)
        if expect_response:
            self.in_flight[request.request_id] = InFlight(request, now_ms)
            self.per_node[node] += 1
        return request

    def _maybe_request_metadata(self, now_ms: int, out: list[OutboundRequest]) -> None:
        if self._metadata_in_flight or not self.metadata.needs_update(now_ms):
            return
        if self._last_metadata_ms is not None and now_ms - self._last_metadata_ms < self.config.retry_backoff_ms:
            return
        self._metadata_in_flight = True
        self._last_metadata_ms = now_ms
        out.append(self._request(self._least_loaded(now_ms), ApiKey.METADATA, self.metadata.request_body(), now_ms))

    def _maybe_init_producer_id(self, now_ms: int, out: list[OutboundRequest]) -> None:
        if self._producer_id_in_flight or (self.epoch_bump_needed and self.per_partition.total() > 0):
            return
        if self._last_producer_id_ms is not None and now_ms - self._last_producer_id_ms < self.config.retry_backoff_ms:
            return  # the last attempt failed moments ago
        self._producer_id_in_flight = True
        self._last_producer_id_ms = now_ms
        body = {"transactional_id": None, "transaction_timeout_ms": IDEMPOTENT_TXN_TIMEOUT_MS,
                "producer_id": self.producer_id, "producer_epoch": self.producer_epoch}
        out.append(self._request(self._least_loaded(now_ms), ApiKey.INIT_PRODUCER_ID, body, now_ms))

    def _least_loaded(self, now_ms: int) -> int:
        """Kafka's ``leastLoadedNode``: the broker with the fewest requests in flight, passing
        over one whose connection failed in the last ``reconnect.backoff.max.ms`` (a killed
        broker) while another is available."""
        nodes = sorted(self.metadata.brokers)
        reachable = [n for n in nodes if now_ms - self.failed_ms.get(n, now_ms - RECONNECT_BACKOFF_MAX_MS) >= RECONNECT_BACKOFF_MAX_MS]
        nodes = reachable or nodes
        return min(nodes, key=lambda n: self.per_node[n]) if nodes else ANY_NODE

    def _have_producer_id(self) -> bool:
        return self.producer_id >= 0 and not self.epoch_bump_needed

    def _muted(self, tp: TopicPartition) -> bool:
        """With one request in flight and no idempotence, Kafka keeps each partition to one
        batch in flight (``guaranteeMessageOrder``)."""
        return self.config.max_in_flight_requests_per_connection == 1 and self.per_partition[tp] > 0

    def _can_send(self, batch: ProducerBatch) -> bool:
        """Stamp idempotence fields on a batch's first drain; hold a retry back until nothing of
        its partition is in flight, so that it cannot land after a later batch."""
        if not self.config.enable_idempotence:
            return True
        if batch.base_sequence != NO_SEQUENCE:
            return self.per_partition[batch.tp] == 0
        sequence = self.next_sequence.get(batch.tp, 0)
        batch.set_producer_state(self.producer_id, self.producer_epoch, sequence)
        self.next_sequence[batch.tp] = increment_sequence(sequence, batch.record_count)
        return True

    def _produce_request(self, node: int, batches: list[ProducerBatch], now_ms: int) -> OutboundRequest:
        attributes = int(self.config.compression_type)
        topics: dict[str, list[dict[str, Any]]] = {}
        for batch in batches:
            topics.setdefault(batch.topic, []).append({"index": batch.partition, "records": batch.seal(attributes)})
        body = {"transactional_id": None, "acks": self.config.acks, "timeout_ms": self.config.request_timeout_ms,
                "topic_data": [{"name": t, "partition_data": parts} for t, parts in topics.items()]}
        expect_response = self.config.acks != 0
        request = self._request(node, ApiKey.PRODUCE, body, now_ms, expect_response)
        if not expect_response:  # acks=0: written as far as the producer will ever know
            for batch in batches:
                self._complete(batch, -1, -1)
            return request
        flight = self.in_flight[request.request_id]
        for batch in batches:
            flight.batches[batch.tp] = batch
            self.per_partition[batch.tp] += 1
        return request

    # --- answers --------------------------------------------------------------------------------

    def on_response(self, request_id: int, body: Any, now_ms: int) -> None:
        flight = self._finish(request_id)
        if flight is None:
            return
        handler = {ApiKey.METADATA: self._on_metadata, ApiKey.INIT_PRODUCER_ID: self._on_producer_id,
                   ApiKey.PRODUCE: self._on_produce}[ApiKey(flight.request.api_key)]
        handler(flight, body, now_ms)

    def on_failure(self, request_id: int, now_ms: int, error: ErrorCode = ErrorCode.NETWORK_EXCEPTION) -> None:
        """The request's connection failed or ``request.timeout.ms`` passed without an answer."""
        flight = self._finish(request_id)
        if flight is None:
            return
        self.failed_ms[flight.request.node_id] = now_ms
        self.metadata.request_update()
        for batch in flight.batches.values():
            self._settle(batch, error, -1, -1, now_ms)

    def _finish(self, request_id: int) -> InFlight | None:
        flight = self.in_flight.pop(request_id, None)
        if flight is None:
            return None
        self.per_node[flight.request.node_id] -= 1
        api_key = flight.request.api_key
        if api_key == ApiKey.METADATA:
            self._metadata_in_flight = False
        elif api_key == ApiKey.INIT_PRODUCER_ID:
            self._producer_id_in_flight = False
        for tp in flight.batches:
            self.per_partition[tp] -= 1
        return flight

    def _on_metadata(self, flight: InFlight, body: Any, now_ms: int) -> None:
        self.metadata.update(body, now_ms)

    def _on_producer_id(self, flight: InFlight, body: Any, now_ms: int) -> None:
        if body.error_code != 0:
            self.metadata.request_update()  # e.g. COORDINATOR_NOT_AVAILABLE: ask again next poll
            return
        self.producer_id, self.producer_epoch = body.producer_id, body.producer_epoch
        if self.epoch_bump_needed:
            self.epoch_bump_needed = False
            self.next_sequence.clear()
            for batch in self.accumulator.queued():
                batch.set_producer_state(-1, -1, NO_SEQUENCE)  # sequences are given again, in order

    def _on_produce(self, flight: InFlight, body: Any, now_ms: int) -> None:
        for topic in body.responses:
            for part in topic.partition_responses:
                batch = flight.batches.pop((topic.name, part.index), None)
                if batch is not None:
                    code = ErrorCode(part.error_code) if part.error_code in ErrorCode._value2member_map_ \
                        else ErrorCode.UNKNOWN_SERVER_ERROR
                    self._settle(batch, code, part.base_offset, part.log_append_time_ms, now_ms)
        for batch in flight.batches.values():  # the broker left a partition out: treat as lost
            self._settle(batch, ErrorCode.NETWORK_EXCEPTION, -1, -1, now_ms)

    def _settle(self, batch: ProducerBatch, code: ErrorCode, base_offset: int, append_time_ms: int,
                now_ms: int) -> None:
        if code in (ErrorCode.NONE, ErrorCode.DUPLICATE_SEQUENCE_NUMBER):
            self._complete(batch, base_offset, append_time_ms)
        elif code is ErrorCode.MESSAGE_TOO_LARGE and batch.record_count > 1:
            self.splits += self.accumulator.split_and_reenqueue(batch)  # not counted as a retry
        elif code is ErrorCode.MESSAGE_TOO_LARGE:
            self._refuse(batch, RecordTooLargeError(
                f"The broker refused a record of {batch.size_bytes} bytes (as a batch) for {batch.topic}-"
                f"{batch.partition}: larger than the max message size it accepts (the topic's "
                "max.message.bytes)."), code)
        elif code is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER and (
                self._earlier_outstanding(batch) or self.epoch_bump_needed):
            # an earlier batch is unanswered, or failed and the epoch bump it asked for will give
            # this one a fresh sequence: either way this batch was not written, so send it again
            self._retry_or_fail(batch, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, now_ms)
        elif code in (ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, ErrorCode.UNKNOWN_PRODUCER_ID):
            self.epoch_bump_needed = True
            if code is ErrorCode.UNKNOWN_PRODUCER_ID:
                self._retry_or_fail(batch, code, now_ms)
            else:
                self._fail(batch, ProduceFailedError.of(batch, code), code)
        elif code in RETRIABLE:
            if code in STALE_METADATA:
                self.metadata.request_update()
            self._retry_or_fail(batch, code, now_ms)
        else:
            self._refuse(batch, ProduceFailedError.of(batch, code), code)

    def _earlier_outstanding(self, batch: ProducerBatch) -> bool:
        """Whether a batch of the same partition with a lower sequence is still unanswered."""
        others = [b for f in self.in_flight.values() for b in f.batches.values() if b.tp == batch.tp]
        others.extend(b for b in self.accumulator.batches.get(batch.tp, ()) if b.base_sequence != NO_SEQUENCE)
        return any(0 <= b.base_sequence < batch.base_sequence for b in others)

    def _retry_or_fail(self, batch: ProducerBatch, code: ErrorCode, now_ms: int) -> None:
        if now_ms - batch.created_ms >= self.config.delivery_timeout_ms:
            self._fail(batch, DeliveryTimeoutError(
                f"Expiring {batch.record_count} record(s) for {batch.topic}-{batch.partition}: "
                f"{now_ms - batch.created_ms} ms has passed since batch creation (last error {code.name})"), code)
        elif batch.attempts > self.config.retries:
            self._fail(batch, ProduceFailedError.of(batch, code), code)
        else:
            self.accumulator.reenqueue(batch, now_ms)

    def _complete(self, batch: ProducerBatch, base_offset: int, append_time_ms: int) -> None:
        self.accumulator.deallocate(batch)
        batch.complete(base_offset, append_time_ms)

    def _fail(self, batch: ProducerBatch, error: Exception, code: ErrorCode) -> None:
        self.accumulator.deallocate(batch)
        self.failures.append((batch, code))
        assert isinstance(error, ProduceFailedError | DeliveryTimeoutError | RecordTooLargeError)
        batch.fail(error)

    def _refuse(self, batch: ProducerBatch, error: KafkaError, code: ErrorCode) -> None:
        """Fail a batch the broker refused outright. It took none of the batch's sequences, so
        the batches behind it would leave a gap: as Kafka's ``TransactionManager.handleFailedBatch``,
        an idempotent producer bumps its epoch, which starts every partition's sequences at 0."""
        if batch.base_sequence != NO_SEQUENCE:
            self.epoch_bump_needed = True
        self._fail(batch, error, code)
