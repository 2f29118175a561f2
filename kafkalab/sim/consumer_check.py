"""A consumer's promise, checked where it matters: at the moment a Fetch answer reaches it.

Theory of operation
-------------------
Consumers read only *committed* records -- those below the high watermark -- because a record
above it may still vanish in a leader failover (the new leader never had it, and the other
replicas truncate to the new leader's log). So the campaign runs a kafkalab consumer beside its
producers and watches every Fetch answer the consumer receives. Two checks:

* **at delivery**, every record batch in the answer ends below the partition's committed end:
  the highest high watermark any replica of the partition has shown so far (sampled from the
  replication checker's record of leaders' HWs, and from every live replica right now). A
  broker that served records between its HW and its log end offset fails this at once;
* **at the end of the run**, every record the consumer read is, offset for offset, the record
  the final leader holds: committed data, once read, never changes or disappears.

Worked example of a violation: a leader that served consumers up to its LEO would hand a
consumer offset 12 while the followers are still at 11; the answer is delivered while every
replica's HW is 11, and the check reports "consumer read orders-0 offset 12, at or above the
committed end 11".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafkalab.client.consumer import ConsumerCore
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.records import iter_batches
from kafkalab.sim.invariants import InvariantViolation

if TYPE_CHECKING:
    from kafkalab.sim.cluster import SimCluster
    from kafkalab.sim.invariants import ReplicationChecker

TopicPartition = tuple[str, int]


@dataclass(slots=True)
class ConsumerReadCheck:
    """Watches one consumer of one :class:`SimCluster`. Not thread-safe; owned by one run."""

    cluster: SimCluster
    replication: ReplicationChecker
    consumer: ConsumerCore
    read: dict[TopicPartition, dict[int, bytes | None]] = field(default_factory=dict)
    answers_checked: int = 0
    _fetches: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        poll_requests, on_response = self.consumer.poll_requests, self.consumer.on_response

        def noting_fetches(now_ms: int) -> list[Any]:
            requests = poll_requests(now_ms)
            self._fetches.update(r.request_id for r in requests if r.api_key == ApiKey.FETCH)
            return requests

        def checking(request_id: int, body: Any, now_ms: int) -> None:
            if request_id in self._fetches:
                self._fetches.discard(request_id)
                self._check_answer(body)
            on_response(request_id, body, now_ms)

        self.consumer.poll_requests = noting_fetches  # type: ignore[method-assign]
        self.consumer.on_response = checking  # type: ignore[method-assign]

    def committed_end(self, topic: str, partition: int) -> int:
        """The highest HW seen for the partition: the checker's samples, and every live replica now."""
        sampled = [hw for (t, p, _epoch), hw in self.replication.high_watermarks.items() if (t, p) == (topic, partition)]
        for node in self.cluster.nodes.values():
            hosted = node.broker.replica_manager.partition(topic, partition) if node.alive else None
            if hosted is not None:
                sampled.append(hosted.log.high_watermark)
        return max(sampled, default=0)

    def _check_answer(self, body: Any) -> None:
        self.answers_checked += 1
        for topic in body.responses:
            for answer in topic.partitions:
                if answer.error_code != 0 or not answer.records:
                    continue
                end = self.committed_end(topic.topic, answer.partition_index)
                for batch in iter_batches(bytes(answer.records)):
                    if batch.header.last_offset >= end:
                        self._fail(f"consumer read {topic.topic}-{answer.partition_index} offset "
                                   f"{batch.header.last_offset}, at or above the committed end {end}")
                    if batch.header.is_control:
                        continue
                    seen = self.read.setdefault((topic.topic, answer.partition_index), {})
                    for record in batch.records:
                        seen[record.offset] = record.value

    def check_read_records_kept(self, leader_records: Callable[[str, int], dict[int, bytes | None] | None]) -> None:
        """Every record read is still the leader's record at its offset (call once all replicas
        are back and caught up); ``leader_records`` gives the leader's offset -> value."""
        for (topic, partition), seen in sorted(self.read.items()):
            held = leader_records(topic, partition)
            if held is None:
                continue
            for offset, value in sorted(seen.items()):
                if held.get(offset, b"\0missing") != value:
                    self._fail(f"consumer read {topic}-{partition} offset {offset}, which the leader no "
                               "longer holds as it was read")

    def _fail(self, what: str) -> None:
        raise InvariantViolation(
            f"{what} (seed {self.cluster.seed}; replay: python -m kafkalab.sim.campaign --seed {self.cluster.seed})")


__all__ = ["ConsumerReadCheck"]
