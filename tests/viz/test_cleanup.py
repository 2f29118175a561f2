from __future__ import annotations

import random
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pytest
from kafka.record.memory_records import MemoryRecords

from kafkalab.clock import ManualClock
from kafkalab.errors import ConfigError
from kafkalab.storage import events as ev
from kafkalab.storage.log import Log
from kafkalab.viz.cleanup import (
    START_MS,
    CleanupParams,
    LogSnapshot,
    RecordCell,
    SegmentSnapshot,
    cleanup_state,
    figure,
    fill_log,
    live,
    run_cleanup,
    snapshot,
)


def model_keys(params: CleanupParams) -> list[str]:
    rng = random.Random(params.seed)
    return [f"k{rng.randrange(params.keys)}" for _ in range(params.records)]


def model_compaction(params: CleanupParams) -> list[int]:
    """Offsets a single clean keeps: below the active segment, the last of each key (tombstones
    kept: their delete horizon is only set by this clean); the active segment whole."""
    keys = model_keys(params)
    active_base = (params.records - 1) // params.records_per_segment * params.records_per_segment
    last = {key: offset for offset, key in enumerate(keys[:active_base])}
    return sorted(set(last.values()) | set(range(active_base, params.records)))


def test_compaction_worked_example_from_the_docstring() -> None:
    state = run_cleanup(CleanupParams())
    assert model_keys(CleanupParams())[:6] == ["k3", "k3", "k0", "k2", "k3", "k3"]
    assert [(r.offset, r.key) for r in state.after.records][:4] == [(7, "k3"), (15, "k1"), (16, "k2"), (17, "k0")]
    assert state.kept_offsets == tuple(model_compaction(CleanupParams()))
    assert state.gaps == ((8, 14),)  # offsets 0..6 are gone too, but before the first kept record
    assert state.replaced_segments == (0, 6, 12) and state.deleted_segments == ()
    assert [r.offset for r in state.after.segments[-1].records] == list(range(18, 24))  # active untouched
    assert state.fate(7) == "kept" and state.fate(8) == "removed"


@pytest.mark.parametrize("seed", range(6))
def test_compaction_matches_a_model_for_many_logs(seed: int) -> None:
    rng = random.Random(100 + seed)
    params = CleanupParams(records=rng.randrange(5, 60), keys=rng.randrange(1, 8),
                           records_per_segment=rng.randrange(1, 9), tombstone_every=rng.randrange(0, 5), seed=seed)
    state = run_cleanup(params)
    assert list(state.kept_offsets) == model_compaction(params)
    assert sorted(state.kept_offsets + state.removed_offsets) == list(range(params.records))
    # Compaction never changes what a reader sees as the latest value of a key.
    assert state.after.latest_per_key() == state.before.latest_per_key()


def test_tombstones_go_once_their_delete_horizon_has_passed() -> None:
    base = CleanupParams(records=12, keys=2, records_per_segment=4, tombstone_every=4,
                         delete_retention_ms=1000, age_ms=2000)
    once = run_cleanup(base)
    kept_tombstones = [r.offset for r in once.after.records if r.tombstone and r.offset < 8]
    assert kept_tombstones == [o for o in model_compaction(base) if o < 8 and (o + 1) % 4 == 0] != []
    twice = run_cleanup(CleanupParams(**{**_fields(base), "cleaner_passes": 2}))
    # The first clean stamped a delete horizon 1000 ms ahead; the second, 2000 ms later, drops them.
    assert [r.offset for r in twice.after.records if r.tombstone and r.offset < 8] == []
    assert set(twice.kept_offsets) == set(once.kept_offsets) - set(kept_tombstones)
    longer = run_cleanup(CleanupParams(**{**_fields(base), "cleaner_passes": 2, "delete_retention_ms": 5000}))
    assert set(longer.kept_offsets) == set(once.kept_offsets)  # horizon not reached yet


def _fields(params: CleanupParams) -> dict[str, object]:
    return {name: getattr(params, name) for name in CleanupParams.__dataclass_fields__}


def test_retention_time_worked_example() -> None:
    state = run_cleanup(CleanupParams(policy="delete", retention_ms=10_000, age_ms=3000))
    assert state.deleted_segments == (0, 6)
    assert state.after.log_start_offset == 12 and state.after.segments[0].base_offset == 12
    assert state.removed_offsets == tuple(range(12))
    assert state.gaps == ()  # retention moves the start; it never makes gaps


def test_retention_by_size_is_segment_granular() -> None:
    state = run_cleanup(CleanupParams(policy="delete", retention_bytes=500))
    sizes = [s.size_bytes for s in state.before.segments]
    assert state.deleted_segments == (0, 6)
    assert state.after.size_bytes == sum(sizes[2:]) >= 500 > sum(sizes[3:])


def test_delete_records_then_log_start_offset_retention() -> None:
    state = run_cleanup(CleanupParams(policy="compact", delete_records_offset=13))
    assert state.deleted_segments == (0, 6)  # next bases 6 and 12 are <= 13; 18 > 13 stays
    assert state.after.log_start_offset == 13
    assert 12 in {r.offset for r in state.before.records} and state.after.segments[0].base_offset == 12


def test_compact_delete_does_both() -> None:
    state = run_cleanup(CleanupParams(policy="compact,delete", retention_ms=10_000, age_ms=3000))
    assert state.deleted_segments == (0, 6) and state.replaced_segments == (12,)


def test_snapshot_agrees_with_kafka_python(tmp_path: Path) -> None:
    clock = ManualClock(START_MS)
    params = CleanupParams(records=10, records_per_segment=4, tombstone_every=3)
    log = Log.open(tmp_path / "t-0", params.log_config(), clock)
    fill_log(log, clock, params)
    snap = snapshot(log)
    decoded = []
    for segment in log.segments:
        records = MemoryRecords(segment.log_path.read_bytes())
        while records.has_next():
            decoded += [(r.offset, r.key.decode(), r.value is None, r.timestamp) for r in records.next_batch()]
    assert [(r.offset, r.key, r.tombstone, r.timestamp_ms) for r in snap.records] == decoded
    assert [s.base_offset for s in snap.segments] == [0, 4, 8] and snap.segments[-1].active
    log.close()


def _snap(offsets: list[int], end: int) -> LogSnapshot:
    cells = tuple(RecordCell(o, "k0", False, 0) for o in offsets)
    return LogSnapshot((SegmentSnapshot(0, 10 * len(cells), True, cells),), 0, end)


def test_cleanup_state_is_pure_over_snapshots_and_events() -> None:
    events = [ev.SegmentsDeleted("retention time breach", (0,)), ev.SegmentsDeleted("replaced", (5, 9)),
              ev.SegmentRolled("manual", 12, 9, 100)]
    state = cleanup_state(_snap([0, 1, 2, 3, 4], 5), _snap([1, 4], 5), events)
    assert state.deleted_segments == (0,) and state.replaced_segments == (5, 9)
    assert state.removed_offsets == (0, 2, 3) and state.gaps == ((2, 3),)
    assert state.fate(99) == "unknown"
    with pytest.raises(ValueError, match="never had"):
        cleanup_state(_snap([0], 1), _snap([0, 7], 8), [])


@pytest.mark.parametrize("bad", [
    {"policy": "shred"}, {"records": 0}, {"records": 10**6}, {"keys": 0}, {"keys": 99},
    {"records_per_segment": 0}, {"records_per_segment": 100}, {"age_ms": -1}, {"delete_records_offset": 99},
    {"cleaner_passes": 0}, {"cleaner_passes": 9},
])
def test_params_out_of_range_are_config_errors(bad: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        CleanupParams(**bad)  # type: ignore[arg-type]


def test_figure_title_and_live_widget_redraw() -> None:
    state = run_cleanup(CleanupParams())
    fig = figure(state, "compact")
    assert "24 -> 10 records" in fig.axes[0].get_title()
    box = live(CleanupParams())
    policy, *controls, panel = box.children
    image, summary = panel.children
    assert "24 -&gt; 10 records" in summary.value and "data:image/png;base64," in image.value
    policy.value = "delete"
    sliders = {c.description: c for c in controls}
    sliders["retention.ms"].value = 10_000
    assert "cleanup.policy=delete" in summary.value and "data:image/png;base64," in image.value
