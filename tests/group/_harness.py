"""A group coordinator on a ManualClock with an in-memory log, and a member that records answers."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from kafkalab.clock import ManualClock
from kafkalab.group.coordinator import GroupCoordinator, GroupSettings, JoinRequest
from kafkalab.group.log import MemoryCoordinatorLog
from kafkalab.timer import Timer

SESSION_MS = 10_000
REBALANCE_MS = 30_000


@dataclass
class Answers:
    """Where a parked JoinGroup/SyncGroup's answer lands."""

    got: list[Any] = field(default_factory=list)

    def __call__(self, result: Any) -> None:
        self.got.append(result)

    @property
    def last(self) -> Any:
        return self.got[-1]


class Cluster:
    def __init__(self, seed: int = 7, **settings: Any) -> None:
        self.clock = ManualClock(1_000_000)
        self.timer = Timer(self.clock)
        self.log = MemoryCoordinatorLog()
        defaults = {"initial_rebalance_delay_ms": 3000}
        self.coordinator = GroupCoordinator(GroupSettings(**{**defaults, **settings}), self.log, self.timer,
                                            random.Random(seed), self.clock.milliseconds)

    @property
    def now_ms(self) -> int:
        return self.clock.milliseconds()

    def advance(self, delta_ms: int, step_ms: int = 100) -> None:
        """Move time in small steps, as a running server does: a task scheduled by another
        task's expiry starts from the time that expiry ran, not from the end of the jump."""
        while delta_ms > 0:
            step = min(step_ms, delta_ms)
            self.clock.advance_ms(step)
            self.coordinator.advance_clock(self.timer.now_ms())
            delta_ms -= step

    def join(self, group: str, member_id: str = "", *, instance: str | None = None, client: str = "c",
             protocols: tuple[tuple[str, bytes], ...] = (("range", b"sub"),), version: int = 7,
             session_ms: int = SESSION_MS, answers: Answers | None = None) -> tuple[Any, Answers]:
        answers = answers or Answers()
        request = JoinRequest(group, member_id, instance, client, "/127.0.0.1", session_ms, REBALANCE_MS,
                              "consumer", protocols, version)
        result = self.coordinator.join_group(request, self.now_ms, answers)
        return result, answers

    def join_with_id(self, group: str, **kwargs: Any) -> tuple[str, Answers]:
        """The KIP-394 dance: MEMBER_ID_REQUIRED, then join with the given id (parked)."""
        first, _ = self.join(group, **kwargs)
        assert first.error_code == 79, first
        result, answers = self.join(group, first.member_id, **kwargs)
        assert result is None
        return first.member_id, answers

    def sync(self, group: str, generation: int, member_id: str, assignments: dict[str, bytes] | None = None,
             instance: str | None = None, answers: Answers | None = None) -> tuple[Any, Answers]:
        answers = answers or Answers()
        result = self.coordinator.sync_group(group, generation, member_id, instance, "consumer", None,
                                             list((assignments or {}).items()), self.now_ms, answers)
        return result, answers
