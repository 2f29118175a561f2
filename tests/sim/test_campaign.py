"""The replication fault campaign: 200 seeds here and in ``test_campaign_more.py`` (``make
campaign`` runs 1,000), and proof that its checker can fail."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from kafkalab.sim import campaign
from kafkalab.sim.cluster import SimCluster
from kafkalab.sim.invariants import InvariantViolation, ReplicationChecker
from tests.broker._harness import batch

CI_SEEDS = 200


CHUNKS = 8  # half of them run from test_campaign_more.py, so that two workers share the seeds


def run_chunk(chunk: int) -> None:
    per_chunk = CI_SEEDS // CHUNKS
    acked = 0
    for seed in range(chunk * per_chunk, (chunk + 1) * per_chunk):
        with tempfile.TemporaryDirectory(prefix=f"kafkalab-campaign-{seed}-", dir=campaign.scratch_root()) as tmp:
            result = campaign.run(seed, Path(tmp))  # raises InvariantViolation with a replay line
        acked += result.acked
        assert result.checks == campaign.STEPS_DEFAULT + 1
    assert acked > per_chunk  # the runs really produced and acknowledged data


@pytest.mark.parametrize("chunk", range(CHUNKS // 2))
def test_every_invariant_holds_over_the_first_100_seeds(chunk: int) -> None:
    run_chunk(chunk)


def test_the_checker_reports_a_lost_acknowledged_record(tmp_path: Path) -> None:
    cluster = SimCluster(tmp_path, nodes=3, seed=1)
    try:
        cluster.create_topic("orders", 1, 3)
        checker = ReplicationChecker(cluster)
        answer = cluster.produce("orders", 0, batch([b"a", b"b"]))
        checker.record_ack("orders", 0, answer.base_offset, (b"a", b"b"))
        checker.check()
        leader_log = cluster.nodes[cluster.leader("orders", 0)].broker.topics.log("orders", 0)
        leader_log.truncate_to(0)  # what an unsafe election would do
        with pytest.raises(InvariantViolation, match=r"HW of orders-0 fell to 0 .*seed 1,"):
            checker.check()
        fresh = ReplicationChecker(cluster, acked=list(checker.acked))  # no HW history to trip first
        with pytest.raises(InvariantViolation, match=r"acknowledged offset 0 of orders-0 is missing"):
            fresh.check()
    finally:
        cluster.close()


def test_the_checker_reports_replicas_that_disagree_below_the_hw(tmp_path: Path) -> None:
    cluster = SimCluster(tmp_path, nodes=3, seed=2)
    try:
        cluster.create_topic("orders", 1, 3)
        cluster.produce("orders", 0, batch([b"a"]))
        cluster.run_for(1_000)
        checker = ReplicationChecker(cluster)
        checker.check()
        leader = cluster.leader("orders", 0)
        leader_log = cluster.nodes[leader].broker.topics.log("orders", 0)
        leader_log.truncate_to(0)
        leader_log.append_as_leader(batch([b"z"]), 0)  # a different record at offset 0
        leader_log.update_high_watermark(1)
        with pytest.raises(InvariantViolation, match="below its HW"):
            checker.check()
    finally:
        cluster.close()


def test_replay_command_runs_one_seed(capsys: pytest.CaptureFixture[str]) -> None:
    assert campaign.main(["--seed", "3", "--steps", "10"]) == 0
    assert "1 seeds, 10 steps each" in capsys.readouterr().out


def test_the_consumer_check_reports_a_read_above_the_committed_end(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from kafkalab.broker.handlers import fetch as fetch_handler
    from kafkalab.client.consumer import ConsumerConfig, ConsumerCore
    from kafkalab.sim.consumer_check import ConsumerReadCheck

    cluster = SimCluster(tmp_path, nodes=3, seed=4)
    try:
        cluster.create_topic("orders", 1, 3)
        leader = cluster.leader("orders", 0)
        checker = ReplicationChecker(cluster)
        consumer = cluster.add_consumer("reader", ConsumerCore(ConsumerConfig(auto_offset_reset="earliest")))
        consumer.assign([("orders", 0)], cluster.clock.milliseconds())
        reader = ConsumerReadCheck(cluster, checker, consumer)
        cluster.produce("orders", 0, batch([b"a"]))

        def poll_for(duration_ms: int) -> None:
            for _ in range(duration_ms // 100):
                cluster.run_for(100)
                consumer.take_records(cluster.clock.milliseconds())

        poll_for(1_000)
        assert reader.answers_checked > 0 and reader.read == {("orders", 0): {0: b"a"}}
        real = fetch_handler._check_reader
        monkeypatch.setattr(fetch_handler, "_check_reader",  # a broken broker: consumers read to the LEO
                            lambda partition, wanted, replica_id, **kw: None if replica_id < 0 else real(
                                partition, wanted, replica_id, **kw))
        cluster.network.isolate(leader, [n for n in cluster.nodes if n != leader])  # the HW stalls at 1
        cluster.send_produce("orders", 0, batch([b"b"]), lambda answer: None, acks=1)
        with pytest.raises(InvariantViolation, match=r"consumer read orders-0 offset 1, at or above the committed end 1"):
            poll_for(5_000)
    finally:
        cluster.close()


def test_the_checker_reports_an_isr_changed_by_a_stale_broker_epoch(tmp_path: Path) -> None:
    """A controller that forgot Kafka's broker-epoch check would let a restarted broker's past
    life change an ISR; the campaign's checker must say so."""
    from kafkalab.protocol.messages.broker_lifecycle import ALTER_PARTITION_REQUEST

    cluster = SimCluster(tmp_path, nodes=3, seed=1)
    try:
        cluster.create_topic("orders", 1, 3)
        checker = ReplicationChecker(cluster)
        registration = cluster.controller.image.partition("orders", 0)
        assert registration is not None
        leader = registration.leader
        heartbeats = cluster.controller_node.heartbeats
        heartbeats.session = lambda broker_id, broker_epoch: heartbeats.sessions[broker_id]  # the bug
        cls = ALTER_PARTITION_REQUEST.cls
        part = cls.TopicData.PartitionData
        shrunk = tuple(part.BrokerState(b, -1) for b in registration.isr if b == leader or b == registration.isr[-1])
        stale = cls(broker_id=leader, broker_epoch=12345, topics=(cls.TopicData(
            topic_id=cluster.controller.image.topics["orders"].topic_id, partitions=(part(
                partition_index=0, leader_epoch=registration.leader_epoch, new_isr_with_epochs=shrunk,
                partition_epoch=registration.partition_epoch),)),))
        cluster.controller_node.handle_alter_partition(stale, cluster.clock.milliseconds())
        assert cluster.controller.image.partition("orders", 0).isr != registration.isr  # type: ignore[union-attr]
        with pytest.raises(InvariantViolation, match=r"epoch 12345\) changed the ISR .* fenced or stale"):
            checker.check()
    finally:
        cluster.close()
