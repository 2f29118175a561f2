"""The sender without any network: requests out, hand-made answers in (Kafka's error codes),
checked against what Kafka's Sender does -- retries, metadata refresh, sequences, KIP-360."""

from __future__ import annotations

import random
from types import SimpleNamespace as NS
from typing import Any

from kafkalab.client.producer.config import producer_config
from kafkalab.client.producer.errors import ProduceFailedError
from kafkalab.client.producer.producer import PendingSend, Producer, ProducerRecord
from kafkalab.client.producer.sender import OutboundRequest
from kafkalab.errors import ErrorCode
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.records.codec import iter_batches


def metadata(leader: int = 1) -> Any:
    return NS(brokers=[NS(node_id=1, host="h", port=1), NS(node_id=2, host="h", port=2)],
              topics=[NS(error_code=0, name="orders", partitions=[NS(partition_index=0, leader_id=leader, error_code=0)])])


def producer(**properties: object) -> Producer:
    core = Producer(producer_config({"linger.ms": 0, **properties}), rng=random.Random(0))
    core.metadata.want("orders")
    return core


def start(core: Producer, now_ms: int = 0) -> None:
    """Answer the first Metadata (and InitProducerId, when idempotent) requests."""
    for request in core.poll(now_ms):
        answer_setup(core, request, now_ms)
    for request in core.poll(now_ms):
        answer_setup(core, request, now_ms)


def answer_setup(core: Producer, request: OutboundRequest, now_ms: int, producer_id: int = 4000, epoch: int = 0) -> None:
    if request.api_key == ApiKey.METADATA:
        core.on_response(request.request_id, metadata(), now_ms)
    elif request.api_key == ApiKey.INIT_PRODUCER_ID:
        core.on_response(request.request_id, NS(error_code=0, producer_id=producer_id, producer_epoch=epoch), now_ms)


def produce_answer(request: OutboundRequest, code: ErrorCode, base_offset: int = 0) -> Any:
    parts = [NS(index=p["index"], error_code=int(code), base_offset=base_offset, log_append_time_ms=-1)
             for t in request.body["topic_data"] for p in t["partition_data"]]
    return NS(responses=[NS(name="orders", partition_responses=parts)])


def produces(requests: list[OutboundRequest]) -> list[OutboundRequest]:
    return [r for r in requests if r.api_key == ApiKey.PRODUCE]


def header(request: OutboundRequest) -> Any:
    return next(iter(iter_batches(request.body["topic_data"][0]["partition_data"][0]["records"]))).header


def test_idempotent_producer_asks_for_a_producer_id_before_any_produce() -> None:
    core = producer()
    pending = core.send(ProducerRecord("orders", b"v"), 0)
    assert isinstance(pending, PendingSend) and pending.waiting_for == "metadata"
    first = core.poll(0)
    assert [r.api_key for r in first] == [ApiKey.METADATA, ApiKey.INIT_PRODUCER_ID]
    core.on_response(first[0].request_id, metadata(), 0)
    future = core.resume(pending, 0)
    assert produces(core.poll(0)) == []  # no producer id yet: nothing is drained
    answer_setup(core, first[1], 0, producer_id=77, epoch=3)
    [request] = produces(core.poll(0))
    assert (header(request).producer_id, header(request).producer_epoch, header(request).base_sequence) == (77, 3, 0)
    assert request.body["acks"] == -1
    core.on_response(request.request_id, produce_answer(request, ErrorCode.NONE, 41), 0)
    assert future.get().offset == 41  # type: ignore[union-attr]


def test_not_leader_refreshes_metadata_and_retries_after_the_backoff() -> None:
    core = producer(acks="1")
    start(core)
    future = core.send(ProducerRecord("orders", b"v"), 0)
    [request] = produces(core.poll(0))
    core.on_response(request.request_id, produce_answer(request, ErrorCode.NOT_LEADER_OR_FOLLOWER), 10)
    assert core.metadata.update_requested and not future.done()
    assert produces(core.poll(50)) == []  # retry.backoff.ms is 100
    retried = core.poll(110)
    assert [r.api_key for r in retried] == [ApiKey.METADATA, ApiKey.PRODUCE]
    assert retried[1].body == request.body  # the same bytes again


def test_retries_run_out() -> None:
    core = producer(acks="1", retries=1)
    start(core)
    future = core.send(ProducerRecord("orders", b"v"), 0)
    now = 0
    for _ in range(2):
        [request] = produces(core.poll(now))
        core.on_response(request.request_id, produce_answer(request, ErrorCode.NOT_ENOUGH_REPLICAS), now)
        now += 200
    assert isinstance(future.exception, ProduceFailedError)
    assert future.exception.error_code is ErrorCode.NOT_ENOUGH_REPLICAS


def test_a_fatal_error_is_not_retried() -> None:
    core = producer(acks="1")
    start(core)
    future = core.send(ProducerRecord("orders", b"v"), 0)
    [request] = produces(core.poll(0))
    core.on_response(request.request_id, produce_answer(request, ErrorCode.MESSAGE_TOO_LARGE), 0)
    assert future.exception is not None and future.exception.error_code is ErrorCode.MESSAGE_TOO_LARGE


def test_acks_0_completes_on_send_with_offset_minus_1() -> None:
    core = producer(acks="0")
    start(core)
    future = core.send(ProducerRecord("orders", b"v"), 0)
    [request] = produces(core.poll(0))
    assert not request.expect_response and future.get().offset == -1  # type: ignore[union-attr]


def test_max_in_flight_limits_requests_per_broker() -> None:
    core = producer(acks="1", **{"max.in.flight.requests.per.connection": 2})
    start(core)
    sent = []
    for i in range(4):
        core.send(ProducerRecord("orders", b"v", partition=0), i)
        sent += produces(core.poll(i))
    assert len(sent) == 2
    core.on_response(sent[0].request_id, produce_answer(sent[0], ErrorCode.NONE), 5)
    assert len(produces(core.poll(5))) == 1


def test_sequences_advance_by_record_count_and_a_gap_retries_behind_the_earlier_batch() -> None:
    core = producer()
    start(core)
    requests = []
    for i, count in enumerate((3, 2)):
        for _ in range(count):
            core.send(ProducerRecord("orders", b"v"), i)
        requests += produces(core.poll(i))
    assert [header(r).base_sequence for r in requests] == [0, 3]
    first, second = requests
    core.on_failure(first.request_id, 10)  # lost: retried
    core.on_response(second.request_id, produce_answer(second, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER), 11)
    assert not core.sender.epoch_bump_needed  # an earlier batch is outstanding: just retry
    again = produces(core.poll(200))
    assert [header(r).base_sequence for r in again] == [0]  # one at a time, in order
    core.on_response(again[0].request_id, produce_answer(again[0], ErrorCode.NONE), 201)
    assert [header(r).base_sequence for r in produces(core.poll(320))] == [3]


def test_unknown_producer_id_bumps_the_epoch_and_restarts_sequences() -> None:
    """KIP-360: the broker forgot the producer; the same producer id gets the next epoch."""
    core = producer()
    start(core)
    core.send(ProducerRecord("orders", b"a"), 0)
    [first] = produces(core.poll(0))
    core.on_response(first.request_id, produce_answer(first, ErrorCode.NONE), 1)
    future = core.send(ProducerRecord("orders", b"b"), 2)
    [second] = produces(core.poll(2))
    assert header(second).base_sequence == 1
    core.on_response(second.request_id, produce_answer(second, ErrorCode.UNKNOWN_PRODUCER_ID), 3)
    [bump] = core.poll(200)
    assert bump.api_key == ApiKey.INIT_PRODUCER_ID
    assert (bump.body["producer_id"], bump.body["producer_epoch"]) == (4000, 0)
    answer_setup(core, bump, 200, producer_id=4000, epoch=1)
    [retry] = produces(core.poll(201))
    assert (header(retry).producer_epoch, header(retry).base_sequence) == (1, 0)
    core.on_response(retry.request_id, produce_answer(retry, ErrorCode.NONE, 1), 202)
    assert future.get().offset == 1  # type: ignore[union-attr]


def test_out_of_order_with_nothing_earlier_fails_the_batch_and_bumps_the_epoch() -> None:
    core = producer()
    start(core)
    future = core.send(ProducerRecord("orders", b"a"), 0)
    [request] = produces(core.poll(0))
    core.on_response(request.request_id, produce_answer(request, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER), 1)
    assert future.exception is not None and future.exception.error_code is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert [r.api_key for r in core.poll(200)] == [ApiKey.INIT_PRODUCER_ID]


def test_duplicate_sequence_counts_as_written() -> None:
    core = producer()
    start(core)
    future = core.send(ProducerRecord("orders", b"a"), 0)
    [request] = produces(core.poll(0))
    core.on_response(request.request_id, produce_answer(request, ErrorCode.DUPLICATE_SEQUENCE_NUMBER, 7), 1)
    assert future.get().offset == 7  # type: ignore[union-attr]
