"""A seeded network between simulated nodes: delay, loss, duplication, reordering, partitions.

Theory of operation
-------------------
Every message between simulated nodes (brokers, controllers, clients) is a real, encoded Kafka
request or response, and this module carries it. It decides *when* a message arrives, or whether
it arrives at all, from one ``random.Random`` the simulation owns, so a run is a function of its
seed: replaying the seed replays every delivery in the same order.

A message sent at ``now_ms`` on the link ``src -> dst`` is queued for ``now_ms + delay``, where
the delay is drawn from the link's ``[delay_min_ms, delay_max_ms]``. Kafka runs over TCP, so by
default a link is FIFO: a message never overtakes the one sent before it on the same link (its
delivery time is raised to the previous one's). The faults a test can switch on, per link:

* ``loss`` -- the probability a message vanishes (a dropped connection, seen from the protocol);
* ``duplicate`` -- the probability it is delivered twice (a client retrying on a new connection);
* ``reorder`` -- the probability it may overtake earlier messages (FIFO is waived for it);
* a *cut* -- no message crosses, in one direction or both (``cut(a, b, one_way=True)`` lets
  ``b``'s messages still reach ``a``: the asymmetric partition that trips up leader leases).

Messages already in flight when a link is cut are lost when they would arrive, as packets in a
switch that just failed. Deliveries come out of :meth:`Network.deliver` in (time, send order):
ties never depend on dictionary order or object ids.

Worked example (seed 23, delay 1-5 ms, no faults)::

    send(1 -> 2, "a") at t=0   -> due at t=3
    send(1 -> 2, "b") at t=1   -> drawn t=2, raised to t=3 (FIFO): delivered after "a"
    cut(1, 2) at t=2           -> both are lost at t=3

Not thread-safe; owned by one simulation.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

NodeId = Hashable
IN_FLIGHT_MAX = 1_000_000  # a bug guard: a simulation that queues this much has run away


@dataclass(frozen=True, slots=True)
class LinkFaults:
    """How one direction of a link behaves. Probabilities are per message."""

    delay_min_ms: int = 1
    delay_max_ms: int = 1
    loss: float = 0.0
    duplicate: float = 0.0
    reorder: float = 0.0

    def __post_init__(self) -> None:
        if not 0 <= self.delay_min_ms <= self.delay_max_ms:
            raise ValueError(f"delay range [{self.delay_min_ms}, {self.delay_max_ms}] ms is not a range")
        for name in ("loss", "duplicate", "reorder"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} probability {value} is outside [0, 1]")


@dataclass(frozen=True, slots=True)
class Delivery:
    """A message arriving at ``dst`` at ``at_ms``; ``seq`` is its send order (unique)."""

    at_ms: int
    seq: int
    src: NodeId
    dst: NodeId
    message: Any
    duplicate: bool = False


@dataclass(slots=True)
class NetworkStats:
    sent: int = 0
    delivered: int = 0
    lost: int = 0
    duplicated: int = 0
    cut: int = 0  # lost because the link was cut at send or arrival time


@dataclass(order=True, slots=True)
class _Queued:
    at_ms: int
    seq: int
    delivery: Delivery = field(compare=False)


class Network:
    """Links between nodes with seeded faults. Not thread-safe; owned by one simulation."""

    def __init__(self, rng: random.Random, default: LinkFaults | None = None) -> None:
        self.rng = rng
        self.default = default or LinkFaults()
        self.stats = NetworkStats()
        self._links: dict[tuple[NodeId, NodeId], LinkFaults] = {}
        self._cuts: set[tuple[NodeId, NodeId]] = set()
        self._queue: list[_Queued] = []
        self._last_fifo_ms: dict[tuple[NodeId, NodeId], int] = {}
        self._seq = 0

    # --- configuration -------------------------------------------------------------------------

    def set_link(self, src: NodeId, dst: NodeId, faults: LinkFaults) -> None:
        self._links[(src, dst)] = faults

    def faults(self, src: NodeId, dst: NodeId) -> LinkFaults:
        return self._links.get((src, dst), self.default)

    def cut(self, a: NodeId, b: NodeId, *, one_way: bool = False) -> None:
        """Stop messages from ``a`` to ``b`` (and from ``b`` to ``a`` unless ``one_way``)."""
        self._cuts.add((a, b))
        if not one_way:
            self._cuts.add((b, a))

    def isolate(self, node: NodeId, others: list[NodeId]) -> None:
        """Cut ``node`` off from every node in ``others``, both ways."""
        for other in others:
            if other != node:
                self.cut(node, other)

    def heal(self) -> None:
        """Remove every cut (messages lost meanwhile stay lost)."""
        self._cuts.clear()

    def is_cut(self, src: NodeId, dst: NodeId) -> bool:
        return (src, dst) in self._cuts

    # --- traffic -------------------------------------------------------------------------------

    def send(self, src: NodeId, dst: NodeId, message: Any, now_ms: int) -> None:
        """Queue ``message`` on ``src -> dst`` according to the link's faults."""
        self.stats.sent += 1
        if self.is_cut(src, dst):
            self.stats.cut += 1
            return
        faults = self.faults(src, dst)
        rng = self.rng
        if faults.loss and rng.random() < faults.loss:
            self.stats.lost += 1
            return
        self._enqueue(src, dst, message, now_ms, faults, duplicate=False)
        if faults.duplicate and rng.random() < faults.duplicate:
            self.stats.duplicated += 1
            self._enqueue(src, dst, message, now_ms, faults, duplicate=True)

    def _enqueue(
        self, src: NodeId, dst: NodeId, message: Any, now_ms: int, faults: LinkFaults, *, duplicate: bool
    ) -> None:
        assert len(self._queue) < IN_FLIGHT_MAX, "the simulation must drain the network"
        at_ms = now_ms + self.rng.randint(faults.delay_min_ms, faults.delay_max_ms)
        link = (src, dst)
        overtakes = faults.reorder and self.rng.random() < faults.reorder
        if not overtakes:
            at_ms = max(at_ms, self._last_fifo_ms.get(link, at_ms))
            self._last_fifo_ms[link] = at_ms
        self._seq += 1
        delivery = Delivery(at_ms, self._seq, src, dst, message, duplicate)
        heapq.heappush(self._queue, _Queued(at_ms, self._seq, delivery))

    def next_delivery_ms(self) -> int | None:
        """When the earliest queued message is due, or None if nothing is in flight."""
        return self._queue[0].at_ms if self._queue else None

    def in_flight(self) -> int:
        return len(self._queue)

    def deliver(self, now_ms: int) -> list[Delivery]:
        """Every message due by ``now_ms``, in (time, send order); cut links lose theirs."""
        due: list[Delivery] = []
        while self._queue and self._queue[0].at_ms <= now_ms:
            delivery = heapq.heappop(self._queue).delivery
            if self.is_cut(delivery.src, delivery.dst):
                self.stats.cut += 1
                continue
            self.stats.delivered += 1
            due.append(delivery)
        return due

    def drop_node(self, node: NodeId) -> int:
        """Lose every message in flight to or from ``node`` (it crashed); returns how many."""
        kept = [q for q in self._queue if node not in (q.delivery.src, q.delivery.dst)]
        lost = len(self._queue) - len(kept)
        heapq.heapify(kept)
        self._queue = kept
        self.stats.lost += lost
        for link in [link for link in self._last_fifo_ms if node in link]:
            del self._last_fifo_ms[link]
        return lost


__all__ = ["Delivery", "LinkFaults", "Network", "NetworkStats", "NodeId"]
