"""The rebalance timeline: spans, generations and counts from plain rows; the fixed scenario on
the simulation obeys Kafka's rules (the initial rebalance delay, a rejoin announced through
Heartbeat's REBALANCE_IN_PROGRESS, LeaveGroup acting at once, a killed member noticed only after
session.timeout.ms, never two owners of a partition); the figure and the widget build."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalab.errors import ErrorCode
from kafkalab.sim.cluster import START_MS
from kafkalab.sim.events import EventRow
from kafkalab.viz import rebalance

SESSION_MS = 10_000  # RebalanceLab's session.timeout.ms
INITIAL_DELAY_MS = 3_000  # group.initial.rebalance.delay.ms default


def _row(at_ms: int, kind: str, member: str, api: str, *, error: int | None = None,
         generation: int | None = None) -> EventRow:
    return EventRow(START_MS + at_ms, 1, kind, member=member, api=api, error_code=error, generation_id=generation)


def test_spans_generations_and_counts_from_rows() -> None:
    rows = [
        _row(0, "group-request", "a", "JoinGroup"),
        _row(2, "group-response", "a", "JoinGroup", error=ErrorCode.MEMBER_ID_REQUIRED, generation=-1),
        _row(2, "group-request", "a", "JoinGroup"),
        _row(3_000, "group-response", "a", "JoinGroup", error=0, generation=1),
        _row(3_002, "group-request", "a", "SyncGroup", generation=1),
        _row(3_004, "group-response", "a", "SyncGroup", error=0),
        _row(4_000, "group-request", "a", "Heartbeat", generation=1),
        _row(4_002, "group-response", "a", "Heartbeat", error=ErrorCode.REBALANCE_IN_PROGRESS),
        _row(4_002, "group-request", "a", "JoinGroup"),
        _row(4_002, "crash", "a", "x"),
    ]
    line = rebalance.timeline(rows, [])
    assert line.members == ("a",)
    assert line.rebalance_spans("a") == [(0, 3_004), (4_002, 4_002)]  # the second is still open
    assert line.generations == ((3_000, 1),)
    assert line.count() == {"JoinGroup": 3, "SyncGroup": 1, "Heartbeat": 1}
    assert line.count(4_000, kind="response") == {"Heartbeat": 1}
    assert [m.error for m in line.of("a") if m.kind == "response"] == [
        "MEMBER_ID_REQUIRED", "NONE", "NONE", "REBALANCE_IN_PROGRESS"]


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Iterator[rebalance.Timeline]:
    lab = rebalance.scenario(tmp_path_factory.mktemp("rebalance"))
    try:
        yield lab.timeline()
    finally:
        lab.close()


def _owners_at(line: rebalance.Timeline, at_ms: int) -> dict[int, str | None]:
    return dict(next(s for s in line.samples if s.time_ms >= at_ms).owners)


def test_first_generation_waits_for_the_initial_rebalance_delay(scenario: rebalance.Timeline) -> None:
    first_ms, generation = scenario.generations[0]
    assert generation == 1 and first_ms >= INITIAL_DELAY_MS
    assert sorted(_owners_at(scenario, first_ms + 500).values()) == ["c1", "c1", "c2", "c2", "c3", "c3"]


def test_newcomer_is_announced_by_rebalance_in_progress(scenario: rebalance.Timeline) -> None:
    joined_ms = next(m.time_ms for m in scenario.of("c4") if m.api == "JoinGroup")
    second_ms = dict((g, t) for t, g in scenario.generations)[2]
    for member in ("c1", "c2", "c3"):
        told = [m.time_ms for m in scenario.of(member) if m.api == "Heartbeat" and m.error == "REBALANCE_IN_PROGRESS"
                and m.time_ms <= second_ms]
        assert len(told) == 1 and joined_ms < told[0]
    assert len(set(_owners_at(scenario, second_ms + 500).values())) == 4


def test_leave_group_starts_the_next_generation_at_once(scenario: rebalance.Timeline) -> None:
    left_ms = next(m.time_ms for m in scenario.of("c2") if m.api == "LeaveGroup")
    third_ms = dict((g, t) for t, g in scenario.generations)[3]
    assert 0 <= third_ms - left_ms < 1_000
    assert "c2" not in _owners_at(scenario, third_ms + 500).values()


def test_killed_member_is_noticed_after_its_session_timeout(scenario: rebalance.Timeline) -> None:
    last_heartbeat_ms = max(m.time_ms for m in scenario.of("c3") if m.api == "Heartbeat" and m.kind == "response")
    fourth_ms = dict((g, t) for t, g in scenario.generations)[4]
    assert SESSION_MS <= fourth_ms - last_heartbeat_ms < SESSION_MS + 1_000
    orphaned = _owners_at(scenario, fourth_ms - 500)
    assert sorted(p for p, owner in orphaned.items() if owner is None) == [2, 3]  # c3's, unread meanwhile
    assert None not in _owners_at(scenario, fourth_ms + 500).values()


def test_no_partition_ever_has_two_owners(scenario: rebalance.Timeline) -> None:
    assert all("+" not in (owner or "") for s in scenario.samples for _, owner in s.owners)


def test_figure_draws(scenario: rebalance.Timeline) -> None:
    import matplotlib.pyplot as plt

    fig = rebalance.figure(scenario)
    assert len(fig.axes) == 2 and [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["c1", "c2", "c3", "c4"]
    plt.close(fig)


def test_widget_buttons_drive_the_group(tmp_path: Path) -> None:
    lab = rebalance.RebalanceLab(tmp_path, assignor="cooperative-sticky")
    try:
        lab.add()
        lab.advance(4_000)
        box = rebalance.live(lab)
        buttons = {b.description: b for b in box.children[1].children}
        assert set(buttons) == {"add member", "close (LeaveGroup)", "kill", "advance"}
        buttons["add member"].click()
        buttons["advance"].click()
        assert len(lab.members()) == 2 and all(len(m.owned) == 3 for m in lab.cluster.members.values())
        assert "gen 3" in box.children[2].value  # cooperative: revoke in gen 2, hand over in gen 3
        with pytest.raises(ValueError):
            lab.advance(0)
    finally:
        lab.close()
