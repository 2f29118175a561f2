"""The ISR widget: markers and ISR spans from plain rows and samples; the fixed scenario on the
simulation obeys Kafka's rules (shrink only after replica.lag.time.max.ms, a stalled HW, acks=all
refused below min.insync.replicas, HW never above an ISR member's LEO); the figure and the
widget build."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalab.errors import ErrorCode
from kafkalab.sim.cluster import START_MS
from kafkalab.sim.events import EventRow
from kafkalab.viz import isr

LAG_MS = 30_000  # replica.lag.time.max.ms default (KIP-537)
SESSION_MS = 9_000  # broker.session.timeout.ms default
HEARTBEAT_MS = 2_000  # broker.heartbeat.interval.ms default
PROPAGATION_MS = 100  # a bound on a controller decision reaching the leader (a metadata fetch)


def _fenced_after(killed_ms: int, fenced_ms: int) -> bool:
    """The controller fences a silent broker 9 s after its last heartbeat, which came at most
    one heartbeat interval before it was killed; the leader learns it a fetch later."""
    return killed_ms + SESSION_MS - HEARTBEAT_MS < fenced_ms <= killed_ms + SESSION_MS + PROPAGATION_MS


def _row(at_ms: int, kind: str, **fields: object) -> EventRow:
    return EventRow(START_MS + at_ms, fields.pop("node_id", 3), kind, **fields)  # type: ignore[arg-type]


def test_markers_classify_shrink_expand_election_and_crash() -> None:
    rows = [
        _row(0, "became-leader", topic="orders", partition=0, leader_epoch=0, isr=(1, 2, 3)),
        _row(45_000, "isr-changed", topic="orders", partition=0, isr=(1, 2, 3), new_isr=(2, 3)),
        _row(46_000, "isr-changed", topic="other", partition=0, isr=(1, 2, 3), new_isr=(2, 3)),
        _row(50_000, "crash", node_id=3),
        _row(59_000, "became-leader", node_id=2, topic="orders", partition=0, leader_epoch=1, isr=(2,)),
        _row(59_001, "became-leader", node_id=2, topic="orders", partition=0, leader_epoch=1, isr=(2,)),
        _row(70_000, "isr-changed", node_id=2, topic="orders", partition=0, isr=(2,), new_isr=(1, 2)),
    ]
    assert [(m.time_ms, m.kind, m.node_id) for m in isr.markers(rows)] == [
        (45_000, "shrink", 3), (50_000, "crash", 3), (59_000, "election", 2), (70_000, "expand", 2)]


def _sample(at_ms: int, members: tuple[int, ...]) -> isr.Sample:
    return isr.Sample(at_ms, 3, 0, members, tuple(isr.ReplicaSample(n, 0, 0) for n in (1, 2, 3)))


def test_isr_spans() -> None:
    line = isr.Timeline(tuple(_sample(t, m) for t, m in [(0, (1, 2, 3)), (500, (2, 3)), (1_000, (2, 3)),
                                                          (1_500, (1, 2, 3)), (2_000, (1, 2, 3))]), (), (), 2)
    assert line.isr_spans(1) == [(0, 500), (1_500, 2_000)]
    assert line.isr_spans(2) == [(0, 2_000)]
    assert line.isr_spans(4) == []


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Iterator[isr.Timeline]:
    lab = isr.scenario(tmp_path_factory.mktemp("isr"))
    yield lab.timeline()
    lab.close()


def _at(line: isr.Timeline, at_ms: int) -> isr.Sample:
    return max((s for s in line.samples if s.time_ms <= at_ms), key=lambda s: s.time_ms)


def test_cut_off_follower_leaves_only_after_the_lag_window(scenario: isr.Timeline) -> None:
    first_shrink = next(m for m in scenario.markers if m.kind == "shrink")
    # Cut at 5 s; the leader checks every 15 s, so the first check that finds it 30 s behind.
    assert 5_000 + LAG_MS <= first_shrink.time_ms <= 5_000 + LAG_MS + LAG_MS // 2
    # Samples are taken every 500 ms: the last one before the shrink has 1, the first after it not.
    after = min((s for s in scenario.samples if s.time_ms >= first_shrink.time_ms), key=lambda s: s.time_ms)
    assert 1 in _at(scenario, first_shrink.time_ms - 1).isr and 1 not in after.isr


def test_hw_stalls_while_the_cut_off_follower_is_in_the_isr(scenario: isr.Timeline) -> None:
    leader = scenario.samples[0].leader
    index = [r.node_id for r in scenario.samples[0].replicas].index(leader)
    stalled = [s for s in scenario.samples if 6_000 <= s.time_ms < 45_000]
    assert {s.replicas[index].high_watermark for s in stalled} == {5}
    assert stalled[-1].replicas[index].log_end_offset > 30  # the leader kept appending


def test_acks_all_refused_exactly_while_the_isr_is_below_min(scenario: isr.Timeline) -> None:
    refused = [p for p in scenario.produces if p.error_code == ErrorCode.NOT_ENOUGH_REPLICAS]
    assert refused
    for produce in scenario.produces:
        size = len(_at(scenario, produce.time_ms).isr)
        if produce.error_code == ErrorCode.NOT_ENOUGH_REPLICAS:
            assert size < scenario.min_insync_replicas
        elif produce.error_code == ErrorCode.NONE:
            assert size >= scenario.min_insync_replicas


def test_killed_follower_is_removed_when_fenced(scenario: isr.Timeline) -> None:
    crash = next(m for m in scenario.markers if m.kind == "crash")
    shrinks = [m for m in scenario.markers if m.kind == "shrink" and m.time_ms > crash.time_ms]
    assert _fenced_after(crash.time_ms, shrinks[0].time_ms)


def test_hw_never_passes_an_isr_member_and_everyone_rejoins(scenario: isr.Timeline) -> None:
    for sample in scenario.samples:
        by_node = {r.node_id: r for r in sample.replicas}
        leader_hw = by_node[sample.leader].high_watermark
        assert leader_hw is not None
        for member in sample.isr:
            leo = by_node[member].log_end_offset
            assert leo is None or leader_hw <= leo, (sample.time_ms, member)
    last = scenario.samples[-1]
    assert last.isr == (1, 2, 3)
    assert len({(r.log_end_offset, r.high_watermark) for r in last.replicas}) == 1


def test_figure_draws(scenario: isr.Timeline) -> None:
    import matplotlib.pyplot as plt

    fig = isr.figure(scenario)
    assert len(fig.axes) == 2 and len(fig.axes[0].lines) >= 6
    plt.close(fig)


def test_widget_buttons_drive_the_cluster(tmp_path: Path) -> None:
    lab = isr.IsrLab(tmp_path, seed=7)
    try:
        box = isr.live(lab)
        buttons = {b.description: b for b in box.children[1].children}
        assert set(buttons) == {"slow", "kill", "partition", "heal", "advance"}
        target = box.children[0].children[0].value
        buttons["kill"].click()
        assert not lab.cluster.nodes[target].alive
        buttons["advance"].click()  # 15 s: past broker.session.timeout.ms, so it is fenced
        assert target not in lab.samples[-1].isr
        summary = box.children[2].children[1].value
        assert "ISR" in summary and f"broker {target}: down" in summary
        with pytest.raises(ValueError):
            lab.advance(0)
    finally:
        lab.close()


def test_killing_the_leader_draws_an_election(tmp_path: Path) -> None:
    lab = isr.IsrLab(tmp_path, seed=7)
    try:
        lab.advance(2_000)
        old_leader = lab.samples[-1].leader
        lab.kill(old_leader)
        line = lab.advance(15_000)
        [election] = [m for m in line.markers if m.kind == "election"]
        assert election.node_id == line.samples[-1].leader != old_leader
        assert _fenced_after(2_000, election.time_ms)  # fenced, then a new leader at once
        assert line.samples[-1].leader_epoch == 1
        lab.heal(old_leader)  # restarts it; it rejoins as a follower
        line = lab.advance(5_000)
        assert old_leader in line.samples[-1].isr and line.samples[-1].leader != old_leader
    finally:
        lab.close()


def test_slow_links_delay_but_do_not_drop(tmp_path: Path) -> None:
    lab = isr.IsrLab(tmp_path, seed=7)
    try:
        follower = lab.followers()[0]
        lab.slow(follower, 3_000)
        leader = lab.cluster.leader(isr.TOPIC, 0)
        assert lab.cluster.network.faults(leader, follower).delay_min_ms == 3_000
        line = lab.advance(20_000)
        by_node = {r.node_id: r for r in line.samples[-1].replicas}
        # Behind by a round trip or two, yet fetching: still in the ISR, the HW waits for it.
        assert follower in line.samples[-1].isr
        assert by_node[follower].log_end_offset < by_node[leader].log_end_offset
        assert by_node[leader].high_watermark <= by_node[follower].log_end_offset
    finally:
        lab.close()
