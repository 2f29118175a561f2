"""Kafka's hierarchical timing wheel, its timer and a callback scheduler.

* ``task_list`` -- ``TimerTask`` and ``TimerTaskList``, a bucket with O(1) add and cancel;
* ``wheel``     -- ``TimingWheel``, one level of the hierarchy, with lazily built overflow wheels;
* ``timer``     -- ``Timer``, which advances the wheels through a delay queue of buckets;
* ``driver``    -- ``TimerDriver``, which tells a real-time event loop how long to sleep;
* ``scheduler`` -- ``Scheduler.schedule(delay_ms, callback)``, a cancellable one-shot callback;
* ``events``    -- the trace events the book's widget replays.
"""

from kafkalab.timer.driver import TimerDriver
from kafkalab.timer.scheduler import ScheduledTask, Scheduler
from kafkalab.timer.task_list import TimerTask, TimerTaskList
from kafkalab.timer.timer import Timer
from kafkalab.timer.wheel import TimingWheel

__all__ = [
    "ScheduledTask",
    "Scheduler",
    "Timer",
    "TimerDriver",
    "TimerTask",
    "TimerTaskList",
    "TimingWheel",
]
