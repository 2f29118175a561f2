"""The assignor widget's model: generation 1, the change, and revocations per rebalance."""

from __future__ import annotations

import itertools
import random

import matplotlib

matplotlib.use("Agg")

import pytest

from kafkalab.client.assignors import ASSIGNORS
from kafkalab.errors import ConfigError
from kafkalab.viz.assignors import GroupParams, figure, live, rebalance_story, revocation_table


def _a(*partitions: int) -> tuple[tuple[str, int], ...]:
    return tuple(("a", p) for p in partitions)


def test_worked_example_range_join() -> None:
    story = rebalance_story(GroupParams("range"))
    assert story.before == {"C0": _a(0, 1, 2, 3), "C1": _a(4, 5, 6), "C2": _a(7, 8, 9)}
    assert [r.revoked_count for r in story.rebalances] == [10]
    assert story.after == {"C0": _a(0, 1, 2), "C1": _a(3, 4, 5), "C2": _a(6, 7), "C3": _a(8, 9)}
    assert story.moved == set(_a(3, 6, 8, 9))


def test_worked_example_cooperative_join() -> None:
    story = rebalance_story(GroupParams("cooperative-sticky"))
    first, second = story.rebalances
    assert first.revoked == {"C0": _a(9), "C1": (), "C2": _a(8), "C3": ()}
    assert first.assignment["C3"] == ()
    assert second.revoked_count == 0 and second.assignment["C3"] == _a(8, 9)
    assert story.moved == set(_a(8, 9))


def test_revocation_table_eager_against_cooperative() -> None:
    assert revocation_table(GroupParams()) == {
        "range": [10], "roundrobin": [10], "sticky": [10], "cooperative-sticky": [2, 0]}
    # a member leaving: eager members revoke all they hold; cooperative ones nothing
    assert revocation_table(GroupParams(change="leave")) == {
        "range": [7], "roundrobin": [7], "sticky": [7], "cooperative-sticky": [0]}


def _random_params(rng: random.Random) -> GroupParams:
    topics = rng.randint(1, 3)
    consumers = rng.randint(2, 8)
    partitions = tuple(rng.randint(0, 12) for _ in range(topics))
    letters = "abc"[:topics]
    subscriptions = () if rng.random() < 0.5 else tuple(
        "".join(sorted(rng.sample(letters, rng.randint(1, topics)))) for _ in range(consumers))
    return GroupParams(rng.choice(sorted(ASSIGNORS)), consumers, partitions, subscriptions,
                       rng.choice(["join", "leave"]))


def test_random_groups_keep_the_protocols_promises() -> None:
    """Eager: one rebalance revoking everything the remaining members held. Cooperative: no
    partition ever held by two members, only partitions that move are revoked, and the group
    settles by the second rebalance."""
    rng = random.Random(10)
    for _ in range(300):
        params = _random_params(rng)
        story = rebalance_story(params)
        remaining = story.rebalances[0].revoked.keys()
        held = sum(len(story.before.get(m, ())) for m in remaining)
        if params.assignor != "cooperative-sticky":
            assert [r.revoked_count for r in story.rebalances] == [held]
            continue
        assert len(story.rebalances) <= 2 and story.rebalances[-1].revoked_count == 0
        owned = {m: set(story.before.get(m, ())) for m in remaining}
        for rebalance in story.rebalances:
            for m in remaining:
                owned[m] -= set(rebalance.revoked[m])
            # between revocation and assignment nobody holds a partition another will get
            for m, n in itertools.permutations(remaining, 2):
                assert not owned[m] & set(rebalance.assignment[n])
            owned = {m: set(rebalance.assignment[m]) for m in remaining}
        assert sum(r.revoked_count for r in story.rebalances) <= len(story.moved)


@pytest.mark.parametrize("bad", [
    dict(assignor="fair"), dict(consumers=0), dict(consumers=12), dict(partitions=()),
    dict(partitions=(49,)), dict(partitions=(-1,)), dict(subscriptions=("a",)),
    dict(subscriptions=("a", "z", "a")), dict(change="crash"), dict(consumers=1, change="leave"),
])
def test_bad_params_raise_config_error(bad: dict) -> None:
    with pytest.raises(ConfigError):
        GroupParams(**bad)


def test_figure_has_a_panel_per_rebalance() -> None:
    fig = figure(rebalance_story(GroupParams("cooperative-sticky", 4, (6, 3), ("ab", "a", "b", "ab"))))
    assert len(fig.axes) == 3
    assert "revoked per rebalance [" in fig._suptitle.get_text()


def test_live_widget_redraws_and_reports_bad_input() -> None:
    box = live(GroupParams())
    assignor, consumers, partitions, subscriptions, change, panel = box.children
    image, summary = panel.children
    assert "data:image/png;base64," in image.value
    assignor.value = "cooperative-sticky"
    assert "cooperative-sticky [2, 0]" in summary.value
    assert 'role="status"' in summary.value and "alt=" in image.value
    partitions.value = "x"
    assert "comma-separated" in summary.value and image.value == ""
