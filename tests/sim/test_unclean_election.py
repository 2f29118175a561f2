"""unclean.leader.election.enable on the simulation, as Kafka documents it: false (the default
since 0.11) leaves a partition whose last ISR member died without a leader and loses nothing;
true lets a live out-of-sync replica lead at once (the ISR becomes just it, RECOVERING) and the
records only the old leader had are gone, acknowledged ones included."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab.records.codec import iter_batches
from kafkalab.records.model import Record
from kafkalab.records.v2 import build_v2_batch
from kafkalab.sim.cluster import SimCluster

RECOVERED, RECOVERING = 0, 1  # Kafka's LeaderRecoveryState


def _one(value: bytes, now_ms: int) -> bytes:
    return build_v2_batch([Record(0, now_ms, None, value)])


@pytest.mark.parametrize(("setting", "new_leader_is_follower"), [(None, False), ("false", False), ("true", True)])
def test_last_isr_member_dies(tmp_path: Path, setting: str | None, new_leader_is_follower: bool) -> None:
    properties = {} if setting is None else {"unclean.leader.election.enable": setting}
    sim = SimCluster(tmp_path, nodes=3, seed=7, properties=properties)
    try:
        sim.create_topic("payments", 1, 2)
        leader, follower = sim.controller.image.partition("payments", 0).replicas  # type: ignore[union-attr]
        for value in (b"a", b"b"):
            assert sim.produce("payments", 0, _one(value, sim.clock.milliseconds())).error_code == 0
        sim.network.isolate(follower, list(sim.nodes))
        sim.run_for(60_000)  # past replica.lag.time.max.ms: the ISR is the leader alone
        acked = sim.produce("payments", 0, _one(b"c", sim.clock.milliseconds()))
        assert acked.error_code == 0  # acks=all with min.insync.replicas 1
        sim.crash(leader)
        sim.network.heal()
        sim.run_for(10_000)  # past broker.session.timeout.ms: the leader is fenced
        registration = sim.controller.image.partition("payments", 0)
        assert registration is not None
        if not new_leader_is_follower:
            assert (registration.leader, registration.isr) == (-1, (leader,))
            return
        assert (registration.leader, registration.isr) == (follower, (follower,))
        assert registration.leader_recovery_state == RECOVERING
        fetched = sim.consume("payments", 0, 0)
        values = [r.value for b in iter_batches(fetched.records) for r in b.records]
        assert values == [b"a", b"b"]  # "c" was acknowledged, and is lost
        # The old leader returns, truncates to the new leader's log and catches up; the new
        # leader's AlterPartition that adds it to the ISR also says RECOVERED (KIP-704).
        sim.restart(leader)
        sim.run_for(20_000)
        registration = sim.controller.image.partition("payments", 0)
        assert registration is not None and set(registration.isr) == {leader, follower}
        assert registration.leader_recovery_state == RECOVERED
    finally:
        sim.close()
