"""Property: every delayed operation completes exactly once -- by the first event that satisfies
it before its timeout, otherwise by its timeout -- whatever the interleaving."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalab.clock import ManualClock
from kafkalab.purgatory import DelayedOperation, DelayedOperationPurgatory
from kafkalab.purgatory.events import (
    OperationCompleted,
    OperationExpired,
    OperationsPurged,
    OperationWatched,
    PurgatoryEvent,
)

KEYS = ("t-0", "t-1", "t-2")


class WaitForBytes(DelayedOperation):
    __slots__ = ("sizes", "keys", "min_bytes", "log", "clock", "timer")

    def __init__(self, delay_ms, sizes, keys, min_bytes, log, clock, timer, name):  # type: ignore[no-untyped-def]
        super().__init__(delay_ms, name)
        self.sizes, self.keys, self.min_bytes = sizes, keys, min_bytes
        self.log, self.clock, self.timer = log, clock, timer

    def try_complete(self) -> bool:
        if sum(self.sizes[k] for k in self.keys) >= self.min_bytes:
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        self.log.append((self.name, "complete", self.clock.milliseconds()))

    def on_expiration(self) -> None:
        # The wheel's time: where the hand stood when the timeout fired.
        self.log.append((self.name, "expired", self.timer.current_time_ms))


operation = st.tuples(
    st.integers(1, 400),  # delay
    st.lists(st.sampled_from(KEYS), min_size=1, max_size=3, unique=True),
    st.integers(1, 60),  # min bytes
)
event = st.tuples(st.integers(1, 30), st.sampled_from(KEYS), st.integers(1, 25))  # gap, key, bytes


@settings(max_examples=150, deadline=None)
@given(
    operations=st.lists(operation, min_size=1, max_size=25),
    events=st.lists(event, max_size=40),
    purge_interval=st.integers(0, 5),
)
def test_each_operation_completes_once_by_the_right_road(
    operations: list, events: list, purge_interval: int
) -> None:
    clock = ManualClock(0)
    purgatory: DelayedOperationPurgatory[WaitForBytes] = DelayedOperationPurgatory(
        "p", clock, purge_interval=purge_interval
    )
    sizes = dict.fromkeys(KEYS, 0)
    log: list[tuple[str, str, int]] = []
    ops = [
        WaitForBytes(d, sizes, keys, m, log, clock, purgatory.timer, f"op{i}") for i, (d, keys, m) in enumerate(operations)
    ]
    trace: list[PurgatoryEvent] = []
    purgatory.add_listener(trace.append)
    for op in ops:
        purgatory.try_complete_else_watch(op, op.keys)
    # Reference: replay the same events on plain numbers.
    ref_sizes = dict.fromkeys(KEYS, 0)
    expected: dict[str, tuple[str, int]] = {}
    now = 0
    for gap, key, nbytes in events:
        now += gap
        for op in ops:  # timeouts that fall before this event
            if op.name not in expected and op.expiration_ms <= now:
                expected[op.name] = ("expired", op.expiration_ms)
        ref_sizes[key] += nbytes
        for op in ops:
            if op.name not in expected and key in op.keys:
                if sum(ref_sizes[k] for k in op.keys) >= op.min_bytes:
                    expected[op.name] = ("complete", now)
        clock.set_ms(now)
        purgatory.advance_clock(now)
        sizes[key] += nbytes
        purgatory.check_and_complete(key)
    for op in ops:
        if op.name not in expected:
            expected[op.name] = ("expired", op.expiration_ms)
    clock.set_ms(now + 1_000)
    purgatory.advance_clock(now + 1_000)

    completions = [(name, at) for name, what, at in log if what == "complete"]
    assert sorted(n for n, _ in completions) == sorted(op.name for op in ops)  # exactly once each
    expirations = {name: at for name, what, at in log if what == "expired"}
    for name, at in completions:
        road, when = expected[name]
        if road == "complete":
            assert name not in expirations and at == when
        else:
            # Expired: completed by the timer at the expiration (tick 1 ms), on_expiration too.
            assert expirations.get(name) == when
    assert purgatory.num_delayed() == 0
    purgatory.purge_completed()
    assert purgatory.watched() == 0
    check_trace(trace, ops, expected)


def check_trace(
    trace: list[PurgatoryEvent], ops: list[WaitForBytes], expected: dict[str, tuple[str, int]]
) -> None:
    """The trace tells the same story as the reference: one watch, then the right ending."""
    by_op: dict[int, list[PurgatoryEvent]] = {}
    for event in trace:
        if not isinstance(event, OperationsPurged):
            by_op.setdefault(event.operation_key, []).append(event)
    assert sorted(by_op) == sorted(id(op) for op in ops)
    for op in ops:
        opening, ending = by_op[id(op)]  # min_bytes >= 1, so none completes on arrival
        assert opening == OperationWatched("p", id(op), op.name, tuple(op.keys), op.delay_ms)
        road, when = expected[op.name]
        if road == "complete":
            assert isinstance(ending, OperationCompleted) and ending.key in op.keys
        else:
            assert ending == OperationExpired("p", id(op), op.name, op.expiration_ms, when)
