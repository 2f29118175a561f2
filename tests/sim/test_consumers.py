"""kafkalab's whole consumer (:class:`ConsumerCore`) in the simulated cluster: a group that
rebalances when one consumer dies, and read_committed over transactional batches built by
kafka-python with markers written through WriteTxnMarkers. Every request crosses the simulated
network to real brokers; the socket-level oracles are in tests/interop/test_kafkalab_consumer.py."""

from __future__ import annotations

from pathlib import Path

from kafkalab.client.consumer import ConsumerConfig, ConsumerCore, ConsumerRecord
from kafkalab.records import Record, build_batch
from kafkalab.sim.cluster import SimCluster
from tests.broker._txn import txn_batch
from tests.sim.test_txn_markers_replicate import PID, _markers

PARTITIONS = 4


def _batch(partition: int, start: int, count: int) -> bytes:
    return build_batch([Record(i, 0, None, b"p%d-%d" % (partition, start + i)) for i in range(count)])


def _take(sim: SimCluster, records: dict[str, list[ConsumerRecord]]) -> None:
    for name, consumer in sim.consumers.items():
        records.setdefault(name, []).extend(consumer.take_records(sim.clock.milliseconds()))


def _run(sim: SimCluster, records: dict[str, list[ConsumerRecord]], duration_ms: int, step_ms: int = 50) -> None:
    for _ in range(duration_ms // step_ms):
        sim.run_for(step_ms)
        _take(sim, records)


def test_a_group_of_kafkalab_consumers_rebalances_when_one_dies(tmp_path: Path) -> None:
    sim = SimCluster(tmp_path, nodes=1, seed=3, properties={"group.initial.rebalance.delay.ms": "0"})
    try:
        sim.create_topic("orders", PARTITIONS, 1)
        for p in range(PARTITIONS):
            assert sim.produce("orders", p, _batch(p, 0, 25), acks=1).error_code == 0
        config = ConsumerConfig(group_id="g", auto_offset_reset="earliest", auto_commit_interval_ms=500,
                                session_timeout_ms=6_000, heartbeat_interval_ms=1_000, max_poll_interval_ms=10_000,
                                partition_assignment_strategy=("range",))
        for name in ("a", "b", "c"):
            sim.add_consumer(name, ConsumerCore(config)).subscribe(["orders"], sim.clock.milliseconds())
        records: dict[str, list[ConsumerRecord]] = {}
        _run(sim, records, 15_000)
        owned = {n: c.assignment() for n, c in sim.consumers.items()}
        assert sorted(tp for tps in owned.values() for tp in tps) == [("orders", p) for p in range(PARTITIONS)]
        assert sum(len(r) for r in records.values()) == 100  # each record once, nobody died yet
        victim = next(n for n, tps in owned.items() if tps)
        sim.kill_consumer(victim)
        for p in range(PARTITIONS):
            assert sim.produce("orders", p, _batch(p, 25, 25), acks=1).error_code == 0
        _run(sim, records, 20_000)
        survivors = {n: c.assignment() for n, c in sim.consumers.items()}
        assert sorted(tp for tps in survivors.values() for tp in tps) == [("orders", p) for p in range(PARTITIONS)]
        for name, got in records.items():
            for p in range(PARTITIONS):
                offsets = [r.offset for r in got if r.partition == p]
                assert offsets == sorted(offsets), f"{name} read orders-{p} out of order"
        seen = {(r.partition, r.offset) for got in records.values() for r in got}
        assert seen == {(p, o) for p in range(PARTITIONS) for o in range(50)}
        # The killed consumer's partitions continue from its last auto commit, not from the start.
        assert sum(len(r) for r in records.values()) < 200 + 25 * len(owned[victim])
        assert any(name != victim and e.kind == "assigned" and set(e.partitions) & set(owned[victim])
                   for _, name, e in sim.consumer_events)
    finally:
        sim.close()


def test_read_committed_drops_aborted_records_in_the_simulation(tmp_path: Path) -> None:
    sim = SimCluster(tmp_path, nodes=3, seed=7)
    try:
        sim.create_topic("orders", 1, 3)
        leader = sim.leader("orders", 0)
        assert sim.produce("orders", 0, txn_batch(PID, 0, 0, [b"a1", b"a2"])).error_code == 0
        assert _markers(sim, leader, commit=False) == 0
        assert sim.produce("orders", 0, _batch(0, 0, 1)).error_code == 0
        assert sim.produce("orders", 0, txn_batch(PID, 0, 2, [b"c1"])).error_code == 0
        assert _markers(sim, leader, commit=True) == 0
        values = {}
        for isolation in ("read_committed", "read_uncommitted"):
            consumer = sim.add_consumer(isolation, ConsumerCore(ConsumerConfig(
                isolation_level=isolation, auto_offset_reset="earliest", enable_auto_commit=False)))
            consumer.assign([("orders", 0)])
            records: dict[str, list[ConsumerRecord]] = {}
            _run(sim, records, 3_000)
            values[isolation] = [r.value for r in records[isolation]]
            assert consumer.position(("orders", 0)) == 6  # past both markers
        assert values == {"read_committed": [b"p0-0", b"c1"], "read_uncommitted": [b"a1", b"a2", b"p0-0", b"c1"]}
    finally:
        sim.close()
