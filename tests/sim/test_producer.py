"""kafkalab's producer in the simulated cluster: send modes, interceptors, acks, retries, ordering."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab.client.producer import ProducerRecord, RecordMetadata
from kafkalab.client.producer.errors import BlockTimeoutError, DeliveryTimeoutError
from kafkalab.errors import KafkaError
from kafkalab.sim.cluster import CLIENT, SimCluster
from kafkalab.sim.producer import SimProducer
from kafkalab.sim.producer_stories import acks_story, partition_values, reordering_story


class Counting:
    """An interceptor that tags every value and counts outcomes."""

    def __init__(self) -> None:
        self.acks: list[int] = []
        self.errors: list[KafkaError] = []

    def on_send(self, record: ProducerRecord) -> ProducerRecord:
        return ProducerRecord(record.topic, b"seen:" + record.value, record.key, record.partition)

    def on_acknowledgement(self, metadata: RecordMetadata | None, error: KafkaError | None) -> None:
        if metadata is not None:
            self.acks.append(metadata.offset)
        if error is not None:
            self.errors.append(error)


def test_three_send_modes_and_interceptors(cluster: SimCluster) -> None:
    cluster.create_topic("orders", 1, 3)
    interceptor = Counting()
    producer = SimProducer(cluster, {"linger.ms": 5}, interceptors=[interceptor])
    producer.send(ProducerRecord("orders", b"fire-and-forget"))
    assert producer.send(ProducerRecord("orders", b"sync")).get().offset == 1
    answers: list[tuple[RecordMetadata | None, KafkaError | None]] = []
    producer.send(ProducerRecord("orders", b"async"), callback=lambda m, e: answers.append((m, e)))
    assert answers == []  # nothing happens until the simulation runs
    producer.flush()
    assert answers[0][0] is not None and answers[0][0].offset == 2 and answers[0][1] is None
    assert interceptor.acks == [0, 1, 2]
    assert partition_values(cluster) == ("seen:fire-and-forget", "seen:sync", "seen:async")


def test_linger_ms_batches_records_sent_close_together(cluster: SimCluster) -> None:
    cluster.create_topic("orders", 1, 3)
    producer = SimProducer(cluster, {"linger.ms": 50, "acks": "1"})
    producer.send(ProducerRecord("orders", b"warm-up")).get()
    before = len(producer.sent)
    futures = [producer.send(ProducerRecord("orders", str(i).encode())) for i in range(10)]
    producer.flush()
    produces = [r for r in producer.sent[before:] if r.api_key == 0]
    assert len(produces) == 1 and [f.get().offset for f in futures] == list(range(1, 11))


@pytest.mark.parametrize("acks, lost", [("0", 3), ("1", 3), ("all", 0)])
def test_what_each_acks_setting_loses_when_the_leader_dies(tmp_path: Path, acks: str, lost: int) -> None:
    outcome = acks_story(tmp_path, acks)
    assert outcome.old_leader != outcome.new_leader
    assert len(outcome.lost) == lost
    if acks == "all":
        assert outcome.told_before_crash == ("no answer yet",) * 3
        assert outcome.survived[-3:] == ("during-0", "during-1", "during-2")


def test_retries_reorder_without_idempotence_and_not_with_it(tmp_path: Path) -> None:
    assert reordering_story(tmp_path / "a", idempotence=False) == ("warm-up", "B", "C", "A")
    assert reordering_story(tmp_path / "b", idempotence=True) == ("warm-up", "A", "B", "C")


@pytest.mark.parametrize("idempotence, copies", [(True, 1), (False, 2)])
def test_a_lost_answer_duplicates_only_without_idempotence(cluster: SimCluster, idempotence: bool,
                                                           copies: int) -> None:
    cluster.create_topic("orders", 1, 3)
    producer = SimProducer(cluster, {"enable.idempotence": str(idempotence).lower(), "acks": "all",
                                     "request.timeout.ms": 1000})
    producer.send(ProducerRecord("orders", b"warm-up")).get()
    leader = cluster.leader("orders", 0)
    future = producer.send(ProducerRecord("orders", b"once"))
    cluster.network.cut(leader, CLIENT, one_way=True)  # the request arrives; its answer is lost
    cluster.run_for(500)
    cluster.network.heal()
    future.get()
    assert partition_values(cluster).count("once") == copies


def test_delivery_timeout_fails_records_that_cannot_be_written(cluster: SimCluster) -> None:
    cluster.create_topic("orders", 1, 3)
    producer = SimProducer(cluster, {"delivery.timeout.ms": 5000, "request.timeout.ms": 1000})
    producer.send(ProducerRecord("orders", b"warm-up")).get()
    cluster.network.isolate(CLIENT, list(cluster.nodes))
    future = producer.send(ProducerRecord("orders", b"stuck"))
    with pytest.raises(DeliveryTimeoutError, match="ms has passed since batch creation"):
        future.get()


def test_max_block_ms_bounds_a_send_waiting_for_memory(cluster: SimCluster) -> None:
    cluster.create_topic("orders", 1, 3)
    producer = SimProducer(cluster, {"buffer.memory": 20_000, "max.block.ms": 2000, "request.timeout.ms": 60_000,
                                     "delivery.timeout.ms": 120_000})
    producer.send(ProducerRecord("orders", b"warm-up")).get()
    cluster.network.isolate(CLIENT, list(cluster.nodes))
    producer.send(ProducerRecord("orders", b"x" * 1000))  # takes a 16 KB batch of the 20 KB
    start = cluster.clock.milliseconds()
    with pytest.raises(BlockTimeoutError, match="Failed to allocate memory"):
        producer.send(ProducerRecord("orders", b"y" * 16_000))  # does not fit the batch: needs another 16 KB
    assert cluster.clock.milliseconds() - start >= 2000


def test_a_run_replays_from_its_seed(tmp_path: Path) -> None:
    def run(directory: Path) -> list[tuple[int, int]]:
        sim = SimCluster(directory, nodes=3, seed=11)
        sim.create_topic("orders", 4, 3)
        producer = SimProducer(sim, {"linger.ms": 3, "batch.size": 200}, seed=11)
        futures = [producer.send(ProducerRecord("orders", b"v" * 50)) for _ in range(40)]
        producer.flush()
        sim.close()
        return [(f.get().partition, f.get().offset) for f in futures]
    assert run(tmp_path / "one") == run(tmp_path / "two")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_idempotent_retries_across_a_leader_failover_leave_no_duplicate_and_no_gap(tmp_path: Path, seed: int) -> None:
    # Answers to the leader's last appends are lost and the leader dies; the producer retries on
    # the new leader, which learned each batch's producer id and sequences by replicating it.
    cluster = SimCluster(tmp_path, nodes=3, seed=seed)
    try:
        cluster.create_topic("orders", 1, 3)
        producer = SimProducer(cluster, {"enable.idempotence": "true", "acks": "all", "linger.ms": "0",
                                         "max.in.flight.requests.per.connection": "5",
                                         "request.timeout.ms": "2000", "delivery.timeout.ms": "120000"})
        sent = [f"r{n}" for n in range(40)]
        futures = [producer.send(ProducerRecord("orders", value.encode())) for value in sent[:20]]
        cluster.run_for(50)
        leader = cluster.leader("orders", 0)
        cluster.network.cut(leader, CLIENT, one_way=True)  # requests arrive; answers are lost
        futures += [producer.send(ProducerRecord("orders", value.encode())) for value in sent[20:]]
        cluster.run_for(300)  # the followers fetch what the leader appended
        cluster.crash(leader)
        cluster.network.heal()
        offsets = [future.get().offset for future in futures]
        assert cluster.leader("orders", 0) not in (leader, -1)
        assert list(partition_values(cluster, "orders")) == sent  # every record once, in order
        assert offsets == sorted(set(offsets))
    finally:
        cluster.close()
