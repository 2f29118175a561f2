from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest

from kafkalab.errors import ConfigError
from kafkalab.records.model import Record
from kafkalab.records.v2 import build_v2_batch
from kafkalab.storage import events as ev
from kafkalab.viz.segments import (
    ACTIVE,
    RollingParams,
    figure,
    live,
    rolling_state,
    run_rolling,
)


def _batch_bytes(record_bytes: int) -> int:
    return len(build_v2_batch([Record(offset=0, timestamp=0, key=None, value=b"x" * record_bytes)]))


def test_rolling_state_closes_one_bar_per_roll_and_ignores_other_events() -> None:
    events = [
        ev.IndexEntryAppended("offset", 0, 5, 400),
        ev.SegmentRolled("segment.bytes", 11, 0, 4070),
        ev.SegmentRolled("segment.ms", 30, 11, 2000),
    ]
    state = rolling_state(events, first_base_offset=0, log_end_offset=42, active_size_bytes=900)
    assert [(b.base_offset, b.size_bytes, b.record_count, b.closed_by) for b in state.bars] == [
        (0, 4070, 11, "segment.bytes"),
        (11, 2000, 19, "segment.ms"),
        (30, 900, 12, ACTIVE),
    ]
    assert state.roll_counts == {"segment.bytes": 1, "segment.ms": 1}


def test_rolling_state_rejects_events_from_another_log() -> None:
    with pytest.raises(ValueError, match="closes segment 50, expected 0"):
        rolling_state([ev.SegmentRolled("segment.bytes", 60, 50, 10)], 0, 70, 0)


def test_segment_bytes_worked_example_from_the_module_docstring() -> None:
    assert _batch_bytes(300) == 370
    state = run_rolling(RollingParams(segment_bytes=4096, record_bytes=300, appends=40))
    assert [b.base_offset for b in state.bars] == [0, 11, 22, 33]
    assert [b.closed_by for b in state.bars] == ["segment.bytes"] * 3 + [ACTIVE]
    assert all(b.size_bytes == b.record_count * 370 for b in state.bars)
    assert state.log_end_offset == 40


def test_segment_ms_rolls_when_the_first_timestamp_is_too_old() -> None:
    # 500 ms between records, segment.ms = 5000: a segment whose first record is at t keeps
    # appending while now - t <= 5000, i.e. 11 records (t .. t + 5000), then rolls.
    params = RollingParams(segment_bytes=1 << 20, segment_ms=5000, records_per_s=2.0, appends=30)
    state = run_rolling(params)
    closed = [b for b in state.bars if b.closed_by != ACTIVE]
    assert closed and {b.closed_by for b in closed} == {"segment.ms"}
    assert [b.record_count for b in closed] == [11] * len(closed)


def test_full_time_index_rolls_before_the_bytes_limit() -> None:
    # 24 index bytes hold two 12-byte time-index entries; with index.interval.bytes = 0 every
    # batch after the first in a segment is indexed, so the third append finds the index full.
    params = RollingParams(segment_bytes=1 << 20, segment_index_bytes=24, index_interval_bytes=0, appends=9)
    state = run_rolling(params)
    assert [b.closed_by for b in state.bars] == ["time index full"] * 4 + [ACTIVE]
    assert [b.record_count for b in state.bars] == [2, 2, 2, 2, 1]


def test_sizes_add_up_to_every_appended_batch() -> None:
    params = RollingParams(segment_bytes=2048, record_bytes=123, appends=77)
    state = run_rolling(params)
    assert sum(b.size_bytes for b in state.bars) == 77 * _batch_bytes(123)
    assert sum(b.record_count for b in state.bars) == 77
    assert all(b.size_bytes <= 2048 for b in state.bars)


@pytest.mark.parametrize(
    "bad", [{"appends": 0}, {"appends": 10**6}, {"record_bytes": -1}, {"records_per_s": 0}]
)
def test_params_out_of_range_are_config_errors(bad: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        RollingParams(**bad)  # type: ignore[arg-type]


def test_static_figure_draws_one_box_per_segment() -> None:
    params = RollingParams()
    state = run_rolling(params)
    fig = figure(state, params)
    assert len(fig.axes[0].patches) == len(state.bars) == 4
    assert "segment.bytes ×3" in fig.axes[0].get_title()


def test_live_widget_has_labelled_sliders_and_redraws_on_change() -> None:
    box = live(RollingParams())
    sliders = {child.description: child for child in box.children if hasattr(child, "description")}
    assert {"segment.bytes", "segment.ms", "segment.index.bytes"} <= set(sliders)
    image, summary = box.children[-1].children
    assert "data:image/png;base64," in image.value
    sliders["segment.bytes"].value = 8192
    expected = run_rolling(RollingParams(segment_bytes=8192))
    assert f"{len(expected.bars)} segments for {expected.log_end_offset} records" in summary.value
