"""The event recorder: one flat row per replication event, produce answer, crash and restart,
stamped with simulated time and node; Parquet files read back with pyarrow equal the rows."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from kafkalab.errors import ErrorCode
from kafkalab.sim.cluster import START_MS, SimCluster
from kafkalab.sim.events import PARQUET_COLUMNS, EventRecorder, EventRow
from tests.broker._harness import batch

LAG_MS = 30_000  # replica.lag.time.max.ms default


def _isolate_while_producing(sim: SimCluster, node: int, duration_ms: int) -> None:
    """Cut ``node`` off while a producer appends one batch a second with acks=1 (an idle
    partition never shrinks its ISR: a follower with the leader's LEO is caught up)."""
    sim.network.isolate(node, list(sim.nodes))
    for _ in range(duration_ms // 1_000):
        sim.send_produce("orders", 0, batch([b"x"]), lambda answer: None, acks=1)
        sim.run_for(1_000)


def test_produce_rows(cluster: SimCluster) -> None:
    recorder = EventRecorder(cluster)
    cluster.create_topic("orders", 1, 3)
    cluster.run_for(5)
    leader = cluster.leader("orders", 0)
    answer = cluster.produce("orders", 0, batch([b"a", b"b"]))
    assert answer.error_code == 0
    kinds = {(row.node_id, row.kind) for row in recorder.rows}
    assert (leader, "became-leader") in kinds
    assert {n for n, kind in kinds if kind == "became-follower"} == set(cluster.nodes) - {leader}
    [moved] = recorder.of_kind("hw-moved")
    assert (moved.node_id, moved.old_hw, moved.new_hw) == (leader, 0, 2)
    [acked] = recorder.of_kind("produce-answer")
    assert (acked.topic, acked.partition, acked.offset, acked.error_code) == ("orders", 0, 0, 0)
    assert acked.time_ms == cluster.clock.milliseconds() and moved.time_ms <= acked.time_ms


def test_isr_shrink_and_expand_rows_follow_the_controller(cluster: SimCluster) -> None:
    recorder = EventRecorder(cluster)
    cluster.create_topic("orders", 1, 3)
    leader = cluster.leader("orders", 0)
    follower = next(n for n in cluster.nodes if n != leader)
    epochs = [cluster.controller.image.partition("orders", 0).partition_epoch]  # type: ignore[union-attr]
    _isolate_while_producing(cluster, follower, 50_000)
    epochs.append(cluster.controller.image.partition("orders", 0).partition_epoch)  # type: ignore[union-attr]
    cluster.network.heal()
    cluster.run_for(2 * LAG_MS)
    registration = cluster.controller.image.partition("orders", 0)
    assert registration is not None and follower in registration.isr
    shrink, expand = recorder.of_kind("isr-changed")
    everyone = tuple(sorted(cluster.nodes))
    others = tuple(sorted(set(everyone) - {follower}))
    assert (shrink.node_id, shrink.isr, shrink.new_isr) == (leader, everyone, others)
    assert (expand.isr, expand.new_isr) == (others, everyone)
    # The partition epochs are the controller's, which bumps it once per accepted change.
    assert [shrink.partition_epoch, expand.partition_epoch] == [epochs[1], registration.partition_epoch]
    assert epochs[0] < epochs[1] < registration.partition_epoch
    # The shrink is proposed at an ISR check 30 to 45 s after the follower was last caught up,
    # and applied once the controller's AlterPartition answer is back (a round trip later).
    proposals = recorder.of_kind("isr-proposed")
    assert [p.new_isr for p in proposals] == [others, everyone]
    assert LAG_MS <= proposals[0].time_ms - START_MS <= LAG_MS * 3 // 2
    assert proposals[0].time_ms < shrink.time_ms <= proposals[0].time_ms + 100


def test_crash_and_restart_rows_and_the_restarted_broker_is_watched(cluster: SimCluster) -> None:
    recorder = EventRecorder(cluster)
    cluster.create_topic("orders", 1, 3)
    leader = cluster.leader("orders", 0)
    cluster.produce("orders", 0, batch([b"a"]))
    cluster.crash(leader)
    cluster.run_for(10_000)  # fenced after broker.session.timeout.ms, a new leader elected
    cluster.restart(leader)
    cluster.run_for(1_000)
    assert [(r.kind, r.node_id) for r in recorder.rows if r.kind in ("crash", "restart")] == [
        ("crash", leader), ("restart", leader)]
    restarted_at = recorder.of_kind("restart")[0].time_ms
    rejoined = [r for r in recorder.of_kind("became-follower") if r.node_id == leader and r.time_ms >= restarted_at]
    assert rejoined and rejoined[0].leader_epoch == 1 and rejoined[0].leader == cluster.leader("orders", 0)
    elections = [r for r in recorder.of_kind("became-leader") if r.leader_epoch == 1]
    assert {r.node_id for r in elections} == {cluster.leader("orders", 0)}  # each image it applies


def test_refused_produce_is_a_row_with_its_error_code(tmp_path: Path) -> None:
    sim = SimCluster(tmp_path, nodes=3, seed=3, properties={"min.insync.replicas": "2"})
    try:
        recorder = EventRecorder(sim)
        sim.create_topic("orders", 1, 3)
        leader = sim.leader("orders", 0)
        for other in sim.nodes:
            if other != leader:
                sim.network.isolate(other, list(sim.nodes))
        sim.run_for(2 * LAG_MS)
        sim.produce("orders", 0, batch([b"y"]))
        assert [r.error_code for r in recorder.of_kind("produce-answer")] == [ErrorCode.NOT_ENOUGH_REPLICAS]
    finally:
        sim.close()


def test_parquet_round_trip(cluster: SimCluster, tmp_path: Path) -> None:
    recorder = EventRecorder(cluster)
    cluster.create_topic("orders", 1, 3)
    follower = next(n for n in cluster.nodes if n != cluster.leader("orders", 0))
    _isolate_while_producing(cluster, follower, 50_000)
    path = tmp_path / "events.parquet"
    recorder.to_parquet(path)
    table = pq.read_table(path)
    assert [(f.name, str(f.type)) for f in table.schema] == [
        (name, "list<element: int32>" if kind == "list<int32>" else kind) for name, kind in PARQUET_COLUMNS]
    back = [EventRow(**{k: tuple(v) if isinstance(v, list) else v for k, v in row.items()})
            for row in table.to_pylist()]
    assert back == recorder.rows and {r.kind for r in back} >= {"isr-changed", "produce-answer", "hw-moved"}


def test_empty_parquet_keeps_the_schema(cluster: SimCluster, tmp_path: Path) -> None:
    recorder = EventRecorder(cluster)
    recorder.to_parquet(tmp_path / "none.parquet")
    table = pq.read_table(tmp_path / "none.parquet")
    assert table.num_rows == 0 and table.schema.names == [name for name, _ in PARQUET_COLUMNS]


def test_consumer_fetch_stops_at_the_high_watermark(cluster: SimCluster) -> None:
    """SimCluster.consume, which the replication chapter uses: a consumer reads below the HW."""
    from kafkalab.records.codec import iter_batches
    from kafkalab.sim.network import LinkFaults

    cluster.create_topic("orders", 1, 3)
    leader = cluster.leader("orders", 0)
    cluster.produce("orders", 0, batch([b"a", b"b"]))
    for follower in (n for n in cluster.nodes if n != leader):
        cluster.network.set_link(follower, leader, LinkFaults(delay_min_ms=5_000, delay_max_ms=5_000))
    cluster.run_for(1_000)
    assert cluster.produce("orders", 0, batch([b"c"]), acks=1).error_code == 0
    answer = cluster.consume("orders", 0, 0)
    assert answer.error_code == 0 and answer.high_watermark == 2
    assert [r.value for b in iter_batches(bytes(answer.records)) for r in b.records] == [b"a", b"b"]
