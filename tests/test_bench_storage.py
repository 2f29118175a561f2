"""The storage benchmark's baseline answers what the log's own lookup answers."""

from __future__ import annotations

from pathlib import Path

from kafkalab.bench.bench_storage import InMemoryIndex, _append_rates, _build_log, _index_lookup, _lookup_rates
from kafkalab.clock import ManualClock
from kafkalab.records import Record, build_batch
from kafkalab.storage import Log, LogConfig


def test_in_memory_index_finds_the_floor_entry_of_the_logs_lookup(tmp_path: Path) -> None:
    # 40-record batches of ~1.3 KiB in 16 KiB segments: several segments, an index entry
    # every few batches, so a floor entry often lies a few batches before the answer.
    batch = build_batch([Record(i, 1_000 + i, None, b"v" * 20) for i in range(40)], base_offset=0)
    log = Log.open(tmp_path / "t-0", LogConfig(segment_bytes=16 * 1024), ManualClock(0))
    for _ in range(100):
        log.append_as_leader(batch, 0)
    assert len(log.segments) > 3
    index = InMemoryIndex(log)
    assert index.offsets == sorted(set(index.offsets))
    for offset in range(log.log_end_offset):
        found = log.lookup(offset)
        assert found is not None
        segment, position = index.lookup(offset)
        assert segment is found[0], offset
        assert position <= found[1].position < position + log.config.index_interval_bytes + len(batch)
    log.close()


def test_the_measured_index_half_and_the_baseline_answer_the_same_entry(tmp_path: Path) -> None:
    # storage.lookup compares two ways of answering one question; they must agree on every
    # offset, including each segment's base offset (no index entry) and the log's last offset.
    batch = build_batch([Record(i, 1_000 + i, None, b"v" * 200) for i in range(20)], base_offset=0)
    log = Log.open(tmp_path / "t-0", LogConfig(segment_bytes=32 * 1024, index_interval_bytes=4096),
                   ManualClock(0))
    for _ in range(120):
        log.append_as_leader(batch, 0)
    assert len(log.segments) > 3
    index_half, baseline = _index_lookup(log), InMemoryIndex(log)
    for offset in range(log.log_end_offset):
        segment, position = baseline.lookup(offset)
        assert index_half(offset) == (segment, position), offset
    log.close()


def test_rates_come_one_per_run_for_each_side(tmp_path: Path) -> None:
    append = _append_rates(tmp_path, 64 * 1024, runs=3)
    assert {name: len(rates) for name, rates in append.items()} == {"raw": 3, "log": 3}
    assert all(rate > 0 for rates in append.values() for rate in rates)
    log = _build_log(tmp_path / "t-0", 5_000)
    rates = _lookup_rates({"log": (log.lookup, log.log_end_offset)}, seed=1, runs=2)
    assert len(rates["log"]) == 2 and min(rates["log"]) > 0
    log.close()
