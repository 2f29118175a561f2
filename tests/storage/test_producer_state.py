"""Idempotent producers on the leader's append path: every sequence and epoch rule of Kafka's
``ProducerAppendInfo``, duplicates answered with the original offsets, nothing appended on a
rejection. Batches come from kafka-python's codec."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, strategies as st
from idempotent_helpers import idempotent_batch
from storage_helpers import build_batch

from kafkalab.clock import ManualClock
from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.records.header import INT32_MAX, decrement_sequence, increment_sequence
from kafkalab.storage import Log, LogConfig
from kafkalab.storage.producer_state import (
    BatchMetadata,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    ProducerStateEntry,
)
from kafkalab.storage.producer_state_manager import ProducerStateManager

PID = 4242
Opener = Callable[..., Log]


def append(log: Log, epoch: int, seq: int, count: int = 1, pid: int = PID, **kw: object) -> tuple[int, int]:
    info = log.append_as_leader(idempotent_batch(pid, epoch, seq, count, **kw), 0)  # type: ignore[arg-type]
    return info.first_offset, info.last_offset


def rejected(log: Log, error: type[KafkaError], code: ErrorCode, epoch: int, seq: int, count: int = 1) -> None:
    end, size = log.log_end_offset, log.active_segment.size_bytes
    with pytest.raises(error) as caught:
        append(log, epoch, seq, count)
    assert caught.value.error_code == code
    assert (log.log_end_offset, log.active_segment.size_bytes) == (end, size), "a rejected batch is not appended"


def test_in_sequence_batches_are_appended(open_log: Opener) -> None:
    log = open_log()
    assert append(log, 0, 0, 5) == (0, 4)
    assert append(log, 0, 5, 3) == (5, 7)
    entry = log.producer_state.producers[PID]
    assert (entry.producer_epoch, entry.first_seq, entry.last_seq, entry.last_data_offset) == (0, 0, 7, 7)


def test_duplicate_of_last_batch_gets_original_offsets_and_appends_nothing(open_log: Opener) -> None:
    log = open_log()
    log.append_as_leader(build_batch(3), 0)  # offsets 0..2 from a plain producer
    assert append(log, 0, 0, 4) == (3, 6)
    end, size = log.log_end_offset, log.active_segment.size_bytes
    info = log.append_as_leader(idempotent_batch(PID, 0, 0, 4), 0)
    assert (info.first_offset, info.last_offset) == (3, 6)
    assert info.log_append_time_ms == 1_000_003  # Kafka reports the original batch's timestamp
    assert (log.log_end_offset, log.active_segment.size_bytes) == (end, size)


def test_duplicate_of_any_of_the_last_five_batches(open_log: Opener) -> None:
    log = open_log()
    for seq in range(0, 12, 2):
        append(log, 0, seq, 2)  # six batches: seq 0-1 has left the five remembered
    assert append(log, 0, 2, 2) == (2, 3)
    assert append(log, 0, 10, 2) == (10, 11)
    rejected(log, OutOfOrderSequenceError, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, 0, 0, 2)


def test_same_first_sequence_but_other_length_is_not_a_duplicate(open_log: Opener) -> None:
    log = open_log()
    append(log, 0, 0, 3)
    rejected(log, OutOfOrderSequenceError, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, 0, 0, 2)


def test_gap_and_overlap_are_out_of_order(open_log: Opener) -> None:
    log = open_log()
    append(log, 0, 0, 3)
    rejected(log, OutOfOrderSequenceError, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, 0, 4)
    rejected(log, OutOfOrderSequenceError, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, 0, 2)
    assert append(log, 0, 3) == (3, 3)


def test_unknown_producer_may_start_at_any_sequence(open_log: Opener) -> None:
    """KIP-360: Kafka no longer answers UNKNOWN_PRODUCER_ID; a producer the partition does not
    know (new, expired or removed by retention) is taken at its word."""
    log = open_log()
    assert append(log, 3, 77, 2) == (0, 1)
    assert append(log, 3, 79) == (2, 2)


def test_older_epoch_is_invalid_producer_epoch(open_log: Opener) -> None:
    log = open_log()
    append(log, 1, 0)
    rejected(log, InvalidProducerEpochError, ErrorCode.INVALID_PRODUCER_EPOCH, 0, 1)
    rejected(log, InvalidProducerEpochError, ErrorCode.INVALID_PRODUCER_EPOCH, 0, 0)


def test_epoch_bump_restarts_sequences_at_zero(open_log: Opener) -> None:
    log = open_log()
    append(log, 0, 0, 5)
    rejected(log, OutOfOrderSequenceError, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, 1, 5)
    assert append(log, 1, 0, 2) == (5, 6)
    entry = log.producer_state.producers[PID]
    assert (entry.producer_epoch, [b.first_seq for b in entry.batches]) == (1, [0])
    # The old epoch's batches are forgotten: its retry is a zombie's, not a duplicate.
    rejected(log, InvalidProducerEpochError, ErrorCode.INVALID_PRODUCER_EPOCH, 0, 0, 5)


def test_sequence_wraps_from_int_max_to_zero(open_log: Opener) -> None:
    log = open_log()
    append(log, 0, INT32_MAX - 1, 2)  # sequences MAX-1, MAX
    assert append(log, 0, 0, 2) == (2, 3)
    append(log, 0, 2)
    # A batch that itself wraps: MAX-1, MAX, 0 after an epoch bump and a fresh producer start.
    assert append(log, 0, INT32_MAX - 1, 3, pid=PID + 1) == (5, 7)
    assert log.producer_state.producers[PID + 1].last_seq == 0
    assert append(log, 0, INT32_MAX - 1, 3, pid=PID + 1) == (5, 7), "the wrapped batch's retry"
    assert append(log, 0, 1, pid=PID + 1) == (8, 8)


def test_transactional_batch_opens_a_transaction(open_log: Opener) -> None:
    log = open_log()
    append(log, 0, 0, 2, transactional=True)
    append(log, 0, 2, transactional=True)
    assert log.producer_state.producers[PID].current_txn_first_offset == 0
    rejected(log, InvalidTxnStateError, ErrorCode.INVALID_TXN_STATE, 0, 3)


def test_replicated_batches_skip_sequence_and_epoch_checks(open_log: Opener) -> None:
    """A follower (or recovery) takes what the leader wrote: gaps and older epochs pass."""
    log = open_log()
    for offset, (epoch, seq) in enumerate([(1, 0), (1, 7), (0, 3)]):
        data = bytearray(idempotent_batch(PID, epoch, seq))
        data[0:8] = offset.to_bytes(8, "big")
        log.append_as_follower(bytes(data))
    entry = log.producer_state.producers[PID]
    assert (entry.producer_epoch, entry.last_seq, entry.last_data_offset) == (0, 3, 2)


def test_follower_append_takes_the_leaders_state(tmp_path: Path, clock: ManualClock) -> None:
    leader = Log.open(tmp_path / "t-0", LogConfig(), clock)
    follower = Log.open(tmp_path / "f-0", LogConfig(), clock)
    append(leader, 0, 0, 3)
    append(leader, 0, 10, 2, pid=PID + 1)
    follower.append_as_follower(leader.read(0, 1 << 20).read_bytes())
    assert follower.producer_state.producers[PID].last_seq == 2
    # A gap the leader accepted for a new producer is not checked again by the follower.
    assert follower.producer_state.producers[PID + 1].last_seq == 11
    leader.close()
    follower.close()


def test_non_idempotent_batches_leave_no_state(open_log: Opener) -> None:
    log = open_log()
    log.append_as_leader(build_batch(5), 0)
    assert log.producer_state.producers == {}


def test_producers_expire_unless_in_a_transaction(tmp_path: Path) -> None:
    manager = ProducerStateManager(tmp_path)
    manager.producers[1] = ProducerStateEntry(1, 0, last_timestamp_ms=1_000, batches=[BatchMetadata(4, 4, 4, 1_000)])
    manager.producers[2] = ProducerStateEntry(2, 0, last_timestamp_ms=1_000, current_txn_first_offset=7)
    manager.producers[3] = ProducerStateEntry(3, 0, last_timestamp_ms=50_000)
    assert manager.remove_expired_producers(now_ms=1_000 + 86_400_000 - 1) == 0
    assert manager.remove_expired_producers(now_ms=1_000 + 86_400_000) == 1
    assert sorted(manager.producers) == [2, 3]
    assert manager.remove_expired_producers(now_ms=50_100, expiration_ms=100) == 1
    assert sorted(manager.producers) == [2]


def test_expired_producer_restarts_at_any_sequence(open_log: Opener, clock: ManualClock) -> None:
    log = open_log()
    append(log, 0, 0, 3, timestamp_ms=clock.milliseconds())
    log.producer_state.remove_expired_producers(clock.milliseconds() + 2 * 86_400_000)
    assert append(log, 0, 40) == (3, 3)


@given(st.integers(0, INT32_MAX), st.integers(0, 10_000))
def test_decrement_sequence_undoes_increment(sequence: int, delta: int) -> None:
    assert decrement_sequence(increment_sequence(sequence, delta), delta) == sequence


def test_decrement_sequence_wraps_below_zero() -> None:
    assert [decrement_sequence(1, d) for d in (0, 1, 2, 3)] == [1, 0, INT32_MAX, INT32_MAX - 1]
