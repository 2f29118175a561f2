"""Automatic leader balancing: moving leadership back to each partition's preferred replica.

Theory of operation
-------------------
The first replica in a partition's assignment is its *preferred* leader, and replica placement
spreads preferred leaders evenly over the brokers. After a broker restarts, the partitions it led
are led by others, and nothing moves them back by itself: the returning broker rejoins their
ISRs as a follower. With ``auto.leader.rebalance.enable`` (default true) the controller does
it. Kafka's KRaft controller schedules a check ``leader.imbalance.check.interval.seconds``
(default 300) after it notices an imbalanced partition -- one whose leader is not its preferred
replica -- and the check runs a preferred election for up to 1,000 of them at once
(:meth:`LocalController.balance_partition_leaders`); a full batch is followed by another check
10 ms later, and a partition whose preferred replica is still out of sync waits for the next
interval. ``leader.imbalance.per.broker.percentage`` belonged to the ZooKeeper controller's
per-broker threshold; in KRaft it is accepted and ignored.

Worked example: brokers 1-3, partition 0 assigned [1, 2, 3]. Broker 1 dies at t=0 and broker 2
leads; broker 1 returns at t=20 s and is back in the ISR at t=21 s. The image that made the
partition imbalanced was published at t=9 s (the fencing), so the check runs at t=309 s and
broker 1 leads again, with a new leader epoch.

:class:`LeaderBalancer` is sans-I/O: a runtime calls :meth:`~LeaderBalancer.on_tick` and wakes
it at :meth:`~LeaderBalancer.next_deadline_ms`; it learns of new images by subscribing to the
controller.
"""

from __future__ import annotations

from collections.abc import Callable

from kafkalab.config.resolve import ConfigLayers, Properties, broker_value
from kafkalab.controller.local import LocalController
from kafkalab.metadata.image import MetadataImage

MS_PER_SECOND = 1_000
RESCHEDULE_SOON_MS = 10  # QuorumController: a full batch is followed by another check 10 ms later


def balancing_interval_ms(properties: Properties) -> int | None:
    """``leader.imbalance.check.interval.seconds`` in ms, or None when
    ``auto.leader.rebalance.enable`` is false."""
    layers = ConfigLayers(static=properties)
    if not broker_value(layers, None, "auto.leader.rebalance.enable"):
        return None
    seconds = broker_value(layers, None, "leader.imbalance.check.interval.seconds")
    assert isinstance(seconds, int)
    return seconds * MS_PER_SECOND


class LeaderBalancer:
    """Schedules and runs the controller's leader balancing. Not thread-safe."""

    def __init__(self, controller: LocalController, interval_ms: int, now_ms: Callable[[], int]) -> None:
        self.controller = controller
        self.interval_ms = interval_ms
        self._now_ms = now_ms
        self._due_ms: int | None = None
        self.checks = 0  # checks run so far
        self.unsubscribe = controller.subscribe(self._on_image)

    def _on_image(self, image: MetadataImage) -> None:
        if self._due_ms is None and self.controller.imbalanced_partitions():
            self._due_ms = self._now_ms() + self.interval_ms

    def next_deadline_ms(self) -> int | None:
        return self._due_ms

    def on_tick(self, now_ms: int) -> None:
        if self._due_ms is None or now_ms < self._due_ms:
            return
        self._due_ms = None
        self.checks += 1
        more = self.controller.balance_partition_leaders()  # publishes: _on_image may reschedule
        if more:
            self._due_ms = now_ms + RESCHEDULE_SOON_MS
        elif self._due_ms is None and self.controller.imbalanced_partitions():
            self._due_ms = now_ms + self.interval_ms  # preferred replicas not yet back in sync
