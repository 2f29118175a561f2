"""The producer's send path, without I/O: interceptors, serializers, partitioner, accumulator.

Theory of operation
-------------------
``send(record)`` runs, on the caller's thread and without touching the network::

    ProducerRecord --onSend interceptors--> serializers --> partitioner --> RecordAccumulator
                                                                               | (batches)
    callback <--onAcknowledgement-- future <-- Sender <-- Produce answers <---+

and returns a :class:`~kafkalab.client.producer.futures.FutureRecordMetadata`. The
:class:`~kafkalab.client.producer.sender.Sender` turns batches into requests when the adapter
polls it. Kafka runs that loop on a second thread (the "Sender thread"), so that a slow broker
never stalls ``send`` and batches fill while earlier ones are on the wire; the adapters here run
it between calls instead, which keeps the order of events easy to follow and to replay.

``send`` may have to wait: for the topic's metadata (how many partitions, who leads) or for
``buffer.memory``. Kafka blocks in ``send`` for up to ``max.block.ms``; this core returns a
:class:`PendingSend` instead, the adapter keeps the network moving and calls
:meth:`Producer.resume` until the record is appended or the wait is over.

Worked example: with ``linger.ms=0`` and one partition, ``send(ProducerRecord("orders",
b"v"))`` appends to a new batch and returns a pending future; the next ``poll`` finds the batch
ready (linger 0 has passed) and returns one Produce request; its answer ``base_offset=41``
completes the future with offset 41 and then runs the callback.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from kafkalab.client.producer.accumulator import BATCH_OVERHEAD_BYTES, RecordAccumulator, record_size_upper_bound
from kafkalab.client.producer.config import ProducerConfig
from kafkalab.client.producer.errors import BlockTimeoutError
from kafkalab.client.producer.futures import Callback, Driver, FutureRecordMetadata, RecordMetadata
from kafkalab.client.producer.metadata import ClusterMetadata
from kafkalab.client.producer.partitioner import BuiltInPartitioner
from kafkalab.client.producer.sender import OutboundRequest, Sender
from kafkalab.errors import KafkaError, RecordTooLargeError
from kafkalab.records.model import Header

Serializer = Callable[[str, Any], bytes | None]


def bytes_serializer(topic: str, data: Any) -> bytes | None:
    """Kafka's ``ByteArraySerializer``; ``str`` is encoded as UTF-8 (``StringSerializer``)."""
    if data is None or isinstance(data, bytes):
        return data
    if isinstance(data, str):
        return data.encode("utf-8")
    raise TypeError(f"cannot serialize {type(data).__name__} for topic {topic!r}: give bytes or str, "
                    "or pass a key_serializer / value_serializer")


class ProducerRecord(NamedTuple):
    """What an application sends (Kafka's ``ProducerRecord``). Immutable; a named tuple rather
    than a frozen dataclass because an application builds one per record."""

    topic: str
    value: Any = None
    key: Any = None
    partition: int | None = None
    timestamp: int | None = None
    headers: tuple[Header, ...] = ()


class ProducerInterceptor(Protocol):
    """Kafka's ``ProducerInterceptor``: ``on_send`` may change a record before it is serialized;
    ``on_acknowledgement`` sees every outcome, before the record's callback runs."""

    def on_send(self, record: ProducerRecord) -> ProducerRecord: ...

    def on_acknowledgement(self, metadata: RecordMetadata | None, error: KafkaError | None) -> None: ...


@dataclass(slots=True)
class PendingSend:
    """A record waiting in ``send`` for metadata or memory, until ``deadline_ms``."""

    record: ProducerRecord
    key: bytes | None
    value: bytes | None
    future: FutureRecordMetadata
    deadline_ms: int
    waiting_for: str = "metadata"


@dataclass(slots=True)
class Interceptors:
    chain: Sequence[ProducerInterceptor] = field(default_factory=tuple)

    def on_send(self, record: ProducerRecord) -> ProducerRecord:
        for interceptor in self.chain:
            record = interceptor.on_send(record)
        return record

    def on_acknowledgement(self, metadata: RecordMetadata | None, error: KafkaError | None) -> None:
        for interceptor in self.chain:
            interceptor.on_acknowledgement(metadata, error)


class Producer:
    """The sans-I/O producer. Not thread-safe; an adapter owns it and feeds it time and answers."""

    def __init__(self, config: ProducerConfig, *, rng: random.Random,
                 key_serializer: Serializer = bytes_serializer, value_serializer: Serializer = bytes_serializer,
                 interceptors: Sequence[ProducerInterceptor] = (), driver: Driver | None = None) -> None:
        self.config = config
        self.metadata = ClusterMetadata(config.metadata_max_age_ms)
        self.accumulator = RecordAccumulator(config)
        self.sender = Sender(config, self.accumulator, self.metadata)
        self.partitioner = BuiltInPartitioner(config.batch_size, rng)
        self.key_serializer, self.value_serializer = key_serializer, value_serializer
        self.interceptors = Interceptors(tuple(interceptors))
        self.driver = driver  # how future.get() runs the adapter's I/O
        self._record_bytes_max = min(config.max_request_size, config.buffer_memory)  # see _refuse_size
        # A batch filled or opened since the last poll: Kafka's send() wakes the Sender thread then
        self.wakeup_needed = False

    def send(self, record: ProducerRecord, now_ms: int, callback: Callback | None = None
             ) -> FutureRecordMetadata | PendingSend:
        """Intercept, serialize and try to append ``record``; see :meth:`resume` for a pending one."""
        callbacks: tuple[Callback, ...] = () if callback is None else (callback,)
        if self.interceptors.chain:  # they hear of the outcome before the callback
            record = self.interceptors.on_send(record)
            callbacks = (self.interceptors.on_acknowledgement, *callbacks)
        key = self.key_serializer(record.topic, record.key)
        value = self.value_serializer(record.topic, record.value)
        future = FutureRecordMetadata(self.driver, callbacks, -1 if key is None else len(key),
                                      -1 if value is None else len(value))
        return self._append(record, key, value, future, now_ms, None)

    def resume(self, pending: PendingSend, now_ms: int) -> FutureRecordMetadata | PendingSend:
        """Append a pending record if it can be now; past its deadline, fail it (and raise)."""
        return self._append(pending.record, pending.key, pending.value, pending.future, now_ms, pending)

    def _append(self, record: ProducerRecord, key: bytes | None, value: bytes | None,
                future: FutureRecordMetadata, now_ms: int, pending: PendingSend | None
                ) -> FutureRecordMetadata | PendingSend:
        count = self.metadata.partition_count(record.topic)
        if count is None:
            self.metadata.want(record.topic)
            return self._wait(pending or PendingSend(record, key, value, future, now_ms + self.config.max_block_ms),
                              now_ms, "metadata")
        sticky = record.partition is None and key is None
        available = self.metadata.available(record.topic) if sticky else ()
        try:
            size = record_size_upper_bound(key, value, record.headers) + BATCH_OVERHEAD_BYTES
            if size > self._record_bytes_max:
                self._refuse_size(size)
            partition = self.partitioner.partition(record.topic, key, record.partition, count, available)
        except KafkaError as error:
            future.fail(error)  # as Kafka: an ApiException fails the future, not send()
            return future
        timestamp = now_ms if record.timestamp is None else record.timestamp
        result = self.accumulator.append((record.topic, partition), timestamp, key, value,
                                         record.headers, now_ms, future)
        if result.blocked:
            return self._wait(pending or PendingSend(record, key, value, future, now_ms + self.config.max_block_ms),
                              now_ms, "memory")
        if result.enable_switch:  # the batch is full, or a new one opened behind another
            self.wakeup_needed = True
        if pending is not None and pending.waiting_for == "memory":
            self.accumulator.blocked_appends -= 1
        if sticky:
            self.partitioner.on_append(record.topic, partition, result.appended_bytes, result.enable_switch,
                                       count, available)
        return future

    def _wait(self, pending: PendingSend, now_ms: int, what: str) -> PendingSend:
        if what == "memory" and pending.waiting_for != "memory":
            self.accumulator.blocked_appends += 1
        pending.waiting_for = what
        if now_ms < pending.deadline_ms:
            return pending
        if what == "memory":
            self.accumulator.blocked_appends -= 1
            message = f"Failed to allocate memory within the configured max blocking time {self.config.max_block_ms} ms."
        else:
            message = f"Topic {pending.record.topic} not present in metadata after {self.config.max_block_ms} ms."
        error = BlockTimeoutError(message)
        pending.future.fail(error)
        raise error

    def _refuse_size(self, size: int) -> None:
        """Raise for a record whose smallest batch (``size`` bytes) no request or buffer can hold."""
        if size > self.config.max_request_size:
            raise RecordTooLargeError(
                f"The message is {size} bytes when serialized which is larger than {self.config.max_request_size}, "
                "which is the value of the max.request.size configuration.")
        if size > self.config.buffer_memory:
            raise RecordTooLargeError(
                f"The message is {size} bytes when serialized which is larger than the total memory buffer "
                f"you have configured with the buffer.memory configuration ({self.config.buffer_memory}).")

    # --- what the adapter calls -----------------------------------------------------------------

    def poll(self, now_ms: int) -> list[OutboundRequest]:
        self.wakeup_needed = False
        return self.sender.poll(now_ms)

    def on_response(self, request_id: int, body: Any, now_ms: int) -> None:
        self.sender.on_response(request_id, body, now_ms)

    def on_failure(self, request_id: int, now_ms: int) -> None:
        self.sender.on_failure(request_id, now_ms)

    def next_wakeup_ms(self, now_ms: int) -> int | None:
        return self.sender.next_wakeup_ms(now_ms)

    def begin_flush(self) -> None:
        """Make every batch ready now (Kafka's ``flush``); done when :meth:`flushed`."""
        self.accumulator.flushing = True

    def flushed(self) -> bool:
        done = not self.accumulator.incomplete
        if done:
            self.accumulator.flushing = False
        return done
