"""Timer tasks and the bucket that holds them: a circular doubly linked list with an expiration.

Mirrors Kafka's ``TimerTask``, ``TimerTaskEntry`` and ``TimerTaskList``
(``org.apache.kafka.server.util.timer``). A bucket of a timing wheel holds every task whose
expiration falls inside one tick of that wheel. The bucket must support three things cheaply:

* add a task at the tail -- O(1);
* remove any task, wherever it sits, when the task is cancelled -- O(1), because the task
  carries its own links and a reference to its bucket (no search);
* hand over all its tasks when its tick expires (``flush``) -- O(tasks in bucket).

A sentinel ``root`` node closes the ring, so adding and removing never test for an empty list::

        +--------------------------------------------------+
        v                                                  |
      root <-> task(expires 203) <-> task(expires 207) <---+
    (sentinel)

Worked example: a wheel with tick 10 ms puts tasks due at 203 ms and 207 ms into the same bucket,
whose ``expiration_ms`` is 200 (the start of its tick: 203 // 10 * 10). Cancelling the 203 ms task
relinks ``root`` and the 207 ms task around it; ``task_count`` drops from 2 to 1.

Kafka keeps a separate ``TimerTaskEntry`` per insertion because several threads may race to
re-add and cancel the same task. kafkalab's timer is single-threaded, so the links live on the
task itself, which saves one allocation per insert. A task sits in at most one bucket at a time.

Not thread-safe; every task and bucket is owned by one ``Timer``.
"""

from __future__ import annotations

from collections.abc import Iterator

from kafkalab.errors import TimerError
from kafkalab.timer.events import TaskCancelled, TimerListener

# Java's Long.MAX_VALUE / 2 would allow about 146 million years; 2**53 ms (285,000 years) keeps
# every expiration exact in a float too and bounds the wheel hierarchy at 13 levels for the
# default tick of 1 ms and wheel size 20 (20**13 > 2**53).
DELAY_MS_MAX = 2**53


class _Link:
    """A node of a bucket's ring: either the sentinel root or a task."""

    __slots__ = ("_next", "_prev")

    def __init__(self) -> None:
        self._next: _Link | None = None
        self._prev: _Link | None = None


class TimerTask(_Link):
    """Something to run once ``delay_ms`` after it is added to a timer.

    Subclasses override :meth:`run`. ``cancel()`` unlinks a pending task in O(1); a cancelled
    task never runs. Subclasses that want to stay small declare ``__slots__``.

    Not thread-safe; owned by the timer it was added to.
    """

    __slots__ = ("delay_ms", "name", "expiration_ms", "cancelled", "_bucket")

    def __init__(self, delay_ms: int, name: str = "") -> None:
        # Links set inline rather than through super().__init__(): this constructor is on the
        # insert hot path, and one call less is measurable there.
        self._next = None
        self._prev = None
        if not isinstance(delay_ms, int) or not 0 <= delay_ms <= DELAY_MS_MAX:
            raise TimerError(
                f"cannot create timer task {name!r}: delay {delay_ms!r} ms is not a whole "
                f"number of milliseconds in [0, {DELAY_MS_MAX}]"
            )
        self.delay_ms = delay_ms
        self.name = name
        # Set by the timer when the task is added: the monotonic time at which it is due.
        self.expiration_ms = -1
        self.cancelled = False
        self._bucket: TimerTaskList | None = None

    def run(self) -> None:
        """The work to do on expiration. Subclasses override this."""
        raise NotImplementedError(f"{type(self).__name__} must override run()")

    def cancel(self) -> bool:
        """Stop this task from running; True if it was pending in a bucket."""
        self.cancelled = True
        bucket = self._bucket
        if bucket is None:
            return False
        bucket.remove(self)
        return True

    @property
    def pending(self) -> bool:
        """True while the task sits in a bucket waiting for its expiration."""
        return self._bucket is not None

    def label(self) -> str:
        """The name shown in trace events: ``name`` or ``task@<expiration>``."""
        return self.name or f"task@{self.expiration_ms}"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(name={self.name!r}, delay_ms={self.delay_ms}, "
            f"expiration_ms={self.expiration_ms}, pending={self.pending}, "
            f"cancelled={self.cancelled})"
        )


class TimerTaskList:
    """One bucket of a timing wheel: tasks due within one tick, and that tick's start time.

    ``expiration_ms`` is -1 while the bucket is not in the timer's delay queue; the wheel sets
    it to the start of the tick when it adds a task to an idle bucket, and ``flush`` resets it.
    ``level`` and ``index`` locate the bucket (wheel level, slot number) for trace events.

    Not thread-safe; owned by one ``TimingWheel``.
    """

    __slots__ = ("_root", "expiration_ms", "task_count", "level", "index", "_listeners")

    def __init__(self, level: int, index: int, listeners: list[TimerListener]) -> None:
        root = _Link()
        root._next = root
        root._prev = root
        self._root = root
        self.expiration_ms = -1
        self.task_count = 0
        self.level = level
        self.index = index
        # Shared with the owning timer: emit only when somebody listens.
        self._listeners = listeners

    def add(self, task: TimerTask) -> None:
        """Link ``task`` at the tail. The task must not be in any bucket."""
        assert task._bucket is None, f"{task!r} is already in a bucket"
        root = self._root
        tail = root._prev
        assert tail is not None
        task._next = root
        task._prev = tail
        task._bucket = self
        tail._next = task
        root._prev = task
        self.task_count += 1

    def remove(self, task: TimerTask) -> None:
        """Unlink ``task`` in O(1) (used by ``TimerTask.cancel``)."""
        if task._bucket is not self:
            return
        nxt, prev = task._next, task._prev
        assert nxt is not None and prev is not None
        prev._next = nxt
        nxt._prev = prev
        task._next = task._prev = None
        task._bucket = None
        self.task_count -= 1
        if self._listeners:
            event = TaskCancelled(
                id(task), task.label(), task.expiration_ms, self.level, self.index
            )
            for listener in self._listeners:
                listener(event)

    def flush(self) -> Iterator[TimerTask]:
        """Unlink and yield the tasks one at a time, oldest first; then mark the bucket idle.

        Mirrors Kafka's ``TimerTaskList.flush``, which removes the head and hands it on until the
        ring is empty. A task stays linked until its turn, so a task that runs earlier in the
        same flush can still cancel it -- it is unlinked and never yielded. If the consumer
        stops early (a task raised), the rest stay linked and ``expiration_ms`` is kept, so the
        timer can queue the bucket again.
        """
        root = self._root
        # Each turn unlinks one task, and nothing joins a bucket while it is flushed (the hand
        # sits on it, so re-added tasks land on finer wheels): at most task_count turns.
        while self.task_count:
            task: TimerTask = root._next  # type: ignore[assignment]  # all nodes but root are tasks
            following = task._next
            assert following is not None
            root._next = following
            following._prev = root
            task._next = task._prev = None
            task._bucket = None
            self.task_count -= 1
            yield task
        assert root._next is root, "bucket ring is longer than its task_count"
        self.expiration_ms = -1

    def flush_single(self) -> TimerTask:
        """``flush`` for a bucket holding exactly one task: detach and return that task.

        With sparse timeouts most buckets hold one task; this skips the generator.
        """
        assert self.task_count == 1, f"flush_single on {self!r}"
        root = self._root
        task = root._next
        assert isinstance(task, TimerTask) and task._next is root
        root._next = root._prev = root
        task._next = task._prev = None
        task._bucket = None
        self.task_count = 0
        self.expiration_ms = -1
        return task

    def tasks(self) -> list[TimerTask]:
        """The pending tasks, oldest first, without detaching them (for inspection)."""
        result: list[TimerTask] = []
        node = self._root._next
        for _ in range(self.task_count):
            assert isinstance(node, TimerTask)
            result.append(node)
            node = node._next
        return result

    def __len__(self) -> int:
        return self.task_count

    def __repr__(self) -> str:
        return (
            f"TimerTaskList(level={self.level}, index={self.index}, "
            f"expiration_ms={self.expiration_ms}, task_count={self.task_count})"
        )
