"""The labs' helper functions, checked against the storage engine and kafka-python."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from kafkalab.records.header import iter_headers
from kafkalab.spark import labs
from kafkalab.tools.gen_log import GenSpec, generate


def test_predicted_index_entries_follows_kafkas_strict_rule() -> None:
    assert labs.predicted_index_entries([1780, 160, 2790, 500], 4096) == 1
    assert labs.predicted_index_entries([4096, 10], 4096) == 0  # "more than", not "at least"
    assert labs.predicted_index_entries([4096, 4096, 4096], 4096) == 1
    assert labs.predicted_index_entries([4097, 10, 10], 4096) == 1
    assert labs.predicted_index_entries([], 4096) == 0


@pytest.mark.parametrize("interval", [4096, 40_000])
def test_prediction_matches_the_storage_engines_index(tmp_path: Path, interval: int) -> None:
    spec = GenSpec(str(tmp_path), "t", 1, 6000, 100, 1.0, 100, "none", 3, 0, 1000,
                   config=(("segment.bytes", "200000"), ("index.interval.bytes", str(interval))))
    generate(spec, workers=1, show_progress=False)
    actual = labs.actual_index_entries(tmp_path / "t-0")
    assert len(actual) > 1
    for name, entries in actual.items():
        sizes = [h.size_bytes for h in iter_headers((tmp_path / "t-0" / name).read_bytes())]
        assert labs.predicted_index_entries(sizes, interval) == entries


def test_moved_share_against_kafka_python() -> None:
    keys = [f"user-{i}".encode() for i in range(3000)]

    def place(key: bytes, n: int) -> int:
        return (kafka_python_murmur2(key) & 0x7FFFFFFF) % n

    expected = sum(place(k, 6) != place(k, 12) for k in keys) / len(keys)
    assert labs.moved_share(keys, 6, 12) == pytest.approx(expected)
    assert 0.45 < expected < 0.55
    assert labs.moved_share(keys, 6, 6) == 0.0


def test_check_is_friendly() -> None:
    assert labs.check("x", 3, 3).startswith("x: correct")
    with pytest.raises(AssertionError, match="2 is not the engine's answer. Hint: count") as wrong:
        labs.check("x", 2, 3, hint="count again")
    assert "3" not in str(wrong.value)  # a wrong answer is not told the right one
    with pytest.raises(AssertionError, match="write your prediction first"):
        labs.check("x", ..., 3)
    assert "correct" in labs.check("share", 0.52, 0.5, rel_tol=0.1)


def test_predicted_retention_worked_example_and_order_of_rules() -> None:
    segs = [labs.SegmentStat(0, 400, 1_000), labs.SegmentStat(10, 400, 5_000), labs.SegmentStat(20, 300, 9_000)]
    assert labs.predicted_retention(segs, 10_000, -1, 600) == {"size": 1, "time": 0}
    assert labs.predicted_retention(segs, 10_000, 4_000, 600) == {"size": 1, "time": 1}
    assert labs.predicted_retention(segs, 10_000, 4_999, -1) == {"size": 0, "time": 2}
    assert labs.predicted_retention(segs, 10_000, 5_000, -1) == {"size": 0, "time": 1}  # strictly older
    assert labs.predicted_retention(segs, 10_000, -1, -1) == {"size": 0, "time": 0}


@pytest.mark.parametrize("retention", [(-1, 300_000), (2_500, -1), (4_000, 500_000), (-1, 1), (0, -1)])
def test_predicted_retention_matches_the_storage_engine(tmp_path: Path, retention: tuple[int, int]) -> None:
    from kafkalab.storage.retention import delete_old_segments
    from kafkalab.tools.gen_log import GenSpec, generate

    spec = GenSpec(str(tmp_path), "t", 1, 8_000, 100, 0.0, 100, "none", 1, 1_000_000, 1_000,
                   config=(("segment.bytes", "100000"),))
    generate(spec, workers=1, show_progress=False)
    now_ms = 1_000_000 + 8_000
    ms, size = retention
    log = labs.open_partition_log(tmp_path / "t-0", {"retention.ms": str(ms), "retention.bytes": str(size)}, now_ms)
    stats = [labs.SegmentStat(s.base_offset, s.size_bytes, s.max_timestamp_so_far) for s in log.segments]
    assert len(stats) > 5
    predicted = labs.predicted_retention(stats, now_ms, ms, size)
    result = delete_old_segments(log, now_ms)
    assert predicted == {"size": result.size_breached, "time": result.time_breached}
    assert predicted["size"] + predicted["time"] > 0 or retention == (-1, -1)


def test_linked_copy_leaves_the_original_whole_after_retention_and_cleaning(tmp_path: Path) -> None:
    import hashlib

    from kafkalab.storage.cleaner.manager import LogCleaner
    from kafkalab.storage.retention import delete_old_segments

    original = tmp_path / "original"
    spec = GenSpec(str(original), "t", 1, 8_000, 100, 0.0, 100, "none", 1, 1_000_000, 1_000,
                   config=(("segment.bytes", "100000"),))
    generate(spec, workers=1, show_progress=False)

    def digest() -> dict[str, str]:
        return {str(p.relative_to(original)): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(original.rglob("*")) if p.is_file()}

    before = digest()
    now_ms = 1_000_000 + 8_000
    deleted = labs.linked_copy(original, tmp_path / "deleted")
    assert (deleted / "t-0" / "00000000000000000000.log").stat().st_nlink == 2  # linked, not copied
    log = labs.open_partition_log(deleted / "t-0", {"retention.bytes": "1"}, now_ms)
    assert delete_old_segments(log, now_ms).size_breached > 5
    log.close()
    cleaned = labs.linked_copy(original, tmp_path / "cleaned")
    log = labs.open_partition_log(cleaned / "t-0", {"cleanup.policy": "compact"}, now_ms)
    LogCleaner(cleaned, lambda: now_ms).force_clean(log)
    log.close()
    assert digest() == before
    assert (original / "t-0" / "00000000000000000000.log").stat().st_nlink == 1  # both copies let go


@pytest.mark.spark
def test_first_clean_prediction_worked_example(spark) -> None:  # type: ignore[no-untyped-def]
    rows = [(0, 5, b"k", "00000000000000000000.log"), (0, 40, b"k", "00000000000000000000.log"),
            (0, 41, b"j", "00000000000000000000.log"), (0, 120, b"k", "00000000000000000100.log"),
            (1, 3, b"k", "00000000000000000000.log")]
    df = spark.createDataFrame(rows, "partition int, offset bigint, key binary, segment string")
    kept = {(r.partition, r.offset): r.kept for r in labs.first_clean_prediction(df).collect()}
    # partition 1 is all active segment; in partition 0 offset 5 is superseded below 100
    assert kept == {(0, 5): False, (0, 40): True, (0, 41): True, (0, 120): True, (1, 3): True}


def test_scratch_dirs_are_removed_by_the_last_cell_call(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    session = importlib.import_module("kafkalab.spark.session")  # the package exports a session()
    monkeypatch.setattr(session, "_scratch", [])  # leave a running test session's own directory alone
    spark_scratch_dir = session.scratch_dir
    made = [labs.scratch_dir("kafkalab-test-lab-") for _ in range(2)]
    (made[0] / "orders-0").mkdir()
    jvm_tmp = Path(spark_scratch_dir())  # where a session's JVM keeps spark-*, blockmgr-* ...
    assert all(d.is_dir() and d.name.startswith("kafkalab-test-lab-") for d in made) and jvm_tmp.is_dir()
    labs.remove_scratch_dirs()
    assert not any(d.exists() for d in [*made, jvm_tmp])


def test_scratch_dirs_are_removed_when_the_kernel_exits_first(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = "from kafkalab.spark import labs; print(labs.scratch_dir('kafkalab-test-lab-'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    made = Path(out.stdout.strip())
    assert made.name.startswith("kafkalab-test-lab-") and not made.exists()


def test_every_lab_cleans_up_its_temp_directories() -> None:
    """Regression: the labs left lab01-* ... lab04-* directories in the system temp directory."""
    import json

    labs_dir = Path(__file__).resolve().parents[2] / "labs"
    notebooks = sorted(labs_dir.glob("[0-9][0-9]-*.ipynb"))
    assert len(notebooks) >= 4
    for notebook in notebooks:
        cells = [("".join(c["source"])) for c in json.loads(notebook.read_text())["cells"]
                 if c["cell_type"] == "code"]
        assert not any("mkdtemp" in cell for cell in cells), notebook.name
        if any("scratch_dir(" in cell for cell in cells):
            assert "labs.remove_scratch_dirs()" in cells[-1], notebook.name
