"""Widget: one story of joins, leaves and crashes, told by the classic protocol and by KIP-848.

Theory of operation
-------------------
A :class:`ProtocolRace` runs two one-broker simulations side by side on the same events. In the
first, kafkalab's classic members (:mod:`kafkalab.client.membership`) rebalance with JoinGroup
and SyncGroup and a client-side assignor (``range``, eager: the Java consumer's default choice);
in the second, KIP-848 members (:mod:`kafkalab.sim.heartbeat_members`) only heartbeat and the
coordinator assigns (``uniform``). Both use a 10 s session and 1 s heartbeats.

Ownership is read from what each member's rebalance listener heard -- assigned, revoked, lost,
each with its simulated millisecond -- so :func:`ownership_spans` (pure, tested) turns it into
exact spans: partition ``p`` owned by ``c2`` from 8.204 s to 16.002 s. A member that is killed
stops consuming at that instant, whatever it still believes it owns. :func:`pauses` adds up,
for the time after each event, how long each partition had nobody consuming it.

:func:`figure` draws three panels on one time axis: the classic group's partitions coloured by
owner (blank: nobody consumes it), the KIP-848 group's, and the KIP-848 epochs -- the group
epoch and each member's epoch as steps.

Worked example (:func:`scenario`; the chapter prints the engine's exact numbers): c1-c3 start
at 0 s, c4 joins at 8 s, c2 closes at 16 s, c3 is killed at 24 s. Classic: nothing is consumed
until the first generation, some 6 s in (``group.initial.rebalance.delay.ms``); when c4 joins,
every member revokes all its partitions at its next heartbeat and all six stop until the new
generation. KIP-848: c1 owns all six a few ms after it starts; when c4 joins only the one
partition that moves to it stops, from its old owner's next heartbeat to c4's next one. A
killed member's partitions stop for a whole session under both protocols.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkalab.client.membership import GroupMember, MemberConfig, Notification
from kafkalab.client.membership.heartbeat_member import LEAVE_EPOCH, HeartbeatMemberConfig
from kafkalab.sim.cluster import START_MS, SimCluster
from kafkalab.sim.heartbeat_members import HeartbeatMembers
from kafkalab.viz._display import static_widgets

TOPIC = "orders"
GROUP = "orders-app"
SESSION_MS = 10_000  # session.timeout.ms, and the broker's group.consumer.session.timeout.ms
HEARTBEAT_MS = 1_000  # heartbeat.interval.ms, and group.consumer.heartbeat.interval.ms
SAMPLE_MS = 100  # how often the KIP-848 group epoch is read for the epoch panel
ADVANCE_MS_MAX = 600_000  # one advance: ten simulated minutes keep a redraw quick
MEMBERS_MAX = 8  # members a figure can colour apart
EPOCH_SAMPLES_MAX = 20_000  # a bug guard on the epoch panel's length
FIGURE_DPI = 100
# One __consumer_offsets partition is all one group needs, and creating Kafka's 50 (each with
# its checkpoint files) costs the simulation more than the whole story does.
OFFSETS_TOPIC = {"offsets.topic.num.partitions": "1"}
MEMBER_COLOURS = ("#4c78a8", "#f58518", "#54a24b", "#b279a2", "#e45756", "#72b7b2", "#eeca3b", "#ff9da6")


@dataclass(frozen=True, slots=True)
class OwnerSpan:
    """``owner`` consumed ``partition`` from ``start_ms`` to ``end_ms`` (simulated, since the start)."""

    partition: int
    owner: str
    start_ms: int
    end_ms: int


def ownership_spans(notifications: Mapping[str, Sequence[Notification]], stopped_ms: Mapping[str, int],
                    now_ms: int) -> list[OwnerSpan]:
    """Spans from each member's listener notifications (``at_ms`` absolute); a member in
    ``stopped_ms`` (killed) consumes nothing from then on; spans still open end at ``now_ms``."""
    spans: list[OwnerSpan] = []
    for member, heard in notifications.items():
        end_ms = min(now_ms, stopped_ms.get(member, now_ms))
        started: dict[int, int] = {}
        for n in heard:
            at_ms = n.at_ms - START_MS
            for topic, partition in n.partitions:
                if topic != TOPIC:
                    continue
                if n.kind == "assigned":
                    started.setdefault(partition, at_ms)
                elif partition in started:
                    spans.append(OwnerSpan(partition, member, started.pop(partition), min(at_ms, end_ms)))
        spans += [OwnerSpan(p, member, start_ms, end_ms) for p, start_ms in started.items()]
    return sorted((s for s in spans if s.end_ms > s.start_ms), key=lambda s: (s.partition, s.start_ms))


def unowned_ms(spans: Iterable[OwnerSpan], partitions: int, start_ms: int, end_ms: int) -> dict[int, int]:
    """For each partition, the milliseconds of ``[start_ms, end_ms)`` in which nobody consumed it."""
    covered: dict[int, list[tuple[int, int]]] = {p: [] for p in range(partitions)}
    for s in spans:
        low, high = max(s.start_ms, start_ms), min(s.end_ms, end_ms)
        if low < high and s.partition in covered:
            covered[s.partition].append((low, high))
    gaps = {}
    for partition, pieces in covered.items():
        owned, reach = 0, start_ms
        for low, high in sorted(pieces):
            owned += max(0, high - max(low, reach))
            reach = max(reach, high)
        gaps[partition] = (end_ms - start_ms) - owned
    return gaps


@dataclass(frozen=True, slots=True)
class Race:
    """Everything the figure shows (pure data)."""

    partitions: int
    end_ms: int
    events: tuple[tuple[int, str], ...]  # (time_ms, what happened)
    classic: tuple[OwnerSpan, ...]
    consumer: tuple[OwnerSpan, ...]
    member_epochs: tuple[tuple[str, tuple[tuple[int, int], ...]], ...]  # member -> ((time_ms, epoch), ...)
    group_epochs: tuple[tuple[int, int], ...]  # (time_ms, group epoch) sampled
    classic_generation: int
    killed: tuple[tuple[str, int], ...] = ()  # (member, time_ms) of each killed member

    @property
    def members(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.member_epochs)


@dataclass(frozen=True, slots=True)
class Pause:
    """After one event, until the next: partitions that stopped, and for how long in all."""

    time_ms: int
    event: str
    classic_partitions: int
    classic_ms: int
    consumer_partitions: int
    consumer_ms: int


def pauses(race: Race) -> list[Pause]:
    """One :class:`Pause` per event, over the time until the next event (or the end)."""
    rows = []
    bounds = [t for t, _ in race.events[1:]] + [race.end_ms]
    for (start_ms, what), end_ms in zip(race.events, bounds):
        classic = unowned_ms(race.classic, race.partitions, start_ms, end_ms)
        consumer = unowned_ms(race.consumer, race.partitions, start_ms, end_ms)
        rows.append(Pause(start_ms, what, sum(1 for v in classic.values() if v), sum(classic.values()),
                          sum(1 for v in consumer.values() if v), sum(consumer.values())))
    return rows


class ProtocolRace:
    """Two simulations, classic and KIP-848, driven through the same events by the widget or a
    notebook. Not thread-safe; owned by one widget."""

    def __init__(self, data_dir: Path, *, partitions: int = 6, seed: int = 7, classic_assignor: str = "range",
                 server_assignor: str = "uniform") -> None:
        properties = {"group.consumer.session.timeout.ms": str(SESSION_MS),
                      "group.consumer.heartbeat.interval.ms": str(HEARTBEAT_MS), **OFFSETS_TOPIC}
        self.classic_sim = SimCluster(Path(data_dir) / "classic", nodes=1, seed=seed, properties=OFFSETS_TOPIC)
        self.consumer_sim = SimCluster(Path(data_dir) / "consumer", nodes=1, seed=seed, properties=properties)
        for sim in (self.classic_sim, self.consumer_sim):
            sim.create_topic(TOPIC, partitions, 1)
        self.heartbeat_members = HeartbeatMembers(self.consumer_sim)
        self.classic_config = MemberConfig(GROUP, (TOPIC,), assignors=(classic_assignor,),
                                           session_timeout_ms=SESSION_MS, heartbeat_interval_ms=HEARTBEAT_MS,
                                           rebalance_timeout_ms=30_000)
        self.consumer_config = HeartbeatMemberConfig(GROUP, (TOPIC,), rebalance_timeout_ms=30_000,
                                                     server_assignor=server_assignor)
        self.classic_members: dict[str, GroupMember] = {}  # kept after a kill, for their history
        self.classic_killed_ms: dict[str, int] = {}
        self.partitions = partitions
        self.assignors = (classic_assignor, server_assignor)
        self.events: list[tuple[int, str]] = []
        self.group_epochs: list[tuple[int, int]] = []

    @property
    def now_ms(self) -> int:
        return self.consumer_sim.clock.milliseconds() - START_MS

    def running(self) -> list[str]:
        return self.heartbeat_members.running()

    def add(self) -> str:
        if len(self.classic_members) >= MEMBERS_MAX:
            raise ValueError(f"the figure shows at most {MEMBERS_MAX} members")
        name = f"c{len(self.classic_members) + 1}"
        self.classic_members[name] = self.classic_sim.add_member(name, self.classic_config)
        self.heartbeat_members.add(name, self.consumer_config)
        self._note(f"{name} joins")
        return name

    def leave(self, name: str) -> None:
        """The consumer closes: LeaveGroup (classic), a heartbeat at epoch -1 (KIP-848)."""
        self.classic_sim.stop_member(name)
        self.heartbeat_members.leave(name)
        self._note(f"{name} closes")

    def kill(self, name: str) -> None:
        """The consumer's process dies in both worlds: silence until the session times out."""
        self.classic_sim.stop_member(name, leave=False)
        self.classic_killed_ms[name] = self.now_ms
        self.heartbeat_members.kill(name)
        self._note(f"{name} is killed")

    def _note(self, what: str) -> None:
        """Events at the same instant are one event (three consumers starting together)."""
        if self.events and self.events[-1][0] == self.now_ms:
            what = f"{self.events.pop()[1]}, {what}"
        self.events.append((self.now_ms, what))

    def advance(self, duration_ms: int) -> Race:
        if not 0 < duration_ms <= ADVANCE_MS_MAX:
            raise ValueError(f"advance of {duration_ms} ms is outside (0, {ADVANCE_MS_MAX}]")
        end_ms = self.now_ms + duration_ms
        while self.now_ms < end_ms:
            step_ms = min(SAMPLE_MS, end_ms - self.now_ms)
            self.classic_sim.run_for(step_ms)
            self.consumer_sim.run_for(step_ms)
            if len(self.group_epochs) >= EPOCH_SAMPLES_MAX:
                raise OverflowError(f"{len(self.group_epochs)} epoch samples, the limit is {EPOCH_SAMPLES_MAX}")
            self.group_epochs.append((self.now_ms, self.group_epoch()))
        return self.race()

    def group_epoch(self) -> int:
        """The KIP-848 group's epoch at its coordinator (0 before the group exists)."""
        group = self.consumer_sim.nodes[1].broker.group_coordinator.consumer.groups.get(GROUP)
        return 0 if group is None else group.group_epoch

    def classic_generation(self) -> int:
        group = self.classic_sim.nodes[1].broker.group_coordinator.describe_group(GROUP)
        return 0 if group is None else group.generation_id

    def race(self) -> Race:
        members = self.heartbeat_members
        return Race(
            self.partitions, self.now_ms, tuple(self.events),
            tuple(ownership_spans({n: m.notifications for n, m in self.classic_members.items()},
                                  self.classic_killed_ms, self.now_ms)),
            tuple(ownership_spans({n: m.notifications for n, m in members.members.items()},
                                  members.killed_ms, self.now_ms)),
            tuple((n, tuple((t - START_MS, e) for t, e in m.epochs)) for n, m in members.members.items()),
            tuple(self.group_epochs), self.classic_generation(), tuple(members.killed_ms.items()))

    def close(self) -> None:
        self.classic_sim.close()
        self.consumer_sim.close()


def scenario(data_dir: Path, seed: int = 7) -> ProtocolRace:
    """The story of the module docstring: three start, a fourth joins, one closes, one dies."""
    race = ProtocolRace(data_dir, seed=seed)
    for _ in range(3):
        race.add()
    race.advance(8_000)
    race.add()
    race.advance(8_000)
    race.leave("c2")
    race.advance(8_000)
    race.kill("c3")
    race.advance(16_000)
    return race


# --- drawing -------------------------------------------------------------------------------------


def figure(race: Race, assignors: tuple[str, str] = ("range", "uniform")) -> Any:
    """Classic owners, KIP-848 owners, KIP-848 epochs; events as dotted lines."""
    import matplotlib.pyplot as plt

    fig, (classic, consumer, epochs) = plt.subplots(
        3, 1, figsize=(12, 2.0 + 0.6 * race.partitions + 2.0), sharex=True,
        gridspec_kw={"height_ratios": [race.partitions, race.partitions, max(3, race.partitions * 0.7)]})
    colours = {m: MEMBER_COLOURS[i % len(MEMBER_COLOURS)] for i, m in enumerate(race.members)}
    totals = {p.event: p for p in pauses(race)}
    classic_s = sum(p.classic_ms for p in totals.values()) / 1000
    consumer_s = sum(p.consumer_ms for p in totals.values()) / 1000
    _draw_owners(classic, race.classic, race.partitions, colours,
                 f"classic protocol ({assignors[0]}, eager): owner of each partition "
                 f"(blank: nobody consumes it; {classic_s:.1f} partition-seconds in all)")
    _draw_owners(consumer, race.consumer, race.partitions, colours,
                 f"KIP-848 consumer protocol ({assignors[1]}): owner of each partition "
                 f"({consumer_s:.1f} partition-seconds without a consumer)")
    _draw_epochs(epochs, race, colours)
    for ax in (classic, consumer, epochs):
        for at_ms, what in race.events:
            ax.axvline(at_ms / 1000, color="#888888", linewidth=0.8, linestyle=":")
    for at_ms, what in race.events:
        classic.annotate(what, (at_ms / 1000, 1.0), xycoords=("data", "axes fraction"), fontsize=7,
                         va="bottom", ha="left", color="#555555")
    for member, colour in colours.items():
        consumer.plot([], [], "s", color=colour, label=member)
    consumer.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7)
    epochs.set_xlabel("simulated time (s)")
    fig.tight_layout()
    return fig


def _draw_owners(ax: Any, spans: Sequence[OwnerSpan], partitions: int, colours: Mapping[str, str], title: str) -> None:
    for s in spans:
        ax.broken_barh([(s.start_ms / 1000, (s.end_ms - s.start_ms) / 1000)], (s.partition - 0.4, 0.8),
                       color=colours.get(s.owner, "#000000"))
    ax.set_yticks(range(partitions), [f"{TOPIC}-{p}" for p in range(partitions)], fontsize=7)
    ax.set_ylim(partitions - 0.5, -0.5)
    ax.set_title(title, fontsize=9, pad=12)


def _draw_epochs(ax: Any, race: Race, colours: Mapping[str, str]) -> None:
    if race.group_epochs:
        ax.step([t / 1000 for t, _ in race.group_epochs], [e for _, e in race.group_epochs], where="post",
                color="#000000", linestyle="--", linewidth=1.2, label="group epoch")
    for offset, (member, steps) in enumerate(race.member_epochs):
        if not steps:
            continue
        end_ms = dict(race.killed).get(member, race.end_ms)  # a dead process has no epoch
        if steps[-1][1] == LEAVE_EPOCH:
            end_ms = steps[-1][0]  # gone: the line ends at its farewell
        times = [t / 1000 for t, _ in steps] + [end_ms / 1000]
        values = [e for _, e in steps] + [steps[-1][1]]
        nudge = 0.06 * (offset - len(race.member_epochs) / 2)  # equal epochs stay apart
        ax.step(times, [v + nudge for v in values], where="post", color=colours[member], label=f"{member} epoch")
    ax.set_ylabel("epoch")
    ax.set_title("KIP-848 epochs: the group's, and each member's (a member catches up once it has "
                 "reconciled; -1: it left)", fontsize=9)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7)


def summary(race: Race) -> str:
    """The race so far, in words: time each protocol left partitions unconsumed, and the epochs."""
    rows = pauses(race)
    classic_s = sum(p.classic_ms for p in rows) / 1000
    consumer_s = sum(p.consumer_ms for p in rows) / 1000
    group_epoch = race.group_epochs[-1][1] if race.group_epochs else 0
    members = ", ".join(f"{name} epoch {steps[-1][1] if steps else 0}" for name, steps in race.member_epochs)
    return (f"t = {race.end_ms / 1000:.1f} s: partitions without a consumer for {classic_s:.1f} partition-seconds "
            f"under the classic protocol (generation {race.classic_generation}) and {consumer_s:.1f} under "
            f"KIP-848 (group epoch {group_epoch}; {members or 'no members'}).")


# --- the live widget -----------------------------------------------------------------------------


def live(race: ProtocolRace) -> Any:
    """Buttons to add a consumer, close or kill one, and advance time, in both groups at once."""
    import ipywidgets as widgets

    from kafkalab.book import keep_for_widgets
    from kafkalab.viz._display import FigurePanel, action_buttons

    keep_for_widgets(race.consumer_sim.data_dir.parent)  # a reader may come back after the last cell
    member = widgets.Dropdown(options=race.running(), description="member")
    seconds = widgets.IntSlider(value=5, min=1, max=60, description="advance (s)", continuous_update=False)
    panel = FigurePanel(dpi=FIGURE_DPI)

    def redraw() -> None:
        panel.show(figure(race.race(), race.assignors), summary(race.race()))
        member.options = race.running()

    def on_chosen(action: Callable[[str], None]) -> Callable[[], None]:
        def run() -> None:
            if member.value:
                action(member.value)
        return run

    actions: dict[str, Callable[[], object]] = {
        "add consumer": race.add,
        "close": on_chosen(race.leave),
        "kill": on_chosen(race.kill),
        "advance": lambda: race.advance(seconds.value * 1000),
    }
    buttons = action_buttons(actions, redraw)
    redraw()
    box = widgets.VBox([widgets.HBox([member, seconds]), widgets.HBox(buttons), panel.widget])
    box.add_class("kafkalab-kip848-widget")
    return box


def show_kip848(data_dir: Path, seed: int = 7, story: ProtocolRace | None = None) -> Any:
    """Display the widget (or, with ``KAFKALAB_STATIC_WIDGETS=1``, the :func:`scenario` figure;
    of ``story`` when given, which is then left open for the caller)."""
    from kafkalab.viz._display import show, show_lab

    if story is not None and static_widgets():
        return show(lambda: None, lambda: figure(story.race(), story.assignors))

    def start() -> Any:
        race = ProtocolRace(data_dir, seed=seed)
        for _ in range(3):
            race.add()
        race.advance(8_000)
        return live(race)

    return show_lab(start, lambda: scenario(data_dir, seed), lambda race: figure(race.race(), race.assignors))


__all__ = ["OwnerSpan", "Pause", "ProtocolRace", "Race", "figure", "live", "ownership_spans", "pauses",
           "scenario", "show_kip848", "summary", "unowned_ms"]
