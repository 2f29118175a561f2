"""Which partitions a consumer owns and where it reads each: Kafka's ``SubscriptionState``.

Theory of operation
-------------------
Every assigned partition is in one state of the table :data:`TRANSITIONS`::

    AWAITING_COMMITTED --committed found--> FETCHING <--seek-- (any state)
            |                                 |   ^
            no committed offset        out of range | reset done
            v                                 v   |
       AWAITING_RESET <----------------------------+

A partition assigned by the group starts in AWAITING_COMMITTED (its group's committed offset is
asked for with OffsetFetch); one assigned by hand, or without a committed offset, waits in
AWAITING_RESET for ListOffsets to turn ``auto.offset.reset`` (or a ``seek_to_beginning/end``)
into an offset. Only FETCHING partitions are fetched. The *position* is the offset of the next
record ``poll`` will return; it moves as records are handed out, never as they are fetched,
so records fetched but not yet returned are not skipped by a commit.

Worked example: ``assign([("orders", 0)])`` with ``auto.offset.reset=earliest`` puts the
partition in AWAITING_RESET with strategy earliest; ListOffsets answers 0, :meth:`reset_done`
sets position 0 and FETCHING; after ``poll`` returns offsets 0-9 the position is 10.
``seek(("orders", 0), 3)`` sets position 3 and drops anything fetched from the old position.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from kafkalab.client.consumer.fetcher import ConsumerRecord
from kafkalab.errors import KafkaError
from kafkalab.storage.checkpoints import TopicPartition

EARLIEST, LATEST = -2, -1  # ListOffsets' special timestamps
RESET_TIMESTAMPS = {"earliest": EARLIEST, "latest": LATEST}


class PartitionState(enum.Enum):
    AWAITING_COMMITTED = "awaiting-committed"
    AWAITING_RESET = "awaiting-reset"
    FETCHING = "fetching"


class PartitionEvent(enum.Enum):
    COMMITTED_FOUND = "committed-found"
    NO_COMMITTED = "no-committed"
    RESET_DONE = "reset-done"
    OUT_OF_RANGE = "out-of-range"
    SEEK = "seek"
    SEEK_TO_END_OR_BEGINNING = "seek-to-end-or-beginning"


P, V = PartitionState, PartitionEvent
TRANSITIONS: dict[tuple[PartitionState, PartitionEvent], PartitionState] = {
    (P.AWAITING_COMMITTED, V.COMMITTED_FOUND): P.FETCHING,
    (P.AWAITING_COMMITTED, V.NO_COMMITTED): P.AWAITING_RESET,
    (P.AWAITING_RESET, V.RESET_DONE): P.FETCHING,
    (P.FETCHING, V.OUT_OF_RANGE): P.AWAITING_RESET,
    **{(state, V.SEEK): P.FETCHING for state in P},
    **{(state, V.SEEK_TO_END_OR_BEGINNING): P.AWAITING_RESET for state in P},
}


class IllegalPartitionStateError(KafkaError):
    """An event the table has no row for: a bug in the caller, named precisely."""


@dataclass(slots=True)
class PartitionPosition:
    """One assigned partition's state. Mutable; owned by one :class:`SubscriptionState`."""

    state: PartitionState
    reset_timestamp: int | None = None  # None: auto.offset.reset is none and no seek asked
    position: int | None = None
    buffered: list[ConsumerRecord] = field(default_factory=list)  # fetched, not yet returned
    buffered_next_offset: int = 0  # the position once ``buffered`` is all returned
    high_watermark: int = -1


class SubscriptionState:
    """The assigned partitions and their positions. Not thread-safe; owned by one consumer."""

    def __init__(self, reset_policy: str) -> None:
        self.reset_policy = reset_policy
        self.topics: tuple[str, ...] = ()  # subscribe(); empty after assign()
        self.partitions: dict[TopicPartition, PartitionPosition] = {}

    def add(self, tps: tuple[TopicPartition, ...], *, in_group: bool) -> None:
        for tp in tps:
            state = P.AWAITING_COMMITTED if in_group else P.AWAITING_RESET
            self.partitions[tp] = PartitionPosition(state, RESET_TIMESTAMPS.get(self.reset_policy))

    def remove(self, tps: tuple[TopicPartition, ...]) -> None:
        for tp in tps:
            self.partitions.pop(tp, None)

    def fire(self, tp: TopicPartition, event: PartitionEvent) -> PartitionPosition:
        entry = self.partitions[tp]
        after = TRANSITIONS.get((entry.state, event))
        if after is None:
            raise IllegalPartitionStateError(f"{tp[0]}-{tp[1]}: no transition from {entry.state.name} on {event.name}")
        entry.state = after
        return entry

    def in_state(self, state: PartitionState) -> list[TopicPartition]:
        return sorted(tp for tp, p in self.partitions.items() if p.state is state)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        entry = self.fire(tp, V.SEEK)
        entry.position, entry.buffered = offset, []

    def seek_to(self, tp: TopicPartition, timestamp: int) -> None:
        entry = self.fire(tp, V.SEEK_TO_END_OR_BEGINNING)
        entry.reset_timestamp, entry.position, entry.buffered = timestamp, None, []

    def committed_found(self, tp: TopicPartition, offset: int) -> None:
        if offset >= 0:
            self.fire(tp, V.COMMITTED_FOUND).position = offset
        else:
            self.fire(tp, V.NO_COMMITTED)

    def reset_done(self, tp: TopicPartition, offset: int) -> None:
        self.fire(tp, V.RESET_DONE).position = offset

    def out_of_range(self, tp: TopicPartition) -> None:
        entry = self.fire(tp, V.OUT_OF_RANGE)
        entry.reset_timestamp = RESET_TIMESTAMPS.get(self.reset_policy)
        entry.position, entry.buffered = None, []

    def fetchable(self) -> list[tuple[TopicPartition, int]]:
        """Partitions to fetch: FETCHING, with nothing fetched still waiting to be returned."""
        return [(tp, p.position) for tp, p in sorted(self.partitions.items())
                if p.state is P.FETCHING and not p.buffered and p.position is not None]

    def drain(self, max_records: int) -> list[ConsumerRecord]:
        """Up to ``max_records`` buffered records, round the partitions; positions move past them."""
        out: list[ConsumerRecord] = []
        for entry in self.partitions.values():
            if len(out) >= max_records:
                break
            if entry.state is not P.FETCHING or not entry.buffered:
                continue
            taken = entry.buffered[:max_records - len(out)]
            del entry.buffered[:len(taken)]
            out.extend(taken)
            entry.position = taken[-1].offset + 1 if entry.buffered else entry.buffered_next_offset
        return out

    def consumed_offsets(self) -> dict[TopicPartition, int]:
        """What auto commit commits: every FETCHING partition's position."""
        return {tp: p.position for tp, p in sorted(self.partitions.items())
                if p.state is P.FETCHING and p.position is not None}
