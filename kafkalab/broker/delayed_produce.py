"""Delayed produces: acks=all appends that wait in the purgatory for the ISR to catch up.

Theory of operation
-------------------
With ``acks=-1`` a producer is told "done" only when every in-sync replica has the batch --
when the partition's high watermark passes the batch's last offset. The leader appends at once,
then parks the request as a :class:`DelayedProduce` (Kafka's ``DelayedProduce``) in the produce
purgatory, watched under each partition it wrote. Whenever a partition's HW moves the purgatory
re-checks the operations watching it; each partition is settled by
``Partition.check_enough_replicas_reach_offset``::

    produce acks=-1 -> append offsets 40..49 -> HW 40 < 50: park, timeout_ms on the timer
    follower fetches at 50 -> HW 50 -> check_and_complete(("orders", 0)) -> respond base 40
    ...or the timeout strikes first -> respond REQUEST_TIMED_OUT for the partitions still waiting

A partition that ends below ``min.insync.replicas`` after the append is answered
NOT_ENOUGH_REPLICAS_AFTER_APPEND: the records are in the leader's log but the promise of
``min.insync.replicas`` copies could not be kept. A partition that lost leadership meanwhile is
answered NOT_LEADER_OR_FOLLOWER. Either way the producer retries.

Worked example: a one-broker cluster commits at append time, so its acks=all produces never
park; with replication factor 3 and a follower fetching every 500 ms, a produce at t=1000 is
answered when the second follower's fetch reports the new offsets.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafkalab.errors import ErrorCode
from kafkalab.purgatory.operation import DelayedOperation

PRODUCE_PURGE_INTERVAL = 1_000  # Kafka's producer.purgatory.purge.interval.requests
DELAYED_PRODUCES_MAX = 10_000  # beyond this, acks=all is answered at once with REQUEST_TIMED_OUT

# (done, error): Partition.check_enough_replicas_reach_offset for one partition.
Check = Callable[[], tuple[bool, ErrorCode]]


@dataclass(slots=True)
class PendingPartition:
    """One partition a parked produce waits on: how to check it and its answer so far."""

    check: Check
    error_code: ErrorCode = ErrorCode.REQUEST_TIMED_OUT
    done: bool = False


class DelayedProduce(DelayedOperation):
    """A parked acks=all produce. ``respond(errors)`` answers it with each waiting partition's
    final error code, keyed as ``partitions`` is. Not thread-safe; owned by the produce purgatory."""

    __slots__ = ("partitions", "_respond")

    def __init__(
        self, timeout_ms: int, pending: dict[Any, PendingPartition],
        respond: Callable[[dict[Any, ErrorCode]], None], *, name: str = "",
    ) -> None:
        super().__init__(timeout_ms, name or "produce")
        self.partitions = pending
        self._respond = respond

    def try_complete(self) -> bool:
        for state in self.partitions.values():
            if not state.done:
                done, error = state.check()
                if done or error != ErrorCode.NONE:
                    state.done, state.error_code = True, error
        if all(state.done for state in self.partitions.values()):
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        self._respond({key: state.error_code for key, state in self.partitions.items()})

    def on_expiration(self) -> None:
        pass  # partitions still waiting keep REQUEST_TIMED_OUT
