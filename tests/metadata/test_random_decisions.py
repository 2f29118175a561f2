"""Random runs of controller decisions: the published image is always the replay of the log, and
a snapshot of it replays back to the same image. Reassignments started, completed by ISR growth
and cancelled keep their replica lists consistent throughout."""

from __future__ import annotations

import random

import pytest

from kafkalab.controller.local import LocalController, TopicError
from kafkalab.controller.partition_change import Election
from kafkalab.metadata.delta import replay
from kafkalab.metadata.image import BrokerRegistration, MetadataImage
from kafkalab.metadata.record_log import MemoryRecordLog
from kafkalab.metadata.snapshot import read_snapshot, snapshot_name, write_snapshot

BROKERS = (1, 2, 3, 4)


def _step(controller: LocalController, rng: random.Random, epochs: dict[int, int]) -> None:
    image = controller.image
    action = rng.randrange(8)
    if action == 0:
        try:
            controller.create_topic(f"t{rng.randrange(6)}", rng.randint(1, 4), rng.randint(1, 3))
        except TopicError:
            pass  # exists, or too few live brokers: nothing written
    elif action == 1 and image.topics:
        controller.delete_topic(rng.choice(sorted(image.topics)))
    elif action == 2:
        controller.fence_broker(rng.choice(BROKERS))
    elif action == 3:
        broker = rng.choice(BROKERS)
        epochs[broker] += 1
        controller.register_broker(BrokerRegistration(broker, epochs[broker], "h", 9000 + broker))
    elif action == 4 and image.topics:
        name = rng.choice(sorted(image.topics))
        index = rng.choice(sorted(image.topics[name].partitions))
        p = image.topics[name].partitions[index]
        if p.leader >= 0:
            isr = [b for b in p.isr if b == p.leader or rng.random() < 0.5]
            isr += [b for b in p.replicas if b not in isr and rng.random() < 0.3]
            controller.alter_partition(p.leader, name, index, p.leader_epoch, p.partition_epoch,
                                       [(b, -1) for b in isr])
    elif action == 5:
        controller.elect_leaders(rng.choice([Election.PREFERRED, Election.UNCLEAN]), None)
    elif action == 6:
        controller.allocate_producer_ids(rng.choice(BROKERS), 0)
    elif action == 7 and image.topics:
        name = rng.choice(sorted(image.topics))
        index = rng.choice(sorted(image.topics[name].partitions))
        target = None if rng.random() < 0.3 else rng.sample(BROKERS, rng.randint(1, 3))
        controller.alter_partition_reassignments([(name, index, target)], lambda topic: rng.random() < 0.5)


def _check_assignments(image: MetadataImage) -> None:
    for topic in image.topics.values():
        for p in topic.partitions.values():
            adding, removing, replicas = set(p.adding_replicas), set(p.removing_replicas), set(p.replicas)
            assert adding <= replicas and removing <= replicas and not adding & removing, p


@pytest.mark.parametrize("seed", range(12))
def test_random_decisions_replay_to_the_published_image(seed: int, tmp_path) -> None:
    rng = random.Random(seed)
    log = MemoryRecordLog()
    epochs = {b: 0 for b in BROKERS}
    controller = LocalController([BrokerRegistration(b, 0, "h", 9000 + b) for b in BROKERS],
                                 random.Random(seed), log)
    for _ in range(150):
        _step(controller, rng, epochs)
        records = log.records()
        assert replay(MetadataImage(), records, len(records) - 1) == controller.image
        _check_assignments(controller.image)
    path = write_snapshot(tmp_path, controller.image, 1, 0)
    assert path.name == snapshot_name(controller.image.offset + 1, 1)
    assert read_snapshot(path) == controller.image
