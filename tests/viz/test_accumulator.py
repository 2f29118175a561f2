"""The accumulator widget: on the simulation, batches obey linger.ms and batch.size, keyless
records take turns across partitions (KIP-794), and the figure and the live controls build."""

from __future__ import annotations

from pathlib import Path

from kafkalab.viz import accumulator

RECORD_BYTES = 1030  # a 1 KiB value as a v2 record


def test_linger_0_sends_at_once_and_linger_20_batches(tmp_path: Path) -> None:
    eager = accumulator.simulate(tmp_path / "a", linger_ms=0)
    patient = accumulator.simulate(tmp_path / "b", linger_ms=20)
    assert all(s.drained_ms - s.opened_ms <= 1 for s in eager.drained())
    assert eager.mean_records_per_batch() < 3
    assert patient.mean_records_per_batch() > 8
    assert len(patient.requests) < len(eager.requests) / 4


def test_no_batch_outlives_linger_and_none_passes_batch_size(tmp_path: Path) -> None:
    line = accumulator.simulate(tmp_path, linger_ms=20, records_per_s=4_000)
    for span in line.drained():
        assert span.drained_ms - span.opened_ms <= 20 + 1  # +1: the sender looks once a millisecond here
        assert span.size_bytes <= line.batch_size
        if span.drained_ms - span.opened_ms < 20:
            assert span.full, span  # only a full batch leaves before linger.ms
    assert any(s.records == 15 and s.full for s in line.drained())  # 61 + 15 x 1030 <= 16384 < 61 + 16 x 1030


def test_keyless_batches_take_turns_across_partitions(tmp_path: Path) -> None:
    line = accumulator.simulate(tmp_path, linger_ms=20, duration_ms=400)
    assert {s.partition for s in line.spans} == {0, 1, 2}


def test_figure_and_live_controls(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    fig = accumulator.figure(accumulator.simulate(tmp_path / "fig", linger_ms=5))
    assert len(fig.axes) == 2
    plt.close(fig)
    box = accumulator.live(tmp_path / "live")
    linger = box.children[0].children[0]
    assert "Produce requests" in box.children[2].children[1].value
    before = box.children[2].children[1].value
    linger.value = 0
    assert box.children[2].children[1].value != before
