"""The controller of a controller process: its metadata log on disk survives a restart (clean
or not), the brokers it registered keep heartbeating, and brokers fetch the log's batches as a
Kafka client would read them."""

from __future__ import annotations

import random
import uuid
from pathlib import Path
from typing import Any

from kafka.record.default_records import DefaultRecordBatch
from kafka.record.memory_records import MemoryRecords

from kafkalab.broker.lifecycle import BrokerIdentity, BrokerLifecycleManager, BrokerState
from kafkalab.broker.metadata_follower import METADATA_FETCH_VERSION, MetadataFollower
from kafkalab.clock import ManualClock
from kafkalab.controller.disk_controller import ControllerSettings, open_controller_node, unclean_enabled
from kafkalab.errors import ErrorCode
from kafkalab.metadata.records import CONFIG_RESOURCE_TOPIC, decode_record
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.header import decode_response, encode_request

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qk"
SETTINGS: dict[str, str] = {}  # the controller's server.properties: Kafka's defaults


class Broker:
    """One broker's lifecycle manager and metadata follower, talking to a controller by frames."""

    def __init__(self, broker_id: int, clock: ManualClock) -> None:
        self.clock = clock
        self.lifecycle = BrokerLifecycleManager(BrokerIdentity(
            broker_id, CLUSTER, uuid.UUID(int=broker_id), "127.0.0.1", 9090 + broker_id))
        self.follower = MetadataFollower(broker_id, CLUSTER)
        self.correlation = 0

    def call(self, node: Any, api_key: int, version: int, body: Any) -> Any:
        self.correlation += 1
        node.handle(7, encode_request(api_key, version, self.correlation, "broker", body)[4:], self.clock.milliseconds())
        [(_, frame)] = node.take_responses()
        return decode_response(api_key, version, frame)[1]

    def start(self, node: Any) -> None:
        """Register, catch up with the log, heartbeat until unfenced."""
        for _ in range(4):
            request = self.lifecycle.poll(self.clock.milliseconds())
            if request is not None:
                self.lifecycle.on_response(request.request_id, request.api_key,
                                           self.call(node, request.api_key, request.version, request.body),
                                           self.clock.milliseconds())
            self.fetch(node)
        assert self.lifecycle.state is BrokerState.RUNNING

    def fetch(self, node: Any) -> Any:
        import dataclasses
        body = dataclasses.replace(self.follower.next_fetch(), max_wait_ms=0)
        answer = self.call(node, ApiKey.FETCH, METADATA_FETCH_VERSION, body)
        image = self.follower.on_fetch_response(answer)
        if image is not None:
            self.lifecycle.metadata_replayed(image.offset, self.clock.milliseconds())
        return answer

    def heartbeat(self, node: Any) -> Any:
        self.clock.advance_ms(2_000)
        request = self.lifecycle.poll(self.clock.milliseconds())
        assert request is not None and request.api_key == ApiKey.BROKER_HEARTBEAT
        answer = self.call(node, request.api_key, request.version, request.body)
        self.lifecycle.on_response(request.request_id, request.api_key, answer, self.clock.milliseconds())
        return answer


def test_a_restarted_controller_keeps_its_log_and_its_brokers(tmp_path: Path) -> None:
    clock = ManualClock(1_000)
    first = open_controller_node(tmp_path, CLUSTER, SETTINGS, clock, random.Random(1))
    brokers = [Broker(i, clock) for i in (1, 2, 3)]
    for broker in brokers:
        broker.start(first.node)
    first.node.controller.create_topic("orders", 3, 3)
    before = first.node.controller.image
    first.log.flush()  # what a kill -9 leaves: every decision was flushed as it was made
    # No close(): the process died. A new one replays the directory.
    second = open_controller_node(tmp_path, CLUSTER, SETTINGS, clock, random.Random(2))
    after = second.node.controller.image
    assert after.offset == before.offset and after.topics == before.topics and after.brokers == before.brokers
    # Brokers 1 and 2 heartbeat on with the epochs they registered with; broker 3 went silent.
    for broker in brokers[:2]:
        assert broker.heartbeat(second.node).error_code == ErrorCode.NONE
    assert not any(b.fenced for b in second.node.controller.image.brokers.values())
    for _ in range(5):
        for broker in brokers[:2]:
            broker.heartbeat(second.node)
        second.node.advance_clock(clock.milliseconds())
    image = second.node.controller.image
    assert image.brokers[3].fenced and not image.brokers[1].fenced and not image.brokers[2].fenced
    assert all(3 not in p.isr and p.leader != 3 for p in image.topics["orders"].partitions.values())
    second.close()


def test_brokers_read_the_served_log_as_kafka_batches(tmp_path: Path) -> None:
    clock = ManualClock(5_000)
    controller = open_controller_node(tmp_path, CLUSTER, SETTINGS, clock, random.Random(3))
    broker = Broker(1, clock)
    broker.start(controller.node)
    controller.node.controller.create_topic("orders", 2, 1)
    reader = Broker(9, clock)  # a fresh follower reads the whole log from offset 0
    answer = reader.fetch(controller.node)
    data = answer.responses[0].partitions[0].records
    assert answer.responses[0].partitions[0].high_watermark == controller.node.controller.image.offset + 1
    offsets, names = [], []
    records = MemoryRecords(bytes(data))
    while (batch := records.next_batch()) is not None:  # kafka-python's decoder, not ours
        assert isinstance(batch, DefaultRecordBatch) and batch.validate_crc()
        for record in batch:
            offsets.append(record.offset)
            names.append(type(decode_record(record.value)).__name__)
    assert offsets == list(range(controller.node.controller.image.offset + 1))
    assert names[0] == "FeatureLevelRecord" and "TopicRecord" in names and names.count("PartitionRecord") == 2
    assert reader.follower.image.topics.keys() == {"orders"}
    controller.close()


def test_unclean_election_follows_the_topic_config_then_the_controller_default() -> None:
    from kafkalab.metadata.image import MetadataImage
    image = MetadataImage(configs={(CONFIG_RESOURCE_TOPIC, "risky"): {"unclean.leader.election.enable": "true"}})
    assert unclean_enabled(image, "risky", False) and not unclean_enabled(image, "safe", False)
    assert unclean_enabled(image, "safe", True)
    assert ControllerSettings.from_properties({}).session_timeout_ms == 9_000
    assert ControllerSettings.from_properties({"unclean.leader.election.enable": "TRUE"}).unclean_leader_election
