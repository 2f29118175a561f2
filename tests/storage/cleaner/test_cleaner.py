"""One clean of a real Log: Kafka's keep-the-latest rule, tombstones, offsets, codecs."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch

from kafkalab.records.codec import build_batch
from kafkalab.records.header import Compression
from kafkalab.records.model import Record
from kafkalab.storage.cleaner import LogCleaner
from kafkalab.storage.cleaner.cleaner import Cleaner, group_segments_by_size

from .conftest import LogFixture, batches_on_disk, records_on_disk


def clean(fx: LogFixture, dedupe_bytes: int = 1 << 20):  # type: ignore[no-untyped-def]
    cleaner = LogCleaner(fx.root, fx.clock.milliseconds, dedupe_buffer_bytes=dedupe_bytes)
    return cleaner.force_clean(fx.log)


def test_worked_example_tombstone_kept_then_removed(make_log) -> None:  # type: ignore[no-untyped-def]
    fx = make_log(**{"delete.retention.ms": "100"})
    fx.append([(b"k1", b"a"), (b"k2", b"b"), (b"k1", b"c"), (b"k3", b"d"), (b"k2", None)])
    fx.log.roll("test")
    fx.append([(b"k9", b"x")])  # the active segment: never cleaned
    now = fx.clock.milliseconds()
    outcome = clean(fx)
    assert outcome.result.end_offset == 5
    assert [(r.offset, r.key, r.value) for r in records_on_disk(fx.log)] == [
        (2, b"k1", b"c"), (3, b"k3", b"d"), (4, b"k2", None), (5, b"k9", b"x")
    ]
    first = batches_on_disk(fx.log)[0]
    assert first.header.delete_horizon_ms == now + 100
    assert first.header.base_offset == 0  # the batch keeps its base offset; a gap appears
    fx.clock.advance_ms(99)
    clean(fx)
    assert [r.offset for r in records_on_disk(fx.log)] == [2, 3, 4, 5]
    fx.clock.advance_ms(1)
    clean(fx)
    assert [r.offset for r in records_on_disk(fx.log)] == [2, 3, 5]


def test_active_segment_never_cleaned(make_log) -> None:  # type: ignore[no-untyped-def]
    fx = make_log(**{"segment.bytes": "100000"})
    fx.append([(b"k", b"1"), (b"k", b"2"), (b"k", b"3")])
    assert clean(fx).result.end_offset == 0
    assert len(records_on_disk(fx.log)) == 3


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD])
def test_compression_offsets_timestamps_preserved_and_kafka_python_agrees(make_log, codec: Compression) -> None:  # type: ignore[no-untyped-def]
    fx = make_log(**{"segment.bytes": "100000"})
    fx.append([(b"a", b"1"), (b"b", b"2"), (b"a", b"3")], compression=codec)
    fx.clock.advance_ms(7)
    fx.append([(b"b", b"4"), (b"c", None)], compression=codec)
    fx.log.roll("test")
    fx.append([(b"z", b"0")])
    before = {r.offset: r for r in records_on_disk(fx.log)}
    clean(fx)
    after = records_on_disk(fx.log)
    assert [r.offset for r in after] == [2, 3, 4, 5]
    assert all(r == before[r.offset] for r in after)  # offset, timestamp, key, value, headers
    batches = batches_on_disk(fx.log)
    assert [b.header.compression for b in batches[:2]] == [codec, codec]
    # An independent decoder reads the rewritten batches the same way.
    for batch in batches[:2]:
        raw = bytes(fx.log.segments[0].log_path.read_bytes()[batch.header.position : batch.header.position + batch.header.size_bytes])
        theirs = DefaultRecordBatch(raw)
        assert theirs.validate_crc()
        assert [(r.offset, r.timestamp, r.key, r.value) for r in theirs] == [
            (r.offset, r.timestamp, r.key, r.value) for r in batch.records
        ]


def test_unkeyed_records_dropped(make_log) -> None:  # type: ignore[no-untyped-def]
    fx = make_log()
    fx.append([(None, b"x"), (b"k", b"v")])
    fx.log.roll("test")
    fx.append([(b"z", b"0")])
    outcome = clean(fx)
    assert outcome.result.stats.unkeyed_removed == 1
    assert [r.offset for r in records_on_disk(fx.log)] == [1, 2]


def test_small_segments_grouped(make_log) -> None:  # type: ignore[no-untyped-def]
    fx = make_log(**{"segment.bytes": "200"})
    for i in range(12):
        fx.append([(b"k%d" % (i % 2), b"v%d" % i)])
    assert len(fx.log.segments) > 4
    outcome = clean(fx)
    assert len(outcome.result.stats.groups) == len(outcome.result.stats.groups)  # recorded
    # Cleaned segments are tiny now; a second clean groups them into fewer segments.
    clean(fx)
    assert len(fx.log.segments) < 5
    keys = {r.key: r.value for r in records_on_disk(fx.log)}
    assert keys == {b"k0": b"v10", b"k1": b"v11"}


def test_group_segments_respects_size(make_log) -> None:  # type: ignore[no-untyped-def]
    fx = make_log(**{"segment.bytes": "200"})
    for i in range(8):
        fx.append([(b"k", b"v%d" % i)])
    segments = fx.log.segments[:-1]
    sizes = [s.size_bytes for s in segments]
    groups = group_segments_by_size(segments, max(sizes) * 2, 10 * 1024 * 1024)
    assert [s for g in groups for s in g] == segments
    assert all(sum(s.size_bytes for s in g) <= max(sizes) * 2 for g in groups)
    assert any(len(g) > 1 for g in groups)


def test_tiny_offset_map_cleans_in_passes_to_the_same_result(make_log) -> None:  # type: ignore[no-untyped-def]
    fx = make_log(**{"segment.bytes": "300"})
    for i in range(40):
        fx.append([(b"k%d" % (i % 7), b"v%d" % i)])
    fx.log.roll("test")
    fx.append([(b"end", b"x")])
    cleaner = LogCleaner(fx.root, fx.clock.milliseconds, dedupe_buffer_bytes=24 * 4, load_factor=1.0)
    ends = []
    for _ in range(40):
        outcome = cleaner.force_clean(fx.log)
        ends.append(outcome.result.end_offset)
        if outcome.result.end_offset >= 40:
            break
    assert ends == sorted(ends) and len(ends) > 1  # several passes, always forward
    latest = {}
    for r in records_on_disk(fx.log):
        latest[r.key] = r.value
    assert latest == {**{b"k%d" % k: b"v%d" % max(i for i in range(40) if i % 7 == k) for k in range(7)}, b"end": b"x"}
    assert len(records_on_disk(fx.log)) == 8


ops = st.lists(
    st.tuples(st.integers(0, 5), st.booleans(), st.integers(0, 3)),  # key, tombstone?, roll-weight
    min_size=1, max_size=60,
)


@settings(max_examples=40, deadline=None)
@given(ops=ops, seed=st.integers(0, 2**16))
def test_property_latest_value_per_key_matches_model(tmp_path_factory, ops, seed: int) -> None:  # type: ignore[no-untyped-def]
    from .conftest import LogFixture

    rng = random.Random(seed)
    fx = LogFixture(tmp_path_factory.mktemp("p"), **{"segment.bytes": "250", "delete.retention.ms": "50"})
    original = []
    for i, (key, tombstone, _) in enumerate(ops):
        pair = (b"k%d" % key, None if tombstone else b"v%d" % i)
        fx.append([pair])
        original.append(pair)
        fx.clock.advance_ms(rng.randrange(0, 20))
    before = {r.offset: r for r in records_on_disk(fx.log)}
    for _ in range(3):
        end = clean(fx).result.end_offset
        fx.clock.advance_ms(30)
        after = records_on_disk(fx.log)
        offsets = [r.offset for r in after]
        assert offsets == sorted(offsets)
        assert all(before[r.offset] == r for r in after)  # kept records are unchanged
        kept = {r.offset for r in after}
        latest_below_end = {}
        for offset, (key, _) in enumerate(original[:end]):
            latest_below_end[key] = offset
        for offset in kept:
            if offset < end:
                assert latest_below_end[original[offset][0]] == offset  # only the latest survives
        for offset in range(end, len(original)):
            assert offset in kept  # nothing at or past the clean's end is touched
        for key, offset in latest_below_end.items():
            if original[offset][1] is not None:
                assert offset in kept  # the latest value of every key is still there
    # Model: reading the log gives each key's latest value, tombstoned keys absent or null.
    model = {}
    for key, value in original:
        model[key] = value
    seen = {}
    for r in records_on_disk(fx.log):
        seen[r.key] = r.value
    assert {k: v for k, v in seen.items() if v is not None} == {k: v for k, v in model.items() if v is not None}


def test_min_compaction_lag_holds_back_young_segments(make_log) -> None:  # type: ignore[no-untyped-def]
    fx = make_log(**{"segment.bytes": "100", "min.compaction.lag.ms": "1000"})  # one batch per segment
    for i in range(6):
        fx.append([(b"k", b"v%d" % i)])
        fx.clock.advance_ms(400)
    outcome = clean(fx)
    # Segments whose newest record is younger than 1000 ms are uncleanable.
    young = [s for s in fx.log.segments[:-1] if s.max_timestamp_so_far > fx.clock.milliseconds() - 1000]
    assert [s.base_offset for s in young] == [4]
    assert outcome.result.end_offset == 4
    assert [r.offset for r in records_on_disk(fx.log)] == [3, 4, 5]


def test_one_entry_map_still_makes_progress_mid_batch(make_log) -> None:  # type: ignore[no-untyped-def]
    fx = make_log()
    fx.append([(b"a", b"1"), (b"b", b"2"), (b"a", b"3")])
    fx.log.roll("test")
    fx.append([(b"c", b"3")])
    result = Cleaner(24, 1.0).clean(fx.log, 0, 3, fx.clock.milliseconds())
    assert result.end_offset == 1  # only a@0 fit in the map
    assert [r.offset for r in records_on_disk(fx.log)] == [0, 1, 2, 3]
    result = Cleaner(24 * 10, 1.0).clean(fx.log, 1, 3, fx.clock.milliseconds())
    assert result.end_offset == 3
    assert [r.offset for r in records_on_disk(fx.log)] == [1, 2, 3]


def test_control_batches_are_kept(make_log) -> None:  # type: ignore[no-untyped-def]
    from kafkalab.records.codec import build_batch
    from kafkalab.records.model import Record

    fx = make_log()
    fx.append([(b"k", b"1")])
    marker = build_batch([Record(0, fx.clock.milliseconds(), b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00")],
                         producer_id=7, producer_epoch=0, is_transactional=True, is_control=True)
    fx.log.append_as_leader(marker, 0)
    fx.append([(b"k", b"2")])
    fx.log.roll("test")
    fx.append([(b"z", b"0")])
    clean(fx)
    assert [(b.header.is_control, [r.offset for r in b.records]) for b in batches_on_disk(fx.log)] == [
        (True, [1]), (False, [2]), (False, [3])
    ]


def test_aborted_transaction_data_and_markers_removed(make_log) -> None:  # type: ignore[no-untyped-def]
    """Kafka removes an aborted transaction's batches during a clean, and its ABORT marker
    once no data of the transaction is left and the marker's delete horizon has passed; the
    aborted batch's keys never hide an older committed value."""
    from .test_cleaner_transactions import P, Q, TxnLog

    fx = make_log()
    t = TxnLog(fx)
    t.plain([(b"k1", b"old")])  # 0
    t.data(P, [(b"k1", b"aborted"), (b"k2", b"aborted")])  # 1, 2
    t.data(Q, [(b"k3", b"z")])  # 3
    abort_entry = t.end(P, commit=False)  # 4
    t.end(Q, commit=True)  # 5
    fx.log.roll("test")
    t.data(P, [(b"k4", b"later")])  # 6: P's last data batch, in the active segment
    t.end(P, commit=True)  # 7
    assert fx.log.last_stable_offset == 8
    start = fx.clock.milliseconds()
    clean(fx)
    assert t.layout() == [(0, [(b"k1", b"old")]), (3, [(b"k3", b"z")]), (4, "ABORT"), (5, "COMMIT"),
                          (6, [(b"k4", b"later")]), (7, "COMMIT")]
    assert fx.log.segments[0].txn_index.entries == [abort_entry]  # the ABORT stayed: so does its entry
    assert t.horizon(4) is None
    fx.clock.advance_ms(10)
    clean(fx)
    assert [o for o, _ in t.layout()] == [0, 3, 4, 5, 6, 7]
    assert t.horizon(4) == start + 10 + 1000  # no data left: the marker waits for its horizon
    assert t.horizon(5) is None  # k3@3 is still there: the COMMIT stays
    assert fx.log.segments[0].txn_index.entries == []
    fx.clock.advance_ms(999)
    clean(fx)
    assert [o for o, _ in t.layout()] == [0, 3, 4, 5, 6, 7]  # horizon not passed yet
    fx.clock.advance_ms(1)
    clean(fx)
    assert [o for o, _ in t.layout()] == [0, 3, 5, 6, 7]


@pytest.mark.parametrize("listening", [False, True])
@pytest.mark.parametrize("sizes", ["random", "equal"])
def test_cleaned_segments_are_indexed_as_recovery_rebuilds_them(make_log, listening: bool, sizes: str) -> None:  # type: ignore[no-untyped-def]
    """A cleaned segment's indexes are built in bulk from the cleaner's columns (or batch by
    batch when someone listens); recovery rebuilds them from the batches on disk with the
    segment's own rule, so both must agree entry for entry. Equal one-record batches make the
    bytes since the last entry land exactly on ``index.interval.bytes`` (not more: no entry)."""
    equal = sizes == "equal"
    one = len(build_batch([Record(0, 0, b"k%03d" % 0, bytes(20))], base_offset=0))
    fx = make_log(**{"segment.bytes": "6000", "index.interval.bytes": str(2 * one if equal else 150)})
    rng = random.Random(5)
    for _ in range(300):
        fx.clock.advance_ms(0 if equal else rng.choice([0, 0, 3, 40]))  # max timestamps grow in steps, or not
        if equal:
            fx.append([(b"k%03d" % rng.randrange(400), bytes(20))])
        else:
            fx.append([(b"k%d" % rng.randrange(400), bytes(rng.randrange(60))) for _ in range(rng.randrange(1, 4))])
    fx.log.roll("test")
    if listening:
        fx.log.subscribe(lambda event: None)
    Cleaner(1 << 20).clean(fx.log, 0, fx.log.segments[-1].base_offset, fx.clock.milliseconds())
    cleaned = fx.log.segments[:-1]
    assert sum(s.offset_index.entries for s in cleaned) > 10 and sum(s.time_index.entries for s in cleaned) > (
        0 if equal else 3)
    for segment in cleaned:
        written = (segment.offset_index.raw_entries(), segment.time_index.raw_entries())
        segment.recover(1 << 20)
        segment.on_become_inactive()
        assert (segment.offset_index.raw_entries(), segment.time_index.raw_entries()) == written
