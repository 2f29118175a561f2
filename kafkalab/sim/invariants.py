"""Replication's promises, checked against a running simulation after every step.

Theory of operation
-------------------
A fault campaign is only as good as what it checks. After each step the checker looks at every
live replica's log on disk and at the controller's latest image, and names the first broken
promise it finds (raising :class:`InvariantViolation` with the seed, so the run can be replayed):

* **no acknowledged record is lost** -- every batch a producer saw acknowledged with acks=all is
  in the current leader's log at the offsets it was given, with the same values;
* **each leader epoch has one leader** -- no two images name different leaders for one epoch;
* **a leader's high watermark never falls within its epoch** -- the HW of the broker acting as
  leader of that epoch (a restarted broker that has not yet learned the metadata is not acting);
* **replicas agree below the high watermark** -- every record a replica holds below its own HW
  is, offset for offset, the record the leader holds there (the data consumers may have seen);
* **a fenced broker or a stale epoch cannot change an ISR** -- every AlterPartition the
  controller accepted came from the partition's leader at its current leader epoch, registered,
  unfenced and at its current broker epoch, as the image before the change shows.

Worked example of a violation it catches: with ``unclean.leader.election.enable=true`` and the
ISR down to a dead leader, an out-of-sync follower may be elected and the records only the old
leader had are gone; the first check after the election reports "acknowledged offset 41 of
orders-0 is missing from leader 2's log".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafkalab.records import iter_batches

if TYPE_CHECKING:
    from kafkalab.sim.cluster import SimCluster
    from kafkalab.storage import Log

READ_BYTES_MAX = 64 * 1024 * 1024  # a simulation's logs are small; a bound on one read


class InvariantViolation(AssertionError):
    """A replication promise was broken; the message names it and the seed replays it."""


@dataclass(frozen=True, slots=True)
class Acked:
    topic: str
    partition: int
    base_offset: int
    values: tuple[bytes | None, ...]


@dataclass(slots=True)
class ReplicationChecker:
    """Watches one :class:`SimCluster`. Not thread-safe; owned by one campaign run."""

    cluster: SimCluster
    acked: list[Acked] = field(default_factory=list)
    leaders: dict[tuple[str, int, int], int] = field(default_factory=dict)  # (topic, partition, epoch)
    high_watermarks: dict[tuple[str, int, int], int] = field(default_factory=dict)
    checks: int = 0
    violations: list[str] = field(default_factory=list)  # seen between checks, reported by the next

    def __post_init__(self) -> None:
        self.cluster.watch(self._on_event)

    def _on_event(self, kind: str, node_id: int, detail: Any) -> None:
        if kind == "alter-partition":
            request, response, before = detail
            self._check_alter_partition(request, response, before)

    def _check_alter_partition(self, request: Any, response: Any, before: Any) -> None:
        """Every ISR change the controller accepted must come from a live, current leader."""
        broker = before.brokers.get(request.broker_id)
        names = {t.topic_id: t.name for t in before.topics.values()}
        sent = {(t.topic_id, p.partition_index): p for t in request.topics for p in t.partitions}
        for topic in response.topics:
            for answer in topic.partitions:
                asked = sent.get((topic.topic_id, answer.partition_index))
                old = before.partition(names.get(topic.topic_id, ""), answer.partition_index)
                if response.error_code != 0 or answer.error_code != 0 or asked is None or old is None:
                    continue
                if old.isr == tuple(answer.isr):
                    continue  # nothing changed
                if broker is None or broker.fenced or broker.broker_epoch != request.broker_epoch:
                    self.violations.append(f"broker {request.broker_id} (epoch {request.broker_epoch}) changed the "
                                           f"ISR of partition {answer.partition_index} while fenced or stale: {broker}")
                elif old.leader != request.broker_id or old.leader_epoch != asked.leader_epoch:
                    self.violations.append(f"broker {request.broker_id} changed the ISR of partition "
                                           f"{answer.partition_index} at leader epoch {asked.leader_epoch}; "
                                           f"leader {old.leader} epoch {old.leader_epoch}")

    def record_ack(self, topic: str, partition: int, base_offset: int, values: tuple[bytes | None, ...]) -> None:
        self.acked.append(Acked(topic, partition, base_offset, values))

    def check(self) -> None:
        self.checks += 1
        if self.violations:
            self._fail(self.violations[0])
        for topic in self.cluster.controller.image.topics.values():
            for index, registration in topic.partitions.items():
                key = (topic.name, index, registration.leader_epoch)
                if registration.leader >= 0 and self.leaders.setdefault(key, registration.leader) != registration.leader:
                    self._fail(f"leader epoch {registration.leader_epoch} of {topic.name}-{index} has leaders "
                               f"{self.leaders[key]} and {registration.leader}")
                self._check_partition(topic.name, index, registration.leader, registration.leader_epoch)

    def _check_partition(self, topic: str, index: int, leader: int, epoch: int) -> None:
        leader_log = self._live_log(leader, topic, index)
        if leader_log is None:
            return  # offline partition: nothing is served, nothing to compare
        key = (topic, index, epoch)
        if self._acts_as_leader(leader, topic, index, epoch):
            if leader_log.high_watermark < self.high_watermarks.get(key, -1):
                self._fail(f"leader {leader}'s HW of {topic}-{index} fell to {leader_log.high_watermark} in epoch {epoch}")
            self.high_watermarks[key] = leader_log.high_watermark
        leader_records = _records(leader_log, leader_log.log_end_offset)
        for acked in self.acked:
            if (acked.topic, acked.partition) == (topic, index):
                for position, value in enumerate(acked.values):
                    offset = acked.base_offset + position
                    if leader_records.get(offset, b"\0missing") != value:
                        self._fail(f"acknowledged offset {offset} of {topic}-{index} is missing from "
                                   f"leader {leader}'s log")
        for node_id in self.cluster.nodes:
            replica_log = self._live_log(node_id, topic, index)
            if replica_log is None or node_id == leader:
                continue
            for offset, value in _records(replica_log, replica_log.high_watermark).items():
                if leader_records.get(offset, b"\0missing") != value:
                    self._fail(f"replica {node_id} holds offset {offset} of {topic}-{index} below its HW "
                               f"{replica_log.high_watermark}, unlike leader {leader}")

    def _acts_as_leader(self, node_id: int, topic: str, index: int, epoch: int) -> bool:
        hosted = self.cluster.nodes[node_id].broker.replica_manager.partition(topic, index)
        return hosted is not None and hosted.partition.is_leader and hosted.partition.leader_epoch == epoch

    def _live_log(self, node_id: int, topic: str, index: int) -> Log | None:
        node = self.cluster.nodes.get(node_id)
        if node is None or not node.alive:
            return None
        hosted = node.broker.replica_manager.partition(topic, index)
        return None if hosted is None else hosted.log

    def _fail(self, what: str) -> None:
        raise InvariantViolation(
            f"{what} (seed {self.cluster.seed}, check {self.checks}; replay: "
            f"python -m kafkalab.sim.campaign --seed {self.cluster.seed})")


def _records(log: Log, below: int) -> dict[int, bytes | None]:
    """Offset -> value of every record below offset ``below`` (whole batches only)."""
    out: dict[int, bytes | None] = {}
    offset = log.log_start_offset
    if offset >= below:
        return out
    data = log.read(offset, READ_BYTES_MAX, max_offset=below).read_bytes()
    for batch in iter_batches(data):
        for record in batch.records:
            if record.offset < below:
                out[record.offset] = record.value
    return out


__all__ = ["Acked", "InvariantViolation", "ReplicationChecker"]
