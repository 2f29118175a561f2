"""QuorumController: decisions ride the Raft log and become visible only once committed; the
active controller is the Raft leader; others refuse writes with NOT_CONTROLLER; a new leader
continues from the committed state; brokers follow the log as observers."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from kafkalab.clock import ManualClock
from kafkalab.controller.quorum_controller import NotControllerError, QuorumController
from kafkalab.controller.raft.messages import FetchRequest, FetchResponse, FetchSnapshotRequest, FetchSnapshotResponse
from kafkalab.controller.raft.metadata_log import StorageRaftLog
from kafkalab.controller.raft.node import RaftNode
from kafkalab.controller.raft.observer import MetadataObserver
from kafkalab.controller.raft.quorum_state_file import FILE_NAME, QuorumStateFile
from kafkalab.errors import ErrorCode
from kafkalab.metadata import records as r
from kafkalab.metadata.image import BrokerRegistration, MetadataImage
from kafkalab.metadata.record_log import read_log_records
from kafkalab.metadata.records import METADATA_VERSION_FEATURE
from kafkalab.records.codec import iter_batches
from kafkalab.sim.controller_quorum import SimControllerQuorum

BROKERS = [BrokerRegistration(b, 10 + b, "localhost", 9090 + b) for b in (101, 102, 103)]


def _sole_voter(tmp_path: Path) -> QuorumController:
    log = StorageRaftLog.open(tmp_path, ManualClock(0))
    node = RaftNode(1, (1,), log, QuorumStateFile(log.directory / FILE_NAME), random.Random(0), 0)
    controller = QuorumController(node, random.Random(1))
    controller.tick(2_000)  # the election timer fires; a sole voter elects itself and commits
    return controller


def test_a_sole_voter_commits_each_decision_as_one_batch(tmp_path: Path) -> None:
    controller = _sole_voter(tmp_path)
    assert controller.is_active and controller.image.features[METADATA_VERSION_FEATURE] > 0
    seen: list[MetadataImage] = []
    controller.subscribe(seen.append)
    controller.register_broker(BROKERS[0])
    controller.create_topic("orders", 3, 1)
    assert "orders" in controller.image.topics and seen[-1] is controller.image
    log = controller.node.log
    records = [type(rec) for _, rec in read_log_records(log.log)]  # type: ignore[attr-defined]
    assert records == [r.FEATURE_LEVEL_RECORD.cls, r.REGISTER_BROKER_RECORD.cls,
                       r.BROKER_REGISTRATION_CHANGE_RECORD.cls, r.TOPIC_RECORD.cls, *[r.PARTITION_RECORD.cls] * 3]
    batches = list(iter_batches(log.read(0, 1 << 20)))
    assert [b.header.is_control for b in batches] == [True, False, False, False]  # LEADER_CHANGE first
    assert [b.header.records_count for b in batches[1:]] == [1, 2, 4]
    assert controller.image.offset == controller.node.log.log_end_offset - 1


@pytest.fixture
def quorum(tmp_path: Path):
    sim = SimControllerQuorum(tmp_path, voters=3, observers=(101,), seed=3)
    assert sim.run_until_active() is not None
    for broker in BROKERS:
        sim.write(lambda c, b=broker: c.register_broker(b))
    sim.run_for(1_000)
    yield sim
    sim.close()


def _images(sim: SimControllerQuorum) -> list[MetadataImage]:
    return [c.image for c in sim.controllers.values() if c is not None]


def test_a_decision_is_visible_only_once_the_quorum_commits_it(quorum: SimControllerQuorum) -> None:
    published: list[MetadataImage] = []
    follower = next(c for c in quorum.controllers.values() if c is not None and not c.is_active)
    follower.subscribe(published.append)
    topic = quorum.write(lambda c: c.create_topic("orders", 3, 3))
    assert topic.name == "orders" and len(topic.partitions) == 3  # decided at once ...
    assert all("orders" not in image.topics for image in _images(quorum))  # ... not yet committed
    quorum.run_for(1_000)
    images = _images(quorum)
    assert all(image == images[0] for image in images) and "orders" in images[0].topics
    assert quorum.observers[101].image == images[0]
    assert published and all(image.offset < quorum.active().node.high_watermark for image in published)  # type: ignore[union-attr]


def test_a_controller_that_is_not_active_refuses_writes(quorum: SimControllerQuorum) -> None:
    active = quorum.active()
    assert active is not None
    follower = next(c for c in quorum.controllers.values() if c is not None and not c.is_active)
    with pytest.raises(NotControllerError) as refused:
        follower.create_topic("orders", 1, 1)
    assert refused.value.error_code == ErrorCode.NOT_CONTROLLER
    assert refused.value.active_id == active.node.local_id


def test_a_new_active_controller_continues_from_the_committed_state(quorum: SimControllerQuorum) -> None:
    first = quorum.active()
    assert first is not None
    block = quorum.write(lambda c: c.allocate_producer_ids(101, 11))
    quorum.run_for(1_000)
    quorum.crash(first.node.local_id)
    second = quorum.run_until_active()
    assert second is not None and second.epoch > first.epoch
    assert second.image.next_producer_id == block.stop
    after = quorum.write(lambda c: c.allocate_producer_ids(102, 12))
    assert after.start == block.stop  # no id handed out twice across the failover
    quorum.run_for(1_000)
    assert quorum.observers[101].image.next_producer_id == after.stop
    assert quorum.observers[101].leader_id == second.node.local_id


def test_an_uncommitted_decision_of_a_cut_off_leader_is_never_published(quorum: SimControllerQuorum) -> None:
    old = quorum.active()
    assert old is not None
    seen: list[MetadataImage] = []
    for controller in quorum.controllers.values():
        assert controller is not None
        controller.subscribe(seen.append)
    quorum.observers[101].subscribe(seen.append)
    quorum.network.isolate(old.node.local_id, [*quorum.ids, 101])
    quorum.write(lambda c: c.create_topic("lost", 1, 1))  # decided, never replicated
    for _ in range(100):  # the others elect a new leader within a few seconds
        quorum.run_for(100)
        new = quorum.active()
        if new is not None and new is not old:
            break
    assert new is not None and new is not old
    quorum.write(lambda c: c.create_topic("kept", 1, 1))
    quorum.network.heal()
    quorum.run_for(5_000)
    assert not old.is_active
    images = _images(quorum)
    assert all(image == images[0] for image in images) and "kept" in images[0].topics
    assert all("lost" not in image.topics for image in seen)


def test_an_observer_gets_committed_batches_only_and_never_counts(quorum: SimControllerQuorum) -> None:
    active = quorum.active()
    assert active is not None
    for other in quorum.ids:
        if other != active.node.local_id:
            quorum.crash(other)
    hw = active.node.high_watermark
    quorum.write(lambda c: c.create_topic("orders", 1, 1))
    assert active.node.log.log_end_offset > hw
    request = FetchRequest(None, 101, 0, active.epoch, hw, active.node.log.last_fetched_epoch)
    answer = active.handle(101, 77, request, quorum.clock.milliseconds())
    (send,) = [s for s in answer if s.dst == 101]
    assert isinstance(send.message, FetchResponse) and send.message.records == b""
    quorum.run_for(1_000)  # the observer keeps fetching, the high watermark stays
    assert active.node.high_watermark == hw and "orders" not in quorum.observers[101].image.topics


def test_an_observer_finds_the_leader_through_any_voter(tmp_path: Path) -> None:
    sim = SimControllerQuorum(tmp_path, voters=3, seed=5)
    try:
        active = sim.run_until_active()
        assert active is not None
        sim.run_for(500)
        observer = MetadataObserver(201, sim.ids, sim.clock.milliseconds())
        wrong = next(i for i in sim.ids if i != active.node.local_id)
        observer._next_voter = sim.ids.index(wrong)
        (first,) = observer.poll(sim.clock.milliseconds())
        assert first.dst == wrong
        sim.observers[201] = observer
        sim._send_all(201, [first])
        sim.run_for(1_000)
        assert observer.leader_id == active.node.local_id
        assert observer.image == active.image
    finally:
        sim.close()


def test_an_observer_below_the_log_start_fetches_the_snapshot(quorum: SimControllerQuorum) -> None:
    quorum.write(lambda c: c.create_topic("orders", 3, 3))
    quorum.run_for(1_000)
    active = quorum.active()
    assert active is not None
    end_offset, epoch = active.snapshot(quorum.clock.milliseconds())
    assert active.node.log.log_start_offset == end_offset == active.image.offset + 1
    late = MetadataObserver(201, quorum.ids, quorum.clock.milliseconds(), config=quorum.config, snapshot_chunk_bytes=100)
    quorum.observers[201] = late
    quorum.write(lambda c: c.create_topic("after", 1, 1))  # lands in the log after the snapshot
    quorum.run_for(2_000)
    assert late.image == active.image and {"orders", "after"} <= set(late.image.topics)
    assert late.fetch_offset == active.node.log.log_end_offset
    described = active.describe_quorum(quorum.clock.milliseconds())
    assert [o.replica_id for o in described.observers] == [101, 201]
    assert described.observers[1].log_end_offset == late.fetch_offset


def test_fetch_snapshot_errors(quorum: SimControllerQuorum) -> None:
    active = quorum.active()
    assert active is not None
    end_offset, epoch = active.snapshot(quorum.clock.milliseconds())
    size = len(active.node.log.snapshot_bytes(end_offset, epoch) or b"")

    def ask(end: int, position: int, leader_epoch: int | None = None) -> FetchSnapshotResponse:
        request = FetchSnapshotRequest(None, 201, 1 << 20, active.epoch if leader_epoch is None else leader_epoch,
                                       end, epoch, position)
        (send,) = active.handle(201, 5, request, quorum.clock.milliseconds())
        assert isinstance(send.message, FetchSnapshotResponse)
        return send.message
    assert ask(end_offset, 0).size == size and len(ask(end_offset, 0).unaligned_records) == size
    assert ask(end_offset + 1, 0).partition_error_code == ErrorCode.SNAPSHOT_NOT_FOUND
    assert ask(end_offset, size + 1).partition_error_code == ErrorCode.POSITION_OUT_OF_RANGE
    assert ask(end_offset, 0, leader_epoch=active.epoch - 1).partition_error_code == ErrorCode.FENCED_LEADER_EPOCH


def test_a_restarted_controller_starts_from_its_snapshot(quorum: SimControllerQuorum) -> None:
    quorum.write(lambda c: c.create_topic("orders", 2, 2))
    quorum.run_for(1_000)
    for controller in list(quorum.controllers.values()):
        assert controller is not None
        controller.snapshot(quorum.clock.milliseconds())
    expected = quorum.active().image  # type: ignore[union-attr]
    for node_id in quorum.ids:
        quorum.crash(node_id)
        quorum.start(node_id)
    assert quorum.run_until_active() is not None
    quorum.run_for(1_000)
    assert all(image.topics == expected.topics and image.offset > expected.offset for image in _images(quorum))


def test_a_voter_below_the_log_start_loads_the_leaders_snapshot(quorum: SimControllerQuorum) -> None:
    active = quorum.active()
    assert active is not None
    behind = next(i for i in quorum.ids if i != active.node.local_id)
    quorum.network.isolate(behind, [i for i in [*quorum.ids, 101] if i != behind])
    quorum.write(lambda c: c.create_topic("orders", 3, 2))
    quorum.run_for(300)
    end_offset, epoch = active.snapshot(quorum.clock.milliseconds())
    lagging = quorum.controllers[behind]
    assert lagging is not None and lagging.node.log.log_end_offset < end_offset
    quorum.network.heal()
    quorum.run_for(3_000)
    assert lagging.node.log.log_start_offset == end_offset and lagging.node.log.latest_snapshot_id() == (end_offset, epoch)
    assert lagging.image == active.image and "orders" in lagging.image.topics
    assert quorum.active() is active  # loading the snapshot took no election
