"""The streaming reader: log end offsets, the per-trigger record limit, exactly-once ranges."""

from __future__ import annotations

from pathlib import Path

import pytest
from logs import read_with_kafka_python, write_partition

from kafkalab.errors import ConfigError
from kafkalab.spark.stream import KafkaLogStreamReader, OffsetRange, apply_limit, log_end_offset, read_range


def test_apply_limit_shares_the_budget_in_partition_order() -> None:
    latest = {"t-0": 900, "t-1": 300}
    assert apply_limit({"t-0": 0, "t-1": 0}, latest, 1000) == {"t-0": 900, "t-1": 100}
    assert apply_limit({"t-0": 900, "t-1": 100}, latest, 1000) == latest
    assert apply_limit({"t-0": 0, "t-1": 0}, latest, None) == latest


def test_log_end_offset_and_exact_ranges(tmp_path: Path) -> None:
    write_partition(tmp_path / "t-0", records=1200, records_per_segment=500, codec=0, seed=1)
    assert log_end_offset(tmp_path / "t-0") == 1200
    expected = [r for log in sorted((tmp_path / "t-0").glob("*.log")) for r in read_with_kafka_python(log)]
    got = [o for b in read_range(OffsetRange("t", 0, str(tmp_path / "t-0"), 490, 777))
           for o in b.column("offset").to_pylist()]
    assert got == [r[0] for r in expected if 490 <= r[0] < 777]


def test_reader_advances_by_max_poll_records_until_caught_up(tmp_path: Path) -> None:
    write_partition(tmp_path / "t-0", records=700, records_per_segment=1000, codec=0, seed=2)
    write_partition(tmp_path / "t-1", records=200, records_per_segment=1000, codec=0, seed=3)
    reader = KafkaLogStreamReader({"path": str(tmp_path), "max.poll.records": "500"})
    start = reader.initialOffset()
    seen = []
    for _ in range(5):
        end = reader.latestOffset(start, reader.getDefaultReadLimit())
        for part in reader.partitions(start, end):
            seen += [(b.column("partition")[i].as_py(), o) for b in reader.read(part)
                     for i, o in enumerate(b.column("offset").to_pylist())]
        assert sum(end.values()) - sum(start.values()) <= 500
        start = end
    assert start == {"t-0": 700, "t-1": 200}
    assert sorted(seen) == [(0, o) for o in range(700)] + [(1, o) for o in range(200)]


def test_bad_limit_option() -> None:
    with pytest.raises(ConfigError, match="maxRecordsPerTrigger='0'"):
        KafkaLogStreamReader({"path": "x", "maxRecordsPerTrigger": "0"})


@pytest.mark.spark
def test_structured_streaming_honours_the_trigger_limit(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    write_partition(tmp_path / "t-0", records=1500, records_per_segment=1000, codec=3, seed=4)
    stream = spark.readStream.format("kafkalog").option("maxRecordsPerTrigger", "400").load(str(tmp_path))
    query = (stream.select("offset").writeStream.format("memory").queryName("kafkalog_stream")
             .option("checkpointLocation", str(tmp_path / "checkpoint")).start())
    try:
        query.processAllAvailable()
        rows = [r.offset for r in spark.sql("SELECT offset FROM kafkalog_stream ORDER BY offset").collect()]
        progress = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    finally:
        query.stop()
    assert rows == list(range(1500))
    assert max(progress) <= 400 and sum(progress) == 1500


def test_option_names_are_case_insensitive_like_sparks() -> None:
    reader = KafkaLogStreamReader({"path": "x", "maxrecordspertrigger": "7", "startingoffsets": "latest"})
    assert (reader.limit, reader.starting) == (7, "latest")
