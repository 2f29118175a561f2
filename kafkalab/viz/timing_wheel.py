"""Widget 3: timing-wheel ticks -- buckets fill and flush, overflow wheels appear, tasks cascade.

Theory of operation
-------------------
A real :class:`~kafkalab.timer.Timer` on a :class:`~kafkalab.clock.ManualClock` runs a script
of steps -- add a task with a delay, cancel one, move the clock -- while a listener collects
its trace events (:mod:`kafkalab.timer.events`). The pure function :func:`wheel_state` replays
those events into plain data: for every wheel level its tick, interval and current time, and for
every bucket the tasks in it and the bucket's expiration. :func:`figure` draws one such state;
:func:`storyboard` draws several states one above the other.

Replay rules (each event changes exactly one thing)::

    OverflowWheelCreated  -> a new, empty level appears
    TaskScheduled         -> the task enters (level, bucket)
    BucketFlushed         -> that bucket empties; its tasks are in flight
    TaskCascaded          -> an in-flight task enters a finer (level, bucket)
    TaskExpired           -> an in-flight (or just-added) task is done, at the wheel's time
    TaskCancelled         -> the task leaves its bucket
    ClockAdvanced         -> every level's hand moves

Worked example (tick 1 ms, 20 buckets, the source articles' tasks at 200 ms and 840 ms): after
both adds there are three levels; level 1 bucket 10 (expiring at 200) and level 2 bucket 2
(expiring at 800) hold one task each. Advancing to 10,000 ms takes three bucket flushes -- at
200 (runs the first task), 800 (cascades the second into level 1 bucket 2) and 840 (runs it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafkalab.clock import ManualClock
from kafkalab.errors import TimerError
from kafkalab.timer import events as ev
from kafkalab.timer.task_list import TimerTask
from kafkalab.timer.timer import Timer

STEPS_MAX = 200  # a storyboard of more frames is unreadable; the live widget keeps its own log
TASKS_MAX = 500  # names drawn in buckets; more tasks than this make the picture a smear
WHEEL_SIZE_DRAWN_MAX = 64
FIGURE_DPI = 100
EXAMPLE_STEPS: tuple[tuple[str, int | str], ...] = (
    ("add", 200),
    ("add", 840),
    ("advance", 200),
    ("advance", 800),
    ("advance", 840),
)


@dataclass(frozen=True, slots=True)
class LevelView:
    """One wheel as drawn: ``buckets[i]`` lists the task names in bucket ``i``."""

    level: int
    tick_ms: int
    interval_ms: int
    current_ms: int
    buckets: tuple[tuple[str, ...], ...]
    bucket_expirations_ms: tuple[int, ...]

    @property
    def hand_index(self) -> int:
        """The bucket under the hand: the one whose tick contains ``current_ms``."""
        return self.current_ms // self.tick_ms % len(self.buckets)


@dataclass(frozen=True, slots=True)
class WheelState:
    """Everything the figure shows after replaying a prefix of the events."""

    levels: tuple[LevelView, ...]
    fired: tuple[tuple[str, int], ...]  # (task name, wheel time when it ran)
    advances: int
    flushes: int
    cascades: int
    cancelled: int
    now_ms: int


@dataclass
class _Replay:
    """Mutable scratch state for :func:`wheel_state`; never escapes it."""

    wheel_size: int
    ticks: list[int]
    currents: list[int]
    buckets: list[list[dict[int, str]]] = field(default_factory=list)
    expirations: list[list[int]] = field(default_factory=list)
    fired: list[tuple[str, int]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(
        ("advances", "flushes", "cascades", "cancelled"), 0))

    def add_level(self) -> None:
        self.buckets.append([{} for _ in range(self.wheel_size)])
        self.expirations.append([-1] * self.wheel_size)

    def place(self, key: int, name: str, level: int, index: int, expiration_ms: int) -> None:
        self.buckets[level][index][key] = name
        self.expirations[level][index] = expiration_ms

    def on_scheduled(self, e: ev.TaskScheduled) -> None:
        self.place(e.task_key, e.name, e.level, e.bucket_index, e.bucket_expiration_ms)

    def on_cascaded(self, e: ev.TaskCascaded) -> None:
        self.counts["cascades"] += 1
        self.place(e.task_key, e.name, e.level, e.bucket_index, e.bucket_expiration_ms)

    def on_flushed(self, e: ev.BucketFlushed) -> None:
        self.counts["flushes"] += 1
        self.buckets[e.level][e.bucket_index] = {}
        self.expirations[e.level][e.bucket_index] = -1

    def on_expired(self, e: ev.TaskExpired) -> None:
        self.fired.append((e.name, e.now_ms))

    def on_cancelled(self, e: ev.TaskCancelled) -> None:
        self.counts["cancelled"] += 1
        self.buckets[e.level][e.bucket_index].pop(e.task_key, None)

    def on_advanced(self, e: ev.ClockAdvanced) -> None:
        self.counts["advances"] += 1
        for level, current_ms in enumerate(e.current_ms_by_level):
            self.currents[level] = current_ms

    def on_overflow(self, e: ev.OverflowWheelCreated) -> None:
        self.ticks.append(e.tick_ms)
        self.currents.append(e.current_ms)
        self.add_level()


_HANDLERS = {
    ev.TaskScheduled: _Replay.on_scheduled,
    ev.TaskCascaded: _Replay.on_cascaded,
    ev.BucketFlushed: _Replay.on_flushed,
    ev.TaskExpired: _Replay.on_expired,
    ev.TaskCancelled: _Replay.on_cancelled,
    ev.ClockAdvanced: _Replay.on_advanced,
    ev.OverflowWheelCreated: _Replay.on_overflow,
}


def wheel_state(
    events: Iterable[ev.TimerEvent], *, tick_ms: int, wheel_size: int, start_ms: int = 0
) -> WheelState:
    """Replay trace events of a timer built with these level-0 settings into a drawable state."""
    replay = _Replay(wheel_size, [tick_ms], [start_ms - start_ms % tick_ms])
    replay.add_level()
    for event in events:
        handler = _HANDLERS.get(type(event))
        if handler is None:
            raise TimerError(f"timing-wheel widget: unknown trace event {event!r}")
        handler(replay, event)  # type: ignore[operator]
    levels = tuple(
        LevelView(
            level,
            replay.ticks[level],
            replay.ticks[level] * wheel_size,
            replay.currents[level],
            tuple(tuple(bucket.values()) for bucket in replay.buckets[level]),
            tuple(replay.expirations[level]),
        )
        for level in range(len(replay.ticks))
    )
    return WheelState(
        levels,
        tuple(replay.fired),
        replay.counts["advances"],
        replay.counts["flushes"],
        replay.counts["cascades"],
        replay.counts["cancelled"],
        replay.currents[0],
    )


class _Named(TimerTask):
    """A task that does nothing when it runs; the events record that it ran."""

    __slots__ = ()

    def run(self) -> None:
        return None


@dataclass
class WheelSession:
    """A live timer plus the events it has emitted: what the widget's buttons drive.

    Not thread-safe; owned by one widget (or one notebook cell).
    """

    tick_ms: int = 1
    wheel_size: int = 20
    clock: ManualClock = field(default_factory=ManualClock)
    events: list[ev.TimerEvent] = field(default_factory=list)
    tasks: dict[str, TimerTask] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 2 <= self.wheel_size <= WHEEL_SIZE_DRAWN_MAX:
            raise TimerError(
                f"timing-wheel widget draws 2..{WHEEL_SIZE_DRAWN_MAX} buckets per wheel, "
                f"not {self.wheel_size}"
            )
        self.start_ms = self.clock.milliseconds()
        self.timer = Timer(self.clock, tick_ms=self.tick_ms, wheel_size=self.wheel_size)
        self.timer.add_listener(self.events.append)

    def add(self, delay_ms: int, name: str = "") -> str:
        """Add a task due ``delay_ms`` from the clock's time; returns its name."""
        if len(self.tasks) >= TASKS_MAX:
            raise TimerError(f"timing-wheel widget holds at most {TASKS_MAX} tasks")
        name = name or f"t{len(self.tasks)}@{self.clock.milliseconds() + delay_ms}"
        task = _Named(delay_ms, name)
        self.tasks[name] = task
        self.timer.add(task)
        return name

    def cancel(self, name: str) -> bool:
        task = self.tasks.get(name)
        if task is None:
            raise TimerError(f"timing-wheel widget: no task named {name!r}")
        return task.cancel()

    def advance_to(self, now_ms: int) -> int:
        """Move the clock to ``now_ms`` (never back) and advance the timer; buckets flushed."""
        self.clock.set_ms(max(now_ms, self.clock.milliseconds()))
        return self.timer.advance_clock(self.clock.milliseconds())

    def advance_to_next_bucket(self) -> int:
        """Jump straight to the earliest non-empty bucket, as the delay queue does."""
        next_ms = self.timer.next_expiration_ms()
        return 0 if next_ms is None else self.advance_to(next_ms)

    def state(self) -> WheelState:
        return wheel_state(
            self.events, tick_ms=self.tick_ms, wheel_size=self.wheel_size, start_ms=self.start_ms
        )


def run_steps(
    steps: Sequence[tuple[str, int | str]], *, tick_ms: int = 1, wheel_size: int = 20
) -> list[tuple[str, WheelState]]:
    """Run ``("add", delay_ms)``, ``("cancel", name)`` and ``("advance", to_ms)`` steps;
    return (caption, state after the step) for each."""
    if len(steps) > STEPS_MAX:
        raise TimerError(f"timing-wheel storyboard: {len(steps)} steps, more than {STEPS_MAX}")
    session = WheelSession(tick_ms=tick_ms, wheel_size=wheel_size)
    frames: list[tuple[str, WheelState]] = []
    for action, argument in steps:
        perform = _STEP_ACTIONS.get(action)
        if perform is None:
            raise TimerError(
                f"timing-wheel storyboard: unknown step {action!r}; use one of "
                f"{sorted(_STEP_ACTIONS)}"
            )
        frames.append((perform(session, argument), session.state()))
    return frames


def _step_add(session: WheelSession, delay_ms: int | str) -> str:
    name = session.add(int(delay_ms))
    return f"add task due at {session.tasks[name].expiration_ms} ms"


def _step_cancel(session: WheelSession, name: int | str) -> str:
    session.cancel(str(name))
    return f"cancel {name}"


def _step_advance(session: WheelSession, to_ms: int | str) -> str:
    flushed = session.advance_to(int(to_ms))
    return f"advance clock to {to_ms} ms ({flushed} bucket flush{'es' if flushed != 1 else ''})"


_STEP_ACTIONS = {"add": _step_add, "cancel": _step_cancel, "advance": _step_advance}


# -- drawing ---------------------------------------------------------------------------------


def _draw(ax: Any, state: WheelState, caption: str) -> None:
    from matplotlib.patches import Rectangle

    for row, level in enumerate(state.levels):
        y = len(state.levels) - 1 - row
        for index, names in enumerate(level.buckets):
            hand = index == level.hand_index
            fill = "#4c78a8" if names else "#ffffff"
            ax.add_patch(Rectangle((index, y), 0.92, 0.8, facecolor=fill, alpha=0.35 if names else 1,
                                   edgecolor="#e45756" if hand else "#888888",
                                   linewidth=2.2 if hand else 0.6))
            if names:
                label = names[0] if len(names) == 1 else f"{len(names)} tasks"
                ax.text(index + 0.46, y + 0.5, label, ha="center", va="center", fontsize=6)
                ax.text(index + 0.46, y + 0.12, f"{level.bucket_expirations_ms[index]}",
                        ha="center", va="center", fontsize=5, color="#333333")
        ax.text(-0.3, y + 0.4, f"L{level.level}  tick {level.tick_ms} ms\n"
                f"span {level.interval_ms} ms  now {level.current_ms}",
                ha="right", va="center", fontsize=7)
    width = len(state.levels[0].buckets)
    fired = ", ".join(f"{n}@{t}" for n, t in state.fired[-6:]) or "none"
    ax.set_title(f"{caption}   |   clock {state.now_ms} ms, flushes {state.flushes}, "
                 f"cascades {state.cascades}, ran: {fired}", fontsize=8, loc="left")
    ax.set_xlim(-0.2, width + 0.2)
    ax.set_ylim(-0.1, len(state.levels))
    ax.axis("off")


def figure(state: WheelState, caption: str = "") -> Any:
    """One snapshot: a row of buckets per level, the hand outlined in red,
    occupied buckets labelled with their task and bucket expiration; level 0 on top."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(11, 0.9 + 0.7 * len(state.levels)))
    fig.subplots_adjust(left=0.16, right=0.99)
    _draw(ax, state, caption)
    return fig


def storyboard(frames: Sequence[tuple[str, WheelState]]) -> Any:
    """Several snapshots stacked top to bottom, one per step."""
    import matplotlib.pyplot as plt

    if not frames:
        raise TimerError("timing-wheel storyboard needs at least one frame")
    heights = [0.9 + 0.7 * len(state.levels) for _, state in frames]
    fig, axes = plt.subplots(len(frames), 1, figsize=(11, sum(heights)),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    fig.subplots_adjust(left=0.16, right=0.99, hspace=0.6)
    for ax, (caption, state) in zip(axes[:, 0], frames):
        _draw(ax, state, caption)
    return fig


def summary(state: WheelState, caption: str) -> str:
    """The wheels in words: the clock, what waits in which wheel, and what has fired."""
    waiting = "; ".join(
        f"wheel {level.level} ({level.tick_ms} ms per bucket): "
        + (", ".join(f"{name} in bucket {i}" for i, names in enumerate(level.buckets) for name in names) or "empty")
        for level in state.levels)
    fired = ", ".join(f"{name} at {at} ms" for name, at in state.fired) or "nothing"
    return (f"{caption}. Wheel time {state.now_ms} ms. {waiting}. Fired: {fired}. "
            f"{state.advances} advances, {state.flushes} flushes, {state.cascades} cascades.")


def live(tick_ms: int = 1, wheel_size: int = 20, session: WheelSession | None = None) -> Any:
    """Buttons to add a task and move the clock, redrawing the wheels after each click.

    Pass a ``session`` to drive (and inspect) a timer of your own; otherwise a fresh one is made.
    """
    import ipywidgets as widgets

    from kafkalab.viz._display import FigurePanel

    if session is None:
        session = WheelSession(tick_ms=tick_ms, wheel_size=wheel_size)
    delay = widgets.IntSlider(value=200, min=0, max=10_000, step=10, description="delay (ms)",
                              continuous_update=False, layout={"width": "420px"})
    step = widgets.IntSlider(value=10, min=1, max=1_000, description="advance (ms)",
                             continuous_update=False, layout={"width": "420px"})
    add_button = widgets.Button(description="add task")
    step_button = widgets.Button(description="advance clock")
    jump_button = widgets.Button(description="jump to next bucket")
    panel = FigurePanel(dpi=FIGURE_DPI)
    caption = ["start"]

    def redraw() -> None:
        state = session.state()
        panel.show(figure(state, caption[0]), summary(state, caption[0]))

    def on_add(_: object) -> None:
        caption[0] = f"added {session.add(delay.value)}"
        redraw()

    def on_step(_: object) -> None:
        flushed = session.advance_to(session.clock.milliseconds() + step.value)
        caption[0] = f"advanced {step.value} ms: {flushed} flush(es)"
        redraw()

    def on_jump(_: object) -> None:
        flushed = session.advance_to_next_bucket()
        caption[0] = f"jumped to the next bucket: {flushed} flush(es)"
        redraw()

    add_button.on_click(on_add)
    step_button.on_click(on_step)
    jump_button.on_click(on_jump)
    redraw()
    box = widgets.VBox([widgets.HBox([delay, add_button]),
                        widgets.HBox([step, step_button, jump_button]), panel.widget])
    box.add_class("kafkalab-timing-wheel-widget")
    return box


def show_timing_wheel(
    steps: Sequence[tuple[str, int | str]] = EXAMPLE_STEPS, *, tick_ms: int = 1, wheel_size: int = 20
) -> Any:
    """Display the live widget, or (``KAFKALAB_STATIC_WIDGETS=1``) a storyboard of ``steps``."""
    from kafkalab.viz import show

    return show(lambda: live(tick_ms, wheel_size),
                lambda: storyboard(run_steps(steps, tick_ms=tick_ms, wheel_size=wheel_size)))
