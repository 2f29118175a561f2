"""The classic-against-KIP-848 race: spans and pauses from plain notifications; the fixed story
on two simulations obeys both protocols' rules (classic eager stops every partition at every
rebalance and waits for group.initial.rebalance.delay.ms; KIP-848 stops only the partitions that
move, never gives one partition two owners, and fences a killed member after its session); the
figure, summary and widget build."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalab.client.membership import Notification
from kafkalab.sim.cluster import START_MS
from kafkalab.viz import kip848
from kafkalab.viz.kip848 import OwnerSpan

INITIAL_DELAY_MS = 3_000  # group.initial.rebalance.delay.ms default


def _heard(at_ms: int, kind: str, *partitions: int) -> Notification:
    return Notification(START_MS + at_ms, kind, tuple(("orders", p) for p in partitions))


def test_spans_and_gaps_from_notifications() -> None:
    heard = {
        "a": [_heard(100, "assigned", 0, 1), _heard(2_000, "revoked", 1)],
        "b": [_heard(2_500, "assigned", 1), _heard(3_000, "lost", 1), _heard(3_000, "assigned", 2)],
        "dead": [_heard(0, "assigned", 3)],
    }
    spans = kip848.ownership_spans(heard, {"dead": 1_000}, now_ms=4_000)
    assert spans == [OwnerSpan(0, "a", 100, 4_000), OwnerSpan(1, "a", 100, 2_000), OwnerSpan(1, "b", 2_500, 3_000),
                     OwnerSpan(2, "b", 3_000, 4_000), OwnerSpan(3, "dead", 0, 1_000)]
    assert kip848.unowned_ms(spans, 4, 0, 4_000) == {0: 100, 1: 100 + 500 + 1_000, 2: 3_000, 3: 3_000}
    assert kip848.unowned_ms(spans, 4, 2_000, 2_500) == {0: 0, 1: 500, 2: 500, 3: 500}


def test_overlapping_spans_are_not_counted_twice() -> None:
    spans = [OwnerSpan(0, "a", 0, 600), OwnerSpan(0, "b", 400, 1_000)]
    assert kip848.unowned_ms(spans, 1, 0, 1_000) == {0: 0}


@pytest.fixture(scope="module")
def race(tmp_path_factory: pytest.TempPathFactory) -> Iterator[kip848.ProtocolRace]:
    story = kip848.scenario(tmp_path_factory.mktemp("kip848"))
    try:
        yield story
    finally:
        story.close()


def _pause(race: kip848.ProtocolRace, event: str) -> kip848.Pause:
    return next(p for p in kip848.pauses(race.race()) if p.event == event)


def test_events_and_the_classic_initial_delay(race: kip848.ProtocolRace) -> None:
    assert [what for _, what in race.events] == ["c1 joins, c2 joins, c3 joins", "c4 joins", "c2 closes",
                                                 "c3 is killed"]
    start = _pause(race, "c1 joins, c2 joins, c3 joins")
    assert start.classic_ms >= 6 * INITIAL_DELAY_MS  # nothing consumed before the first generation
    assert start.consumer_ms < 6 * kip848.HEARTBEAT_MS  # KIP-848 has no initial barrier


def test_a_join_stops_every_partition_under_eager_classic_and_one_under_kip848(race: kip848.ProtocolRace) -> None:
    joined = _pause(race, "c4 joins")
    assert (joined.classic_partitions, joined.consumer_partitions) == (6, 1)
    assert 0 < joined.consumer_ms <= kip848.HEARTBEAT_MS + 50  # until the new owner's next heartbeat
    closed = _pause(race, "c2 closes")
    assert (closed.classic_partitions, closed.consumer_partitions) == (6, 2)


def test_a_killed_member_is_fenced_after_its_session(race: kip848.ProtocolRace) -> None:
    killed = _pause(race, "c3 is killed")
    # its session started at its last heartbeat, up to one interval before it died
    assert killed.consumer_partitions == 2
    assert killed.consumer_ms >= 2 * (kip848.SESSION_MS - kip848.HEARTBEAT_MS)
    assert race.group_epoch() == 6  # joins of c1, c2+c3 (one heartbeat later), c4; c2 leaves; c3 fenced
    epochs = dict(race.race().member_epochs)
    assert epochs["c2"][-1][1] == -1 and race.running() == ["c1", "c4"]


def test_no_partition_ever_has_two_owners(race: kip848.ProtocolRace) -> None:
    line = race.race()
    for spans in (line.classic, line.consumer):
        for first, second in zip(spans, spans[1:]):
            if first.partition == second.partition:
                assert first.end_ms <= second.start_ms, (first, second)


def test_kip848_members_reconcile_to_the_group_epoch(race: kip848.ProtocolRace) -> None:
    line = race.race()
    group_epoch = line.group_epochs[-1][1]
    for name in race.running():
        assert dict(line.member_epochs)[name][-1][1] == group_epoch
    assert [e for _, e in line.group_epochs] == sorted(e for _, e in line.group_epochs)  # never goes back


def test_figure_and_summary(race: kip848.ProtocolRace) -> None:
    import matplotlib.pyplot as plt

    line = race.race()
    fig = kip848.figure(line, race.assignors)
    assert len(fig.axes) == 3
    assert "classic protocol (range, eager)" in fig.axes[0].get_title()
    plt.close(fig)
    text = kip848.summary(line)
    assert text.startswith("t = 40.0 s:") and "generation 4" in text and "group epoch 6" in text


def test_widget_buttons_drive_both_groups(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import matplotlib.pyplot as plt

    # The drawing is tested above; a blank one keeps the three redraws here quick.
    monkeypatch.setattr(kip848, "figure", lambda race, assignors: plt.figure(figsize=(1, 1)))
    story = kip848.ProtocolRace(tmp_path, partitions=4)
    try:
        story.add()
        story.advance(7_000)
        box = kip848.live(story)
        buttons = {b.description: b for b in box.children[1].children}
        assert set(buttons) == {"add consumer", "close", "kill", "advance"}
        buttons["add consumer"].click()
        buttons["advance"].click()  # 5 s: enough for both protocols to settle two members
        owned = [len(m.owned) for m in story.classic_members.values()]
        assert owned == [2, 2] and story.group_epoch() == 2
        assert "group epoch 2" in box.children[2].children[1].value
        with pytest.raises(ValueError):
            story.advance(0)
    finally:
        story.close()
