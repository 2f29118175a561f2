"""A broker's lifecycle against the controller, sans-I/O: the state table, and a broker's
manager paired with a real ControllerNode through encoded frames (no simulation)."""

from __future__ import annotations

import random
import uuid
from typing import Any

import pytest

from kafkalab.broker.lifecycle import (
    BROKER_HEARTBEAT_INTERVAL_MS,
    TRANSITIONS,
    BrokerIdentity,
    BrokerLifecycleManager,
    BrokerState,
    Event,
    LifecycleError,
    next_state,
)
from kafkalab.broker.metadata_follower import METADATA_FETCH_VERSION, MetadataFollower
from kafkalab.controller.controller_node import ControllerNode
from kafkalab.controller.heartbeats import BrokerHeartbeatManager
from kafkalab.controller.local import LocalController
from kafkalab.errors import ErrorCode
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.header import decode_response, encode_request

CLUSTER = "lifecycle-test"


def test_the_table_walks_a_whole_life():
    state = BrokerState.STARTING
    for event, expected in [(Event.REGISTERED, BrokerState.RECOVERY), (Event.FENCED, BrokerState.RECOVERY),
                            (Event.UNFENCED, BrokerState.RUNNING), (Event.FENCED, BrokerState.RECOVERY),
                            (Event.UNFENCED, BrokerState.RUNNING),
                            (Event.SHUTDOWN_ASKED, BrokerState.PENDING_CONTROLLED_SHUTDOWN),
                            (Event.UNFENCED, BrokerState.PENDING_CONTROLLED_SHUTDOWN),
                            (Event.SHOULD_SHUT_DOWN, BrokerState.SHUTTING_DOWN)]:
        state = next_state(state, event)
        assert state is expected, event


def test_an_event_without_a_transition_is_a_typed_error():
    assert (BrokerState.STARTING, Event.UNFENCED) not in TRANSITIONS
    with pytest.raises(LifecycleError, match="STARTING on UNFENCED"):
        next_state(BrokerState.STARTING, Event.UNFENCED)


class Pair:
    """One broker's lifecycle manager and metadata follower wired to a ControllerNode by frames."""

    def __init__(self) -> None:
        self.now_ms = 0
        self.controller = LocalController([], random.Random(1), clock_ms=lambda: self.now_ms)
        self.node = ControllerNode(self.controller, CLUSTER, BrokerHeartbeatManager(9_000))
        self.broker = BrokerLifecycleManager(BrokerIdentity(1, CLUSTER, uuid.UUID(int=5), "localhost", 9091))
        self.follower = MetadataFollower(1, CLUSTER)
        self.correlation = 0

    def call(self, api_key: int, version: int, body: Any) -> Any:
        self.correlation += 1
        self.node.handle(7, encode_request(api_key, version, self.correlation, "broker-1", body)[4:], self.now_ms)
        [(connection, frame)] = self.node.take_responses()
        assert connection == 7
        correlation, answer = decode_response(api_key, version, frame)
        assert correlation == self.correlation
        return answer

    def step(self) -> None:
        request = self.broker.poll(self.now_ms)
        if request is not None:
            self.broker.on_response(request.request_id, request.api_key,
                                    self.call(request.api_key, request.version, request.body), self.now_ms)

    def fetch_metadata(self) -> None:
        body = self.follower.next_fetch()
        image = self.follower.on_fetch_response(self.call(ApiKey.FETCH, METADATA_FETCH_VERSION,
                                                          _no_wait(body)))
        if image is not None:
            self.broker.metadata_replayed(image.offset, self.now_ms)


def _no_wait(body: Any) -> Any:
    import dataclasses
    return dataclasses.replace(body, max_wait_ms=0)


def test_register_catch_up_unfence_then_controlled_shutdown():
    pair = Pair()
    pair.step()  # BrokerRegistration
    assert pair.broker.state is BrokerState.RECOVERY
    epoch = pair.broker.broker_epoch
    assert epoch == pair.controller.image.offset  # the offset of its RegisterBrokerRecord
    assert pair.controller.image.brokers[1].fenced
    pair.step()  # a heartbeat before catching up: still fenced
    assert pair.broker.state is BrokerState.RECOVERY and pair.controller.image.brokers[1].fenced
    pair.fetch_metadata()  # replays up to its registration: it heartbeats at once
    assert pair.broker.next_deadline_ms() == pair.now_ms
    pair.step()
    assert pair.broker.state is BrokerState.RUNNING and not pair.controller.image.brokers[1].fenced
    assert pair.broker.next_deadline_ms() == pair.now_ms + BROKER_HEARTBEAT_INTERVAL_MS
    pair.controller.create_topic("orders", 2, 1)  # it leads both partitions
    pair.fetch_metadata()
    pair.now_ms += BROKER_HEARTBEAT_INTERVAL_MS
    pair.broker.begin_controlled_shutdown(pair.now_ms)
    pair.step()
    # The only replica cannot hand over: leaderless, the ISR keeps it, and it may not stop yet.
    assert pair.controller.image.brokers[1].in_controlled_shutdown
    assert pair.controller.image.partition("orders", 0).leader == -1
    assert pair.broker.state is BrokerState.PENDING_CONTROLLED_SHUTDOWN
    pair.fetch_metadata()
    pair.now_ms += BROKER_HEARTBEAT_INTERVAL_MS
    pair.step()  # it leads nothing now and no other broker lags: released
    assert pair.broker.state is BrokerState.SHUTTING_DOWN
    assert pair.controller.image.brokers[1].fenced


def test_a_second_incarnation_waits_for_the_first_ones_session():
    pair = Pair()
    pair.step()
    pair.fetch_metadata()
    pair.step()
    assert pair.broker.state is BrokerState.RUNNING
    restarted = BrokerLifecycleManager(BrokerIdentity(1, CLUSTER, uuid.UUID(int=6), "localhost", 9091))
    request = restarted.poll(pair.now_ms + 1_000)
    answer = pair.call(request.api_key, request.version, request.body)
    assert answer.error_code == ErrorCode.DUPLICATE_BROKER_REGISTRATION
    restarted.on_response(request.request_id, request.api_key, answer, pair.now_ms + 1_000)
    assert restarted.state is BrokerState.STARTING and restarted.next_deadline_ms() == pair.now_ms + 1_100
    pair.node.advance_clock(pair.now_ms + 9_001)  # the first incarnation fell silent: fenced
    assert pair.controller.image.brokers[1].fenced
    request = restarted.poll(pair.now_ms + 9_001)
    answer = pair.call(request.api_key, request.version, request.body)
    assert answer.error_code == ErrorCode.NONE and answer.broker_epoch > pair.broker.broker_epoch


def test_the_wrong_cluster_id_is_refused():
    pair = Pair()
    stranger = BrokerLifecycleManager(BrokerIdentity(2, "another", uuid.UUID(int=9), "h", 1))
    request = stranger.poll(0)
    assert pair.call(request.api_key, request.version, request.body).error_code == ErrorCode.INCONSISTENT_CLUSTER_ID


def test_alter_partition_from_a_stale_epoch_or_a_fenced_leader_changes_nothing():
    from kafkalab.protocol.messages.broker_lifecycle import ALTER_PARTITION_REQUEST, ALTER_PARTITION_VERSION

    pair = Pair()
    pair.step()
    pair.fetch_metadata()
    pair.step()
    pair.controller.create_topic("orders", 1, 1)
    registration = pair.controller.image.partition("orders", 0)
    topic_id = pair.controller.image.topics["orders"].topic_id
    cls = ALTER_PARTITION_REQUEST.cls
    state = cls.TopicData.PartitionData.BrokerState

    def alter(broker_epoch: int) -> Any:
        body = cls(broker_id=1, broker_epoch=broker_epoch, topics=(cls.TopicData(topic_id=topic_id, partitions=(
            cls.TopicData.PartitionData(partition_index=0, leader_epoch=registration.leader_epoch,
                                        new_isr_with_epochs=(state(1, broker_epoch),),
                                        partition_epoch=registration.partition_epoch),)),))
        return pair.call(ApiKey.ALTER_PARTITION, ALTER_PARTITION_VERSION, body)
    assert alter(pair.broker.broker_epoch - 1).error_code == ErrorCode.STALE_BROKER_EPOCH
    pair.node.advance_clock(pair.now_ms + 9_001)  # the leader's session expires: fenced, no leader
    answer = alter(pair.broker.broker_epoch)
    assert answer.error_code == ErrorCode.NONE
    assert answer.topics[0].partitions[0].error_code == ErrorCode.FENCED_LEADER_EPOCH
    assert pair.controller.image.partition("orders", 0).isr == registration.isr
