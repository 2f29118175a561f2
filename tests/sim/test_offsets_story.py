"""ProcessingConsumer, chapter 11's consumer loop: the module docstring's worked example, and
what commit-before and auto commit cost on a crash."""

from __future__ import annotations

from pathlib import Path

from kafkalab.records import Record, build_batch
from kafkalab.sim.cluster import START_MS, SimCluster
from kafkalab.sim.offsets_story import ProcessingConsumer, committed


def _cluster(tmp_path: Path) -> SimCluster:
    sim = SimCluster(tmp_path, nodes=3, seed=7)
    sim.create_topic("payments", 1, 3)
    sim.run_for(100)
    ten = build_batch([Record(i, START_MS, None, b"x") for i in range(10)], base_offset=0)
    assert sim.produce("payments", 0, ten).error_code == 0
    return sim


def test_delivery_semantics_on_a_crash(tmp_path: Path) -> None:
    sim = _cluster(tmp_path)
    runs = {}
    for mode, batch_size in (("after", 4), ("before", 4), ("auto", 1)):
        consumer = ProcessingConsumer(sim, f"g-{mode}", "payments", mode, batch_size=batch_size)
        assert not consumer.run(lambda offset: None, until_offset=10, crash_after=6)
        assert consumer.run(lambda offset: None, until_offset=10)
        runs[mode] = consumer.processed
        assert committed(sim, f"g-{mode}", "payments", [0]) == {0: 10}
    assert runs["after"] == [0, 1, 2, 3, 4, 5, 4, 5, 6, 7, 8, 9]  # at-least-once
    assert runs["before"] == [0, 1, 2, 3, 4, 5, 8, 9]  # at-most-once: 6 and 7 lost
    # auto commit at 5 s committed position 5; the crash repeats what came after it
    assert runs["auto"] == [0, 1, 2, 3, 4, 5, 5, 6, 7, 8, 9]
    sim.close()
