"""The RecordAccumulator: records wait here, batched per partition, until the sender drains them.

Theory of operation
-------------------
``send`` never writes to the network. It appends the serialized record to the last open
:class:`ProducerBatch` of its partition, or opens a new batch, and returns. The sender asks
:meth:`RecordAccumulator.ready` which brokers have a partition worth sending and then
:meth:`~RecordAccumulator.drain` takes at most one batch per partition for each, up to
``max.request.size`` per request. A partition's first batch is *sendable* when

* it is full (``batch.size`` reached) or a second batch already waits behind it, or
* it has waited ``linger.ms`` since it opened (``retry.backoff.ms`` since its last attempt, for
  a retry, which is not sent before that), or
* memory has run out, or ``flush`` was called::

        orders-0: [#####][##   ]       full behind -> ready now
        orders-1: [#    ]              opened 3 ms ago, linger.ms 5 -> ready in 2 ms
        orders-2: (empty)

Memory is bounded by ``buffer.memory``: a new batch reserves ``max(batch.size, record size)``
bytes and gives them back when its outcome is known. When no memory is left, ``append`` reports
:attr:`AppendResult.blocked` and the caller waits (up to ``max.block.ms``, Kafka's
``BufferPool.allocate``) while the sender frees some.

Worked example (``batch.size`` 16384, ``linger.ms`` 5): three 1 KiB records at t=0, 1 and 2 ms
share one batch of about 3.2 KB; nothing is ready until t=5, when the batch has lingered
5 ms. Twenty records at once fill a batch after 15 (16 KB), so the 16th opens a second batch and
the first is ready at once. Mirrors Kafka's ``RecordAccumulator`` and ``ProducerBatch``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import NamedTuple

from kafkalab.client.producer.config import ProducerConfig
from kafkalab.client.producer.futures import FutureRecordMetadata
from kafkalab.errors import KafkaError
from kafkalab.records.header import (
    LOG_OVERHEAD,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    V2_HEADER_SIZE,
    increment_sequence,
)
from kafkalab.records.model import Header
from kafkalab.records.v2 import decode_v2, encode_record, seal_v2_batch

TopicPartition = tuple[str, int]
BATCH_OVERHEAD_BYTES = V2_HEADER_SIZE  # what one batch costs before its first record
RECORD_VARINTS_MAX_BYTES = 5 + 1 + 10 + 5 + 5 + 5 + 5  # length, attributes, deltas, key/value lengths, headers
REQUEST_OVERHEAD_BYTES = 64  # a Produce request's header and topic framing, as an estimate


def record_size_upper_bound(key: bytes | None, value: bytes | None, headers: tuple[Header, ...]) -> int:
    """At least the bytes :func:`encode_record` writes for this record (Kafka's
    ``DefaultRecord.sizeInUpperBound``): the payload plus the widest varints."""
    payload = (len(key) if key else 0) + (len(value) if value else 0)
    if headers:
        payload += sum(len(h.key) * 4 + (len(h.value) if h.value else 0) + 10 for h in headers)
    return payload + RECORD_VARINTS_MAX_BYTES


class ProducerBatch:
    """Records for one partition, encoded as they arrive, sealed into a v2 batch when drained.

    Not thread-safe; owned by the accumulator, then by the sender while it is in flight."""

    def __init__(self, topic: str, partition: int, created_ms: int, capacity_bytes: int) -> None:
        self.topic, self.partition = topic, partition
        self.created_ms = created_ms
        self.capacity_bytes = capacity_bytes  # memory reserved from buffer.memory
        self.records: list[bytes] = []  # each already a DefaultRecord
        self.futures: list[FutureRecordMetadata] = []  # one per record, in offset order
        self.size_bytes = BATCH_OVERHEAD_BYTES
        self.base_timestamp = 0
        self.max_timestamp = -1
        self.attempts = 0
        self.last_attempt_ms = created_ms
        self.producer_id, self.producer_epoch = NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        self.base_sequence = NO_SEQUENCE
        self.sealed: bytes | None = None
        self.closed = False  # no more appends: it turned a record away, or it was drained
        self.done = False

    @property
    def tp(self) -> TopicPartition:
        return (self.topic, self.partition)

    @property
    def record_count(self) -> int:
        return len(self.records)

    def try_append(self, timestamp: int, key: bytes | None, value: bytes | None,
                   headers: tuple[Header, ...], limit_bytes: int, future: FutureRecordMetadata) -> int:
        """Append one record if it fits under ``limit_bytes`` (an empty batch takes any record);
        returns the bytes appended, 0 when the record must go to a new batch."""
        if self.closed:
            return 0
        records = self.records
        count = len(records)
        if not count:
            self.base_timestamp = timestamp
        encoded = encode_record(count, timestamp - self.base_timestamp, key, value, headers)
        size = len(encoded)
        if count and self.size_bytes + size > limit_bytes:
            return 0
        records.append(encoded)
        self.size_bytes += size
        if timestamp > self.max_timestamp:
            self.max_timestamp = timestamp
        future.timestamp = timestamp
        self.futures.append(future)
        return size

    def is_full(self, batch_size: int) -> bool:
        return self.closed or self.size_bytes >= batch_size

    def set_producer_state(self, producer_id: int, producer_epoch: int, base_sequence: int) -> None:
        """Stamp the idempotence fields; a batch already sealed is sealed again (an epoch bump)."""
        self.producer_id, self.producer_epoch, self.base_sequence = producer_id, producer_epoch, base_sequence
        self.sealed = None

    def seal(self, attributes: int) -> bytes:
        """The batch's bytes, built once; a retry sends exactly the same bytes."""
        if self.sealed is None:
            self.sealed = seal_v2_batch(
                b"".join(self.records), len(self.records), base_offset=0,
                last_offset_delta=len(self.records) - 1, base_timestamp=self.base_timestamp,
                max_timestamp=self.max_timestamp, attributes=attributes, producer_id=self.producer_id,
                producer_epoch=self.producer_epoch, base_sequence=self.base_sequence)
        return self.sealed

    def complete(self, base_offset: int, log_append_time_ms: int) -> None:
        """The broker wrote the batch at ``base_offset`` (-1: unknown, as with acks=0)."""
        self.done = True
        topic, partition = self.topic, self.partition
        if base_offset < 0:
            for future in self.futures:
                future.complete_at(topic, partition, -1, log_append_time_ms)
            return
        for offset, future in enumerate(self.futures, base_offset):
            future.complete_at(topic, partition, offset, log_append_time_ms)

    def split(self, batch_size: int) -> list[ProducerBatch]:
        """The records of a batch the broker refused as too large (MESSAGE_TOO_LARGE), in smaller
        batches: Kafka's ``ProducerBatch.split``. Each keeps this batch's creation time (for
        ``delivery.timeout.ms``) and its records' futures; with idempotence they take this batch's
        sequences in order, so the partition's sequence numbers do not move.

        Kafka splits down to ``batch.size``, which helps when it packed more than that under
        compression; kafkalab never puts more than ``batch.size`` uncompressed bytes in a batch,
        so the parts also hold at most half the refused batch's bytes (two or three parts). Repeated refusals (a topic's
        ``max.message.bytes`` far below ``batch.size``) so reach single records in log2(n) rounds,
        where Kafka would split into the same batch until ``delivery.timeout.ms`` (KAFKA-8350).
        Worked example: ten 1 KiB records (about 10.4 KB) split into two batches of five."""
        assert len(self.records) > 1, "a single record cannot be split"
        half_bytes = BATCH_OVERHEAD_BYTES + (self.size_bytes - BATCH_OVERHEAD_BYTES + 1) // 2
        limit = min(batch_size, half_bytes)
        parts: list[ProducerBatch] = []
        records = decode_v2(seal_v2_batch(
            b"".join(self.records), len(self.records), base_offset=0, last_offset_delta=len(self.records) - 1,
            base_timestamp=self.base_timestamp, max_timestamp=self.max_timestamp, attributes=0)).records
        for record, future in zip(records, self.futures, strict=True):
            args = (record.timestamp, record.key, record.value, record.headers)
            if not parts or not parts[-1].try_append(*args, limit, future):
                if parts:
                    parts[-1].closed = True
                # off the accumulator's buffer.memory, as Kafka's split batches: the refused
                # batch's memory is given back instead
                parts.append(ProducerBatch(self.topic, self.partition, self.created_ms, capacity_bytes=0))
                parts[-1].try_append(*args, limit, future)
        parts[-1].closed = True
        if self.base_sequence != NO_SEQUENCE:
            sequence = self.base_sequence
            for part in parts:
                part.set_producer_state(self.producer_id, self.producer_epoch, sequence)
                sequence = increment_sequence(sequence, part.record_count)
        self.done = True
        return parts

    def fail(self, error: KafkaError) -> None:
        self.done = True
        for future in self.futures:
            future.fail(error)

    def __repr__(self) -> str:
        return (f"ProducerBatch({self.topic}-{self.partition}, {self.record_count} records, "
                f"{self.size_bytes} B, seq {self.base_sequence}, attempts {self.attempts})")


class AppendResult(NamedTuple):
    """What an append did: ``future`` is None exactly when ``blocked`` (no memory left).
    One per record, hence a named tuple, built with :data:`_new_result`."""

    future: FutureRecordMetadata | None
    appended_bytes: int = 0
    new_batch: bool = False
    enable_switch: bool = False  # the partitioner may leave this partition (KIP-794)

    @property
    def blocked(self) -> bool:
        return self.future is None


@dataclass(frozen=True, slots=True)
class ReadyCheck:
    """Brokers with something sendable now, and when to look again if nothing is."""

    nodes: frozenset[int]
    next_check_ms: int | None
    unknown_leader_topics: frozenset[str]


Leaders = Callable[[TopicPartition], int | None]
# tuple.__new__ builds a named tuple in C; the class's own __new__ is a Python function, a
# noticeable cost when paid once per record: _new_result(AppendResult, (future, bytes, new, switch))
_new_result = tuple.__new__


class RecordAccumulator:
    """Per-partition queues of batches, and the ``buffer.memory`` they use. Not thread-safe;
    shared by the producer's ``send`` and its sender (Kafka guards it with locks; here one
    thread runs both)."""

    def __init__(self, config: ProducerConfig) -> None:
        self.config = config
        self.batches: dict[TopicPartition, deque[ProducerBatch]] = {}
        self.available_bytes = config.buffer_memory
        self.incomplete: set[ProducerBatch] = set()  # appended and not yet answered, for flush()
        self.flushing = False
        self.blocked_appends = 0  # appends waiting for memory: they make every batch ready
        self._drain_index: dict[int, int] = {}

    def append(self, tp: TopicPartition, timestamp: int, key: bytes | None, value: bytes | None,
               headers: tuple[Header, ...], now_ms: int, future: FutureRecordMetadata) -> AppendResult:
        queue = self.batches.get(tp)
        if queue is None:
            queue = self.batches[tp] = deque()
        limit = self.config.batch_size
        if queue:
            appended = queue[-1].try_append(timestamp, key, value, headers, limit, future)
            if appended:
                return _new_result(AppendResult, (future, appended, False, queue[-1].is_full(limit)))
            queue[-1].closed = True  # a batch that turned a record away takes no more
        record_bytes = BATCH_OVERHEAD_BYTES + record_size_upper_bound(key, value, headers)
        capacity = max(limit, record_bytes)
        if capacity > self.available_bytes:
            return AppendResult(None)
        self.available_bytes -= capacity
        batch = ProducerBatch(tp[0], tp[1], now_ms, capacity)
        appended = batch.try_append(timestamp, key, value, headers, limit, future)
        assert appended, "an empty batch takes any record"
        queue.append(batch)
        self.incomplete.add(batch)
        return _new_result(AppendResult, (future, appended, True, True))

    def ready(self, leaders: Leaders, now_ms: int, muted: Callable[[TopicPartition], bool]) -> ReadyCheck:
        """Kafka's ``RecordAccumulator.ready``: nodes whose partitions have a sendable batch."""
        nodes: set[int] = set()
        unknown: set[str] = set()
        next_check: int | None = None
        for tp, queue in self.batches.items():
            if not queue:
                continue
            leader = leaders(tp)
            if leader is None:
                unknown.add(tp[0])
                continue
            if leader in nodes or muted(tp):
                continue
            batch = queue[0]
            backing_off = batch.attempts > 0 and now_ms - batch.last_attempt_ms < self.config.retry_backoff_ms
            wait_ms = self.config.retry_backoff_ms if batch.attempts > 0 else self.config.linger_ms
            due_ms = batch.last_attempt_ms + wait_ms
            full = len(queue) > 1 or batch.is_full(self.config.batch_size)
            urgent = self.flushing or self.blocked_appends > 0
            if not backing_off and (full or urgent or due_ms <= now_ms):
                nodes.add(leader)
            else:
                next_check = due_ms if next_check is None else min(next_check, due_ms)
        return ReadyCheck(frozenset(nodes), next_check, frozenset(unknown))

    def drain(self, leaders: Leaders, node: int, now_ms: int,
              can_send: Callable[[ProducerBatch], bool]) -> list[ProducerBatch]:
        """At most one batch per partition led by ``node``, up to ``max.request.size`` in all.

        Partitions are visited from a rotating start so that a busy partition cannot starve the
        others of room in the request (Kafka's ``drainIndex``)."""
        tps = sorted(tp for tp, queue in self.batches.items() if queue and leaders(tp) == node)
        if not tps:
            return []
        start = self._drain_index.get(node, 0) % len(tps)
        self._drain_index[node] = start + 1
        taken: list[ProducerBatch] = []
        size = REQUEST_OVERHEAD_BYTES
        for tp in tps[start:] + tps[:start]:
            batch = self.batches[tp][0]
            if batch.attempts > 0 and now_ms - batch.last_attempt_ms < self.config.retry_backoff_ms:
                continue
            if taken and size + batch.size_bytes > self.config.max_request_size:
                break
            if not can_send(batch):
                continue
            self.batches[tp].popleft()
            batch.closed = True
            batch.attempts += 1
            batch.last_attempt_ms = now_ms
            size += batch.size_bytes + LOG_OVERHEAD
            taken.append(batch)
        return taken

    def reenqueue(self, batch: ProducerBatch, now_ms: int) -> None:
        """Put a batch that will be retried back at the head of its partition's queue: in
        sequence order when it has one, so that a retry never overtakes an earlier batch."""
        batch.last_attempt_ms = now_ms
        self._insert_in_sequence_order(batch)

    def split_and_reenqueue(self, batch: ProducerBatch) -> int:
        """Kafka's ``splitAndReenqueue``: replace a batch refused as too large by its
        :meth:`~ProducerBatch.split` parts, at the head of its queue, as if never tried (no retry
        backoff; their ``linger.ms`` has passed). Returns how many parts there are."""
        parts = batch.split(self.config.batch_size)
        self.deallocate(batch)
        for part in reversed(parts):
            self.incomplete.add(part)
            self._insert_in_sequence_order(part)
        return len(parts)

    def _insert_in_sequence_order(self, batch: ProducerBatch) -> None:
        queue = self.batches.setdefault(batch.tp, deque())
        position = 0
        if batch.base_sequence != NO_SEQUENCE:
            while position < len(queue) and 0 <= queue[position].base_sequence < batch.base_sequence:
                position += 1
        queue.insert(position, batch)

    def expired(self, now_ms: int) -> list[ProducerBatch]:
        """Remove and return queued batches older than ``delivery.timeout.ms``."""
        gone: list[ProducerBatch] = []
        for queue in self.batches.values():
            while queue and now_ms - queue[0].created_ms >= self.config.delivery_timeout_ms:
                gone.append(queue.popleft())
        return gone

    def deallocate(self, batch: ProducerBatch) -> None:
        """Give a finished batch's memory back."""
        if batch in self.incomplete:
            self.incomplete.discard(batch)
            self.available_bytes += batch.capacity_bytes

    def queued(self) -> Iterable[ProducerBatch]:
        for queue in self.batches.values():
            yield from queue

    def has_undrained(self) -> bool:
        return any(self.batches.values())
