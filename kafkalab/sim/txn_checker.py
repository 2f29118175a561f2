"""A Jepsen-style checker for transactions: a history of writes and reads in, named anomalies out.

Theory of operation
-------------------
Jepsen's Kafka analysis judges a run by its *history* alone: what every client asked for, what
it was told, and what every read returned. This checker does the same for transactional
producers and read_committed consumers, so it knows nothing of brokers or logs and can be fed
a made-up history to prove it catches each anomaly.

A transaction (:class:`TxnWrite`) writes one record, its :attr:`~TxnWrite.value`
``"<transactional id>/<number>"``, to each of its partitions, and ends with one of three
outcomes, as its producer saw them:

* COMMITTED -- EndTxn(commit) was answered NONE;
* ABORTED -- EndTxn(abort) was answered NONE, or the producer never asked to commit (a
  coordinator only commits on request; the timeout or a fence aborts);
* UNKNOWN -- commit was asked for and never acknowledged: either result is legal, but only
  whole.

A :class:`Read` is one read_committed answer for one partition: the last stable offset and
high watermark it reported and the (offset, value) pairs the consumer kept. Reads taken during
the run and the final read of every partition (after the faults healed) are checked:

================  ===================================================================
anomaly           what it means
================  ===================================================================
aborted-read      a record of an ABORTED transaction was read (Adya's G1a)
partial-read      a transaction is visible in some but not all of its partitions at the
                  end: an intermediate state of a transaction was read (atomicity broken)
lost-write        a COMMITTED transaction, or one a consumer read during the run, is
                  missing from a partition at the end
duplicate         one value at two offsets of a partition
read-past-lso     a read_committed answer returned a record at or past the last stable
                  offset it reported
hanging-txn       at the end a partition's last stable offset is still below its high
                  watermark, or a group's offset commit is still pending: some
                  transaction never got its marker
garbage-read      a value no transaction wrote to that partition
================  ===================================================================

Each transaction also commits, through its producer's group (``sendOffsetsToTransaction``),
the offset ``number`` of an input partition, so the group's committed offset at the end names
the last transaction whose offsets committed. It must not be an ABORTED transaction's
(aborted-read), nor older than the last COMMITTED one (lost-write), and that transaction's
records must be visible (partial-read: its offsets committed without its writes).

Worked example: ``app/3`` wrote ``orders-0`` and ``orders-4`` and was COMMITTED. The final read
finds ``app/3`` at offset 12 of ``orders-0`` only: ``lost-write`` ("app/3 committed, missing from
orders-4") and ``partial-read`` ("app/3 visible in orders-0, not in orders-4").
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

TopicPartition = tuple[str, int]
ANOMALY_KINDS = ("aborted-read", "partial-read", "lost-write", "duplicate", "read-past-lso", "hanging-txn",
                 "garbage-read")


class Outcome(enum.Enum):
    COMMITTED = "committed"
    ABORTED = "aborted"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class TxnWrite:
    """One transaction as its producer saw it."""

    transactional_id: str
    number: int
    partitions: tuple[TopicPartition, ...]
    outcome: Outcome

    def __post_init__(self) -> None:
        assert "/" not in self.transactional_id and self.partitions, self

    @property
    def value(self) -> bytes:
        return f"{self.transactional_id}/{self.number}".encode()


@dataclass(frozen=True, slots=True)
class Read:
    """One read_committed answer for one partition, as the consumer kept it."""

    tp: TopicPartition
    last_stable_offset: int
    high_watermark: int
    records: tuple[tuple[int, bytes], ...]  # (offset, value), in offset order


@dataclass(frozen=True, slots=True)
class Anomaly:
    kind: str
    detail: str

    def __post_init__(self) -> None:
        assert self.kind in ANOMALY_KINDS, self.kind


def check(writes: Iterable[TxnWrite], reads: Sequence[Read], final: Sequence[Read],
          offsets: Mapping[str, int | None] | None = None) -> list[Anomaly]:
    """Every anomaly in the history: ``reads`` taken during the run, ``final`` one read per
    partition from its log start to its high watermark once the run settled, ``offsets`` each
    transactional id's committed input offset at the end (-1: none; None: still pending)."""
    by_value = {w.value: w for w in writes}
    if offsets is not None:
        return _offsets(by_value, final, offsets) + check(by_value.values(), reads, final)
    anomalies = _foreign_and_aborted(by_value, [*reads, *final])
    anomalies += _past_lso(reads) + _duplicates([*reads, *final])
    visible: dict[bytes, set[TopicPartition]] = {}
    for read in final:
        for _, value in read.records:
            visible.setdefault(value, set()).add(read.tp)
        if read.last_stable_offset < read.high_watermark:
            anomalies.append(Anomaly("hanging-txn", f"{_name(read.tp)}: last stable offset "
                                     f"{read.last_stable_offset} < high watermark {read.high_watermark}"))
    observed = {(value, read.tp) for read in reads for _, value in read.records}
    for write in by_value.values():
        seen = visible.get(write.value, set())
        missing = [tp for tp in write.partitions if tp not in seen]
        if seen and missing and write.outcome is not Outcome.ABORTED:
            anomalies.append(Anomaly("partial-read", f"{write.value.decode()} visible in {_names(sorted(seen))}, "
                                     f"not in {_names(missing)}"))
        lost = [tp for tp in missing if write.outcome is Outcome.COMMITTED or (write.value, tp) in observed]
        if lost:
            anomalies.append(Anomaly("lost-write", f"{write.value.decode()} {write.outcome.value}, missing from "
                                     f"{_names(lost)} at the end"))
    return anomalies


def _offsets(by_value: dict[bytes, TxnWrite], final: Sequence[Read],
             offsets: Mapping[str, int | None]) -> list[Anomaly]:
    anomalies = []
    visible = {(value, read.tp) for read in final for _, value in read.records}
    for transactional_id, offset in sorted(offsets.items()):
        if offset is None:
            anomalies.append(Anomaly("hanging-txn", f"{transactional_id}'s offset commit is still pending"))
            continue
        mine = [w for w in by_value.values() if w.transactional_id == transactional_id]
        last_committed = max((w.number for w in mine if w.outcome is Outcome.COMMITTED), default=-1)
        if offset < last_committed:
            anomalies.append(Anomaly("lost-write", f"{transactional_id}/{last_committed} committed, its group's "
                                     f"offset is {offset}"))
        write = by_value.get(f"{transactional_id}/{offset}".encode())
        if offset < 0 or write is None:
            continue
        if write.outcome is Outcome.ABORTED:
            anomalies.append(Anomaly("aborted-read", f"{write.value.decode()} (aborted) committed its offset"))
        elif any((write.value, tp) not in visible for tp in write.partitions):
            anomalies.append(Anomaly("partial-read", f"{write.value.decode()} committed its offset, not all "
                                     f"its records"))
    return anomalies


def _foreign_and_aborted(by_value: dict[bytes, TxnWrite], reads: Sequence[Read]) -> list[Anomaly]:
    anomalies, reported = [], set()
    for read in reads:
        for offset, value in read.records:
            write = by_value.get(value)
            if (value, read.tp) in reported:
                continue
            reported.add((value, read.tp))
            if write is None or read.tp not in write.partitions:
                anomalies.append(Anomaly("garbage-read", f"{value!r} at {_name(read.tp)}@{offset}: "
                                         f"no transaction wrote it there"))
            elif write.outcome is Outcome.ABORTED:
                anomalies.append(Anomaly("aborted-read", f"{value.decode()} (aborted) read at "
                                         f"{_name(read.tp)}@{offset}"))
    return anomalies


def _past_lso(reads: Sequence[Read]) -> list[Anomaly]:
    return [Anomaly("read-past-lso", f"{_name(r.tp)}@{offset} returned with last stable offset "
                    f"{r.last_stable_offset}")
            for r in reads for offset, _ in r.records if offset >= r.last_stable_offset]


def _duplicates(reads: Sequence[Read]) -> list[Anomaly]:
    offsets: dict[tuple[TopicPartition, bytes], set[int]] = {}
    for read in reads:
        for offset, value in read.records:
            offsets.setdefault((read.tp, value), set()).add(offset)
    return [Anomaly("duplicate", f"{value.decode(errors='replace')} at {_name(tp)} offsets {sorted(at)}")
            for (tp, value), at in sorted(offsets.items()) if len(at) > 1]


def _name(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"


def _names(tps: Iterable[TopicPartition]) -> str:
    return ", ".join(_name(tp) for tp in tps)


def summary(anomalies: Sequence[Anomaly]) -> str:
    """``"lost-write x2, duplicate x1: <first detail>"`` -- for an exception message."""
    counts: dict[str, int] = {}
    for anomaly in anomalies:
        counts[anomaly.kind] = counts.get(anomaly.kind, 0) + 1
    first = anomalies[0].detail if anomalies else ""
    return ", ".join(f"{kind} x{count}" for kind, count in counts.items()) + (f": {first}" if first else "")


__all__ = ["ANOMALY_KINDS", "Anomaly", "Outcome", "Read", "TxnWrite", "check", "summary"]
