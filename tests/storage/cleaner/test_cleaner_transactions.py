"""The cleaner's transaction rules (Kafka's ``CleanedTransactionMetadata`` and the "last batch
of an active producer" rule) on logs of transactional batches built by kafka-python and markers
appended as the transaction coordinator appends them. The main scenario -- aborted data removed,
markers removed after the delete horizon -- is ``test_cleaner.py``'s
``test_aborted_transaction_data_and_markers_removed``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from kafkalab.records.control import build_end_txn_marker, parse_control_record
from kafkalab.storage.cleaner import Cleaner
from kafkalab.storage.cleaner.cleaner import read_segment
from kafkalab.storage.cleaner.manager import last_records_of_active_producers
from kafkalab.storage.producer_state import AppendOrigin
from kafkalab.storage.txn_index import AbortedTxn

from .conftest import LogFixture, batches_on_disk
from .test_fast_path import _clean_both

P, Q = 5001, 5002


class TxnLog:
    """Appends transactional data, plain batches and markers to a cleaner test's log."""

    def __init__(self, fx: LogFixture) -> None:
        self.fx = fx
        self.sequence: dict[int, int] = {}

    def data(self, producer_id: int, pairs: list[tuple[bytes, bytes | None]]) -> int:
        seq = self.sequence.get(producer_id, 0)
        self.sequence[producer_id] = seq + len(pairs)
        builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=True,
                                            producer_id=producer_id, producer_epoch=0, base_sequence=seq,
                                            batch_size=1 << 20)
        for i, (key, value) in enumerate(pairs):
            builder.append(i, timestamp=self.fx.clock.milliseconds(), key=key, value=value, headers=[])
        return self.fx.log.append_as_leader(bytes(builder.build()), 0).first_offset

    def plain(self, pairs: list[tuple[bytes, bytes | None]]) -> int:
        first = self.fx.log.log_end_offset
        self.fx.append(pairs)  # type: ignore[arg-type]
        return first

    def end(self, producer_id: int, commit: bool) -> AbortedTxn | None:
        """Append a marker; for an abort, return the .txnindex entry it wrote."""
        marker = build_end_txn_marker(commit=commit, offset=0, timestamp_ms=self.fx.clock.milliseconds(),
                                      producer_id=producer_id, producer_epoch=0, coordinator_epoch=0)
        self.fx.log.append_as_leader(marker, 0, origin=AppendOrigin.COORDINATOR)
        if commit:
            return None
        return self.fx.log.active_segment.txn_index.entries[-1]

    def layout(self) -> list[tuple[int, Any]]:
        """(base offset, records as (key, value) or the marker's type) per batch on disk."""
        out: list[tuple[int, Any]] = []
        for batch in batches_on_disk(self.fx.log):
            if batch.header.is_control:
                kind = parse_control_record(batch.records[0]).type.name if batch.records else "EMPTY"
                out.append((batch.header.base_offset, kind))
            else:
                out.append((batch.header.base_offset, [(r.key, r.value) for r in batch.records]))
        return out

    def horizon(self, base_offset: int) -> int | None:
        [batch] = [b for b in batches_on_disk(self.fx.log) if b.header.base_offset == base_offset]
        return batch.header.delete_horizon_ms


def test_kafka_python_reads_the_cleaned_segment(make_log) -> None:  # type: ignore[no-untyped-def]
    """After a clean the segment is still valid record batches to an independent reader: the
    marker keeps its control and transactional bits, producer id and epoch."""
    fx = make_log()
    t = TxnLog(fx)
    t.data(P, [(b"a", b"1")])
    t.end(P, commit=False)
    t.plain([(b"b", b"2")])
    fx.log.roll("test")
    t.plain([(b"z", b"0")])
    Cleaner(1 << 20).clean(fx.log, 0, fx.log.segments[-1].base_offset, fx.clock.milliseconds())
    data = read_segment(fx.log.segments[0])
    seen = []
    position = 0
    while position < len(data):
        size = int.from_bytes(data[position + 8: position + 12], "big") + 12
        batch = DefaultRecordBatch(data[position: position + size])
        assert batch.validate_crc()
        seen.append((batch.base_offset, batch.is_control_batch, batch.is_transactional, batch.producer_id))
        position += size
    assert seen == [(1, True, True, P), (2, False, False, -1)]


def test_the_last_batch_of_an_active_producer_stays_empty(make_log) -> None:  # type: ignore[no-untyped-def]
    """An aborted batch that is its producer's last data batch loses its records but stays as
    an empty batch, so the producer's last sequence survives the clean (Kafka's rule)."""
    fx = make_log()
    t = TxnLog(fx)
    t.data(P, [(b"a", b"1"), (b"b", b"2")])  # 0, 1
    t.end(P, commit=False)  # 2
    t.plain([(b"c", b"3")])  # 3
    fx.log.roll("test")
    t.plain([(b"z", b"0")])
    producers = last_records_of_active_producers(fx.log)
    assert producers[P].last_data_offset == 1
    Cleaner(1 << 20).clean(fx.log, 0, 4, fx.clock.milliseconds(), producers)
    assert t.layout()[:3] == [(0, []), (2, "ABORT"), (3, [(b"c", b"3")])]
    empty = batches_on_disk(fx.log)[0].header
    assert (empty.base_offset, empty.last_offset, empty.producer_id, empty.base_sequence) == (0, 1, P, 0)


def test_an_abort_whose_marker_is_not_cleaned_yet_still_drops_its_data(make_log) -> None:  # type: ignore[no-untyped-def]
    """The ABORT sits in the uncleaned active segment: its .txnindex entry is found there and
    the aborted data in the cleaned segment goes; the marker's segment is untouched."""
    fx = make_log()
    t = TxnLog(fx)
    t.data(P, [(b"a", b"1")])  # 0
    t.plain([(b"b", b"2")])  # 1
    fx.log.roll("test")
    t.end(P, commit=False)  # 2, active segment
    Cleaner(1 << 20).clean(fx.log, 0, 2, fx.clock.milliseconds())
    assert t.layout() == [(1, [(b"b", b"2")]), (2, "ABORT")]
    assert fx.log.segments[1].txn_index.entries == [AbortedTxn(P, 0, 2, 3)]


def test_open_transaction_is_never_cleaned_past_the_lso(make_log) -> None:  # type: ignore[no-untyped-def]
    """The manager's first uncleanable offset is the LSO (Kafka's ``cleanableOffsets``): the
    segment where an undecided transaction starts, and everything after it, stay dirty."""
    from .test_cleaner import clean

    fx = make_log()
    t = TxnLog(fx)
    t.plain([(b"k", b"1")])  # 0
    t.plain([(b"k", b"2")])  # 1
    fx.log.roll("test")
    t.data(P, [(b"j", b"open")])  # 2: undecided
    t.plain([(b"k", b"3")])  # 3
    fx.log.roll("test")
    t.plain([(b"z", b"0")])  # 4, active
    assert fx.log.last_stable_offset == 2
    outcome = clean(fx)
    assert outcome.result.end_offset == 2
    assert [o for o, _ in t.layout()] == [1, 2, 3, 4]  # k@1 stays: k@3 is past the LSO
    t.end(P, commit=True)  # 5: decided, the LSO moves to the end
    outcome = clean(fx)
    assert outcome.result.end_offset == 4  # the active segment (base 4) still bounds the clean
    assert [o for o, _ in t.layout()] == [2, 3, 4, 5]


def test_fast_and_reference_paths_write_the_same_bytes(make_log, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    fx = make_log(**{"segment.bytes": "100000"})
    t = TxnLog(fx)
    for round_ in range(4):
        t.plain([(b"k%d" % (round_ % 3), b"p%d" % round_)])
        t.data(P, [(b"k%d" % i, b"x%d" % round_) for i in range(3)])
        t.data(Q, [(b"k1", b"q%d" % round_)])
        t.end(P, commit=round_ % 2 == 0)
        t.end(Q, commit=round_ % 2 == 1)
    producers = last_records_of_active_producers(fx.log)
    fast, reference = _clean_both(fx, tmp_path, producers=producers)
    assert fast == reference
    fast, reference = _clean_both(LogFixture(tmp_path / "fast"), tmp_path / "again",
                                  now_ms=fx.clock.milliseconds() + 10, producers=producers)
    assert fast == reference
