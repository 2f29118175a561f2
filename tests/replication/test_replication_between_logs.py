"""Leader and followers on real logs, wired by the fetcher and the leader's fetch serving:
replication copies bytes exactly, the HW follows, and a deposed leader truncates its uncommitted
tail by leader epoch before it follows the new leader."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalab.clock import ManualClock
from kafkalab.errors import ErrorCode
from kafkalab.metadata.image import BrokerRegistration, MetadataImage, PartitionRegistration
from kafkalab.replication.fetcher import FollowerFetcher
from kafkalab.replication.leader_fetch import serve_follower_fetch
from kafkalab.replication.partition import Partition, ReplicationSettings
from kafkalab.storage import Log, LogConfig
from tests.storage.storage_helpers import build_batch

IMAGE = MetadataImage(brokers={b: BrokerRegistration(b, 10 + b, "127.0.0.1", 9090 + b) for b in (1, 2, 3)})


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(now_ms=5_000)


@pytest.fixture
def logs(tmp_path: Path, clock: ManualClock) -> Iterator[dict[int, Log]]:
    opened = {}
    for node in (1, 2, 3):
        log = Log.open(tmp_path / f"node{node}" / "orders-0", LogConfig(), clock)
        log.auto_advance_high_watermark = False
        opened[node] = log
    yield opened
    for log in opened.values():
        log.close()


def _leader(node: int, log: Log, clock: ManualClock, epoch: int, isr: tuple[int, ...] = (1, 2, 3)) -> Partition:
    partition = Partition("orders", 0, node, log, ReplicationSettings(30_000), IMAGE)
    partition.make_leader(PartitionRegistration((1, 2, 3), isr, node, epoch, epoch), clock.milliseconds())
    return partition


def _round(leader: Partition, logs: dict[int, Log], fetchers: dict[int, FollowerFetcher], now_ms: int) -> None:
    """Every follower fetches once and applies the answer."""
    for node, fetcher in fetchers.items():
        results = []
        for fetch in fetcher.next_fetch():
            result, proposal = serve_follower_fetch(leader, logs[leader.local_broker_id], fetch, node, 10 + node, now_ms)
            assert proposal is None or proposal.kind == "expand"
            results.append(result)
        fetcher.on_fetch_response(results)


def _file_bytes(log: Log) -> bytes:
    return b"".join(s.log_path.read_bytes() for s in log.segments)


def test_followers_copy_the_leaders_bytes_and_learn_the_hw(logs: dict[int, Log], clock: ManualClock) -> None:
    leader = _leader(1, logs[1], clock, epoch=3)
    fetchers = {n: FollowerFetcher(1) for n in (2, 3)}
    for n, fetcher in fetchers.items():
        fetcher.add_partition("orders", 0, logs[n], 3)
    for count in (3, 1, 4):
        logs[1].append_as_leader(build_batch(count), 3)
    _round(leader, logs, fetchers, clock.milliseconds())
    assert logs[1].high_watermark == 0  # the followers' LEOs are learned from their *next* fetch
    _round(leader, logs, fetchers, clock.milliseconds())
    assert logs[1].high_watermark == 8
    assert logs[2].high_watermark == 0  # a follower learns the HW one fetch later still
    _round(leader, logs, fetchers, clock.milliseconds())
    assert logs[2].high_watermark == logs[3].high_watermark == 8
    assert _file_bytes(logs[2]) == _file_bytes(logs[3]) == _file_bytes(logs[1])
    assert logs[2].leader_epoch_cache.entries == [(3, 0)]


def test_deposed_leader_truncates_its_uncommitted_tail(logs: dict[int, Log], clock: ManualClock) -> None:
    old = _leader(1, logs[1], clock, epoch=1)
    follower = FollowerFetcher(1)
    follower.add_partition("orders", 0, logs[2], 1)
    logs[1].append_as_leader(build_batch(2), 1)
    _round(old, logs, {2: follower}, clock.milliseconds())
    _round(old, logs, {2: follower}, clock.milliseconds())
    logs[1].append_as_leader(build_batch(3, value=b"lost"), 1)  # never replicated: uncommitted
    assert logs[1].log_end_offset == 5 and logs[2].log_end_offset == 2

    # Node 2 becomes leader in epoch 2 and writes different records at offsets 2..3.
    new = _leader(2, logs[2], clock, epoch=2, isr=(2,))
    logs[2].append_as_leader(build_batch(2, value=b"kept"), 2)
    old.make_follower(PartitionRegistration((1, 2, 3), (2,), 2, 2, 3))
    deposed = FollowerFetcher(2)
    deposed.add_partition("orders", 0, logs[1], 2)
    fetch = deposed.next_fetch()[0]
    assert (fetch.fetch_offset, fetch.last_fetched_epoch) == (5, 1)
    _round(new, logs, {1: deposed}, clock.milliseconds())
    assert logs[1].log_end_offset == 2  # epoch 1 ends at 2 in the new leader's log
    _round(new, logs, {1: deposed}, clock.milliseconds())
    _round(new, logs, {1: deposed}, clock.milliseconds())
    assert _file_bytes(logs[1]) == _file_bytes(logs[2])
    assert logs[1].leader_epoch_cache.entries == [(1, 0), (2, 2)]


def test_new_replica_starts_at_the_leaders_log_start(logs: dict[int, Log], clock: ManualClock) -> None:
    leader = _leader(1, logs[1], clock, epoch=1, isr=(1,))
    for _ in range(5):
        logs[1].append_as_leader(build_batch(2), 1)
    logs[1].update_high_watermark(10)
    logs[1].increment_log_start_offset(6)
    fetcher = FollowerFetcher(1)
    fetcher.add_partition("orders", 0, logs[2], 1)
    result, _ = serve_follower_fetch(leader, logs[1], fetcher.next_fetch()[0], 2, 12, clock.milliseconds())
    assert result.error_code == ErrorCode.OFFSET_OUT_OF_RANGE and result.log_start_offset == 6
    fetcher.on_fetch_response([result])
    assert logs[2].log_start_offset == 6 and fetcher.next_fetch()[0].fetch_offset == 6
    _round(leader, logs, {2: fetcher}, clock.milliseconds())
    assert logs[2].log_end_offset == 10


def test_stale_epoch_fetch_is_fenced_and_pauses_the_follower(logs: dict[int, Log], clock: ManualClock) -> None:
    leader = _leader(1, logs[1], clock, epoch=4)
    fetcher = FollowerFetcher(1)
    fetcher.add_partition("orders", 0, logs[2], 3)
    result, _ = serve_follower_fetch(leader, logs[1], fetcher.next_fetch()[0], 2, 12, clock.milliseconds())
    assert result.error_code == ErrorCode.FENCED_LEADER_EPOCH
    fetcher.on_fetch_response([result])
    assert fetcher.next_fetch() == []  # until metadata names the leader again
