"""Transaction markers in a three-broker simulated cluster: the leader appends them through
the Produce path, so followers copy them byte for byte and rebuild the same producer state, and
the WriteTxnMarkers answer waits for the ISR (acks=all)."""

from __future__ import annotations

from typing import Any

from kafkalab.errors import ErrorCode
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.sim.cluster import CLIENT, SimCluster
from tests.broker._txn import txn_batch

PID = 4000


def _markers(sim: SimCluster, node: int, commit: bool, coordinator_epoch: int = 0) -> Any:
    body = {"markers": [{"producer_id": PID, "producer_epoch": 0, "transaction_result": commit,
                         "coordinator_epoch": coordinator_epoch,
                         "topics": [{"name": "orders", "partition_indexes": [0]}]}]}
    answers: list[Any] = []
    sim._send(CLIENT, node, ApiKey.WRITE_TXN_MARKERS, 1, body, answers.append)
    sim.run_until(lambda: bool(answers), 60_000)
    [answer] = answers
    return answer.markers[0].topics[0].partitions[0].error_code


def test_marker_replicates_and_closes_the_transaction_on_every_replica(cluster: SimCluster) -> None:
    cluster.create_topic("orders", 1, 3)
    leader = cluster.leader("orders", 0)
    assert cluster.produce("orders", 0, txn_batch(PID, 0, 0, [b"a", b"b"])).error_code == 0
    for node in cluster.nodes.values():
        log = node.broker.topics.log("orders", 0)
        assert log.producer_state.producers[PID].current_txn_first_offset == 0
    follower = next(n for n in cluster.nodes if n != leader)
    assert _markers(cluster, follower, commit=True) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert _markers(cluster, leader, commit=True) == ErrorCode.NONE
    # Answered only once the followers have the marker: the HW passed it.
    assert cluster.nodes[leader].broker.topics.log("orders", 0).high_watermark == 3
    cluster.run_for(1_000)
    contents = set()
    for node in cluster.nodes.values():
        log = node.broker.topics.log("orders", 0)
        assert log.log_end_offset == 3
        entry = log.producer_state.producers[PID]
        assert entry.current_txn_first_offset is None and entry.coordinator_epoch == 0
        contents.add(b"".join(s.log_path.read_bytes() for s in log.segments))
    assert len(contents) == 1  # byte-identical replicas


def test_lso_invariants_hold_on_every_replica_while_markers_replicate(cluster: SimCluster) -> None:
    """Stepping the cluster in small slices while transactions open and close: on every replica
    the LSO stays within [log start, HW] and never passes the first offset of a transaction
    that replica still has open."""
    cluster.create_topic("orders", 1, 3)
    leader = cluster.leader("orders", 0)
    answers: list[Any] = []

    def check() -> None:
        for node in cluster.nodes.values():
            log = node.broker.topics.log("orders", 0)
            lso = log.last_stable_offset
            assert log.log_start_offset <= lso <= log.high_watermark <= log.log_end_offset
            for entry in log.producer_state.producers.values():
                if entry.current_txn_first_offset is not None:
                    assert lso <= entry.current_txn_first_offset

    for round_ in range(3):
        cluster.send_produce("orders", 0, txn_batch(PID, 0, 2 * round_, [b"a", b"b"]), answers.append)
        for _ in range(20):
            cluster.run_for(25)
            check()
        body = {"markers": [{"producer_id": PID, "producer_epoch": 0, "transaction_result": round_ != 1,
                             "coordinator_epoch": 0, "topics": [{"name": "orders", "partition_indexes": [0]}]}]}
        cluster._send(CLIENT, leader, ApiKey.WRITE_TXN_MARKERS, 1, body, answers.append)
        for _ in range(20):
            cluster.run_for(25)
            check()
    assert len(answers) == 6
    log = cluster.nodes[leader].broker.topics.log("orders", 0)
    assert log.last_stable_offset == log.high_watermark == 9
    assert [e.first_offset for e in log.active_segment.txn_index.entries] == [3]  # round 1 aborted
