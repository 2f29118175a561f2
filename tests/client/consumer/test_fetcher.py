"""The fetcher's decoding of one partition's answer: the module docstring's worked example, with
the transactional batch built by kafka-python (an independent encoder) and the ABORT marker by
kafkalab's control-record builder; both decode paths must agree."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kafkalab.client.consumer import ConsumerConfig
from kafkalab.client.consumer.fetcher import AbortedTransactions, _records, partition_records
from kafkalab.errors import CorruptRecordError
from kafkalab.records import Record, build_batch
from kafkalab.records.control import build_end_txn_marker
from tests.broker._txn import txn_batch

PID = 9


def _at(offset: int, batch: bytes) -> bytes:
    """kafka-python builds batches at base offset 0; the broker stamps the real one (outside the CRC)."""
    return offset.to_bytes(8, "big") + batch[8:]


LOG = (_at(3, txn_batch(PID, 0, 0, [b"t3", b"t4", b"t5", b"t6", b"t7"]))
       + build_end_txn_marker(commit=False, offset=8, timestamp_ms=0, producer_id=PID, producer_epoch=0,
                              coordinator_epoch=0)
       + build_batch([Record(9, 0, None, b"p9"), Record(10, 0, None, b"p10")]))


def answer(records: bytes) -> SimpleNamespace:
    return SimpleNamespace(error_code=0, records=records, high_watermark=11, last_stable_offset=11,
                           aborted_transactions=[SimpleNamespace(producer_id=PID, first_offset=3)])


@pytest.mark.parametrize("isolation, offsets", [("read_uncommitted", [5, 6, 7, 9, 10]), ("read_committed", [9, 10])])
def test_the_worked_example(isolation: str, offsets: list[int]) -> None:
    config = ConsumerConfig(isolation_level=isolation)
    fetched = partition_records(config, ("orders", 0), 5, answer(LOG))
    assert [r.offset for r in fetched.records] == offsets
    assert fetched.next_offset == 11
    reference, next_offset, _ = _records(config, ("orders", 0), 5, LOG,
                                         AbortedTransactions(answer(LOG).aborted_transactions)
                                         if isolation == "read_committed" else None)
    assert reference == list(fetched.records) and next_offset == 11


def test_only_markers_still_move_the_position() -> None:
    marker = build_end_txn_marker(commit=True, offset=8, timestamp_ms=0, producer_id=PID, producer_epoch=0,
                                  coordinator_epoch=0)
    fetched = partition_records(ConsumerConfig(), ("orders", 0), 8, answer(marker))
    assert fetched.records == () and fetched.next_offset == 9


def test_a_corrupt_batch_is_refused_unless_check_crcs_is_off() -> None:
    corrupt = bytearray(LOG)
    corrupt[-3] ^= 0xFF  # inside p10's value
    with pytest.raises(CorruptRecordError) as raised:
        partition_records(ConsumerConfig(), ("orders", 0), 0, answer(bytes(corrupt)))
    assert raised.value.error_code == 2
    lenient = partition_records(ConsumerConfig(check_crcs=False), ("orders", 0), 9, answer(bytes(corrupt)))
    assert [r.offset for r in lenient.records] == [9, 10]


def test_a_cut_off_last_batch_is_dropped() -> None:
    fetched = partition_records(ConsumerConfig(), ("orders", 0), 5, answer(LOG[:-10]))
    assert [r.offset for r in fetched.records] == [5, 6, 7] and fetched.next_offset == 9
