"""A cluster broker's ForwardingManager on its own: what the client gets when the envelope
succeeds, fails, the controller moved, or nobody answers (Kafka's ``ForwardingManager``); and the
producer id blocks of ``RPCProducerIdManager``."""

from __future__ import annotations

from typing import Any

from kafkalab.broker.forwarding import FORWARD_RETRY_TIMEOUT_MS, RETRY_BACKOFF_MS, ForwardingManager
from kafkalab.broker.handlers.producer_id import ProducerIdManager, ProducerIdsUnavailable
from kafkalab.broker.request import Request
from kafkalab.errors import ErrorCode
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.header import decode_request_body, decode_request_header, encode_response
from kafkalab.protocol.header import encode_request
from kafkalab.protocol.messages.forwarding import ALLOCATE_PRODUCER_IDS_RESPONSE, ENVELOPE_RESPONSE
from kafkalab.protocol.messages.topics import DELETE_TOPICS_REQUEST, DELETE_TOPICS_RESPONSE

_E = ENVELOPE_RESPONSE.cls


class _Clock:
    now_ms = 0

    def __call__(self) -> int:
        return self.now_ms


def _manager() -> tuple[ForwardingManager, list[tuple[Any, ...]], _Clock]:
    answered: list[tuple[Any, ...]] = []
    clock = _Clock()
    return ForwardingManager(lambda *answer: answered.append(answer), clock), answered, clock


def _delete_topics(manager: ForwardingManager, correlation_id: int = 12) -> bytes:
    body = DELETE_TOPICS_REQUEST.cls(topic_names=("orders", "payments"), timeout_ms=1000)
    frame = encode_request(ApiKey.DELETE_TOPICS, 4, correlation_id, "client-a", body)[4:]
    header = decode_request_header(frame)
    decoded = decode_request_body(ApiKey.DELETE_TOPICS, 4, memoryview(frame)[header.body_offset:])
    manager.forward(Request(7, header, decoded, 0, frame), "10.1.2.3")
    return frame


def test_the_envelope_carries_the_frame_and_the_answer_goes_back() -> None:
    manager, answered, _ = _manager()
    frame = _delete_topics(manager)
    (request,) = manager.poll(0)
    assert request.api_key == ApiKey.ENVELOPE
    assert request.body.request_data == frame and request.body.client_host_address == bytes([10, 1, 2, 3])
    assert manager.poll(0) == []  # one attempt in flight
    R = DELETE_TOPICS_RESPONSE.cls
    inner = R(responses=(R.DeletableTopicResult(name="orders", error_code=0),
                         R.DeletableTopicResult(name="payments", error_code=3)))
    data = b"".join(p if isinstance(p, bytes) else p.read_bytes() for p in encode_response(
        ApiKey.DELETE_TOPICS, 4, 12, inner))[4:]
    manager.on_response(request.request_id, _E(response_data=data, error_code=0), 3)
    ((connection, api_key, version, correlation_id, body),) = answered
    assert (connection, api_key, version, correlation_id) == (7, ApiKey.DELETE_TOPICS, 4, 12)
    assert body == inner


def test_not_controller_is_retried_and_other_envelope_errors_are_unknown_server_errors() -> None:
    manager, answered, clock = _manager()
    _delete_topics(manager)
    (first,) = manager.poll(0)
    manager.on_response(first.request_id, _E(error_code=ErrorCode.NOT_CONTROLLER), 1)
    assert answered == [] and manager.poll(1) == [] and manager.next_deadline_ms() == 1 + RETRY_BACKOFF_MS
    (second,) = manager.poll(1 + RETRY_BACKOFF_MS)
    manager.on_response(first.request_id, _E(error_code=0, response_data=b""), 2)  # a stale attempt: ignored
    assert answered == []
    manager.on_response(second.request_id, _E(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED), 200)
    ((*_, body),) = answered
    assert [(r.name, r.error_code) for r in body.responses] == [
        ("orders", ErrorCode.UNKNOWN_SERVER_ERROR), ("payments", ErrorCode.UNKNOWN_SERVER_ERROR)]


def test_response_data_that_does_not_parse_is_an_unknown_server_error() -> None:
    manager, answered, _ = _manager()
    _delete_topics(manager)
    (request,) = manager.poll(0)
    manager.on_response(request.request_id, _E(error_code=0, response_data=b"\x00\x00\x00\x0c\x00\xff"), 1)
    ((*_, body),) = answered
    assert {r.error_code for r in body.responses} == {ErrorCode.UNKNOWN_SERVER_ERROR}


def test_an_unreachable_controller_times_the_request_out_after_the_retry_timeout() -> None:
    manager, answered, clock = _manager()
    _delete_topics(manager)
    attempts = 0
    now_ms = 0
    while not answered:
        assert attempts < 1_000
        for request in manager.poll(now_ms):
            attempts += 1
            now_ms += 30_000  # the attempt's request timeout
            manager.on_failure(request.request_id, now_ms)
        deadline = manager.next_deadline_ms()
        now_ms = max(now_ms, deadline if deadline is not None else now_ms)
    ((*_, body),) = answered
    assert {r.error_code for r in body.responses} == {ErrorCode.REQUEST_TIMED_OUT}
    assert attempts == 2 and now_ms >= FORWARD_RETRY_TIMEOUT_MS


def test_producer_ids_prefetch_the_next_block_at_ninety_percent() -> None:
    manager = ProducerIdManager(2, lambda: 7)
    woken: list[bool] = []
    assert not manager.ready()
    manager.wait(woken.append)
    (request,) = manager.poll(0)
    assert (request.body.broker_id, request.body.broker_epoch) == (2, 7)
    R = ALLOCATE_PRODUCER_IDS_RESPONSE.cls
    manager.on_response(request.request_id, R(error_code=0, producer_id_start=5000, producer_id_len=10), 1)
    assert woken == [True]
    assert [manager.allocate() for _ in range(8)] == list(range(5000, 5008))
    assert manager.poll(2) == []  # 8 of 10 used: not yet
    assert manager.allocate() == 5008
    (prefetch,) = manager.poll(3)  # 9 of 10: ask for the next block now
    manager.on_response(prefetch.request_id, R(error_code=0, producer_id_start=9000, producer_id_len=10), 4)
    assert [manager.allocate() for _ in range(2)] == [5009, 9000]


def test_producer_ids_without_a_block_are_retriable() -> None:
    manager = ProducerIdManager(2, lambda: 7)
    woken: list[bool] = []
    manager.wait(woken.append)
    (request,) = manager.poll(0)
    manager.on_failure(request.request_id, 30_000)
    assert woken == [False]
    try:
        manager.allocate()
    except ProducerIdsUnavailable as error:
        assert error.error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    else:
        raise AssertionError("no id without a block")
    assert manager.poll(30_000) == [] and manager.poll(30_050) != []  # again after the backoff
