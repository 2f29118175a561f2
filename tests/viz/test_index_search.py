from __future__ import annotations

import math
import random
from collections.abc import Iterator
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from kafka.record.memory_records import MemoryRecords

from kafkalab.clock import ManualClock
from kafkalab.errors import ConfigError, OffsetOutOfRangeError
from kafkalab.storage import index_search
from kafkalab.storage.log import Log
from kafkalab.viz.index_search import (
    START_MS,
    DemoParams,
    TraceStep,
    build_demo_log,
    build_worked_example_log,
    exact_batch,
    figure,
    live,
    lookup_state,
    mean_bytes_scanned,
    pages_touched,
    plain_binary_search,
    trace_offset_lookup,
    trace_timestamp_lookup,
)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START_MS)


@pytest.fixture
def example_log(tmp_path: Path, clock: ManualClock) -> Iterator[Log]:
    log = build_worked_example_log(tmp_path / "orders-0", clock)
    yield log
    log.close()


@pytest.fixture(scope="module")
def demo_log(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Log]:
    log = build_demo_log(tmp_path_factory.mktemp("demo") / "demo-0", DemoParams(batches=3000), ManualClock(START_MS))
    yield log
    log.close()


def kafka_python_records(path: Path) -> list[tuple[int, int]]:
    """(offset, timestamp) of every record in a .log file, decoded by kafka-python."""
    records = MemoryRecords(path.read_bytes())
    out = []
    while records.has_next():
        out += [(r.offset, r.timestamp) for r in records.next_batch()]
    return out


def test_worked_example_log_has_the_chapter_index_entries(example_log: Log) -> None:
    first = example_log.segments[0]
    assert [(first.base_offset + k, p) for k, p in first.offset_index.raw_entries()] == [(20, 320), (43, 1220)]
    assert first.time_index.raw_entries() == [(START_MS + 20, 20), (START_MS + 43, 43)]
    assert [s.base_offset for s in example_log.segments] == [0, 44]


def test_offset_23_probes_two_warm_slots_and_scans_900_bytes(example_log: Log) -> None:
    trace = trace_offset_lookup(example_log, 23)
    assert trace.segment_base_offset == 0
    assert [(p.step, p.slot, p.key, p.section) for p in trace.probes] == [(1, 0, 20, "warm"), (2, 1, 43, "warm")]
    assert (trace.index_slot, trace.start_offset, trace.start_position) == (0, 20, 320)
    assert [(b.position, b.size_bytes) for b in trace.scanned] == [(320, 300), (620, 600)]
    assert trace.bytes_scanned == 900 == sum(b.size_bytes for b in trace.scanned)
    assert trace.found_offset == 42 and trace.found_position == 620
    entry = example_log.segments[0].translate_offset(23)
    assert entry is not None and entry.position == trace.found_position


def test_offset_below_the_first_entry_scans_from_the_front(example_log: Log) -> None:
    trace = trace_offset_lookup(example_log, 5)
    assert (trace.index_slot, trace.start_offset, trace.start_position) == (-1, 0, 0)
    assert trace.bytes_scanned == 160 and trace.found_offset == 9


def test_offset_in_second_segment_uses_its_own_index(example_log: Log) -> None:
    trace = trace_offset_lookup(example_log, 50)
    assert trace.segment_base_offset == 44
    assert (trace.start_offset, trace.start_position) == (49, 320)
    assert trace.found_offset == 51 and trace.bytes_scanned == 320


def test_timestamp_example_matches_kafka_python_decode(example_log: Log) -> None:
    target = START_MS + 30
    trace = trace_timestamp_lookup(example_log, target)
    assert trace.segments_considered == ((0, START_MS + 43),)
    assert trace.time_entry == (START_MS + 20, 20)
    assert [p.index for p in trace.probes] == ["time", "time", "offset", "offset"]
    assert (trace.start_offset, trace.start_position, trace.bytes_scanned) == (20, 320, 900)
    expected = next((o, t) for o, t in kafka_python_records(example_log.segments[0].log_path) if t >= target)
    assert (trace.found_offset, trace.found_timestamp) == expected == (30, START_MS + 30)
    # ListOffsets through the engine gives the same record.
    engine = example_log.offset_for_timestamp(target)
    assert engine is not None and (engine.timestamp, engine.offset) == (trace.found_timestamp, trace.found_offset)


def test_timestamp_in_later_segment_compares_largest_timestamps(example_log: Log) -> None:
    trace = trace_timestamp_lookup(example_log, START_MS + 125)
    assert [b for b, _ts in trace.segments_considered] == [0, 44]
    assert trace.segment_base_offset == 44 and trace.found_timestamp == START_MS + 130
    assert trace.found_offset == 50


def test_timestamp_after_every_record_is_out_of_range(example_log: Log) -> None:
    with pytest.raises(OffsetOutOfRangeError, match="no record of orders-0 has a timestamp"):
        trace_timestamp_lookup(example_log, START_MS + 10_000)


def test_offset_outside_the_log_is_out_of_range(example_log: Log) -> None:
    with pytest.raises(OffsetOutOfRangeError):
        trace_offset_lookup(example_log, 10_000)


def test_probes_are_the_engine_search_and_the_answer_agrees_with_numpy(demo_log: Log) -> None:
    segment = demo_log.active_segment
    keys = np.array([k for k, _ in segment.offset_index.raw_entries()])
    rng = random.Random(7)
    for target in [0, 1, 2, 1974, 1975, 2998, 2999] + [rng.randrange(3000) for _ in range(40)]:
        trace = trace_offset_lookup(demo_log, target)
        expected_slot = index_search.floor_slot(keys.tolist(), len(keys), target)
        assert trace.index_slot == expected_slot, target
        assert trace.found_offset >= target and trace.scanned[-1].base_offset <= target
        assert trace.bytes_scanned == sum(b.size_bytes for b in trace.scanned)
        assert len(trace.probes) <= math.ceil(math.log2(len(keys))) + 3


def test_tail_lookups_stay_warm_and_early_ones_go_cold(demo_log: Log) -> None:
    first_hot = index_search.first_hot_slot(demo_log.active_segment.offset_index.entries, 8)
    assert first_hot == 3000 - 1 - 1 - 1024  # 2999 entries (the first batch is never indexed)
    tail = trace_offset_lookup(demo_log, 2990)
    assert {p.section for p in tail.probes} == {"warm"} and tail.probes[0].slot == first_hot
    early = trace_offset_lookup(demo_log, 100)
    assert early.probes[0].section == "warm" and {p.section for p in early.probes[1:]} == {"cold"}


def test_plain_binary_search_finds_the_same_slot_on_more_pages(demo_log: Log) -> None:
    keys = [k for k, _ in demo_log.active_segment.offset_index.raw_entries()]
    warm_pages: set[int] = set()
    plain_pages: set[int] = set()
    for target in range(2900, 3000):  # consumers that keep up read near the end
        trace = trace_offset_lookup(demo_log, target)
        slot, plain = plain_binary_search(keys, target)
        assert slot == trace.index_slot
        warm_pages |= pages_touched([p.slot for p in trace.probes], 8)
        plain_pages |= pages_touched(plain, 8)
    assert 0 in plain_pages and 0 not in warm_pages  # the warm search never reads the front


def test_warm_section_keeps_tail_lookups_on_three_pages() -> None:
    # A 1.6 MB index (200_000 entries of 8 bytes): tail lookups by Kafka's search stay inside
    # the last 8 KiB (three 4 KiB pages at most, as it need not be page aligned).
    keys = list(range(0, 2_000_000, 10))
    warm_pages: set[int] = set()
    plain_pages: set[int] = set()
    for target in range(1_990_000, 2_000_000, 37):
        read: list[int] = []
        slot = index_search.floor_slot_loop(keys.__getitem__, len(keys), target, 8,
                                            lambda s, _k, _sec: read.append(s))
        plain_slot, plain = plain_binary_search(keys, target)
        assert slot == plain_slot == target // 10
        warm_pages |= pages_touched(read, 8)
        plain_pages |= pages_touched(plain, 8)
    assert len(warm_pages) <= 3 and len(plain_pages) >= 10 and min(plain_pages) == 0


def test_plain_binary_search_edges() -> None:
    assert plain_binary_search([], 5) == (-1, [])
    assert plain_binary_search([10, 20], 5) == (-1, [0])
    assert plain_binary_search([10, 20, 30], 20)[0] == 1
    assert plain_binary_search([10, 20, 30], 99) == (2, [0, 1, 2])


def test_denser_index_scans_fewer_bytes(tmp_path: Path, clock: ManualClock) -> None:
    sparse = build_demo_log(tmp_path / "sparse-0", DemoParams(batches=400, index_interval_bytes=4096), clock)
    dense = build_demo_log(tmp_path / "dense-0", DemoParams(batches=400, index_interval_bytes=256), clock)
    offsets = range(0, 400, 7)
    assert sparse.active_segment.offset_index.entries < dense.active_segment.offset_index.entries
    assert mean_bytes_scanned(dense, offsets) < mean_bytes_scanned(sparse, offsets) / 4
    with pytest.raises(ValueError):
        mean_bytes_scanned(dense, [])
    sparse.close()
    dense.close()


def test_lookup_state_keeps_only_the_segment_that_answered() -> None:
    steps = [
        TraceStep("segment", key=0), TraceStep("probe", "offset", 3, 90, section="warm"),
        TraceStep("result", "offset", 3, 90, 4000), TraceStep("scan", key=-1, value=-1, bytes_scanned=96),
        TraceStep("segment", key=100), TraceStep("result", "offset", -1, 100, 0),
        TraceStep("scan", key=104, value=0, bytes_scanned=200),
    ]
    trace = lookup_state("offset", 99, steps)
    assert trace.segments_considered == ((0, -1), (100, -1))
    assert trace.segment_base_offset == 100 and trace.probes == ()
    assert (trace.start_position, trace.found_offset, trace.bytes_scanned) == (0, 104, 200)


@pytest.mark.parametrize("steps", [
    [],
    [TraceStep("probe", "offset", 0, 1)],
    [TraceStep("segment", key=0), TraceStep("result", "offset", 0, 1, 0)],
])
def test_lookup_state_rejects_incomplete_steps(steps: list[TraceStep]) -> None:
    with pytest.raises(ValueError):
        lookup_state("offset", 1, steps)


def test_lookup_state_rejects_unknown_mode() -> None:
    with pytest.raises(ValueError, match="neither"):
        lookup_state("key", 1, [])


@pytest.mark.parametrize("bad", [{"batches": 0}, {"batches": 10**6}, {"value_bytes": -1}, {"index_interval_bytes": -5}])
def test_demo_params_out_of_range_are_config_errors(bad: dict[str, int]) -> None:
    with pytest.raises(ConfigError):
        DemoParams(**bad)


def test_exact_batch_sizes_and_impossible_sizes() -> None:
    assert len(exact_batch(22, 600, START_MS)) == 600
    records = MemoryRecords(exact_batch(3, 120, START_MS))
    assert [r.timestamp for r in records.next_batch()] == [START_MS, START_MS + 1, START_MS + 2]
    with pytest.raises(ConfigError, match="exactly 20 bytes"):
        exact_batch(1, 20, START_MS)


def test_figures_have_one_panel_per_index_plus_the_scan(example_log: Log) -> None:
    assert len(figure(trace_offset_lookup(example_log, 23), example_log).axes) == 2
    fig = figure(trace_timestamp_lookup(example_log, START_MS + 30), example_log)
    assert len(fig.axes) == 3 and "found offset 30" in fig._suptitle.get_text()


def test_live_widget_switches_mode_and_redraws(example_log: Log) -> None:
    box = live(example_log, "offset", 23)
    toggle, slider, panel = box.children
    image, summary = panel.children
    assert (slider.min, slider.max, slider.value) == (0, 53, 23)
    assert "offset 23:" in summary.value and "data:image/png;base64," in image.value
    toggle.value = "timestamp"
    assert slider.min == START_MS + 9 and slider.max == START_MS + 141
    assert "timestamp" in summary.value
    slider.value = START_MS + 30
    assert f"timestamp {START_MS + 30}:" in summary.value
