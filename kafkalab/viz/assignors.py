"""Widget: the assignor grid, and what a member joining or leaving moves, eager against cooperative.

Theory of operation
-------------------
A group of consumers ``C0 .. C{n-1}`` subscribes to topics ``a``, ``b``, ... and one of Kafka's
four assignors (:mod:`kafkalab.client.assignors`) splits the partitions between them: that is
generation 1, drawn as a grid, one row per consumer and one column per partition. Then the group
changes: a new consumer joins (subscribed to every topic), or the last one leaves.

What happens next depends on the rebalance protocol the assignor speaks:

* **eager** (``range``, ``roundrobin``, ``sticky``): at the start of the rebalance every member
  revokes *everything* it owns and waits for the new assignment. One rebalance; the number of
  partitions revoked is every partition the remaining members held, even those they get back.
* **cooperative** (``cooperative-sticky``, KIP-429): members keep consuming while they rejoin.
  The first rebalance only takes away what must move (it is left out of everyone's assignment),
  the members that lost something revoke just that and rejoin at once, and the second rebalance
  hands those partitions to their new owners.

Worked example (the defaults): 10 partitions of ``a`` over 3 consumers. Range gives 4/3/3
(``C0: a-0..a-3``, ``C1: a-4..a-6``, ``C2: a-7..a-9``). ``C3`` joins: eager Range revokes all 10
and hands out 3/3/2/2, and four partitions change owner: ``a-8`` and ``a-9`` go to ``C3``, but
``a-3`` and ``a-6`` also shift between old members, only because Range restarts from ``C0``.
CooperativeSticky deals generation 1 as ``C0: a-0 a-3 a-6 a-9``, ``C1: a-1 a-4 a-7``,
``C2: a-2 a-5 a-8``; when ``C3`` joins, rebalance 1 revokes just ``a-9`` (from ``C0``) and
``a-8`` (from ``C2``), and rebalance 2 gives both to ``C3`` and revokes nothing: 2 revoked in all
against eager's 10.

:func:`rebalance_story` is the pure model (assignments and revocations per rebalance), tested
without a display; :func:`figure` draws it; :func:`live` wraps it in ipywidgets, and
:func:`show_assignors` picks the live widget or, with ``KAFKALAB_STATIC_WIDGETS=1``, the figure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafkalab.client.assignors import ASSIGNORS, COOPERATIVE, Member
from kafkalab.client.consumer_protocol import NO_GENERATION, Subscription
from kafkalab.errors import ConfigError
from kafkalab.storage.checkpoints import TopicPartition

CONSUMERS_MAX = 12  # rows a grid can show legibly
PARTITIONS_MAX = 48  # columns likewise, over all topics
TOPIC_NAMES = "abcdef"
CHANGES = ("join", "leave")
REBALANCES_MAX = 3  # cooperative needs two; a third would mean the plan did not settle

Grid = dict[str, tuple[TopicPartition, ...]]


@dataclass(frozen=True, slots=True)
class GroupParams:
    """``consumers`` members; topic ``a`` has ``partitions[0]`` partitions, ``b`` the next, ...;
    ``subscriptions`` gives each member's topics as letters (``("ab", "a", "b")``), empty for
    "every member, every topic"; ``change`` is ``"join"`` or ``"leave"`` (the last member)."""

    assignor: str = "range"
    consumers: int = 3
    partitions: tuple[int, ...] = (10,)
    subscriptions: tuple[str, ...] = ()
    change: str = "join"

    def __post_init__(self) -> None:
        if self.assignor not in ASSIGNORS:
            raise ConfigError(f"assignor {self.assignor!r} must be one of {sorted(ASSIGNORS)}")
        if not 1 <= self.consumers <= CONSUMERS_MAX - 1:
            raise ConfigError(f"consumers={self.consumers} must be in [1, {CONSUMERS_MAX - 1}]")
        if not 1 <= len(self.partitions) <= len(TOPIC_NAMES) or min(self.partitions) < 0 \
                or sum(self.partitions) > PARTITIONS_MAX:
            raise ConfigError(f"partitions={self.partitions}: 1-{len(TOPIC_NAMES)} topics, "
                              f"0 or more each, at most {PARTITIONS_MAX} in all")
        if self.subscriptions and len(self.subscriptions) != self.consumers:
            raise ConfigError(f"{len(self.subscriptions)} subscriptions for {self.consumers} consumers")
        for letters in self.subscriptions:
            if not letters or not set(letters) <= set(self.topics):
                raise ConfigError(f"subscription {letters!r} must name some of the topics {self.topics}")
        if self.change not in CHANGES:
            raise ConfigError(f"change={self.change!r} must be one of {CHANGES}")
        if self.change == "leave" and self.consumers == 1:
            raise ConfigError("the only consumer cannot leave: nothing would be left to rebalance")

    @property
    def topics(self) -> str:
        return TOPIC_NAMES[:len(self.partitions)]

    def counts(self) -> dict[str, int]:
        return dict(zip(self.topics, self.partitions))

    def topics_of(self, index: int) -> tuple[str, ...]:
        if index < len(self.subscriptions):
            return tuple(self.subscriptions[index])
        return tuple(self.topics)


@dataclass(frozen=True, slots=True)
class Rebalance:
    """One rebalance: what each member revoked when it began, and what each got at its end."""

    revoked: Grid
    assignment: Grid

    @property
    def revoked_count(self) -> int:
        return sum(len(tps) for tps in self.revoked.values())


@dataclass(frozen=True, slots=True)
class Story:
    """Generation 1's assignment, then the rebalances the change caused, and what moved."""

    params: GroupParams
    before: Grid
    rebalances: tuple[Rebalance, ...]

    @property
    def after(self) -> Grid:
        return self.rebalances[-1].assignment

    @property
    def moved(self) -> set[TopicPartition]:
        """Partitions whose owner differs from generation 1 (a departed member's count too)."""
        old = {tp: m for m, tps in self.before.items() for tp in tps}
        new = {tp: m for m, tps in self.after.items() for tp in tps}
        return {tp for tp in old.keys() | new.keys() if old.get(tp) != new.get(tp)}


def _assign(assignor: str, counts: dict[str, int], members: list[Member]) -> Grid:
    result = ASSIGNORS[assignor](counts, members)
    return {m.member_id: tuple(sorted(result[m.member_id])) for m in members}


def rebalance_story(params: GroupParams) -> Story:
    """Generation 1 from scratch, then the change, rebalanced until no member revokes anything."""
    counts = params.counts()
    ids = [f"C{i}" for i in range(params.consumers)]
    topics = {m: params.topics_of(i) for i, m in enumerate(ids)}
    before = _assign(params.assignor, counts, [Member(m, Subscription(topics[m])) for m in ids])
    if params.change == "join":
        topics[f"C{params.consumers}"] = tuple(params.topics)
    else:
        del topics[ids[-1]]
    owned = {m: before.get(m, ()) for m in topics}
    generation = 1
    rebalances: list[Rebalance] = []
    cooperative = params.assignor in COOPERATIVE
    while len(rebalances) < REBALANCES_MAX:
        # Eager members give up everything before they rejoin, yet still tell the leader what
        # they had (the sticky assignor's user data), so the plan can be sticky either way.
        members = [Member(m, Subscription(topics[m], owned[m], generation if owned[m] else NO_GENERATION))
                   for m in topics]
        assignment = _assign(params.assignor, counts, members)
        revoked = {m: tuple(tp for tp in owned[m] if cooperative is False or tp not in assignment[m])
                   for m in topics}
        rebalances.append(Rebalance(revoked, assignment))
        generation += 1
        owned = dict(assignment)
        if not cooperative or not any(revoked.values()):
            break
    return Story(params, before, tuple(rebalances))


# --- drawing ----------------------------------------------------------------------------------

OWNED, REVOKED, ADDED = "#4c78a8", "#e45756", "#54a24b"


def _columns(params: GroupParams) -> list[TopicPartition]:
    return [(t, p) for t, n in params.counts().items() for p in range(n)]


def _draw_grid(ax: Any, params: GroupParams, grid: Grid, rows: list[str], title: str,
               previous: Grid | None, revoked: Grid | None) -> None:
    from matplotlib.patches import Rectangle

    columns = _columns(params)
    for y, member in enumerate(rows):
        mine = set(grid.get(member, ()))
        was = set(previous.get(member, ())) if previous is not None else mine
        lost = set(revoked.get(member, ())) if revoked is not None else set()
        for x, tp in enumerate(columns):
            if tp in mine:
                colour = ADDED if tp not in was else OWNED
                ax.add_patch(Rectangle((x, y), 0.9, 0.9, color=colour))
            if tp in lost:
                ax.plot([x + 0.1, x + 0.8], [y + 0.1, y + 0.8], color=REVOKED, lw=1.5)
                ax.plot([x + 0.1, x + 0.8], [y + 0.8, y + 0.1], color=REVOKED, lw=1.5)
    ax.set_xlim(0, max(len(columns), 1))
    ax.set_ylim(len(rows), 0)
    ax.set_yticks([r + 0.45 for r in range(len(rows))], rows)
    ax.set_xticks([x + 0.45 for x in range(len(columns))], [f"{t}{p}" for t, p in columns],
                  fontsize=6, rotation=90)
    ax.set_title(title, fontsize=9)


def figure(story: Story) -> Any:
    """Generation 1, then each rebalance: blue kept, green newly assigned, red cross revoked."""
    import matplotlib.pyplot as plt

    params = story.params
    rows = sorted(set(story.before) | set(story.after), key=lambda m: int(m[1:]))
    panels = 1 + len(story.rebalances)
    fig, axes = plt.subplots(1, panels, figsize=(4.2 * panels, 0.45 * len(rows) + 1.6), squeeze=False)
    _draw_grid(axes[0][0], params, story.before, rows, f"generation 1 ({params.assignor})", None, None)
    previous = story.before
    for i, rebalance in enumerate(story.rebalances, start=1):
        title = f"{params.change}: rebalance {i}, revoked {rebalance.revoked_count}"
        _draw_grid(axes[0][i], params, rebalance.assignment, rows, title, previous, rebalance.revoked)
        previous = rebalance.assignment
    protocol = "cooperative" if params.assignor in COOPERATIVE else "eager"
    fig.suptitle(f"{protocol}: {len(story.moved)} partitions changed owner, revoked per rebalance "
                 f"{[r.revoked_count for r in story.rebalances]}", fontsize=10)
    fig.tight_layout()
    return fig


def revocation_table(params: GroupParams) -> dict[str, list[int]]:
    """For the same group and change, partitions revoked per rebalance under every assignor."""
    return {name: [r.revoked_count for r in rebalance_story(_with(params, assignor=name)).rebalances]
            for name in ASSIGNORS}


def _with(params: GroupParams, **changes: Any) -> GroupParams:
    import dataclasses

    return dataclasses.replace(params, **changes)


def _parse_partitions(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.replace(" ", "").split(",") if x)
    except ValueError:
        raise ConfigError(f"partitions per topic {text!r}: comma-separated integers, e.g. 10,4") from None


def summary(story: Story, revoked: dict[str, list[int]]) -> str:
    """The grid in words: partitions per member before and after, and what each protocol revoked."""
    def counts(grid: Grid) -> str:
        return ", ".join(f"{member}: {len(tps)}" for member, tps in sorted(grid.items()))

    table = ", ".join(f"{name} {value}" for name, value in revoked.items())
    return (f"{story.params.assignor}: generation 1 gives {counts(story.before)}; after the change "
            f"{counts(story.after)}; {len(story.moved)} partitions moved; revoked per rebalance: {table}.")


def live(params: GroupParams) -> Any:
    """Controls for the group and the change; the grid and the revocation table redraw on change."""
    import ipywidgets as widgets

    from kafkalab.viz._display import FigurePanel

    style = {"description_width": "150px"}
    assignor = widgets.Dropdown(options=sorted(ASSIGNORS), value=params.assignor, description="assignor", style=style)
    consumers = widgets.IntSlider(value=params.consumers, min=1, max=CONSUMERS_MAX - 1, description="consumers",
                                  continuous_update=False, style=style)
    partitions = widgets.Text(value=",".join(map(str, params.partitions)), description="partitions per topic",
                              continuous_update=False, style=style)
    subscriptions = widgets.Text(value=" ".join(params.subscriptions), description="subscriptions",
                                 placeholder="all; or per consumer, e.g. ab a b", continuous_update=False, style=style)
    change = widgets.ToggleButtons(options=list(CHANGES), value=params.change, description="then a member")
    panel = FigurePanel(dpi=80)

    def redraw(_change: object = None) -> None:
        try:
            chosen = GroupParams(assignor.value, consumers.value, _parse_partitions(partitions.value),
                                 tuple(subscriptions.value.split()), change.value)
        except ConfigError as error:
            panel.message(str(error))
            return
        story = rebalance_story(chosen)
        panel.show(figure(story), summary(story, revocation_table(chosen)))

    for control in (assignor, consumers, partitions, subscriptions, change):
        control.observe(redraw, names="value")
    redraw()
    box = widgets.VBox([assignor, consumers, partitions, subscriptions, change, panel.widget])
    box.add_class("kafkalab-assignor-widget")
    return box


def show_assignors(params: GroupParams | None = None) -> Any:
    """Display the widget (or, with ``KAFKALAB_STATIC_WIDGETS=1``, its initial figure)."""
    from kafkalab.viz import show

    chosen = params or GroupParams()
    return show(lambda: live(chosen), lambda: figure(rebalance_story(chosen)))
