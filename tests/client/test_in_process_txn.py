"""The in-process transactional producer's requests, and the consumer-side filter of aborted
transactions: a read_committed view drops exactly the aborted producers' records, between the
first offset the broker lists and that producer's ABORT marker."""

from __future__ import annotations

from pathlib import Path

from kafkalab.client.in_process import InProcessBroker
from kafkalab.client.in_process_txn import (READ_COMMITTED, READ_UNCOMMITTED, FetchAnswer, FetchedRecord,
                                            TxnProducer, committed_offset, consumer_view, fetch, list_offset)
from kafkalab.errors import ErrorCode


def _r(offset: int, producer_id: int, marker: str | None = None) -> FetchedRecord:
    return FetchedRecord(offset, None if marker else f"{producer_id}@{offset}".encode(), producer_id, marker)


def test_consumer_view_drops_an_aborted_producer_only_until_its_marker() -> None:
    records = (_r(0, 7), _r(1, 8), _r(2, 7), _r(3, 7, "ABORT"), _r(4, 8), _r(5, 8, "COMMIT"), _r(6, 7))
    answer = FetchAnswer(records, 7, 7, aborted=((7, 0),))
    assert [r.offset for r in consumer_view(answer)] == [1, 4, 6]
    assert [r.offset for r in consumer_view(FetchAnswer(records, 7, 7, ()))] == [0, 1, 2, 4, 6]


def test_consumer_view_starts_dropping_at_the_listed_first_offset() -> None:
    records = (_r(0, 7), _r(1, 7, "COMMIT"), _r(2, 7), _r(3, 7, "ABORT"))
    assert [r.offset for r in consumer_view(FetchAnswer(records, 4, 4, ((7, 2),)))] == [0]


def test_a_transaction_through_the_broker(tmp_path: Path) -> None:
    with InProcessBroker(tmp_path, start_ms=1_700_000_000_000) as broker:
        broker.create_topic("in", 1)
        producer = TxnProducer(broker, "t-1")
        assert producer.init() == ErrorCode.NONE and producer.epoch == 0
        assert producer.add_partitions("in", [0]) == ErrorCode.NONE
        assert producer.produce("in", 0, [b"a", b"b"]).base_offset == 0
        assert producer.add_offsets("g") == ErrorCode.NONE
        assert producer.commit_offsets("g", "in", {0: 2}) == ErrorCode.NONE
        assert list_offset(broker, "in", 0, READ_COMMITTED) == 0
        assert committed_offset(broker, "g", "in", 0) == -2  # UNSTABLE_OFFSET_COMMIT while pending
        assert producer.end(commit=True) == ErrorCode.NONE
        assert committed_offset(broker, "g", "in", 0) == 2
        assert list_offset(broker, "in", 0, READ_UNCOMMITTED) == list_offset(broker, "in", 0, READ_COMMITTED) == 3
        answer = fetch(broker, "in", 0, 1, isolation_level=READ_COMMITTED)
        assert [(r.offset, r.marker) for r in answer.records] == [(1, None), (2, "COMMIT")]  # from the fetch offset
        assert [r.value for r in consumer_view(answer)] == [b"b"]
