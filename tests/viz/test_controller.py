"""The controller widget: leader spans and ISR changes from plain samples; the fixed scenario on
the simulation follows Kafka's documented rules (fencing after broker.session.timeout.ms, the
first in-sync replica in assignment order leads, the leader epoch moves only with the leader,
the partition epoch with every change, a topic is one TopicRecord and one PartitionRecord per
partition); the figure and the widget build."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalab.viz import controller

SESSION_MS = 9_000  # broker.session.timeout.ms default (Kafka's documentation)
HEARTBEAT_MS = 2_000  # broker.heartbeat.interval.ms default


def _sample(at_ms: int, leader: int, isr: tuple[int, ...], partition: int = 0) -> controller.PartitionSample:
    return controller.PartitionSample(at_ms, partition, leader, 0, 0, isr)


def test_leader_spans_and_isr_changes_from_samples() -> None:
    samples = (_sample(0, 3, (3, 1, 2)), _sample(500, 3, (3, 1, 2)), _sample(1_000, 1, (1, 2)),
               _sample(1_500, 1, (1, 2, 3)), _sample(2_000, -1, (1,)), _sample(0, 2, (2,), partition=1))
    line = controller.Timeline((), samples, 2_500)
    assert line.leader_spans(0) == [(0, 1_000, 3), (1_000, 2_000, 1), (2_000, 2_500, -1)]
    assert line.leader_spans(1) == [(0, 2_500, 2)]
    assert [s.time_ms for s in line.isr_changes(0)] == [0, 1_000, 1_500, 2_000]
    assert line.leader_spans(7) == []
    assert line.latest(0) == samples[4]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[controller.ControllerLab]:
    lab = controller.scenario(tmp_path_factory.mktemp("controller"))
    yield lab
    lab.close()


def test_topic_creation_is_one_topic_record_and_a_partition_record_per_partition(
        lab: controller.ControllerLab) -> None:
    created = [e for e in lab.entries if e.time_ms == 0 and e.kind in ("TopicRecord", "PartitionRecord")]
    assert [e.kind for e in created] == ["TopicRecord"] + ["PartitionRecord"] * controller.PARTITIONS
    offsets = [e.offset for e in lab.entries]
    assert offsets == list(range(len(offsets)))  # every record of the log, in order, none twice
    for entry in lab.entries:  # the dump-log text is Kafka's JSON, typed with Kafka's record name
        payload = json.loads(entry.text)
        assert payload["type"].replace("_", "").lower() == entry.kind.lower()


def test_crashed_leader_is_fenced_after_the_session_timeout_and_the_next_isr_replica_leads(
        lab: controller.ControllerLab) -> None:
    line = lab.timeline()
    first = line.isr_changes(0)[0]
    victim = first.leader
    registered = next(e for e in line.entries if e.kind == "RegisterBrokerRecord"
                      and json.loads(e.text)["data"]["brokerId"] == victim)
    fenced = [e for e in line.entries if e.kind == "BrokerRegistrationChangeRecord"
              and json.loads(e.text)["data"] == {"brokerId": victim, "brokerEpoch": registered.offset, "fenced": 1}]
    [killed] = [a.time_ms for a in line.actions if a.label == f"kill {victim}"]
    # Fenced 9 s after its last heartbeat, which came at most one interval before the kill.
    [fenced_ms] = [e.time_ms for e in fenced]
    assert killed + SESSION_MS - HEARTBEAT_MS < fenced_ms <= killed + SESSION_MS
    after = line.isr_changes(0)[1]
    assert fenced_ms <= after.time_ms < fenced_ms + controller.SAMPLE_MS  # the next sample shows it
    replicas = json.loads(next(e.text for e in line.entries if e.kind == "PartitionRecord"))["data"]["replicas"]
    assert after.leader == next(r for r in replicas if r != victim)  # assignment order, not ISR order
    assert victim not in after.isr
    assert (after.leader_epoch, after.partition_epoch) == (first.leader_epoch + 1, first.partition_epoch + 1)


def test_epochs_move_as_kafka_says(lab: controller.ControllerLab) -> None:
    line = lab.timeline()
    for partition in range(controller.PARTITIONS):
        changes = line.isr_changes(partition)
        for before, after in zip(changes, changes[1:]):
            assert after.partition_epoch > before.partition_epoch
            leader_moved = after.leader != before.leader
            assert after.leader_epoch == before.leader_epoch + (1 if leader_moved else 0)


def test_preferred_election_returns_leadership_to_the_first_replica(lab: controller.ControllerLab) -> None:
    line = lab.timeline()
    victim = line.isr_changes(0)[0].leader
    assert line.latest(0).leader == victim  # type: ignore[union-attr]
    assert line.leader_spans(0)[-1][2] == victim and len(line.leader_spans(0)) == 3
    for partition in (1, 2):  # their preferred leaders never left
        assert len(line.leader_spans(partition)) == 1
    assert lab.cluster.controller.elect_leaders(controller.Election.PREFERRED, None) == []  # nothing left to move


def test_summary_and_figure(lab: controller.ControllerLab) -> None:
    line = lab.timeline()
    text = controller.summary(line)
    assert f"ends at offset {len(line.entries)}" in text and "orders-0: leader" in text
    fig = controller.figure(line)
    assert len(fig.axes) == 2


def test_live_widget_builds_and_acts(tmp_path: Path) -> None:
    pytest.importorskip("ipywidgets")
    lab = controller.ControllerLab(tmp_path)
    try:
        box = controller.live(lab)
        buttons = {b.description: b for b in box.children[1].children}
        buttons["kill"].click()
        buttons["advance"].click()
        assert "ends at offset" in box.children[2].children[1].value
        assert any(e.kind == "BrokerRegistrationChangeRecord" and '"fenced":1' in e.text for e in lab.entries)
    finally:
        lab.close()


def test_actions_are_recorded_at_their_times(lab: controller.ControllerLab) -> None:
    victim = lab.timeline().isr_changes(0)[0].leader
    start = lab.timeline().samples[0].time_ms  # once the topic is known to every broker
    assert [(a.time_ms - start, a.label) for a in lab.timeline().actions] == [
        (5_000, f"kill {victim}"), (20_000, f"restart {victim}"), (40_000, "preferred election")]


def test_reassigning_a_replica_off_and_back_on(tmp_path: Path) -> None:
    lab = controller.ControllerLab(tmp_path)
    try:
        start = lab.cluster.controller.image.partition("orders", 0)
        assert start is not None
        follower = start.replicas[-1]
        assert lab.move_replica(follower) == [("orders", 0, "NONE")]
        off = lab.cluster.controller.image.partition("orders", 0)
        assert off is not None and follower not in off.replicas and off.adding_replicas == ()
        assert lab.move_replica(follower) == [("orders", 0, "NONE")]
        entry = lab.entries[-1]  # the reassignment starts: the broker is added, not yet in sync
        assert entry.kind == "PartitionChangeRecord" and f'"addingReplicas":[{follower}]' in entry.text
        lab.advance(2_000)
        back = lab.cluster.controller.image.partition("orders", 0)
        assert back is not None and back.replicas == start.replicas and set(back.isr) == set(start.replicas)
        assert back.adding_replicas == () and [a.label for a in lab.actions] == [
            f"reassign -{follower}", f"reassign +{follower}"]
    finally:
        lab.close()
