"""The leader's side of replication on a real log: HW, ISR proposals, acks=all, epochs.

Each test states the Kafka behaviour it pins (``Partition.scala`` / ``Replica.scala`` semantics,
KIP-497 maximal ISR, KIP-537 lag time); batches are built by kafka-python, the log is kafkalab's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalab.clock import ManualClock
from kafkalab.errors import ErrorCode
from kafkalab.metadata.image import BrokerRegistration, MetadataImage, PartitionRegistration
from kafkalab.replication import events as ev
from kafkalab.replication.partition import (
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    Partition,
    ReplicationSettings,
)
from kafkalab.storage import Log, LogConfig
from tests.storage.storage_helpers import build_batch

LAG_MS = 30_000


def _image(*fenced: int) -> MetadataImage:
    return MetadataImage(brokers={
        b: BrokerRegistration(b, broker_epoch=100 + b, host="127.0.0.1", port=9090 + b, fenced=b in fenced)
        for b in (1, 2, 3)
    })


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(now_ms=1_000_000)


@pytest.fixture
def log(tmp_path: Path, clock: ManualClock) -> Iterator[Log]:
    opened = Log.open(tmp_path / "orders-0", LogConfig(), clock)
    opened.auto_advance_high_watermark = False  # the partition owns the HW now
    yield opened
    opened.close()


def _leader(log: Log, clock: ManualClock, *, isr: tuple[int, ...] = (1, 2, 3), min_isr: int = 1,
            image: MetadataImage | None = None, epoch: int = 1) -> Partition:
    log.config = dataclasses.replace(log.config, min_insync_replicas=min_isr)
    partition = Partition("orders", 0, 1, log, ReplicationSettings(LAG_MS), image or _image())
    partition.make_leader(PartitionRegistration((1, 2, 3), isr, 1, epoch, 10), clock.milliseconds())
    return partition


def _append(log: Log, partition: Partition, count: int) -> int:
    info = log.append_as_leader(build_batch(count), partition.leader_epoch)
    return info.last_offset + 1


def test_hw_is_the_smallest_leo_in_the_isr(log: Log, clock: ManualClock) -> None:
    partition = _leader(log, clock)
    assert _append(log, partition, 10) == 10
    assert log.high_watermark == 0
    partition.update_follower_fetch_state(2, 10, 0, clock.milliseconds())
    assert log.high_watermark == 0  # replica 3 is in the ISR at LEO -1
    partition.update_follower_fetch_state(3, 6, 0, clock.milliseconds())
    assert log.high_watermark == 6
    partition.update_follower_fetch_state(3, 10, 0, clock.milliseconds())
    assert log.high_watermark == 10


def test_hw_never_moves_backwards(log: Log, clock: ManualClock) -> None:
    partition = _leader(log, clock, isr=(1, 2))
    _append(log, partition, 10)
    partition.update_follower_fetch_state(2, 10, 0, clock.milliseconds())
    assert log.high_watermark == 10
    partition.update_follower_fetch_state(2, 4, 0, clock.milliseconds())  # a follower that truncated
    assert log.high_watermark == 10


def test_stuck_follower_is_proposed_out_after_the_lag_time(log: Log, clock: ManualClock) -> None:
    partition = _leader(log, clock)
    _append(log, partition, 10)
    partition.update_follower_fetch_state(2, 10, 0, clock.milliseconds())
    partition.update_follower_fetch_state(3, 6, 0, clock.milliseconds())
    clock.advance_ms(LAG_MS)
    partition.update_follower_fetch_state(2, 10, 0, clock.milliseconds())
    assert partition.maybe_shrink_isr(clock.milliseconds()) is None  # exactly the lag: still in sync
    clock.advance_ms(1)
    proposal = partition.maybe_shrink_isr(clock.milliseconds())
    assert proposal is not None and proposal.new_isr == (1, 2) and proposal.kind == "shrink"
    assert proposal.partition_epoch == 10 and proposal.new_isr_broker_epochs == (-1, -1)
    # KIP-497: until the controller answers, the ISR to wait for is still the old one.
    assert log.high_watermark == 6 and partition.isr == {1, 2, 3}
    assert partition.on_alter_partition_accepted(proposal, (1, 2), 1, 11, clock.milliseconds())
    assert partition.isr == {1, 2} and partition.partition_epoch == 11 and log.high_watermark == 10


def test_slow_follower_that_keeps_fetching_still_falls_out(log: Log, clock: ManualClock) -> None:
    # KIP-537's point: fetching is not enough, it must reach the LEO the leader had.
    partition = _leader(log, clock, isr=(1, 2))
    partition.followers.pop(3)
    for _ in range(40):
        _append(log, partition, 5)
        clock.advance_ms(1_000)
        partition.update_follower_fetch_state(2, log.log_end_offset - 5, 0, clock.milliseconds())
        _append(log, partition, 5)
    state = partition.followers[2]
    assert state.last_caught_up_time_ms < clock.milliseconds()
    assert partition.maybe_shrink_isr(clock.milliseconds()) is None  # proved caught up at the previous fetch
    clock.advance_ms(LAG_MS + 1)
    assert partition.maybe_shrink_isr(clock.milliseconds()) is not None


def test_follower_rejoins_once_it_reaches_the_hw_and_the_epoch_start(log: Log, clock: ManualClock) -> None:
    partition = _leader(log, clock, isr=(1, 2))
    _append(log, partition, 10)
    partition.update_follower_fetch_state(2, 10, 0, clock.milliseconds(), broker_epoch=102)
    assert log.high_watermark == 10
    assert partition.update_follower_fetch_state(3, 9, 0, clock.milliseconds(), broker_epoch=103) is None
    proposal = partition.update_follower_fetch_state(3, 10, 0, clock.milliseconds(), broker_epoch=103)
    assert proposal is not None and proposal.kind == "expand"
    assert proposal.new_isr == (1, 2, 3) and proposal.new_isr_broker_epochs == (-1, 102, 103)
    # KIP-497: a proposed addition counts for the HW at once.
    assert partition.isr_state.maximal_isr == {1, 2, 3}
    assert partition.update_follower_fetch_state(3, 10, 0, clock.milliseconds(), broker_epoch=103) is None  # one in flight


def test_fenced_or_restarted_broker_cannot_rejoin(log: Log, clock: ManualClock) -> None:
    partition = _leader(log, clock, isr=(1, 2), image=_image(3))
    _append(log, partition, 10)
    partition.update_follower_fetch_state(2, 10, 0, clock.milliseconds(), broker_epoch=102)
    assert partition.update_follower_fetch_state(3, 10, 0, clock.milliseconds(), broker_epoch=103) is None
    partition.eligibility = _image()
    # A fetch carrying the broker epoch of an earlier life of broker 3 is not eligible either.
    assert partition.update_follower_fetch_state(3, 10, 0, clock.milliseconds(), broker_epoch=99) is None
    assert partition.update_follower_fetch_state(3, 10, 0, clock.milliseconds(), broker_epoch=103) is not None


def test_hw_stands_still_under_min_isr(log: Log, clock: ManualClock) -> None:
    partition = _leader(log, clock, isr=(1,), min_isr=2)
    _append(log, partition, 5)
    assert log.high_watermark == 0 and partition.is_under_min_isr
    with pytest.raises(NotEnoughReplicasError) as refused:
        partition.check_leader_for_append(-1)
    assert refused.value.error_code == ErrorCode.NOT_ENOUGH_REPLICAS
    partition.check_leader_for_append(1)  # acks=1 does not wait for anyone


def test_acks_all_completes_at_the_hw_or_fails_after_append(log: Log, clock: ManualClock) -> None:
    partition = _leader(log, clock, isr=(1, 2, 3), min_isr=2)
    required = _append(log, partition, 3)
    assert partition.check_enough_replicas_reach_offset(required) == (False, ErrorCode.NONE)
    partition.update_follower_fetch_state(2, 3, 0, clock.milliseconds())
    partition.update_follower_fetch_state(3, 3, 0, clock.milliseconds())
    assert partition.check_enough_replicas_reach_offset(required) == (True, ErrorCode.NONE)
    required = _append(log, partition, 3)
    clock.advance_ms(LAG_MS + 1)
    shrink = partition.maybe_shrink_isr(clock.milliseconds())
    assert shrink is not None and shrink.new_isr == (1,)
    partition.on_alter_partition_accepted(shrink, (1,), 1, 11, clock.milliseconds())
    assert partition.check_enough_replicas_reach_offset(required) == (False, ErrorCode.NONE)  # under min ISR: HW stuck


def test_refused_proposal_returns_to_the_committed_isr(log: Log, clock: ManualClock) -> None:
    partition = _leader(log, clock)
    clock.advance_ms(LAG_MS + 1)
    proposal = partition.maybe_shrink_isr(clock.milliseconds())
    assert proposal is not None
    assert partition.on_alter_partition_failed(proposal, ErrorCode.FENCED_LEADER_EPOCH) is False
    assert partition.isr_state.pending is proposal  # stale view: wait for metadata
    assert partition.on_alter_partition_failed(proposal, ErrorCode.INELIGIBLE_REPLICA) is False
    assert partition.isr_state.pending is None and partition.isr == {1, 2, 3}
    again = partition.maybe_shrink_isr(clock.milliseconds())
    assert again is not None
    assert partition.on_alter_partition_failed(again, ErrorCode.REQUEST_TIMED_OUT) is True  # retry


def test_answer_from_an_older_leader_epoch_is_ignored(log: Log, clock: ManualClock) -> None:
    partition = _leader(log, clock)
    clock.advance_ms(LAG_MS + 1)
    proposal = partition.maybe_shrink_isr(clock.milliseconds())
    assert proposal is not None
    assert not partition.on_alter_partition_accepted(proposal, (1,), 0, 11, clock.milliseconds())
    assert partition.isr == {1, 2, 3}


def test_new_leader_epoch_starts_at_the_leo_and_resets_followers(log: Log, clock: ManualClock) -> None:
    partition = _leader(log, clock, epoch=1)
    _append(log, partition, 4)
    partition.update_follower_fetch_state(2, 4, 0, clock.milliseconds())
    assert partition.make_follower(PartitionRegistration((1, 2, 3), (2, 3), 2, 2, 11))
    assert not partition.is_leader and partition.followers == {}
    with pytest.raises(NotLeaderOrFollowerError):
        partition.check_leader_for_append(1)
    clock.advance_ms(5)
    assert partition.make_leader(PartitionRegistration((1, 2, 3), (1, 2), 1, 3, 12), clock.milliseconds())
    assert log.leader_epoch_cache.entries[-1] == (3, 4)
    assert partition.leader_epoch_start_offset == 4
    assert partition.followers[2].last_caught_up_time_ms == clock.milliseconds()  # in the ISR: window starts now
    assert partition.followers[3].last_caught_up_time_ms == 0  # out of it: cannot hold the HW back


def test_stale_registration_is_ignored(log: Log, clock: ManualClock) -> None:
    partition = _leader(log, clock)
    assert not partition.make_follower(PartitionRegistration((1, 2, 3), (2, 3), 2, 5, 9))
    assert partition.is_leader


def test_events_tell_the_isr_story(log: Log, clock: ManualClock) -> None:
    partition = Partition("orders", 0, 1, log, ReplicationSettings(LAG_MS), _image())
    seen: list[ev.ReplicationEvent] = []
    partition.subscribe(seen.append)
    partition.make_leader(PartitionRegistration((1, 2), (1, 2), 1, 1, 1), clock.milliseconds())
    _append(log, partition, 2)
    partition.update_follower_fetch_state(2, 2, 0, clock.milliseconds())
    _append(log, partition, 3)  # follower 2 never fetches these
    clock.advance_ms(LAG_MS + 1)
    proposal = partition.maybe_shrink_isr(clock.milliseconds())
    assert proposal is not None
    partition.on_alter_partition_accepted(proposal, (1,), 1, 2, clock.milliseconds())
    assert seen == [
        ev.BecameLeader("orders", 0, 1, (1, 2)),
        ev.HighWatermarkMoved("orders", 0, 0, 2),
        ev.IsrChangeProposed("orders", 0, (1, 2), (1,)),
        ev.IsrChanged("orders", 0, (1, 2), (1,), 2),
        ev.HighWatermarkMoved("orders", 0, 2, 5),
    ]


def test_a_follower_level_with_the_leader_never_lags(log: Log, clock: ManualClock) -> None:
    # Kafka's isCaughtUp: an equal LEO is in sync however long ago the last fetch was.
    partition = _leader(log, clock, isr=(1, 2))
    _append(log, partition, 2)
    partition.update_follower_fetch_state(2, 2, 0, clock.milliseconds())
    clock.advance_ms(10 * LAG_MS)
    assert partition.maybe_shrink_isr(clock.milliseconds()) is None
