"""The controller's side of forwarding: an Envelope is unwrapped, decided and wrapped back, or
refused as Kafka's ``EnvelopeUtils`` refuses it; AllocateProducerIds checks the sender's epoch.
Frames are built with kafkalab's codec and cross-checked field by field against Kafka's JSON in
``tests/protocol``; here the envelope's contents are read back with kafka-python's codec."""

from __future__ import annotations

import random
import uuid
from typing import Any

from kafka.protocol.admin import CreateTopicsResponse

from kafkalab.controller.controller_node import ControllerNode
from kafkalab.controller.heartbeats import BrokerHeartbeatManager
from kafkalab.controller.local import LocalController
from kafkalab.errors import ErrorCode
from kafkalab.metadata.image import BrokerRegistration
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.header import decode_response, encode_request
from kafkalab.protocol.messages.forwarding import (
    ALLOCATE_PRODUCER_IDS_REQUEST,
    ANONYMOUS_PRINCIPAL,
    ENVELOPE_REQUEST,
)
from kafkalab.protocol.messages.produce import PRODUCE_REQUEST
from kafkalab.protocol.messages.topics import CREATE_TOPICS_REQUEST

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qk"
BROKER_CONNECTION = 5


def _node(brokers: int = 3) -> ControllerNode:
    controller = LocalController([], random.Random(3))
    node = ControllerNode(controller, CLUSTER, BrokerHeartbeatManager(9_000))
    for broker_id in range(1, brokers + 1):
        epoch = controller.register_fenced_broker(BrokerRegistration(
            broker_id, -1, "127.0.0.1", 9090 + broker_id, incarnation_id=uuid.UUID(int=broker_id)))
        node.heartbeats.register(broker_id, epoch, 0)
        controller.unfence_broker(broker_id)
    return node


def _ask(node: ControllerNode, api_key: int, version: int, body: Any) -> Any:
    node.handle(BROKER_CONNECTION, encode_request(api_key, version, 41, "broker-2", body)[4:], 0)
    ((connection, frame),) = node.take_responses()
    assert connection == BROKER_CONNECTION
    correlation_id, response = decode_response(api_key, version, frame)
    assert correlation_id == 41
    return response


def _envelope(inner: bytes) -> Any:
    return ENVELOPE_REQUEST.cls(request_data=inner, request_principal=ANONYMOUS_PRINCIPAL,
                                client_host_address=bytes([127, 0, 0, 1]))


def _create_topics(name: str, replication_factor: int) -> bytes:
    topic = CREATE_TOPICS_REQUEST.cls.CreatableTopic
    body = CREATE_TOPICS_REQUEST.cls(topics=(topic(name=name, num_partitions=2, replication_factor=replication_factor,
                                                   assignments=(), configs=()),), timeout_ms=1000)
    return encode_request(ApiKey.CREATE_TOPICS, 7, 900, "client-a", body)[4:]


def test_envelope_carries_the_clients_request_and_response() -> None:
    node = _node()
    answer = _ask(node, ApiKey.ENVELOPE, 0, _envelope(_create_topics("orders", 3)))
    assert answer.error_code == 0
    # The response data is the CreateTopics v7 response the client would have got, header
    # and all: kafka-python reads it with the client's correlation id.
    data = bytes(answer.response_data)
    assert int.from_bytes(data[:4], "big") == 900
    kp = CreateTopicsResponse[7].decode(data[5:])  # correlation id, empty tagged fields
    assert [(t.name, t.error_code, t.num_partitions, t.replication_factor) for t in kp.topics] == [
        ("orders", 0, 2, 3)]
    assert sorted(node.controller.image.topics["orders"].partitions[0].replicas) == [1, 2, 3]


def test_envelope_answers_the_controllers_rules() -> None:
    node = _node(brokers=2)
    answer = _ask(node, ApiKey.ENVELOPE, 0, _envelope(_create_topics("orders", 3)))
    _, inner = decode_response(ApiKey.CREATE_TOPICS, 7, bytes(answer.response_data))
    (topic,) = inner.topics
    assert topic.error_code == ErrorCode.INVALID_REPLICATION_FACTOR
    assert topic.error_message.endswith("cannot be reached because only 2 broker(s) are registered.")


def test_envelope_refuses_what_may_not_be_forwarded() -> None:
    node = _node()
    produce = PRODUCE_REQUEST.cls(transactional_id=None, acks=1, timeout_ms=1000, topic_data=())
    not_forwardable = encode_request(ApiKey.PRODUCE, 7, 1, "client-a", produce)[4:]
    for inner in (not_forwardable, b"\x00\x13\x00", _create_topics("orders", 3)[:-6]):
        answer = _ask(node, ApiKey.ENVELOPE, 0, _envelope(inner))
        assert answer.error_code == ErrorCode.INVALID_REQUEST and answer.response_data is None
    assert "orders" not in node.controller.image.topics


def test_allocate_producer_ids_needs_the_current_broker_epoch() -> None:
    node = _node()
    epoch = node.controller.image.brokers[2].broker_epoch
    R = ALLOCATE_PRODUCER_IDS_REQUEST.cls
    first = _ask(node, ApiKey.ALLOCATE_PRODUCER_IDS, 0, R(broker_id=2, broker_epoch=epoch))
    second = _ask(node, ApiKey.ALLOCATE_PRODUCER_IDS, 0, R(broker_id=3, broker_epoch=node.controller.image.brokers[3].broker_epoch))
    assert (first.error_code, first.producer_id_start, first.producer_id_len) == (0, 0, 1000)
    assert (second.producer_id_start, second.producer_id_len) == (1000, 1000)
    stale = _ask(node, ApiKey.ALLOCATE_PRODUCER_IDS, 0, R(broker_id=2, broker_epoch=epoch - 1))
    assert stale.error_code == ErrorCode.STALE_BROKER_EPOCH
    assert node.controller.image.next_producer_id == 2000
