"""MESSAGE_TOO_LARGE: a refused batch of several records is split and sent again, a refused
single record fails (Kafka's ``Sender.completeBatch`` and ``RecordAccumulator.splitAndReenqueue``).

The broker here is a few lines that refuse any batch over ``max.message.bytes`` as Kafka's
``LogValidator`` does; the batches the producer sends are read with kafka-python's
``DefaultRecordBatch``, a decoder nobody here wrote."""

from __future__ import annotations

import random
from types import SimpleNamespace as NS
from typing import Any

from kafka.record.default_records import DefaultRecordBatch

from kafkalab.client.producer.config import producer_config
from kafkalab.client.producer.futures import FutureRecordMetadata
from kafkalab.client.producer.producer import Producer, ProducerRecord
from kafkalab.client.producer.sender import OutboundRequest
from kafkalab.errors import ErrorCode, RecordTooLargeError
from kafkalab.protocol.api_keys import ApiKey
from tests.client.producer.test_sender import answer_setup, produces

VALUE = b"x" * 1024
MAX_MESSAGE_BYTES = 4000


class TinyBroker:
    """One partition; refuses batches over ``max.message.bytes``; checks idempotent sequences."""

    def __init__(self, max_message_bytes: int = MAX_MESSAGE_BYTES) -> None:
        self.max_message_bytes = max_message_bytes
        self.log: list[bytes] = []  # values, in offset order
        self.written: list[DefaultRecordBatch] = []
        self.refused = 0
        self.next_sequence: dict[tuple[int, int], int] = {}  # (producer id, epoch) -> next sequence

    def answer(self, request: OutboundRequest) -> Any:
        data = request.body["topic_data"][0]["partition_data"][0]["records"]
        batch = DefaultRecordBatch(bytes(data))
        code, base_offset = ErrorCode.NONE, len(self.log)
        expected = self.next_sequence.get((batch.producer_id, batch.producer_epoch), 0)
        if len(data) > self.max_message_bytes:
            code, self.refused = ErrorCode.MESSAGE_TOO_LARGE, self.refused + 1
        elif batch.has_producer_id() and batch.base_sequence != expected:
            code = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        else:
            if batch.has_producer_id():
                self.next_sequence[(batch.producer_id, batch.producer_epoch)] = expected + batch.records_count
            self.written.append(batch)
            self.log.extend(record.value for record in DefaultRecordBatch(bytes(data)))
        part = NS(index=0, error_code=int(code), base_offset=base_offset, log_append_time_ms=-1)
        return NS(responses=[NS(name="orders", partition_responses=[part])])


def run(core: Producer, broker: TinyBroker, now_ms: int, turns: int = 100) -> None:
    """Answer every request, in order, until nothing is left in flight."""
    for _ in range(turns):
        requests = core.poll(now_ms)
        for request in requests:
            if request.api_key == ApiKey.PRODUCE:
                core.on_response(request.request_id, broker.answer(request), now_ms)
            elif request.api_key == ApiKey.INIT_PRODUCER_ID and request.body["producer_id"] >= 0:  # a bump
                answer_setup(core, request, now_ms, producer_id=4000, epoch=request.body["producer_epoch"] + 1)
            else:
                answer_setup(core, request, now_ms)
        if not requests and not core.sender.in_flight:
            return
    raise AssertionError("the producer did not settle")


def fifteen_records(**properties: object) -> tuple[Producer, list[FutureRecordMetadata]]:
    core = Producer(producer_config({"linger.ms": 0, **properties}), rng=random.Random(0))
    core.metadata.want("orders")
    run(core, TinyBroker(), 0)  # Metadata, InitProducerId
    futures = [core.send(ProducerRecord("orders", VALUE + bytes([i]), partition=0), 1) for i in range(15)]
    assert all(isinstance(f, FutureRecordMetadata) for f in futures)
    return core, futures  # type: ignore[return-value]


def test_a_refused_batch_is_split_until_every_part_fits() -> None:
    core, futures = fifteen_records(acks="1", **{"max.in.flight.requests.per.connection": 1})
    broker = TinyBroker()
    run(core, broker, 1)
    assert broker.log == [VALUE + bytes([i]) for i in range(15)]  # every record once, in order
    assert [f.get().offset for f in futures] == list(range(15))
    # 15 -> 7 + 7 + 1 -> (3 + 3 + 1) + (3 + 3 + 1) + 1: the sender's docstring's example
    assert [b.records_count for b in broker.written] == [3, 3, 1, 3, 3, 1, 1]
    assert all(b.size_in_bytes <= MAX_MESSAGE_BYTES for b in broker.written)
    assert broker.refused == 3  # the batch of 15, both parts of 7
    assert core.sender.failures == [] and core.sender.splits == 3 + 3 + 3
    assert core.accumulator.available_bytes == core.config.buffer_memory  # split parts hold none
    assert core.flushed()


def test_split_batches_keep_the_sequences_of_the_refused_one() -> None:
    core, futures = fifteen_records()  # idempotent, acks=all, 5 in flight
    broker = TinyBroker()
    run(core, broker, 1)
    assert broker.log == [VALUE + bytes([i]) for i in range(15)]
    assert [b.base_sequence for b in broker.written] == [0, 3, 6, 7, 10, 13, 14]
    assert {(b.producer_id, b.producer_epoch) for b in broker.written} == {(4000, 0)}  # no epoch bump
    assert [f.get().offset for f in futures] == list(range(15))
    assert not core.sender.epoch_bump_needed


def test_a_batch_under_the_limit_after_one_split_is_written_whole() -> None:
    core, futures = fifteen_records(acks="1", **{"batch.size": 8192})
    broker = TinyBroker(max_message_bytes=8192)
    run(core, broker, 1)
    # batch.size 8192 made batches of 7 + 7 + 1 records, each under max.message.bytes
    assert broker.refused == 0 and [b.records_count for b in broker.written] == [7, 7, 1]


def test_a_single_record_too_large_fails_with_record_too_large() -> None:
    core = Producer(producer_config({"linger.ms": 0}), rng=random.Random(0))
    core.metadata.want("orders")
    broker = TinyBroker()
    run(core, broker, 0)
    outcomes: list[Any] = []
    big = core.send(ProducerRecord("orders", b"y" * 5000, partition=0), 1,
                    callback=lambda metadata, error: outcomes.append((metadata, error)))
    small = core.send(ProducerRecord("orders", b"after", partition=0), 1)
    assert isinstance(big, FutureRecordMetadata) and isinstance(small, FutureRecordMetadata)
    # batch.size is 16384: both records are in one batch, which is split, then the big one refused
    run(core, broker, 1)
    run(core, broker, 200)  # the epoch bump waits retry.backoff.ms after the first InitProducerId
    [(metadata, error)] = outcomes
    assert metadata is None and isinstance(error, RecordTooLargeError)
    assert error.error_code is ErrorCode.MESSAGE_TOO_LARGE
    assert small.get().offset == 0 and broker.log == [b"after"]


def test_a_refused_record_bumps_the_epoch_so_the_next_batch_is_not_lost() -> None:
    """The refused record took no sequence; the batch behind it, already in flight, is refused as
    out of order and is sent again under the next epoch from sequence 0 (KIP-360)."""
    core = Producer(producer_config({"linger.ms": 0}), rng=random.Random(0))
    core.metadata.want("orders")
    broker = TinyBroker()
    run(core, broker, 0)
    big = core.send(ProducerRecord("orders", b"y" * 5000, partition=0), 1)
    [first] = produces(core.poll(1))
    small = core.send(ProducerRecord("orders", b"after", partition=0), 2)
    [second] = produces(core.poll(2))
    core.on_response(first.request_id, broker.answer(first), 3)
    core.on_response(second.request_id, broker.answer(second), 3)
    assert isinstance(big, FutureRecordMetadata) and isinstance(big.exception, RecordTooLargeError)
    assert isinstance(small, FutureRecordMetadata) and not small.done()
    run(core, broker, 200)
    assert small.get().offset == 0 and broker.log == [b"after"]
    [written] = broker.written
    assert (written.producer_epoch, written.base_sequence) == (1, 0)


def test_split_parts_keep_the_delivery_timeout_of_the_refused_batch() -> None:
    core, futures = fifteen_records(acks="1", **{"delivery.timeout.ms": 30_000, "request.timeout.ms": 1000})
    [request] = produces(core.poll(1))
    core.on_response(request.request_id, TinyBroker().answer(request), 2)
    assert core.sender.splits == 3 and not any(f.done() for f in futures)
    core.poll(30_001)  # 30 s after the records were appended, not after the split
    assert all(f.exception is not None and f.exception.error_code is ErrorCode.REQUEST_TIMED_OUT for f in futures)
