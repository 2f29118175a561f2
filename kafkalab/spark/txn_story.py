"""Transactional producers writing through a real broker: the data behind lab 07.

Theory of operation
-------------------
A transaction leaves three kinds of trace in a partition's log, and lab 07 reads all three with
Spark: the producer's data batches (flagged transactional, carrying its producer id), one
*control batch* per partition when the transaction ends (a COMMIT or ABORT marker, which takes
an offset of its own), and, for an abort, an entry in the segment's ``.txnindex``.
:func:`write_txn_story` produces such a log with kafkalab's broker in this process, on a manual
clock (:class:`~kafkalab.client.in_process.InProcessBroker`), through the same requests a Java
producer sends: InitProducerId with a ``transactional.id``, AddPartitionsToTxn before the first
write to a partition, transactional Produce with per-partition sequence numbers, and EndTxn. The
broker's transaction coordinator writes the markers.

Alongside, a plain (non-transactional) producer writes to every partition, so the lab can show
that an open transaction holds back a read_committed consumer for *everyone's* records after
it. The story ends with one producer's transaction left open: the last stable offset (LSO) of
the partitions it wrote stays at that transaction's first offset.

Everything is seeded (``random.Random(seed)``): which partitions a transaction writes, how many
records, and whether it aborts (each producer has its own abort rate). The function returns
what it knows at the end: every transaction's outcome and the broker's own LSO and high
watermark per partition (ListOffsets with read_committed and read_uncommitted), which the lab
compares with what Spark derives from the files.

Worked example: a transaction writes 3 records to partition 0 and 2 to partition 1, then
commits. Partition 0 gets offsets n..n+2 for the data and n+3 for the COMMIT marker, partition 1
the same with 2 records: 7 offsets for 5 records.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kafkalab.client.in_process import InProcessBroker, InProcessBrokerError
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.records.model import Record
from kafkalab.records.v2 import build_v2_batch

INIT_PRODUCER_ID_VERSION = 4
ADD_PARTITIONS_VERSION = 3
PRODUCE_VERSION = 9
END_TXN_VERSION = 3
LIST_OFFSETS_VERSION = 7
LATEST = -1
READ_UNCOMMITTED, READ_COMMITTED = 0, 1
TRANSACTION_TIMEOUT_MS = 900_000  # transaction.max.timeout.ms; the story lasts seconds, so the last stays open


@dataclass(frozen=True)
class TxnProducerSpec:
    """A transactional producer: its id, how many transactions it runs, how often it aborts."""

    transactional_id: str
    transactions: int
    abort_rate: float


@dataclass(frozen=True)
class TxnStory:
    """Immutable; the defaults are lab 07's small scale."""

    topic: str = "payments"
    partitions: int = 3
    producers: tuple[TxnProducerSpec, ...] = (
        TxnProducerSpec("billing", 40, 0.1), TxnProducerSpec("refunds", 40, 0.5), TxnProducerSpec("audit", 20, 0.0))
    records_per_partition: tuple[int, int] = (1, 20)  # per transaction, uniform in this range
    plain_records_per_step: int = 5  # written by a non-transactional producer between transactions
    hanging_producer: str = "audit"  # its last transaction is never ended
    value_bytes: int = 80
    start_ms: int = 1_700_000_000_000
    seed: int = 7


@dataclass(frozen=True)
class TxnOutcome:
    transactional_id: str
    producer_id: int
    partitions: tuple[int, ...]
    records: int
    outcome: str  # "commit", "abort" or "open"


@dataclass
class TxnStoryResult:
    """What the story did and what the broker says at its end."""

    transactions: list[TxnOutcome] = field(default_factory=list)
    last_stable_offset: dict[int, int] = field(default_factory=dict)
    high_watermark: dict[int, int] = field(default_factory=dict)


@dataclass
class _Producer:
    spec: TxnProducerSpec
    producer_id: int = -1
    epoch: int = -1
    sequences: dict[int, int] = field(default_factory=dict)
    done: int = 0


def write_txn_story(data_dir: Path, story: TxnStory = TxnStory(),
                    progress: Callable[[int], None] | None = None) -> TxnStoryResult:
    """Write ``story`` into ``data_dir`` and return what happened. ``progress`` is called with
    the number of records written after each transaction."""
    rng = random.Random(story.seed)
    value = bytes(rng.randrange(97, 123) for _ in range(story.value_bytes))
    result = TxnStoryResult()
    with InProcessBroker(data_dir, start_ms=story.start_ms, seed=story.seed) as broker:
        broker.create_topic(story.topic, story.partitions)
        producers = [_init(broker, _Producer(spec)) for spec in story.producers]
        while any(p.done < p.spec.transactions for p in producers):
            producer = rng.choice([p for p in producers if p.done < p.spec.transactions])
            written = _transaction(broker, story, producer, rng, value, result)
            written += _plain(broker, story, rng, value)
            broker.advance(10)
            if progress is not None:
                progress(written)
        for partition in range(story.partitions):
            result.last_stable_offset[partition] = _latest(broker, story.topic, partition, READ_COMMITTED)
            result.high_watermark[partition] = _latest(broker, story.topic, partition, READ_UNCOMMITTED)
    return result


def _init(broker: InProcessBroker, producer: _Producer) -> _Producer:
    answer = broker.call(ApiKey.INIT_PRODUCER_ID, INIT_PRODUCER_ID_VERSION, {
        "transactional_id": producer.spec.transactional_id, "transaction_timeout_ms": TRANSACTION_TIMEOUT_MS,
        "producer_id": -1, "producer_epoch": -1})
    _expect(answer.error_code, f"InitProducerId {producer.spec.transactional_id}")
    producer.producer_id, producer.epoch = answer.producer_id, answer.producer_epoch
    return producer


def _transaction(broker: InProcessBroker, story: TxnStory, producer: _Producer, rng: random.Random,
                 value: bytes, result: TxnStoryResult) -> int:
    spec = producer.spec
    chosen = sorted(rng.sample(range(story.partitions), rng.randint(1, story.partitions)))
    counts = {p: rng.randint(*story.records_per_partition) for p in chosen}
    aborts = rng.random() < spec.abort_rate
    producer.done += 1
    last = producer.done == spec.transactions and spec.transactional_id == story.hanging_producer
    ids = {"v3_and_below_transactional_id": spec.transactional_id,
           "v3_and_below_producer_id": producer.producer_id, "v3_and_below_producer_epoch": producer.epoch}
    added = broker.call(ApiKey.ADD_PARTITIONS_TO_TXN, ADD_PARTITIONS_VERSION, {
        **ids, "v3_and_below_topics": [{"name": story.topic, "partitions": chosen}]})
    for topic in added.results_by_topic_v3_and_below:
        for answer in topic.results_by_partition:
            _expect(answer.partition_error_code, f"AddPartitionsToTxn {spec.transactional_id}")
    for partition, count in counts.items():
        sequence = producer.sequences.get(partition, 0)
        records = [Record(i, broker.now_ms(), f"{spec.transactional_id}-{producer.done}".encode(), value)
                   for i in range(count)]
        batch = build_v2_batch(records, producer_id=producer.producer_id, producer_epoch=producer.epoch,
                               base_sequence=sequence, is_transactional=True)
        _produce(broker, story.topic, partition, batch, spec.transactional_id)
        producer.sequences[partition] = sequence + count
    outcome = "open" if last else ("abort" if aborts else "commit")
    if not last:
        answer = broker.call(ApiKey.END_TXN, END_TXN_VERSION, {
            "transactional_id": spec.transactional_id, "producer_id": producer.producer_id,
            "producer_epoch": producer.epoch, "committed": not aborts})
        _expect(answer.error_code, f"EndTxn {spec.transactional_id}")
    result.transactions.append(TxnOutcome(spec.transactional_id, producer.producer_id, tuple(chosen),
                                          sum(counts.values()), outcome))
    return sum(counts.values())


def _plain(broker: InProcessBroker, story: TxnStory, rng: random.Random, value: bytes) -> int:
    if not story.plain_records_per_step:
        return 0
    partition = rng.randrange(story.partitions)
    records = [Record(i, broker.now_ms(), None, value) for i in range(story.plain_records_per_step)]
    _produce(broker, story.topic, partition, build_v2_batch(records), None)
    return len(records)


def _produce(broker: InProcessBroker, topic: str, partition: int, batch: bytes, transactional_id: str | None) -> None:
    body = {"transactional_id": transactional_id, "acks": -1, "timeout_ms": 30_000,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": batch}]}]}
    [answer] = broker.call(ApiKey.PRODUCE, PRODUCE_VERSION, body).responses[0].partition_responses
    _expect(answer.error_code, f"produce to {topic}-{partition}")


def _latest(broker: InProcessBroker, topic: str, partition: int, isolation_level: int) -> int:
    answer = broker.call(ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSION, {
        "replica_id": -1, "isolation_level": isolation_level, "topics": [{"name": topic, "partitions": [
            {"partition_index": partition, "current_leader_epoch": -1, "timestamp": LATEST}]}]})
    [found] = answer.topics[0].partitions
    _expect(found.error_code, f"ListOffsets {topic}-{partition}")
    return int(found.offset)


def _expect(error_code: int, what: str) -> None:
    if error_code:
        raise InProcessBrokerError(f"{what}: error {error_code}")


__all__ = ["TxnOutcome", "TxnProducerSpec", "TxnStory", "TxnStoryResult", "write_txn_story"]
