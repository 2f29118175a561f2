"""The transaction timeline: the fixed scenario obeys Kafka's rules (LSO held at an open
transaction's first offset, a marker per partition at commit, the timeout's abort, fencing by a
new producer's InitProducerId); the markers it reports are the control batches kafka-python
finds in the segment files; the figure and the widget build."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka.record.memory_records import MemoryRecords

from kafkalab.viz import transactions as tx


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[tx.TxnLab]:
    made = tx.scenario(tmp_path / "data")
    yield made
    made.close()


def _partition(sample: tx.Sample, partition: int) -> tuple[int, int]:
    p = sample.partitions[partition]
    return p.high_watermark, p.last_stable_offset


def test_open_transaction_holds_the_lso_and_commit_releases_it(lab: tx.TxnLab) -> None:
    samples = lab.timeline().samples
    assert [s.coordinator_state for s in samples[:4]] == ["Empty", "Ongoing", "Ongoing", "CompleteCommit"]
    assert _partition(samples[2], 0) == (2, 0) and _partition(samples[2], 1) == (1, 0)
    assert _partition(samples[3], 0) == (3, 3) and _partition(samples[3], 1) == (2, 2)
    for sample in samples:
        for p in sample.partitions:
            assert p.last_stable_offset <= p.high_watermark


def test_timeout_aborts_the_crashed_producers_transaction(lab: tx.TxnLab) -> None:
    line = lab.timeline()
    assert line.samples[5].coordinator_state == "Ongoing"  # crashing tells the coordinator nothing
    assert line.samples[6].coordinator_state == "CompleteAbort"
    assert [(m.step, m.partition, m.offset, m.kind) for m in line.markers] == [
        (3, 0, 2, "COMMIT"), (3, 1, 1, "COMMIT"), (6, 0, 4, "ABORT")]
    assert _partition(line.samples[6], 0) == (5, 5)


def test_a_new_producer_fences_the_old_and_aborts_its_transaction(tmp_path: Path) -> None:
    lab = tx.TxnLab(tmp_path / "data")
    try:
        lab.send(1, 3)
        old = lab.producer
        lab.restart()
        assert lab.producer.epoch > old.epoch
        assert lab.coordinator_state() == "Empty"
        assert [(m.partition, m.offset, m.kind) for m in lab.timeline().markers] == [(1, 3, "ABORT")]
        assert old.add_partitions(tx.TOPIC, [0]).name == "PRODUCER_FENCED"
    finally:
        lab.close()


def test_a_restarted_coordinator_finishes_the_open_transaction(tmp_path: Path) -> None:
    lab = tx.TxnLab(tmp_path / "data")
    try:
        lab.begin()
        lab.send(0, 2)
        lab.restart_broker()
        after = lab.timeline().samples[-1]
        assert after.coordinator_state == "Ongoing" and _partition(after, 0) == (2, 0)
        lab.end(commit=True)
        assert lab.coordinator_state() == "CompleteCommit"
        assert _partition(lab.timeline().samples[-1], 0) == (3, 3)
    finally:
        lab.close()


def test_markers_are_the_control_batches_kafka_python_decodes(lab: tx.TxnLab) -> None:
    lab.broker.close()
    found = []
    for partition in range(tx.PARTITIONS):
        [segment] = sorted((lab.data_dir / f"{tx.TOPIC}-{partition}").glob("*.log"))
        records = MemoryRecords(segment.read_bytes())
        while records.has_next():
            batch = records.next_batch()
            if batch.is_control_batch:
                [record] = list(batch)
                kind = {0: "ABORT", 1: "COMMIT"}[int.from_bytes(record.key[2:4], "big")]
                found.append((partition, batch.base_offset, kind))
    assert sorted(found) == sorted((m.partition, m.offset, m.kind) for m in lab.timeline().markers)


def test_figure_summary_and_widget_build(lab: tx.TxnLab) -> None:
    import matplotlib

    matplotlib.use("Agg")
    line = lab.timeline()
    assert tx.figure(line) is not None
    text = tx.summary(line)
    assert "CompleteAbort" in text and "ABORT in p0 at 4" in text
    box = tx.live(lab)
    buttons = {b.description: b for b in box.children[0].children[1:]}
    buttons["send"].click()  # the scenario's producer has crashed: nothing is sent
    assert lab.coordinator_state() == "CompleteAbort"
    buttons["restart producer"].click()
    buttons["send"].click()
    assert lab.coordinator_state() == "Ongoing"
    buttons["advance past timeout"].click()
    assert lab.coordinator_state() == "CompleteAbort"
