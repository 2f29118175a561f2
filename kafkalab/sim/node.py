"""What the simulation's loop drives besides the network: its brokers and its clients.

A :class:`SimNode` is one broker of a :class:`~kafkalab.sim.cluster.SimCluster`: the running
:class:`~kafkalab.broker.broker.Broker` (replaced by a fresh one on restart, since a crash loses
memory), whether it is up, and the leaders it has a replica fetch in flight to (one at a time
per leader, as Kafka's fetcher threads do). A :class:`SimClient` is anything else the loop
ticks -- kafkalab's producer, the leader balancer -- that can name the next moment it needs the
clock, so that waiting (a ``linger.ms``, a balancing interval) is an event like any other.

Worked example: after ``crash(2)`` node 2 is ``SimNode(2, <halted broker>, set(), alive=False)``;
``restart(2)`` opens a new broker on the same directory and sets ``alive`` again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from kafkalab.broker.broker import Broker


class SimClient(Protocol):
    """A client that lives in the simulation (kafkalab's producer): it is ticked every step and
    tells the loop when it next needs to be, so a ``linger.ms`` wait is an event like any other."""

    def next_deadline_ms(self) -> int | None: ...

    def on_tick(self, now_ms: int) -> None: ...


@dataclass(slots=True)
class SimNode:
    """One simulated broker. Mutable; owned by its cluster."""

    node_id: int
    broker: Broker
    fetching_from: set[int] = field(default_factory=set)  # leaders with a fetch in flight
    alive: bool = True


__all__ = ["SimClient", "SimNode"]
