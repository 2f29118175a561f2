"""Two producer stories on the simulated cluster: what each ``acks`` can lose, and reordering.

Theory of operation
-------------------
:func:`acks_story` writes three records with the chosen ``acks``, cuts the partition's leader off
from its followers, writes three more, then kills the leader; a follower takes over and the
story reads back what the partition holds. With seed 7 (leader 3, ``min.insync.replicas`` 2)::

    acks=0    the three records count as sent at once (offset -1)  -> all three lost
    acks=1    the cut-off leader appends and answers offsets 3-5   -> all three lost
    acks=all  no answer: the followers never confirm; the requests time out, are retried to
              the new leader, and are written there                -> nothing lost

:func:`reordering_story` sends record A, loses its request on the way (a cut of one
millisecond), then sends B and C, which arrive. Without idempotence A is retried after its
``request.timeout.ms`` and lands *after* B and C; with idempotence B and C are refused with
OUT_OF_ORDER_SEQUENCE_NUMBER (A's sequence is missing), retried behind A, and the partition
reads A, B, C.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kafkalab.client.producer.futures import FutureRecordMetadata
from kafkalab.client.producer.producer import ProducerRecord
from kafkalab.records.codec import iter_batches
from kafkalab.sim.cluster import CLIENT, SimCluster
from kafkalab.sim.producer import SimProducer

TOPIC = "orders"
SETTLE_MS = 60_000  # long enough for fencing (9 s), an election and a request timeout (30 s)


@dataclass(frozen=True, slots=True)
class AcksOutcome:
    """What the producer was told about the records written during the cut, and what survived."""

    acks: str
    old_leader: int
    new_leader: int
    told_before_crash: tuple[str, ...]  # per record: "offset N", "no answer yet" or an error
    survived: tuple[str, ...]  # the partition's values on the new leader, in offset order

    @property
    def lost(self) -> tuple[str, ...]:
        acknowledged = [f"during-{i}" for i, told in enumerate(self.told_before_crash) if told.startswith("offset")]
        return tuple(v for v in acknowledged if v not in self.survived)


def partition_values(cluster: SimCluster, topic: str = TOPIC, partition: int = 0) -> tuple[str, ...]:
    answer = cluster.consume(topic, partition, 0)
    data = bytes(answer.records or b"") if answer is not None else b""
    return tuple(r.value.decode() for b in iter_batches(data) for r in b.records if r.value is not None)


def _told(future: FutureRecordMetadata) -> str:
    if not future.done():
        return "no answer yet"
    if future.exception is not None:
        return type(future.exception).__name__
    return f"offset {future.get().offset}"


def acks_story(data_dir: Path, acks: str, *, seed: int = 7) -> AcksOutcome:
    cluster = SimCluster(data_dir, nodes=3, seed=seed, properties={"min.insync.replicas": "2"})
    try:
        cluster.create_topic(TOPIC, 1, 3)
        producer = SimProducer(cluster, {"acks": acks}, seed=seed)
        for i in range(3):
            producer.send(ProducerRecord(TOPIC, f"before-{i}".encode())).get()
        cluster.run_for(1_000)
        leader = cluster.leader(TOPIC, 0)
        cluster.network.isolate(leader, list(cluster.nodes))
        futures = [producer.send(ProducerRecord(TOPIC, f"during-{i}".encode())) for i in range(3)]
        cluster.run_for(2_000)
        told = tuple(_told(f) for f in futures)
        cluster.crash(leader)
        cluster.run_for(SETTLE_MS)
        cluster.network.heal()
        producer.flush()
        return AcksOutcome(acks, leader, cluster.leader(TOPIC, 0), told, partition_values(cluster))
    finally:
        cluster.close()


def reordering_story(data_dir: Path, *, idempotence: bool, max_in_flight: int = 5, seed: int = 7
                     ) -> tuple[str, ...]:
    """The partition's values after A's first request is lost and B, C arrive (see above)."""
    cluster = SimCluster(data_dir, nodes=3, seed=seed)
    try:
        cluster.create_topic(TOPIC, 1, 3)
        producer = SimProducer(cluster, {"enable.idempotence": str(idempotence).lower(), "acks": "all",
                                         "max.in.flight.requests.per.connection": max_in_flight,
                                         "request.timeout.ms": 1_000, "linger.ms": 0}, seed=seed)
        producer.send(ProducerRecord(TOPIC, b"warm-up")).get()
        leader = cluster.leader(TOPIC, 0)
        producer.send(ProducerRecord(TOPIC, b"A"))
        cluster.run_for(0)  # A's request leaves...
        cluster.network.cut(CLIENT, leader, one_way=True)
        cluster.run_for(1)  # ...and is lost on the way
        cluster.network.heal()
        for value in (b"B", b"C"):
            producer.send(ProducerRecord(TOPIC, value))
            cluster.run_for(0)
        producer.flush()
        return partition_values(cluster)
    finally:
        cluster.close()
