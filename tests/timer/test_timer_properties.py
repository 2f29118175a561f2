"""Property tests: the timer against a reference model kept as a sorted list.

The reference knows only Kafka's rule -- a task is due once the timer has been advanced to the
start of the tick holding its expiration (``expiration // tick * tick``; with the default 1 ms
tick that is the expiration itself) -- and nothing about wheels, buckets or cascades. Every
firing must match it exactly: once, never early, and in the first advance that passes it.
"""

from __future__ import annotations

import bisect

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from kafkalab.clock import ManualClock
from kafkalab.timer import Timer, TimerTask
from kafkalab.timer.events import TaskCascaded, TimerEvent


class Probe(TimerTask):
    """Records (seq, wheel time) into a shared list when run."""

    __slots__ = ("seq", "fired", "timer")

    def __init__(self, delay_ms: int, seq: int, fired: list[tuple[int, int]], timer: Timer):
        super().__init__(delay_ms)
        self.seq = seq
        self.fired = fired
        self.timer = timer

    def run(self) -> None:
        self.fired.append((self.seq, self.timer.current_time_ms))


def check_cascade(timer: Timer, event: TimerEvent) -> None:
    """A cascaded task lands, one or more levels down, in the bucket its expiration maps to."""
    if not isinstance(event, TaskCascaded):
        return
    wheel = timer.wheel.levels()[event.level]
    assert event.level < event.from_level
    assert event.bucket_index == event.expiration_ms // wheel.tick_ms % wheel.wheel_size
    assert event.bucket_expiration_ms == event.expiration_ms // wheel.tick_ms * wheel.tick_ms
    assert wheel.current_time_ms + wheel.tick_ms <= event.expiration_ms
    assert event.expiration_ms < wheel.current_time_ms + wheel.interval_ms


@pytest.mark.parametrize("traced", [True, False], ids=["traced", "untraced"])
@settings(max_examples=100, deadline=None)
@given(
    delays=st.lists(st.integers(0, 20_000), min_size=1, max_size=60),
    cancel_mask=st.lists(st.booleans(), min_size=60, max_size=60),
    steps=st.lists(st.integers(1, 3_000), min_size=1, max_size=30),
)
def test_every_task_fires_once_never_early_never_late(
    traced: bool, delays: list[int], cancel_mask: list[bool], steps: list[int]
) -> None:
    clock = ManualClock(0)
    timer = Timer(clock)
    fired: list[tuple[int, int]] = []
    if traced:  # the timer flushes through a separate, event-emitting path when listened to
        timer.add_listener(lambda e: check_cascade(timer, e))
    tasks = [Probe(d, i, fired, timer) for i, d in enumerate(delays)]
    for task in tasks:
        timer.add(task)
    cancelled = {t.seq for t, c in zip(tasks, cancel_mask) if c and t.cancel()}
    # Reference: a sorted list of (due ms, seq) for the live tasks.
    reference = sorted((t.expiration_ms, t.seq) for t in tasks if t.seq not in cancelled)
    for delta in steps + [20_001]:
        clock.advance_ms(delta)
        now = clock.milliseconds()
        timer.advance_clock(now)
        due = reference[: bisect.bisect_right(reference, (now, len(tasks)))]
        assert sorted(seq for seq, _ in fired) == sorted(seq for _, seq in due)
        timer.check_invariants()
    expiration = {t.seq: t.expiration_ms for t in tasks}
    for seq, fired_at in fired:
        # Tick 1 ms: the hand is exactly on the expiration when the task runs.
        assert fired_at == expiration[seq]
    assert timer.size == 0


class TimerModel(RuleBasedStateMachine):
    """Random add / cancel / advance on small wheels (many levels, many cascades)."""

    @initialize(
        tick_ms=st.sampled_from([1, 2, 5]),
        wheel_size=st.integers(2, 6),
        start_ms=st.integers(0, 10_000),
        traced=st.booleans(),
    )
    def start(self, tick_ms: int, wheel_size: int, start_ms: int, traced: bool) -> None:
        self.tick_ms = tick_ms
        self.clock = ManualClock(start_ms)
        self.timer = Timer(self.clock, tick_ms=tick_ms, wheel_size=wheel_size)
        if traced:
            self.timer.add_listener(lambda e: check_cascade(self.timer, e))
        self.fired: list[tuple[int, int]] = []
        self.tasks: list[Probe] = []
        self.reference: list[tuple[int, int]] = []  # sorted (start of due tick, seq)
        self.done: set[int] = set()

    def due_tick(self, task: Probe) -> int:
        return task.expiration_ms // self.tick_ms * self.tick_ms

    @rule(delay_ms=st.integers(0, 3_000))
    def add(self, delay_ms: int) -> None:
        task = Probe(delay_ms, len(self.tasks), self.fired, self.timer)
        self.tasks.append(task)
        if self.timer.add(task):
            bisect.insort(self.reference, (self.due_tick(task), task.seq))
        else:
            # Refused as already due: it ran at once, and it was not early.
            assert self.fired[-1][0] == task.seq
            assert self.due_tick(task) <= self.timer.current_time_ms
            self.done.add(task.seq)

    @precondition(lambda self: bool(self.reference))
    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        _, seq = data.draw(st.sampled_from(self.reference))
        assert self.tasks[seq].cancel() is True
        self.reference.remove((self.due_tick(self.tasks[seq]), seq))
        self.done.add(seq)

    @rule(delta_ms=st.integers(0, 1_500))
    def advance(self, delta_ms: int) -> None:
        self.clock.advance_ms(delta_ms)
        now = self.clock.milliseconds()
        before = len(self.fired)
        self.timer.advance_clock(now)
        cut = bisect.bisect_right(self.reference, (now, len(self.tasks)))
        expected, self.reference = self.reference[:cut], self.reference[cut:]
        ran = self.fired[before:]
        assert sorted(seq for seq, _ in ran) == sorted(seq for _, seq in expected)
        due = dict((seq, tick) for tick, seq in expected)
        for seq, fired_at in ran:
            # Run with the hand on the start of its due tick: never early, at most a tick late.
            assert fired_at == due[seq]
        self.done.update(seq for seq, _ in ran)

    @invariant()
    def consistent(self) -> None:
        if not hasattr(self, "timer"):
            return
        self.timer.check_invariants()
        assert self.timer.size == len(self.reference)
        fired_seqs = [seq for seq, _ in self.fired]
        assert len(fired_seqs) == len(set(fired_seqs)), "a task fired twice"
        assert not {s for s in fired_seqs} & {s for s in self.done if self.tasks[s].cancelled}


TimerModel.TestCase.settings = settings(max_examples=120, stateful_step_count=40, deadline=None)
test_timer_model = TimerModel.TestCase


def test_check_invariants_catches_a_misplaced_task() -> None:
    clock = ManualClock(0)
    timer = Timer(clock)
    task = Probe(10, 0, [], timer)
    timer.add(task)
    task.expiration_ms = 11  # corrupt it on purpose: bucket 10 no longer matches
    with pytest.raises(AssertionError, match="misplaced"):
        timer.check_invariants()
