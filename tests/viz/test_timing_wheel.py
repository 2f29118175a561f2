"""The timing-wheel widget: its replayed state must match the real timer's buckets."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalab.errors import TimerError
from kafkalab.timer import events as ev
from kafkalab.viz.timing_wheel import (
    EXAMPLE_STEPS,
    WheelSession,
    figure,
    live,
    run_steps,
    storyboard,
    wheel_state,
)


def occupied(state, level: int) -> dict[int, tuple[str, ...]]:  # type: ignore[no-untyped-def]
    return {i: names for i, names in enumerate(state.levels[level].buckets) if names}


def test_the_200_and_840_example_frame_by_frame() -> None:
    frames = run_steps(EXAMPLE_STEPS)
    captions = [caption for caption, _ in frames]
    assert captions == [
        "add task due at 200 ms",
        "add task due at 840 ms",
        "advance clock to 200 ms (1 bucket flush)",
        "advance clock to 800 ms (1 bucket flush)",
        "advance clock to 840 ms (1 bucket flush)",
    ]
    after_adds = frames[1][1]
    assert [(lv.tick_ms, lv.interval_ms) for lv in after_adds.levels] == [(1, 20), (20, 400), (400, 8000)]
    assert occupied(after_adds, 1) == {10: ("t0@200",)}
    assert occupied(after_adds, 2) == {2: ("t1@840",)}
    assert after_adds.levels[2].bucket_expirations_ms[2] == 800

    at_800 = frames[3][1]
    assert occupied(at_800, 2) == {}
    assert occupied(at_800, 1) == {2: ("t1@840",)}  # cascaded down one level
    assert at_800.levels[1].bucket_expirations_ms[2] == 840
    assert at_800.cascades == 1

    final = frames[-1][1]
    assert final.fired == (("t0@200", 200), ("t1@840", 840))
    assert (final.advances, final.flushes, final.cascades) == (3, 3, 1)
    assert [lv.current_ms for lv in final.levels] == [840, 840, 800]
    assert [lv.hand_index for lv in final.levels] == [0, 2, 2]


def test_cancel_step_empties_the_bucket() -> None:
    frames = run_steps([("add", 50), ("cancel", "t0@50"), ("advance", 100)])
    assert occupied(frames[0][1], 1) == {2: ("t0@50",)}
    assert occupied(frames[1][1], 1) == {}
    assert frames[1][1].cancelled == 1
    assert frames[2][1].fired == ()


@settings(max_examples=60, deadline=None)
@given(
    tick_ms=st.sampled_from([1, 3]),
    wheel_size=st.integers(2, 8),
    script=st.lists(
        st.tuples(st.sampled_from(["add", "add", "cancel", "advance"]), st.integers(0, 400)),
        max_size=40,
    ),
)
def test_replayed_state_matches_the_real_timer(tick_ms: int, wheel_size: int, script: list) -> None:
    session = WheelSession(tick_ms=tick_ms, wheel_size=wheel_size)
    ran: list[str] = []
    for action, n in script:
        if action == "add":
            session.add(n)
        elif action == "cancel" and session.tasks:
            names = sorted(session.tasks)
            session.cancel(names[n % len(names)])
        else:
            session.advance_to(session.clock.milliseconds() + n)
        state = session.state()
        wheels = session.timer.wheel.levels()
        assert len(state.levels) == len(wheels)
        for view, wheel in zip(state.levels, wheels):
            assert view.current_ms == wheel.current_time_ms
            assert view.tick_ms == wheel.tick_ms
            real = tuple(tuple(t.name for t in bucket.tasks()) for bucket in wheel.buckets)
            assert view.buckets == real
            for index, bucket in enumerate(wheel.buckets):
                if bucket.task_count:
                    assert view.bucket_expirations_ms[index] == bucket.expiration_ms
        ran = [name for name, _ in state.fired]
    assert len(ran) == len(set(ran))
    assert not any(session.tasks[name].pending for name in ran)


def test_unknown_event_and_step_are_typed_errors() -> None:
    with pytest.raises(TimerError, match="unknown trace event"):
        wheel_state([object()], tick_ms=1, wheel_size=20)  # type: ignore[list-item]
    with pytest.raises(TimerError, match="unknown step 'rewind'"):
        run_steps([("rewind", 5)])
    with pytest.raises(TimerError, match="no task named"):
        WheelSession().cancel("ghost")
    with pytest.raises(TimerError, match="2..64 buckets"):
        WheelSession(wheel_size=500)


def test_state_of_no_events_is_one_empty_level() -> None:
    state = wheel_state([], tick_ms=5, wheel_size=4, start_ms=13)
    assert len(state.levels) == 1
    assert state.levels[0].current_ms == 10 and state.levels[0].buckets == ((),) * 4


def test_overflow_event_adds_a_level() -> None:
    state = wheel_state([ev.OverflowWheelCreated(1, 20, 20, 400, 0)], tick_ms=1, wheel_size=20)
    assert [lv.interval_ms for lv in state.levels] == [20, 400]


def test_figures_draw_one_panel_per_frame() -> None:
    frames = run_steps(EXAMPLE_STEPS)
    fig = storyboard(frames)
    assert len(fig.axes) == len(frames)
    assert "advance clock to 840 ms" in fig.axes[-1].get_title(loc="left")
    plt.close(fig)
    single = figure(frames[-1][1], "done")
    assert "ran: t0@200@200, t1@840@840" in single.axes[0].get_title(loc="left")
    plt.close(single)
    with pytest.raises(TimerError):
        storyboard([])


def test_live_widget_buttons_drive_the_timer() -> None:
    session = WheelSession()
    box = live(session=session)
    (delay, add_button), (step, step_button, jump_button) = (
        box.children[0].children,
        box.children[1].children,
    )
    delay.value = 840
    add_button.click()
    assert [lv.level for lv in session.state().levels] == [0, 1, 2]
    jump_button.click()  # to the level-2 bucket at 800: the task cascades
    assert session.clock.milliseconds() == 800 and session.state().cascades == 1
    jump_button.click()  # to 840: the task runs
    assert session.state().fired == (("t0@840", 840),)
    step.value = 5
    step_button.click()
    assert session.clock.milliseconds() == 845
    image, summary = box.children[2].children
    assert "data:image/png;base64," in image.value and "Wheel time 840 ms" in summary.value
