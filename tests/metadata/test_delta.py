"""Replaying records into images, as Kafka's MetadataDelta and the controllers' replay methods do."""

from __future__ import annotations

import random
import uuid

import pytest

from kafkalab.controller.local import PRODUCER_ID_BLOCK_SIZE, LocalController
from kafkalab.metadata import records as r
from kafkalab.metadata.delta import MetadataDelta, replay
from kafkalab.metadata.image import BrokerRegistration, MetadataImage, PartitionRegistration
from kafkalab.metadata.record_log import MemoryRecordLog
from kafkalab.metadata.records import MetadataRecordError

X = uuid.UUID(int=0xABC)


def _topic(name: str = "orders", topic_id: uuid.UUID = X, partitions: int = 1) -> list:
    out = [r.TOPIC_RECORD.cls(name=name, topic_id=topic_id)]
    out += [r.PARTITION_RECORD.cls(partition_id=p, topic_id=topic_id, replicas=(1, 2, 3), isr=(1, 2, 3),
                                   leader=1, leader_epoch=4, partition_epoch=9) for p in range(partitions)]
    return out


def test_the_docstring_example() -> None:
    image = replay(MetadataImage(), [
        r.TOPIC_RECORD.cls(name="orders", topic_id=X),
        r.PARTITION_RECORD.cls(partition_id=0, topic_id=X, replicas=(1, 2), isr=(1, 2), leader=1,
                               leader_epoch=0, partition_epoch=0),
        r.PARTITION_CHANGE_RECORD.cls(partition_id=0, topic_id=X, isr=(1,)),
    ], offset=2)
    assert image.partition("orders", 0) == PartitionRegistration((1, 2), (1,), 1, 0, 1)
    assert image.offset == 2


# PartitionRegistration.merge, field by field (Kafka's PartitionRegistrationTest cases).
@pytest.mark.parametrize("change, expected", [
    ({}, PartitionRegistration((1, 2, 3), (1, 2, 3), 1, 4, 10)),                 # nothing but the epoch
    ({"isr": (1, 2)}, PartitionRegistration((1, 2, 3), (1, 2), 1, 4, 10)),       # ISR shrink keeps leader epoch
    ({"leader": 2, "isr": (2, 3)}, PartitionRegistration((1, 2, 3), (2, 3), 2, 5, 10)),
    ({"leader": -1}, PartitionRegistration((1, 2, 3), (1, 2, 3), -1, 5, 10)),   # -1 is a leader change too
    ({"leader": 1}, PartitionRegistration((1, 2, 3), (1, 2, 3), 1, 5, 10)),     # same leader named: epoch bump
    ({"leader": 3, "isr": (3,), "leader_recovery_state": 1},
     PartitionRegistration((1, 2, 3), (3,), 3, 5, 10, leader_recovery_state=1)),
    ({"replicas": (1, 2, 3, 4), "adding_replicas": (4,)},
     PartitionRegistration((1, 2, 3, 4), (1, 2, 3), 1, 4, 10, adding_replicas=(4,))),
])
def test_partition_change_merges_like_kafka(change: dict, expected: PartitionRegistration) -> None:
    image = replay(MetadataImage(), _topic())
    changed = replay(image, [r.PARTITION_CHANGE_RECORD.cls(partition_id=0, topic_id=X, **change)])
    assert changed.partition("orders", 0) == expected
    assert image.partition("orders", 0) == PartitionRegistration((1, 2, 3), (1, 2, 3), 1, 4, 9)  # untouched


def test_remove_topic_and_create_it_again_in_one_delta() -> None:
    image = replay(MetadataImage(), _topic(partitions=3))
    y = uuid.UUID(int=0xDEF)
    again = replay(image, [r.REMOVE_TOPIC_RECORD.cls(topic_id=X), *_topic(topic_id=y, partitions=1)])
    assert again.topics["orders"].topic_id == y and list(again.topics["orders"].partitions) == [0]


def test_broker_lifecycle_and_epoch_checks() -> None:
    cls = r.REGISTER_BROKER_RECORD.cls
    register = cls(broker_id=1, broker_epoch=5, end_points=(cls.BrokerEndpoint("PLAINTEXT", "h", 9092, 0),))
    image = replay(MetadataImage(), [register])
    assert image.brokers[1] == BrokerRegistration(1, 5, "h", 9092, None, fenced=True)
    image = replay(image, [r.UNFENCE_BROKER_RECORD.cls(id=1, epoch=5)])
    assert not image.brokers[1].fenced
    image = replay(image, [r.BROKER_REGISTRATION_CHANGE_RECORD.cls(broker_id=1, broker_epoch=5, fenced=r.FENCE)])
    assert image.brokers[1].fenced
    with pytest.raises(MetadataRecordError, match="epoch 4"):
        replay(image, [r.FENCE_BROKER_RECORD.cls(id=1, epoch=4)])
    with pytest.raises(MetadataRecordError, match="unknown fenced 7"):
        replay(image, [r.BROKER_REGISTRATION_CHANGE_RECORD.cls(broker_id=1, broker_epoch=5, fenced=7)])


def test_records_that_contradict_the_image_are_typed_errors() -> None:
    with pytest.raises(MetadataRecordError, match="no topic with id"):
        replay(MetadataImage(), _topic()[1:])
    with pytest.raises(MetadataRecordError, match="not in the ISR"):
        replay(MetadataImage(), [r.TOPIC_RECORD.cls(name="t", topic_id=X), r.PARTITION_RECORD.cls(
            partition_id=0, topic_id=X, replicas=(1, 2), isr=(1,), leader=2)])


def test_configs_features_and_producer_ids() -> None:
    image = replay(MetadataImage(), [
        *_topic(),
        r.CONFIG_RECORD.cls(resource_type=r.CONFIG_RESOURCE_TOPIC, resource_name="orders", name="retention.ms", value="1"),
        r.FEATURE_LEVEL_RECORD.cls(name="metadata.version", feature_level=14),
        r.PRODUCER_IDS_RECORD.cls(broker_id=1, broker_epoch=5, next_producer_id=1000),
    ])
    assert image.configs == {(2, "orders"): {"retention.ms": "1"}}
    assert (image.features, image.next_producer_id) == ({"metadata.version": 14}, 1000)
    with pytest.raises(MetadataRecordError, match="not greater"):
        replay(image, [r.PRODUCER_IDS_RECORD.cls(broker_id=1, broker_epoch=5, next_producer_id=1000)])
    gone = replay(image, [r.REMOVE_TOPIC_RECORD.cls(topic_id=X)])
    assert gone.configs == {} and gone.topics == {}


def test_a_long_run_of_partition_records_is_one_pass() -> None:
    delta = MetadataDelta(MetadataImage())
    delta.replay_all(_topic(partitions=5000))
    image = delta.apply()
    assert len(image.topics["orders"].partitions) == 5000


# --- the controller writes what it decides, and its image is the replay of its log -------------

def _cluster() -> tuple[LocalController, MemoryRecordLog]:
    log = MemoryRecordLog()
    brokers = [BrokerRegistration(b, 10 + b, "127.0.0.1", 9090 + b) for b in (1, 2, 3)]
    return LocalController(brokers, random.Random(7), log), log


def test_every_decision_is_in_the_log_and_replaying_the_log_gives_the_image() -> None:
    controller, log = _cluster()
    controller.create_topic("orders", 3, 3)
    controller.create_partitions("orders", 4)
    controller.fence_broker(2)
    leader = controller.image.partition("orders", 0)
    assert leader is not None
    controller.alter_partition(leader.leader, "orders", 0, leader.leader_epoch, leader.partition_epoch,
                               [(leader.leader, -1)])
    controller.register_broker(BrokerRegistration(2, 20, "127.0.0.1", 9092))
    controller.allocate_producer_ids(1, 11)
    controller.create_topic("gone", 1, 1)
    controller.delete_topic("gone")
    rebuilt = replay(MetadataImage(), log.records(), offset=len(log.values) - 1)
    assert rebuilt == controller.image
    names = [r.RECORD_TYPES[v[1]].name for v in log.values]
    assert names[:3] == ["FEATURE_LEVEL_RECORD", "REGISTER_BROKER_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD"]
    assert {"TOPIC_RECORD", "PARTITION_RECORD", "PARTITION_CHANGE_RECORD", "REMOVE_TOPIC_RECORD",
            "PRODUCER_IDS_RECORD"} <= set(names)


def test_fencing_writes_partition_changes_then_the_registration_change() -> None:
    controller, log = _cluster()
    controller.create_topic("orders", 1, 3)
    led_by = controller.image.partition("orders", 0).leader
    before = len(log.values)
    controller.fence_broker(led_by)
    written = log.records()[before:]
    assert [type(x).__name__ for x in written] == ["PartitionChangeRecord", "BrokerRegistrationChangeRecord"]
    assert written[0].leader != led_by and led_by not in written[0].isr
    assert (written[1].broker_id, written[1].fenced) == (led_by, r.FENCE)


def test_producer_id_blocks_never_overlap() -> None:
    controller, _ = _cluster()
    first = controller.allocate_producer_ids(1, 11)
    second = controller.allocate_producer_ids(2, 12)
    assert (len(first), first.stop) == (PRODUCER_ID_BLOCK_SIZE, second.start)
