"""A transactional producer's requests, sent to an :class:`InProcessBroker`, one call each.

Theory of operation
-------------------
Kafka's Java producer hides a transaction behind five calls (``initTransactions``,
``beginTransaction``, ``send``, ``sendOffsetsToTransaction``, ``commitTransaction``). On the
wire they are these requests, which :class:`TxnProducer` sends one at a time so a reader can
watch each land:

* InitProducerId with the ``transactional.id`` -- the coordinator answers the producer id and a
  new epoch (and fences any older producer with the same id);
* AddPartitionsToTxn before the first write to a partition in a transaction;
* Produce with a transactional batch: producer id, epoch, and the partition's next sequence;
* AddOffsetsToTxn, then TxnOffsetCommit to the group coordinator (consume-transform-produce);
* EndTxn(commit or abort), after which the coordinator writes a COMMIT or ABORT marker into
  every partition of the transaction.

``beginTransaction`` sends nothing: a transaction starts at its first AddPartitionsToTxn.
Nothing here checks the answers beyond decoding them -- a fenced producer gets its error code
back, which is what the chapter shows. :func:`fetch` and :func:`list_offset` read back with
either isolation level.

Worked example: ``p = TxnProducer(broker, "app-1")``; ``p.init()`` answers (producer id, epoch
0); ``p.add_partitions("orders", [0])``; ``p.produce("orders", 0, [b"a", b"b"])`` gives the
batch sequences 0..1; ``p.end(commit=True)``; the log of ``orders-0`` then holds two records
and a COMMIT marker at offset 2.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kafkalab.client.in_process import InProcessBroker
from kafkalab.errors import ErrorCode
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.records.codec import iter_batches
from kafkalab.records.control import parse_control_record
from kafkalab.records.model import Record
from kafkalab.records.v2 import build_v2_batch

INIT_PRODUCER_ID_VERSION = 4
ADD_PARTITIONS_VERSION = 3
ADD_OFFSETS_VERSION = 3
TXN_OFFSET_COMMIT_VERSION = 3
PRODUCE_VERSION = 9
END_TXN_VERSION = 3
FETCH_VERSION = 11
LIST_OFFSETS_VERSION = 7
OFFSET_FETCH_VERSION = 7
UNSTABLE = -2
LATEST = -1
READ_UNCOMMITTED, READ_COMMITTED = 0, 1
DEFAULT_TRANSACTION_TIMEOUT_MS = 60_000  # the producer's transaction.timeout.ms default


@dataclass(frozen=True, slots=True)
class ProduceAnswer:
    """One partition's Produce answer: the error and the base offset the batch got."""

    error: ErrorCode
    base_offset: int


@dataclass
class TxnProducer:
    """One producer instance: its ids, and the next sequence per partition. Not thread-safe."""

    broker: InProcessBroker
    transactional_id: str | None
    timeout_ms: int = DEFAULT_TRANSACTION_TIMEOUT_MS
    producer_id: int = -1
    epoch: int = -1
    sequences: dict[tuple[str, int], int] = field(default_factory=dict)

    def init(self) -> ErrorCode:
        """InitProducerId: a producer id and epoch (a transactional id bumps the epoch)."""
        answer = self.broker.call(ApiKey.INIT_PRODUCER_ID, INIT_PRODUCER_ID_VERSION, {
            "transactional_id": self.transactional_id, "transaction_timeout_ms": self.timeout_ms,
            "producer_id": -1, "producer_epoch": -1})
        if not answer.error_code:
            self.producer_id, self.epoch = answer.producer_id, answer.producer_epoch
            self.sequences.clear()
        return ErrorCode(answer.error_code)

    def _ids(self) -> dict[str, Any]:
        return {"v3_and_below_transactional_id": self.transactional_id,
                "v3_and_below_producer_id": self.producer_id, "v3_and_below_producer_epoch": self.epoch}

    def add_partitions(self, topic: str, partitions: Sequence[int]) -> ErrorCode:
        """AddPartitionsToTxn; the first error of any partition, or NONE."""
        answer = self.broker.call(ApiKey.ADD_PARTITIONS_TO_TXN, ADD_PARTITIONS_VERSION, {
            **self._ids(), "v3_and_below_topics": [{"name": topic, "partitions": list(partitions)}]})
        codes = [p.partition_error_code for t in answer.results_by_topic_v3_and_below
                 for p in t.results_by_partition]
        return ErrorCode(next((c for c in codes if c), 0))

    def batch(self, topic: str, partition: int, values: Sequence[bytes], *, sequence: int | None = None) -> bytes:
        """A batch stamped with this producer's ids and the partition's next sequence (or
        ``sequence``, to resend an earlier one)."""
        base = self.sequences.get((topic, partition), 0) if sequence is None else sequence
        records = [Record(i, self.broker.now_ms(), None, v) for i, v in enumerate(values)]
        if sequence is None:
            self.sequences[(topic, partition)] = base + len(values)
        return build_v2_batch(records, producer_id=self.producer_id, producer_epoch=self.epoch,
                              base_sequence=base, is_transactional=self.transactional_id is not None)

    def produce(self, topic: str, partition: int, values: Sequence[bytes], *,
                sequence: int | None = None) -> ProduceAnswer:
        """Produce one batch (acks=all); see :meth:`batch` for ``sequence``."""
        return send_batch(self.broker, topic, partition, self.batch(topic, partition, values, sequence=sequence),
                          self.transactional_id)

    def add_offsets(self, group_id: str) -> ErrorCode:
        """AddOffsetsToTxn: the group's ``__consumer_offsets`` partition joins the transaction."""
        answer = self.broker.call(ApiKey.ADD_OFFSETS_TO_TXN, ADD_OFFSETS_VERSION, {
            "transactional_id": self.transactional_id, "producer_id": self.producer_id,
            "producer_epoch": self.epoch, "group_id": group_id})
        return ErrorCode(answer.error_code)

    def commit_offsets(self, group_id: str, topic: str, offsets: dict[int, int]) -> ErrorCode:
        """TxnOffsetCommit to the group coordinator: pending until the transaction ends."""
        answer = self.broker.call(ApiKey.TXN_OFFSET_COMMIT, TXN_OFFSET_COMMIT_VERSION, {
            "transactional_id": self.transactional_id, "group_id": group_id, "producer_id": self.producer_id,
            "producer_epoch": self.epoch, "generation_id": -1, "member_id": "", "group_instance_id": None,
            "topics": [{"name": topic, "partitions": [
                {"partition_index": p, "committed_offset": o, "committed_leader_epoch": -1,
                 "committed_metadata": ""} for p, o in sorted(offsets.items())]}]})
        codes = [p.error_code for t in answer.topics for p in t.partitions]
        return ErrorCode(next((c for c in codes if c), 0))

    def end(self, *, commit: bool) -> ErrorCode:
        """EndTxn: the coordinator writes PrepareCommit/PrepareAbort, then the markers."""
        answer = self.broker.call(ApiKey.END_TXN, END_TXN_VERSION, {
            "transactional_id": self.transactional_id, "producer_id": self.producer_id,
            "producer_epoch": self.epoch, "committed": commit})
        return ErrorCode(answer.error_code)


def send_batch(broker: InProcessBroker, topic: str, partition: int, batch: bytes,
               transactional_id: str | None = None) -> ProduceAnswer:
    """One Produce request with one batch, acks=all."""
    body = {"transactional_id": transactional_id, "acks": -1, "timeout_ms": 30_000,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": batch}]}]}
    [answer] = broker.call(ApiKey.PRODUCE, PRODUCE_VERSION, body).responses[0].partition_responses
    return ProduceAnswer(ErrorCode(answer.error_code), int(answer.base_offset))


@dataclass(frozen=True, slots=True)
class FetchedRecord:
    offset: int
    value: bytes | None
    producer_id: int
    marker: str | None  # "COMMIT" or "ABORT" for a control record, else None


@dataclass(frozen=True, slots=True)
class FetchAnswer:
    """What one Fetch returned: batches' records, the HW, the LSO and the aborted transactions
    as (producer id, first offset)."""

    records: tuple[FetchedRecord, ...]
    high_watermark: int
    last_stable_offset: int
    aborted: tuple[tuple[int, int], ...]


def fetch(broker: InProcessBroker, topic: str, partition: int, offset: int = 0, *,
          isolation_level: int = READ_UNCOMMITTED, max_bytes: int = 1 << 20) -> FetchAnswer:
    """One Fetch from ``offset`` (min_bytes 0: answered at once); records of the first batch
    below ``offset`` are dropped, as a consumer does."""
    body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": max_bytes,
            "isolation_level": isolation_level, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": topic, "partitions": [{
                "partition": partition, "current_leader_epoch": -1, "fetch_offset": offset,
                "log_start_offset": -1, "partition_max_bytes": max_bytes}]}],
            "forgotten_topics_data": [], "rack_id": ""}
    [answer] = broker.call(ApiKey.FETCH, FETCH_VERSION, body).responses[0].partitions
    records = tuple(
        FetchedRecord(r.offset, r.value, batch.header.producer_id,
                      parse_control_record(r).type.name if batch.header.is_control else None)
        for batch in iter_batches(bytes(answer.records or b"")) for r in batch.records
        if r.offset >= offset)  # a batch comes whole; a consumer skips what lies before its position
    aborted = tuple((a.producer_id, a.first_offset) for a in (answer.aborted_transactions or ()))
    return FetchAnswer(records, int(answer.high_watermark), int(answer.last_stable_offset), aborted)


def consumer_view(answer: FetchAnswer) -> list[FetchedRecord]:
    """What a consumer hands its application from one Fetch answer: no control records, and no
    record of an aborted transaction. The broker sends those records anyway (with
    read_committed, only up to the LSO) and lists the aborted transactions; the consumer drops
    a producer's records from each listed first offset up to that producer's ABORT marker, as
    Kafka's ``CompletedFetch`` does. With read_uncommitted the list is empty."""
    starts = sorted(answer.aborted, key=lambda a: a[1])
    aborting: set[int] = set()
    shown = []
    for record in answer.records:
        while starts and starts[0][1] <= record.offset:
            aborting.add(starts.pop(0)[0])
        if record.marker is not None:
            if record.marker == "ABORT":
                aborting.discard(record.producer_id)
        elif record.producer_id not in aborting:
            shown.append(record)
    return shown


def list_offset(broker: InProcessBroker, topic: str, partition: int, isolation_level: int) -> int:
    """ListOffsets(latest): the HW with read_uncommitted, the LSO with read_committed."""
    answer = broker.call(ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSION, {
        "replica_id": -1, "isolation_level": isolation_level, "topics": [{"name": topic, "partitions": [
            {"partition_index": partition, "current_leader_epoch": -1, "timestamp": LATEST}]}]})
    [found] = answer.topics[0].partitions
    return int(found.offset)


def committed_offset(broker: InProcessBroker, group_id: str, topic: str, partition: int) -> int:
    """OffsetFetch with require_stable: the group's committed offset, -1 if none (a pending
    transactional commit is answered UNSTABLE_OFFSET_COMMIT, returned here as -2)."""
    answer = broker.call(ApiKey.OFFSET_FETCH, OFFSET_FETCH_VERSION, {
        "group_id": group_id, "topics": [{"name": topic, "partition_indexes": [partition]}], "require_stable": True})
    [found] = answer.topics[0].partitions
    return UNSTABLE if found.error_code == ErrorCode.UNSTABLE_OFFSET_COMMIT else int(found.committed_offset)


__all__ = ["FetchAnswer", "FetchedRecord", "ProduceAnswer", "READ_COMMITTED", "READ_UNCOMMITTED",
           "TxnProducer", "committed_offset", "consumer_view", "fetch", "list_offset", "send_batch"]
