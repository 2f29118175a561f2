"""The columnar reader (no Spark) against kafka-python's decoder, and its corruption errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from logs import read_with_kafka_python, write_partition

from kafkalab.errors import CorruptRecordError
from kafkalab.records.header import iter_headers
from kafkalab.spark import arrow
from kafkalab.spark.datasource import read_split
from kafkalab.spark.planning import InputSplit, ScanBounds


def _split(path: Path, base: int = 0) -> InputSplit:
    size = path.stat().st_size
    return InputSplit("t", 0, str(path), base, 0, size, base, 2**63 - 1)


def _rows(path: Path, bounds: ScanBounds = ScanBounds(), check_crcs: bool = True) -> list[tuple]:
    out: list[tuple] = []
    for batch in read_split(_split(path), "records", bounds, check_crcs):
        cols = batch.to_pydict()
        out += zip(cols["offset"], cols["timestamp"], cols["key"], cols["value"])
    return out


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4], ids=["none", "gzip", "snappy", "lz4", "zstd"])
def test_records_equal_kafka_python(tmp_path: Path, codec: int) -> None:
    written = write_partition(tmp_path / "t-0", records=2500, records_per_segment=2500, codec=codec, seed=codec)
    log = tmp_path / "t-0" / f"{0:020d}.log"
    rows = _rows(log)
    assert rows == read_with_kafka_python(log)
    assert rows == [(w.offset, w.timestamp, w.key, w.value) for w in written]
    headers = [h for b in read_split(_split(log), "records") for h in b.column("headers").to_pylist()]
    assert headers == [[{"key": k, "value": v} for k, v in w.headers] for w in written]


def test_batches_equal_reference_header_reader(tmp_path: Path) -> None:
    write_partition(tmp_path / "t-0", records=1500, records_per_segment=1500, codec=1, seed=3)
    log = tmp_path / "t-0" / f"{0:020d}.log"
    data = log.read_bytes()
    reference = list(iter_headers(data))
    got = [row for b in read_split(_split(log), "batches") for row in b.to_pylist()]
    assert [(r["position"], r["last_offset"], r["records_count"], r["crc"], r["size"]) for r in got] == [
        (h.position, h.last_offset, h.records_count, h.crc, h.size_bytes) for h in reference
    ]
    assert {r["compression"] for r in got} == {"gzip"}


def test_batch_pruning_keeps_every_matching_record(tmp_path: Path) -> None:
    written = write_partition(tmp_path / "t-0", records=3000, records_per_segment=3000, codec=0, seed=4)
    log = tmp_path / "t-0" / f"{0:020d}.log"
    bounds = ScanBounds(offset_min=1000, offset_max=1200, timestamp_min=written[1100].timestamp)
    rows = _rows(log, bounds)
    assert len(rows) < 3000
    expected = [w.offset for w in written if 1000 <= w.offset <= 1200 and w.timestamp >= bounds.timestamp_min]
    kept = [offset for offset, timestamp, _key, _value in rows
            if 1000 <= offset <= 1200 and timestamp >= bounds.timestamp_min]
    assert kept == expected


def test_partial_trailing_batch_is_ignored(tmp_path: Path) -> None:
    write_partition(tmp_path / "t-0", records=500, records_per_segment=500, codec=0, seed=5)
    log = tmp_path / "t-0" / f"{0:020d}.log"
    full = _rows(log)
    log.write_bytes(log.read_bytes() + b"\x00" * 8 + b"\x00\x00\x01\x00" + b"\x00" * 10)
    assert _rows(log) == full


def test_corrupt_records_count_raises_typed_error(tmp_path: Path) -> None:
    write_partition(tmp_path / "t-0", records=50, records_per_segment=50, codec=0, seed=6)
    log = tmp_path / "t-0" / f"{0:020d}.log"
    data = bytearray(log.read_bytes())
    data[57:61] = (10**9).to_bytes(4, "big")  # recordsCount of the first batch
    log.write_bytes(bytes(data))
    with pytest.raises(CorruptRecordError, match="CRC mismatch.* in t-0/0+.log"):
        _rows(log)  # check.crcs=true, as a Kafka consumer does by default
    with pytest.raises(CorruptRecordError, match="recordsCount 1000000000 cannot fit"):
        _rows(log, check_crcs=False)


def test_truncated_record_raises_typed_error(tmp_path: Path) -> None:
    write_partition(tmp_path / "t-0", records=50, records_per_segment=50, codec=0, seed=7)
    log = tmp_path / "t-0" / f"{0:020d}.log"
    data = bytearray(log.read_bytes())
    data[61] = 0x7E  # first record's length varint: 63, past the end of its record
    log.write_bytes(bytes(data))
    with pytest.raises(CorruptRecordError, match="corrupt record data at byte 61: .* invalid .* in t-0"):
        _rows(log, check_crcs=False)


def test_entry_size_below_minimum_raises(tmp_path: Path) -> None:
    buf = np.frombuffer(b"\x00" * 8 + b"\x00\x00\x00\x02" + b"\x00" * 20, dtype=np.uint8)
    with pytest.raises(CorruptRecordError, match="below the smallest legal entry"):
        arrow.walk(buf, 0, len(buf), "test")


@pytest.mark.parametrize("text", ["bench", "00000000000000000000.log", "", "naïve"])
@pytest.mark.parametrize("n", [0, 1, 1000])
def test_constant_strings_equal_pyarrow(text: str, n: int) -> None:
    got = arrow.constant_strings(text, n)
    got.validate(full=True)
    assert got.equals(pa.array([text] * n, pa.string()))


def test_string_column_by_code_mixed_and_constant() -> None:
    codes = np.array([0, 4, 4, 1, 0, 3, 2], np.int16)
    mixed = arrow._strings(codes, arrow.CODEC_NAMES)
    mixed.validate(full=True)
    assert mixed.to_pylist() == ["none", "zstd", "zstd", "gzip", "none", "lz4", "snappy"]
    same = arrow._strings(np.full(5, 1, np.int16), arrow.TIMESTAMP_TYPE_NAMES)
    assert same.to_pylist() == ["LogAppendTime"] * 5


def test_gather_packs_spans_with_nulls() -> None:
    buf = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", np.uint8)
    starts = np.array([3, 0, 10, 25, 7], np.int64)
    lengths = np.array([4, -1, 0, 1, 10], np.int32)
    got = arrow._binary(buf, starts, lengths, pa.binary())
    got.validate(full=True)
    assert got.to_pylist() == [b"defg", None, b"", b"z", b"hijklmnopq"]


def test_sequences_wrap_and_no_sequence() -> None:
    base = np.array([-1, 5, 2**31 - 2], np.int32)
    batch = np.array([0, 0, 1, 1, 2, 2, 2])
    delta = np.array([0, 1, 0, 3, 0, 1, 2])
    assert arrow._sequences(base, batch, delta).tolist() == [-1, -1, 5, 8, 2**31 - 2, 2**31 - 1, 0]
    assert arrow._sequences(np.array([-1, -1], np.int32), batch[:4], delta[:4]).tolist() == [-1] * 4
