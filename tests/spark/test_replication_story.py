"""Lab 06's event log: the scripted faults leave the traces Kafka's rules predict."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from kafkalab.sim.cluster import START_MS
from kafkalab.spark.replication_story import ReplicationStory, write_replication_story


def test_the_story_leaves_the_expected_traces(tmp_path: Path) -> None:
    marks = write_replication_story(tmp_path / "cluster", tmp_path / "events.parquet", ReplicationStory())
    rows = pq.read_table(tmp_path / "events.parquet").to_pylist()
    shrinks = [r for r in rows if r["kind"] == "isr-changed" and r["partition"] == 0 and len(r["new_isr"]) < 3]
    first = (shrinks[0]["time_ms"] - START_MS) / 1000
    # Cut at 20 s; the leader checks every 15 s and drops a follower more than 30 s behind: it
    # proposes the shrink at 60 s, and the controller's answer lands a round trip later.
    assert 60.0 <= first < 60.1
    assert marks.cut_follower not in shrinks[0]["new_isr"]
    assert [r["node_id"] for r in rows if r["kind"] == "crash"] == [marks.crashed_leader]
    refused = [r for r in rows if r["kind"] == "produce-answer" and r["error_code"] == 19]  # NOT_ENOUGH_REPLICAS
    assert refused and all(r["time_ms"] >= START_MS + 270_000 for r in refused)
