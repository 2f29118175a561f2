"""A group coordinator with consumer groups on a ManualClock, an in-memory log and fixed topics."""

from __future__ import annotations

import random
import uuid
from typing import Any

from kafkalab.clock import ManualClock
from kafkalab.group.consumer.coordinator import ConsumerGroupSettings, Heartbeat, HeartbeatResult
from kafkalab.group.coordinator import GroupCoordinator, GroupSettings
from kafkalab.group.log import MemoryCoordinatorLog
from kafkalab.timer import Timer

SESSION_MS = 45_000
REBALANCE_MS = 30_000
T = uuid.UUID(int=0x70)  # topic "t"
U = uuid.UUID(int=0x75)  # topic "u"


class Cluster:
    def __init__(self, seed: int = 7, log: MemoryCoordinatorLog | None = None, **settings: Any) -> None:
        self.clock = ManualClock(1_000_000)
        self.timer = Timer(self.clock)
        self.log = log or MemoryCoordinatorLog()
        self.topics: dict[str, tuple[uuid.UUID, int]] = {"t": (T, 6), "u": (U, 2)}
        self.settings = ConsumerGroupSettings(**settings)
        self.coordinator = GroupCoordinator(GroupSettings(), self.log, self.timer, random.Random(seed),
                                            self.clock.milliseconds, topics=self.topics.get,
                                            consumer_settings=self.settings)
        self.consumer = self.coordinator.consumer

    @property
    def now_ms(self) -> int:
        return self.clock.milliseconds()

    def advance(self, delta_ms: int, step_ms: int = 100) -> None:
        while delta_ms > 0:
            step = min(step_ms, delta_ms)
            self.clock.advance_ms(step)
            self.coordinator.advance_clock(self.timer.now_ms())
            delta_ms -= step

    def heartbeat(self, group: str = "g", member_id: str = "", epoch: int = 0, **fields: Any) -> HeartbeatResult:
        if epoch == 0:
            fields.setdefault("rebalance_timeout_ms", REBALANCE_MS)
            fields.setdefault("subscribed_topic_names", ("t",))
            fields.setdefault("owned", {})
        return self.consumer.heartbeat(Heartbeat(group, member_id, epoch, **fields), self.now_ms)

    def join(self, group: str = "g", **fields: Any) -> HeartbeatResult:
        result = self.heartbeat(group, **fields)
        assert result.error_code == 0, result
        return result


def parts(assignment: Any, topic: uuid.UUID = T) -> set[int]:
    return set((assignment or {}).get(topic, frozenset()))


__all__ = ["Cluster", "REBALANCE_MS", "SESSION_MS", "T", "U", "parts"]
