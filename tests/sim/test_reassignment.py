"""A reassignment in the simulated cluster, asked for over the wire as an admin client does: the
new replica is added, fetches the whole log from the leader, joins the ISR, and only then is the
old replica removed -- it stops and deletes its log directory. No acknowledged record is lost."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kafkalab.errors import ErrorCode
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.sim.cluster import START_MS, SimCluster
from tests.broker._harness import batch, decode_records


def _ask(sim: SimCluster, api_key: int, version: int, body: dict[str, Any]) -> Any:
    answers: list[Any] = []
    sim.send_request(1, api_key, version, body, answers.append)
    assert sim.run_until(lambda: bool(answers), 5_000)
    return answers[0]


def _ongoing(sim: SimCluster) -> list[tuple[str, int, list[int], list[int], list[int]]]:
    response = _ask(sim, ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, {"topics": None})
    return [(t.name, p.partition_index, list(p.replicas), list(p.adding_replicas), list(p.removing_replicas))
            for t in response.topics for p in t.partitions]


def test_moving_the_leaders_replica_to_a_new_broker(tmp_path: Path) -> None:
    sim = SimCluster(tmp_path, nodes=4, seed=7)
    sim.create_topic("orders", 1, 3)
    before = sim.controller.image.partition("orders", 0)
    assert before is not None
    leader = before.leader
    (spare,) = set(sim.nodes) - set(before.replicas)
    for value in (b"a", b"b", b"c"):
        assert sim.produce("orders", 0, batch([value], timestamp_ms=START_MS)).error_code == ErrorCode.NONE
    target = [spare] + [r for r in before.replicas if r != leader]
    sim.network.isolate(spare, list(sim.nodes))  # hold the new replica back to watch the middle step

    response = _ask(sim, ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, {"topics": [
        {"name": "orders", "partitions": [{"partition_index": 0, "replicas": target}]}]})
    assert [(p.error_code, p.error_message) for t in response.responses for p in t.partitions] == [(0, None)]
    assert _ongoing(sim) == [("orders", 0, target + [leader], [spare], [leader])]
    assert sim.leader("orders", 0) == leader  # the old replica leads until its replacement is in sync

    sim.network.heal()
    acked: list[bytes] = []  # acks=all writes racing the move: every acknowledged one must survive
    for value in (b"x1", b"x2", b"x3"):
        sim.send_produce("orders", 0, batch([value], timestamp_ms=START_MS),
                         lambda answer, v=value: acked.append(v) if answer.error_code == 0 else None)
    assert sim.run_until(lambda: not sim.controller.image.partition("orders", 0).removing_replicas, 60_000)
    after = sim.controller.image.partition("orders", 0)
    assert after is not None
    assert (after.replicas, set(after.isr), after.leader) == (tuple(target), set(target), spare)
    assert after.leader_epoch == before.leader_epoch + 1
    assert _ongoing(sim) == []
    assert not (tmp_path / f"node-{leader}" / "orders-0").exists()  # the removed replica's log is gone
    assert sim.nodes[leader].broker.replica_manager.partition("orders", 0) is None
    records = decode_records(b"".join(s.log_path.read_bytes()
                                      for s in sim.nodes[spare].broker.topics.log("orders", 0).segments))
    values = [value for _, _, value, _ in records]
    assert values[:3] == [b"a", b"b", b"c"] and set(acked) <= set(values) and acked
    answer = sim.produce("orders", 0, batch([b"d"], timestamp_ms=START_MS))
    assert answer.error_code == 0 and answer.base_offset == len(values)  # the new leader carries on
    sim.close()


def test_cancel_while_the_new_replica_is_behind(tmp_path: Path) -> None:
    sim = SimCluster(tmp_path, nodes=4, seed=7)
    sim.create_topic("orders", 1, 3)
    before = sim.controller.image.partition("orders", 0)
    assert before is not None
    (spare,) = set(sim.nodes) - set(before.replicas)
    assert sim.produce("orders", 0, batch([b"a"], timestamp_ms=START_MS)).error_code == ErrorCode.NONE
    sim.network.isolate(spare, list(sim.nodes))  # it never catches up
    target = [spare] + list(before.replicas[1:])
    _ask(sim, ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, {"topics": [
        {"name": "orders", "partitions": [{"partition_index": 0, "replicas": target}]}]})
    assert (tmp_path / f"node-{spare}" / "orders-0").exists()  # it created the log to fetch into
    sim.run_for(5_000)
    response = _ask(sim, ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, {"topics": [
        {"name": "orders", "partitions": [{"partition_index": 0, "replicas": None}]}]})
    assert [p.error_code for t in response.responses for p in t.partitions] == [ErrorCode.NONE]
    after = sim.controller.image.partition("orders", 0)
    assert after is not None
    # Kafka's revert: the original replicas (the removed one now last), the same ISR and leader.
    assert (set(after.replicas), after.isr, after.leader) == (set(before.replicas), before.isr, before.leader)
    assert after.adding_replicas == after.removing_replicas == ()
    assert not (tmp_path / f"node-{spare}" / "orders-0").exists()
    assert _ongoing(sim) == []
    sim.close()
