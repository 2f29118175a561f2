"""gen-log: deterministic bytes, Kafka's placement of keys, the skew it promises, bad flags."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kafkalab.errors import ConfigError
from kafkalab.partitioner import partition_for_key
from kafkalab.records.codec import decode_records
from kafkalab.tools import cli
from kafkalab.tools.gen_log import GenSpec, generate, parse_key_skew


def _spec(data_dir: Path, **changes: object) -> GenSpec:
    values: dict[str, object] = dict(
        data_dir=str(data_dir), topic="t", partitions=3, records=20_000, keys=500, key_skew=1.1,
        value_bytes=40, compression="none", seed=7, start_ms=1_000_000, rate=1000,
        config=(("segment.bytes", "200000"),))
    values.update(changes)
    return GenSpec(**values)  # type: ignore[arg-type]


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _records(partition_dir: Path) -> list:
    return [r for log in sorted(partition_dir.glob("*.log")) for r in decode_records(log.read_bytes())]


def test_same_arguments_same_bytes_whatever_the_worker_count(tmp_path: Path) -> None:
    generate(_spec(tmp_path / "a", compression="gzip"), workers=2, show_progress=False)
    generate(_spec(tmp_path / "b", compression="gzip"), workers=1, show_progress=False)
    a, b = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert a == b and any(name.endswith(".log") for name in a)
    generate(_spec(tmp_path / "c", compression="gzip", seed=8), workers=1, show_progress=False)
    assert _files(tmp_path / "c") != a


def test_keys_land_where_kafka_would_put_them(tmp_path: Path) -> None:
    written = generate(_spec(tmp_path), workers=2, show_progress=False)
    assert sum(written.values()) == 20_000
    for p in range(3):
        records = _records(tmp_path / f"t-{p}")
        assert len(records) == written[p]
        assert [r.offset for r in records] == list(range(len(records)))
        assert {partition_for_key(r.key, 3) for r in records} == {p}
        timestamps = [r.timestamp for r in records]
        assert timestamps == sorted(timestamps) and timestamps[0] >= 1_000_000


def test_zipf_skew_makes_rank_zero_the_hottest_key(tmp_path: Path) -> None:
    generate(_spec(tmp_path, partitions=1, tombstones=0.1), workers=1, show_progress=False)
    records = _records(tmp_path / "t-0")
    keys, counts = np.unique([r.key for r in records], return_counts=True)
    assert keys[np.argmax(counts)] == b"user-0"
    share = counts.max() / len(records)
    expected = 1 / np.sum(1 / np.arange(1, 501) ** 1.1)  # Zipf(1.1) mass of rank 0 over 500 keys
    assert abs(share - expected) < 0.02
    tombstones = sum(r.value is None for r in records) / len(records)
    assert 0.08 < tombstones < 0.12


def test_bad_arguments_raise_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--partitions 0"):
        _spec(tmp_path, partitions=0)
    with pytest.raises(ConfigError, match="--compression 'brotli'"):
        _spec(tmp_path, compression="brotli")
    with pytest.raises(ConfigError, match="zipf"):
        parse_key_skew("pareto:2")
    assert parse_key_skew("uniform") == 0.0


def test_cli_writes_and_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["gen-log", "--data-dir", str(tmp_path), "--topic", "clicks", "--partitions", "2",
                     "--records", "3000", "--keys", "50", "--seed", "1", "--workers", "1"])
    assert code == 0
    out = capsys.readouterr().out
    assert "3000 records in" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clicks-0", "clicks-1"]


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_topic_holds_the_same_records_as_the_uncompressed_one(tmp_path: Path, codec: str) -> None:
    from kafka.record.memory_records import MemoryRecords

    generate(_spec(tmp_path / "plain", records=3000), workers=1, show_progress=False)
    generate(_spec(tmp_path / codec, records=3000, compression=codec), workers=1, show_progress=False)
    for p in range(3):
        plain = [(r.offset, r.timestamp, r.key, r.value) for r in _records(tmp_path / "plain" / f"t-{p}")]
        packed = []
        for log in sorted((tmp_path / codec / f"t-{p}").glob("*.log")):
            records = MemoryRecords(log.read_bytes())  # kafka-python checks CRCs and inflates
            while records.has_next():
                batch = records.next_batch()
                assert batch.validate_crc() and batch.compression_type != 0
                packed += [(r.offset, r.timestamp, r.key, r.value) for r in batch]
        assert packed == plain
