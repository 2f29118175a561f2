"""Events a partition reports as replication moves, for the simulation's event stream and the
ISR widget.

``partition.subscribe(callback)`` registers a function that receives each event as it happens;
a partition nobody watches builds no events. Together they tell the story the ISR widget draws::

    BecameLeader(topic="orders", partition=0, leader_epoch=4, isr=(1, 2, 3))
    HighWatermarkMoved(topic="orders", partition=0, old=0, new=6)
    IsrChangeProposed(topic="orders", partition=0, isr=(1, 2, 3), proposed=(1, 2))
    IsrChanged(topic="orders", partition=0, old=(1, 2, 3), new=(1, 2), partition_epoch=8)

All events are frozen, slotted dataclasses.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BecameLeader:
    topic: str
    partition: int
    leader_epoch: int
    isr: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class BecameFollower:
    topic: str
    partition: int
    leader_epoch: int
    leader: int


@dataclass(frozen=True, slots=True)
class HighWatermarkMoved:
    topic: str
    partition: int
    old: int
    new: int
    follower: bool = False  # a follower learned it from its leader's fetch answer


@dataclass(frozen=True, slots=True)
class IsrChangeProposed:
    """The leader asked the controller for a new ISR (AlterPartition)."""

    topic: str
    partition: int
    isr: tuple[int, ...]
    proposed: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class IsrChanged:
    """The controller accepted an ISR change and the leader applied it."""

    topic: str
    partition: int
    old: tuple[int, ...]
    new: tuple[int, ...]
    partition_epoch: int


ReplicationEvent = BecameLeader | BecameFollower | HighWatermarkMoved | IsrChangeProposed | IsrChanged

__all__ = [
    "BecameFollower", "BecameLeader", "HighWatermarkMoved", "IsrChangeProposed", "IsrChanged", "ReplicationEvent",
]
