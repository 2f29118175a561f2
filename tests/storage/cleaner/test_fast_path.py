"""The compiled cleaner against the reference one, and Kafka's batch retention rules.

Both paths clean copies of the same log; the segment files they write must be identical byte
for byte. The hash is checked against the xxhash package, rebuilt batches against kafka-python.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch

from kafkalab.errors import CorruptRecordError
from kafkalab.records.codec import build_batch
from kafkalab.records.header import Compression, TimestampType
from kafkalab.records.model import Header, Record
from kafkalab.storage.cleaner import Cleaner, FastOffsetMap, LastRecord, OffsetMap
from kafkalab.storage.cleaner import chunks
from kafkalab.storage.cleaner.cleaner import read_segment
from kafkalab.storage.cleaner.fast_map import SEED_H2, xxh64

from .conftest import LogFixture, append_records, batches_on_disk, records_on_disk


@settings(max_examples=60, deadline=None)
@given(key=st.binary(max_size=100))
def test_xxh64_matches_the_xxhash_package(key: bytes) -> None:
    data = np.frombuffer(key, np.uint8) if key else np.zeros(1, np.uint8)
    assert int(xxh64(data, 0, len(key), np.uint64(0))) == xxhash.xxh64_intdigest(key, 0)
    assert int(xxh64(data, 0, len(key), SEED_H2)) == xxhash.xxh64_intdigest(key, int(SEED_H2))


def test_fast_map_full_rule_matches_reference_map() -> None:
    fast, slow = FastOffsetMap(24 * 10, 0.5), OffsetMap(24 * 10, 0.5)
    fast.clear(records_bound=100)
    for offset, key in enumerate([b"a", b"b", b"a", b"c", b"d", b"e"]):
        assert fast.is_full == slow.is_full
        if not fast.is_full:
            assert fast.try_put(key, offset) and slow.try_put(key, offset)
    assert fast.is_full and fast.size == slow.size == 5
    assert [fast.get(k) for k in (b"a", b"e", b"zz")] == [slow.get(k) for k in (b"a", b"e", b"zz")] == [2, 5, -1]


def _files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.glob("*.log"))}


def _clean_both(fx: LogFixture, tmp: Path, dedupe_bytes: int = 1 << 20, now_ms: int | None = None,
                producers: dict[int, LastRecord] | None = None) -> tuple[dict[str, bytes], dict[str, bytes]]:
    fx.log.roll("test")
    fx.log.close()
    results = []
    for fast in (True, False):
        copy = tmp / f"{'fast' if fast else 'reference'}" / "t-0"
        shutil.copytree(fx.directory, copy)
        other = LogFixture(copy.parent, **fx.props)
        log = other.log
        end = log.segments[-1].base_offset
        Cleaner(dedupe_bytes, fast=fast).clean(log, 0, end, now_ms or fx.clock.milliseconds(), producers)
        results.append(_files(copy))
        log.close()
    return results[0], results[1]


record_spec = st.tuples(
    st.integers(0, 6),  # key id; 6 = unkeyed
    st.booleans(),  # tombstone
    st.integers(0, 30),  # value size
    st.booleans(),  # with a header
)
batch_spec = st.tuples(
    st.lists(record_spec, min_size=1, max_size=8),
    st.sampled_from([Compression.NONE, Compression.NONE, Compression.GZIP, Compression.LZ4]),
    st.integers(-1, 2),  # producer id (-1: none)
    st.booleans(),  # LogAppendTime
)


@settings(max_examples=40, deadline=None)
@given(batches=st.lists(batch_spec, min_size=1, max_size=12), map_entries=st.sampled_from([2, 5, 1000]),
       later_ms=st.sampled_from([0, 50, 5000]))
def test_fast_path_writes_the_same_bytes_as_the_reference(tmp_path_factory, batches, map_entries: int,
                                                           later_ms: int) -> None:  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("x")
    fx = LogFixture(tmp / "src", **{"segment.bytes": "600", "delete.retention.ms": "100"})
    sequences: dict[int, int] = {}
    for records, codec, producer_id, log_append in batches:
        built = [
            Record(i, fx.clock.milliseconds() + i,
                   None if key == 6 else b"k%d" % key, None if tomb else bytes(size),
                   (Header("h", b"v"),) if header else ())
            for i, (key, tomb, size, header) in enumerate(records)
        ]
        sequence = sequences.get(producer_id, 0)
        sequences[producer_id] = sequence + len(built)
        append_records(fx.log, build_batch(
            built, compression=codec, producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1,
            base_sequence=sequence if producer_id >= 0 else -1,
            timestamp_type=TimestampType.LOG_APPEND_TIME if log_append else TimestampType.CREATE_TIME,
            log_append_time_ms=fx.clock.milliseconds() if log_append else None), keyless=any(r.key is None for r in built))
        fx.clock.advance_ms(3)
    producers = {1: LastRecord(fx.log.log_end_offset - 1, 0), 2: LastRecord(None, 0)}
    fast, reference = _clean_both(fx, tmp, 24 * map_entries, fx.clock.milliseconds() + later_ms, producers)
    assert fast == reference
    for data in fast.values():  # every batch written is one kafka-python accepts
        position = 0
        while position < len(data):
            size = int.from_bytes(data[position + 8 : position + 12], "big") + 12
            assert DefaultRecordBatch(data[position : position + size]).validate_crc()
            position += size


def test_batch_losing_every_record_stays_empty_for_an_active_producer(make_log) -> None:  # type: ignore[no-untyped-def]
    fx = make_log(**{"segment.bytes": "100000"})
    fx.log.append_as_leader(build_batch([Record(0, 1, b"k", b"a"), Record(1, 1, b"k", b"b")],
                                        producer_id=7, producer_epoch=3, base_sequence=0), 0)
    fx.log.append_as_leader(build_batch([Record(0, 1, b"j", b"x")], producer_id=8, producer_epoch=0,
                                        base_sequence=0), 0)
    fx.append([(b"k", b"c"), (b"j", b"y")])  # offsets 3, 4: both producers' keys again
    fx.append([(b"z", b"z")])
    fx.log.roll("test")
    fx.append([(b"end", b"0")])
    cleaner = Cleaner(1 << 20)
    cleaner.clean(fx.log, 0, 6, fx.clock.milliseconds(), {7: LastRecord(1, 3)})
    batches = batches_on_disk(fx.log)
    first = batches[0]
    assert (first.header.producer_id, first.header.base_offset, first.header.last_offset) == (7, 0, 1)
    assert first.records == () and first.header.records_count == 0
    assert first.header.producer_epoch == 3 and first.header.base_sequence == 0
    assert all(b.header.producer_id != 8 for b in batches)  # producer 8 is not active: its batch went
    assert [r.offset for r in records_on_disk(fx.log)] == [3, 4, 5, 6]


def test_rebuilt_batch_keeps_its_last_offset(make_log) -> None:  # type: ignore[no-untyped-def]
    fx = make_log(**{"segment.bytes": "100000"})
    fx.log.append_as_leader(build_batch([Record(0, 1, b"a", b"1"), Record(1, 1, b"b", b"2")],
                                        producer_id=7, producer_epoch=0, base_sequence=10), 0)
    fx.append([(b"b", b"3")])
    fx.log.roll("test")
    fx.append([(b"end", b"0")])
    Cleaner(1 << 20).clean(fx.log, 0, 3, fx.clock.milliseconds())
    first = batches_on_disk(fx.log)[0]
    assert [r.offset for r in first.records] == [0]
    assert first.header.last_offset == 1 and first.header.last_sequence == 11  # the producer's last sequence


def test_last_batch_of_the_round_stays_even_if_empty(make_log) -> None:  # type: ignore[no-untyped-def]
    fx = make_log(**{"segment.bytes": "100000"})
    fx.append([(b"a", b"1")])
    fx.append([(None, b"unkeyed")])  # the round's last batch, with nothing to keep
    fx.log.roll("test")
    fx.append([(b"end", b"0")])
    Cleaner(1 << 20).clean(fx.log, 0, 2, fx.clock.milliseconds())
    batches = batches_on_disk(fx.log)
    assert [(b.header.base_offset, b.header.last_offset, len(b.records)) for b in batches] == [
        (0, 0, 1), (1, 1, 0), (2, 2, 1)]
    assert fx.log.log_end_offset == 3


@pytest.mark.parametrize("compression", [Compression.NONE, Compression.GZIP])
@pytest.mark.parametrize("fast", [True, False])
def test_legacy_v1_entries_compacted_in_their_own_format(make_log, compression: Compression, fast: bool) -> None:  # type: ignore[no-untyped-def]
    fx = make_log(**{"segment.bytes": "100000", "delete.retention.ms": "0"})
    records = [Record(0, 5, b"a", b"1"), Record(1, 6, b"b", b"2"), Record(2, 7, b"a", b"3"), Record(3, 8, b"c", None)]
    fx.log.append_as_follower(build_batch(records, magic=1, compression=compression))
    fx.log.append_as_follower(build_batch([Record(4, 9, b"b", b"4")]))
    fx.log.roll("test")
    fx.log.append_as_follower(build_batch([Record(5, 9, b"end", b"0")]))
    Cleaner(1 << 20, fast=fast).clean(fx.log, 0, 5, fx.clock.milliseconds())
    batches = batches_on_disk(fx.log)
    assert {b.header.magic for b in batches[:-2]} == {1}
    assert all(b.header.compression is compression for b in batches[:-2])
    # a@0 and b@1 are superseded; no clean segment yet, so the legacy horizon is 0 and the
    # tombstone c@3 (segment timestamp 9 > 0) is kept.
    assert [(r.offset, r.key, r.value) for r in records_on_disk(fx.log)] == [
        (2, b"a", b"3"), (3, b"c", None), (4, b"b", b"4"), (5, b"end", b"0")]


def test_batches_keeping_every_record_are_copied_byte_for_byte(make_log) -> None:  # type: ignore[no-untyped-def]
    fx = make_log(**{"segment.bytes": "100000"})
    fx.append([(b"a", b"1"), (b"b", b"2")])  # untouched: copied as is
    fx.append([(b"c", b"3"), (b"e", b"4")], Compression.LZ4)  # untouched compressed batch
    fx.append([(b"b", b"5")])  # supersedes b@1: the first batch is rebuilt
    fx.append([(b"d", b"6")])
    original = [b.header for b in batches_on_disk(fx.log)]
    before = read_segment(fx.log.segments[0])
    fx.log.roll("test")
    fx.append([(b"end", b"0")])
    Cleaner(1 << 20).clean(fx.log, 0, 6, fx.clock.milliseconds())
    after = read_segment(fx.log.segments[0])
    kept = original[1]
    assert before[kept.position : kept.end_position] in after  # same bytes, same CRC
    assert after.count(before[original[2].position : original[2].end_position]) == 1
    assert [r.offset for r in records_on_disk(fx.log)] == [0, 2, 3, 4, 5, 6]


@pytest.mark.parametrize("fast", [True, False])
def test_small_chunks_and_an_entry_larger_than_a_chunk(make_log, monkeypatch, tmp_path: Path, fast: bool) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 256)
    fx = make_log(**{"segment.bytes": "100000"})
    for i in range(12):
        fx.append([(b"k%d" % (i % 4), bytes(40)), (b"j%d" % i, bytes(10))])
    fx.append([(b"big", bytes(1000))])  # one entry larger than a chunk
    fx.append([(b"k0", b"last")])
    fx.log.roll("test")
    fx.append([(b"end", b"0")])
    Cleaner(1 << 20, fast=fast).clean(fx.log, 0, fx.log.segments[-1].base_offset, fx.clock.milliseconds())
    keys = [r.key for r in records_on_disk(fx.log)]
    assert keys.count(b"k0") == 1 and keys.count(b"big") == 1 and len(keys) == 3 + 12 + 1 + 1 + 1


def test_corrupt_batch_is_a_typed_error(make_log) -> None:  # type: ignore[no-untyped-def]
    fx = make_log(**{"segment.bytes": "100000"})
    fx.append([(b"a", b"1")])
    fx.append([(b"a", b"2")])
    fx.log.roll("test")
    fx.append([(b"end", b"0")])
    segment = fx.log.segments[0]
    os.pwrite(segment.fd, b"\xff", segment.size_bytes - 1)  # last value byte of the second batch
    with pytest.raises(CorruptRecordError, match="CRC mismatch"):
        Cleaner(1 << 20).clean(fx.log, 0, 2, fx.clock.milliseconds())


@pytest.mark.parametrize("budget", [1 << 20, 3_000])
def test_copy_phase_reuses_the_map_phases_decoding_and_writes_the_same_bytes(make_log, monkeypatch, tmp_path: Path,
                                                                            budget: int) -> None:  # type: ignore[no-untyped-def]
    """The copy phase takes the map phase's decoding of a chunk instead of decoding it again;
    the cleaned segments must equal those of a clean that decodes twice (budget 0), and the
    reference path's. A small budget keeps only some chunks: the rest are decoded again."""
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 512)  # many chunks per segment
    fx = make_log(**{"segment.bytes": "2000"})
    for i in range(60):
        fx.append([(b"k%d" % (i % 7), bytes(i % 30)), (b"j%d" % (i % 11), None if i % 5 == 0 else b"v")])
        fx.append([(b"z%d" % (i % 3), b"compressed")], Compression.LZ4 if i % 9 == 0 else Compression.NONE)
    fx.log.roll("test")
    fx.log.close()
    written = {}
    for name, cleaner in {"reused": Cleaner(1 << 20, decoded_bytes=budget), "twice": Cleaner(1 << 20, decoded_bytes=0),
                          "reference": Cleaner(1 << 20, fast=False)}.items():
        copy = tmp_path / name / "t-0"
        shutil.copytree(fx.directory, copy)
        log = LogFixture(copy.parent, **fx.props).log
        cleaner.clean(log, 0, log.segments[-1].base_offset, fx.clock.milliseconds())
        written[name] = (_files(copy), cleaner.decoded.taken)
        log.close()
    assert written["reused"][0] == written["twice"][0] == written["reference"][0]
    assert written["twice"][1] == 0 and written["reused"][1] > (10 if budget > 3_000 else 0)
