"""A transaction coordinator on a ManualClock with an in-memory log and a marker channel that
holds each send until the test answers it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import count

from kafkalab.clock import ManualClock
from kafkalab.errors import ErrorCode
from kafkalab.group.log import MemoryCoordinatorLog
from kafkalab.timer import Scheduler, Timer
from kafkalab.txn.coordinator import TransactionCoordinator, TxnSettings
from kafkalab.txn.markers import MarkerRequest, MarkerResults

START_MS = 1_000_000
FIRST_PRODUCER_ID = 4000


@dataclass
class HeldChannel:
    """Every send waits in ``sent`` until :meth:`answer` (or ``auto`` answers NONE at once)."""

    auto: bool = False
    sent: list[tuple[MarkerRequest, Callable[[MarkerResults], None]]] = field(default_factory=list)
    requests: list[MarkerRequest] = field(default_factory=list)

    def send(self, request: MarkerRequest, on_complete: Callable[[MarkerResults], None]) -> None:
        self.requests.append(request)
        if self.auto:
            on_complete({tp: ErrorCode.NONE for tp in request.partitions})
        else:
            self.sent.append((request, on_complete))

    def answer(self, error: ErrorCode = ErrorCode.NONE, **errors: ErrorCode) -> MarkerRequest:
        """Answer the oldest send: ``error`` for every partition, or per ``topic_partition``."""
        request, on_complete = self.sent.pop(0)
        on_complete({tp: errors.get(f"{tp[0]}_{tp[1]}", error) for tp in request.partitions})
        return request


class Txns:
    def __init__(self, *, auto: bool = True, log: MemoryCoordinatorLog | None = None, **settings: int) -> None:
        self.clock = ManualClock(START_MS)
        self.timer = Timer(self.clock)
        self.log = log or MemoryCoordinatorLog()
        self.channel = HeldChannel(auto=auto)
        ids = count(FIRST_PRODUCER_ID)
        self.coordinator = TransactionCoordinator(TxnSettings(**settings), self.log, self.channel, lambda: next(ids),
                                                  Scheduler(self.timer), self.clock.milliseconds)

    @property
    def now_ms(self) -> int:
        return self.clock.milliseconds()

    def advance(self, ms: int) -> None:
        self.clock.advance_ms(ms)
        self.timer.advance_clock(self.timer.now_ms())

    def init(self, tid: str = "app-1", timeout_ms: int = 60_000, expected: tuple[int, int] | None = None):
        return self.coordinator.init_producer_id(tid, timeout_ms, expected, self.now_ms)

    def add(self, tid: str, pid: int, epoch: int, *partitions: tuple[str, int]) -> int:
        return self.coordinator.add_partitions(tid, pid, epoch, partitions or [("orders", 0)], self.now_ms)

    def end(self, tid: str, pid: int, epoch: int, commit: bool = True) -> int:
        return self.coordinator.end_txn(tid, pid, epoch, commit, self.now_ms)

    def state(self, tid: str = "app-1") -> str:
        return self.coordinator.transactions[tid].state.value
