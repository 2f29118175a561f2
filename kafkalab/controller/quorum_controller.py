"""A controller of a KRaft quorum: decisions go through the Raft log and count once committed.

Theory of operation
-------------------
Kafka's ``QuorumController`` sits on a ``KafkaRaftClient``. Every controller of the quorum runs
one; the one whose Raft node is the leader is the *active* controller. :class:`QuorumController`
is that pairing, sans-I/O, over a :class:`~kafkalab.controller.raft.node.RaftNode`:

* **Deciding.** The rules are :class:`~kafkalab.controller.local.LocalController`'s, not a copy
  of them: the active controller holds a ``LocalController`` whose record log is the Raft log.
  Each decision is appended as one batch (``RaftNode.append``), and that ``LocalController``
  replays it at once into its own *uncommitted* image, so the next decision sees the one before
  (Kafka's controller does the same with its in-memory timeline).
* **Committing.** A record counts once the quorum's high watermark passes it. Every controller
  -- active or not -- replays the committed batches of its own log, in order, into
  :attr:`QuorumController.image`, and publishes that image to its subscribers. Nothing a
  subscriber sees can be lost.
* **Claiming leadership.** A newly elected leader first writes its LEADER_CHANGE batch; only
  when that batch commits has it replayed everything earlier leaders committed, and only then
  does it become active, its ``LocalController`` starting from the committed image (Kafka's
  ``QuorumController`` claims in ``handleLeaderChange`` once its epoch's first offset commits).
* **Losing leadership.** When the node stops leading, the uncommitted image is dropped. What
  the old leader wrote but did not commit may be truncated by the next leader; what committed is
  in every later leader's log (Raft's leader completeness).
* **Refusing.** A controller that is not active answers writes with NOT_CONTROLLER, naming the
  leader it knows. Stale epochs never get that far: the Raft layer fences them.

Worked example (3 controllers, voters 1, 2, 3): 2 wins epoch 1 and writes LEADER_CHANGE at
offset 0; when 1 fetches at offset 1 the high watermark becomes 1 and 2 is active. It writes
the bootstrap FeatureLevelRecord (offset 1), then ``create_topic("orders", 3, 3)`` appends
TopicRecord + 3 PartitionRecords at offsets 2..5 and returns the topic at once -- but
``image.topics`` shows ``orders`` on every controller only after the high watermark reaches 6.

Reads that decide nothing (``list_partition_reassignments``, ``imbalanced_partitions``) are
answered by the active controller from its uncommitted image, which includes its own pending
writes; :attr:`QuorumController.image` is the committed image every controller has.

The runtime (the simulation, or a process's network loop) drives it like the Raft node:
``tick(now_ms)`` and ``handle(src, correlation_id, message, now_ms)`` return the messages to
send; sends produced by a write between two calls wait in :meth:`take_sends`.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from kafkalab.controller.local import ImageListener, LocalController
from kafkalab.controller.partition_change import RECOVERED, Election
from kafkalab.controller.raft.metadata_log import batches_below
from kafkalab.controller.raft.messages import RaftMessage, Send
from kafkalab.controller.raft.leader import ReplicaDescription
from kafkalab.controller.raft.node import Output, QuorumDescription, RaftNode
from kafkalab.controller.raft.state import NO_ID, QuorumStateKind
from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.metadata.image import BrokerRegistration, MetadataImage, PartitionRegistration, TopicImage
from kafkalab.metadata.record_log import READ_CHUNK_BYTES, SOLE_VOTER_EPOCH, replay_batches

T = TypeVar("T")


class NotControllerError(KafkaError):
    """A write sent to a controller that is not the active one (NOT_CONTROLLER, code 41)."""

    def __init__(self, message: str, active_id: int) -> None:
        super().__init__(message, error_code=ErrorCode.NOT_CONTROLLER)
        self.active_id = active_id


class _RaftRecordLog:
    """The active controller's :class:`~kafkalab.metadata.record_log.RecordLog`: appends go to
    the Raft leader, their messages wait in the controller's outbox."""

    def __init__(self, owner: QuorumController) -> None:
        self._owner = owner

    def append(self, values: Sequence[bytes], now_ms: int) -> int:
        base_offset, out = self._owner.node.append(values, now_ms)
        self._owner._outbox.extend(out.sends)
        self._owner.last_appended_offset = base_offset + len(values) - 1
        return self._owner.last_appended_offset


class QuorumController:
    """One controller of the quorum: its Raft node, its committed image and, while it is the
    active controller, the decisions. Not thread-safe; owned by one controller's event loop."""

    def __init__(self, node: RaftNode, rng: random.Random, image: MetadataImage | None = None) -> None:
        self.node = node
        self._rng = rng
        self.image = MetadataImage() if image is None else image  # committed records only
        self.applied_offset = self.image.offset + 1  # next committed offset to replay
        self.last_appended_offset = -1
        self._active: LocalController | None = None
        self._active_epoch = -1
        self._outbox: list[Send] = []
        self._listeners: list[ImageListener] = []

    # --- driving it ----------------------------------------------------------------------------

    def tick(self, now_ms: int) -> list[Send]:
        return self._absorb(self.node.tick(now_ms))

    def handle(self, src: int, correlation_id: int, message: RaftMessage, now_ms: int) -> list[Send]:
        return self._absorb(self.node.handle(src, correlation_id, message, now_ms))

    def take_sends(self) -> list[Send]:
        """Messages produced by writes since the last call (appends wake waiting fetches)."""
        sends, self._outbox = self._outbox, []
        return sends

    def _absorb(self, out: Output) -> list[Send]:
        self._outbox.extend(out.sends)
        self._catch_up()
        self._claim_or_renounce()
        return self.take_sends()

    def _catch_up(self) -> None:
        """Replay the committed batches not yet in :attr:`image`, then publish it."""
        log, before = self.node.log, self.applied_offset
        if self.applied_offset < log.log_start_offset:  # the records below were snapshotted away
            self.image = log.latest_snapshot_image()
            self.applied_offset = self.image.offset + 1
        while self.applied_offset < log.high_watermark:
            data = log.read(self.applied_offset, READ_CHUNK_BYTES)
            self.image = replay_batches(self.image, batches_below(data, log.high_watermark))
            assert self.image.offset >= self.applied_offset, (
                f"no progress replaying committed metadata at offset {self.applied_offset}")
            self.applied_offset = self.image.offset + 1
        if self.applied_offset != before:
            self.publish()

    def _claim_or_renounce(self) -> None:
        node = self.node
        leading = node.kind is QuorumStateKind.LEADER and node.leader is not None
        if self._active is not None and (not leading or node.epoch != self._active_epoch):
            self._active, self._active_epoch = None, -1  # the uncommitted image goes with it
        if leading and self._active is None and node.leader is not None:
            if self.applied_offset > node.leader.epoch_start_offset:  # our LEADER_CHANGE committed
                self._active_epoch = node.epoch
                self._active = LocalController((), self._rng, _RaftRecordLog(self), self.image,
                                               clock_ms=lambda: self.node.now_ms)
                self._catch_up()  # a one-voter quorum commits the bootstrap record at once

    # --- who is active -------------------------------------------------------------------------

    @property
    def is_active(self) -> bool:
        return self._active is not None

    @property
    def active_id(self) -> int:
        """The active controller as this one knows it (-1: none known)."""
        return self.node.leader_id

    @property
    def epoch(self) -> int:
        return self.node.epoch

    def snapshot(self, now_ms: int) -> tuple[int, int]:
        """Write the committed image as a ``.checkpoint`` and start the log after it (Kafka
        snapshots every ``metadata.log.max.record.bytes.between.snapshots`` and later deletes the
        log below); returns the snapshot id (end offset, epoch)."""
        return self.node.log.snapshot_and_clean(self.image, now_ms)

    def describe_quorum(self, now_ms: int) -> QuorumDescription:
        """DescribeQuorum's answer; raises NotLeaderError on a controller that is not the leader."""
        return self.node.describe_quorum(now_ms)

    def is_committed(self, offset: int) -> bool:
        return offset < self.node.log.high_watermark

    def _decider(self) -> LocalController:
        if self._active is None:
            leader = self.node.leader_id
            hint = f"the active controller is {leader}" if leader != NO_ID else "no active controller is known"
            raise NotControllerError(
                f"controller {self.node.local_id} is not the active controller of epoch {self.node.epoch}; {hint}",
                active_id=leader)
        return self._active

    def _write(self, decide: Callable[[LocalController], T]) -> T:
        result = decide(self._decider())
        self._catch_up()
        return result

    # --- LocalController's API -----------------------------------------------------------------

    def subscribe(self, listener: ImageListener) -> Callable[[], None]:
        """Receive every committed image published from now on."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def publish(self) -> None:
        for listener in self._listeners:
            listener(self.image)

    def register_broker(self, broker: BrokerRegistration) -> None:
        self._write(lambda c: c.register_broker(broker))

    def fence_broker(self, broker_id: int, unclean_enabled: Callable[[str], bool] = lambda topic: False) -> None:
        self._write(lambda c: c.fence_broker(broker_id, unclean_enabled))

    def restore_topic(self, name: str, topic_id: uuid.UUID, partition_count: int, broker_id: int) -> None:
        self._write(lambda c: c.restore_topic(name, topic_id, partition_count, broker_id))

    def create_topic(self, name: str, partition_count: int, replication_factor: int) -> TopicImage:
        return self._write(lambda c: c.create_topic(name, partition_count, replication_factor))

    def new_topic_id(self) -> uuid.UUID:
        return self._decider().new_topic_id()

    def create_partitions(self, name: str, partition_count: int) -> TopicImage:
        return self._write(lambda c: c.create_partitions(name, partition_count))

    def delete_topic(self, name: str) -> None:
        self._write(lambda c: c.delete_topic(name))

    def alter_partition(
        self, broker_id: int, topic: str, partition: int, leader_epoch: int, partition_epoch: int,
        new_isr: Sequence[tuple[int, int]], leader_recovery_state: int = RECOVERED,
    ) -> tuple[ErrorCode, PartitionRegistration | None]:
        return self._write(lambda c: c.alter_partition(broker_id, topic, partition, leader_epoch,
                                                       partition_epoch, new_isr, leader_recovery_state))

    def alter_partition_reassignments(
        self, targets: Sequence[tuple[str, int, Sequence[int] | None]],
        unclean_enabled: Callable[[str], bool] = lambda topic: False, *,
        allow_replication_factor_change: bool = True,
    ) -> list[Any]:
        return self._write(lambda c: c.alter_partition_reassignments(
            targets, unclean_enabled, allow_replication_factor_change=allow_replication_factor_change))

    def list_partition_reassignments(
        self, wanted: Sequence[tuple[str, Sequence[int]]] | None = None,
    ) -> list[Any]:
        return self._decider().list_partition_reassignments(wanted)

    def elect_leaders(self, election: Election, partitions: Sequence[tuple[str, int]] | None) -> list[Any]:
        return self._write(lambda c: c.elect_leaders(election, partitions))

    def imbalanced_partitions(self) -> list[tuple[str, int]]:
        return self._decider().imbalanced_partitions()

    def balance_partition_leaders(self, max_elections: int | None = None) -> bool:
        if max_elections is None:
            return self._write(lambda c: c.balance_partition_leaders())
        return self._write(lambda c: c.balance_partition_leaders(max_elections))

    def allocate_producer_ids(self, broker_id: int, broker_epoch: int) -> range:
        return self._write(lambda c: c.allocate_producer_ids(broker_id, broker_epoch))


def sole_voter_description(node_id: int, log_end_offset: int, now_ms: int) -> QuorumDescription:
    """DescribeQuorum for a node that is its own quorum (a lone kafkalab node): leader of
    :data:`SOLE_VOTER_EPOCH`, everything flushed is committed, and it is caught up with itself."""
    voter = ReplicaDescription(node_id, log_end_offset, now_ms, now_ms)
    return QuorumDescription(node_id, SOLE_VOTER_EPOCH, log_end_offset, (voter,))


__all__ = ["NotControllerError", "QuorumController", "sole_voter_description"]
