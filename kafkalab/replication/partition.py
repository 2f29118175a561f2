"""A partition on one broker: leader epoch, ISR, high watermark and the followers' states.

Theory of operation
-------------------
Mirrors Kafka's ``Partition``. The log (``kafkalab.storage.Log``) knows offsets; the partition
knows the replication around them. On the leader it tracks every follower's
:class:`~kafkalab.replication.replica.ReplicaState` from their fetches and decides three things:

1. **The high watermark** (HW): the smallest LEO among the replicas that count, and only ever
   forward. Those that count are the *maximal ISR* -- the committed ISR plus a follower whose
   admission is proposed but not yet confirmed (KIP-497: waiting for one more replica is always
   safe) -- and any follower that is caught up and eligible, so a follower about to rejoin is
   not overtaken forever. While the ISR is smaller than ``min.insync.replicas`` the HW stands
   still: nothing is committed that fewer replicas than promised hold.
2. **ISR changes.** A follower whose LEO reaches the HW (and the start of the current leader
   epoch) should rejoin; an ISR member not caught up within ``replica.lag.time.max.ms`` should
   leave. The leader does not change the ISR itself: it returns an
   :class:`AlterPartitionProposal` for the controller and applies the result when the
   controller's answer arrives. One proposal is in flight at a time.
3. **acks=all.** A produce with ``acks=-1`` at offset ``o`` is done when the HW passes ``o``,
   and fails with NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below
   ``min.insync.replicas`` meanwhile.

Worked example (replicas [1, 2, 3], leader 1, ISR [1, 2, 3], min.insync.replicas 2)::

    leader appends offsets 0..9         LEO 10, HW 0
    fetch from 2 at offset 10           HW stays 0: replica 3 is in the ISR at LEO 0
    fetch from 3 at offset 6            HW 6
    30 s pass with 3 stuck at 6         maybe_shrink_isr -> propose ISR [1, 2]
    controller accepts                  ISR [1, 2], HW 10 (min(10, 10))

Nothing here does I/O or reads a clock: every call takes ``now_ms``, and what should leave the
node (a proposal to the controller) is returned to the caller, the replica manager.
Not thread-safe; owned by one replica manager.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.metadata.image import NO_LEADER, PartitionRegistration
from kafkalab.replication import events as ev
from kafkalab.replication.replica import ReplicaState
from kafkalab.replication.truncation import EpochCache, EpochEndOffset, diverging_epoch
from kafkalab.storage.log_append import LogAppendInfo
from kafkalab.storage.producer_state import AppendOrigin


class MinIsrConfig(Protocol):
    @property
    def min_insync_replicas(self) -> int: ...


class ReplicaLog(Protocol):
    """What a partition needs from its local log (``kafkalab.storage.Log`` provides it)."""

    high_watermark: int
    log_start_offset: int

    @property
    def config(self) -> MinIsrConfig: ...

    @property
    def log_end_offset(self) -> int: ...
    @property
    def leader_epoch_cache(self) -> EpochCache: ...
    def maybe_increment_high_watermark(self, offset: int) -> bool: ...
    def assign_epoch_start_offset(self, leader_epoch: int, start_offset: int) -> None: ...
    def append_as_leader(
        self, records: bytes | bytearray | memoryview, leader_epoch: int, *, in_place: bool = False,
        origin: AppendOrigin = AppendOrigin.CLIENT,
    ) -> LogAppendInfo: ...


class IsrEligibility(Protocol):
    """The metadata image's view of whether a broker may join an ISR."""

    def is_isr_eligible(self, broker_id: int, fetch_broker_epoch: int | None) -> bool: ...


class NotLeaderOrFollowerError(KafkaError):
    """The request was for a leader or follower this broker is not (any more)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER)


class LeaderEpochError(KafkaError):
    """A request named a leader epoch other than ours: FENCED_LEADER_EPOCH when it is older
    (the sender must refresh its metadata), UNKNOWN_LEADER_EPOCH when newer (we must)."""


class NotEnoughReplicasError(KafkaError):
    """acks=all refused before the append: the ISR is below min.insync.replicas."""

    def __init__(self, message: str) -> None:
        super().__init__(message, error_code=ErrorCode.NOT_ENOUGH_REPLICAS)


@dataclass(frozen=True, slots=True)
class ReplicationSettings:
    """The broker's replication configs. ``min.insync.replicas`` is a topic config, so each
    partition reads it from its log's config, which follows dynamic alters."""

    replica_lag_time_max_ms: int = 30_000  # KIP-537; 10 s before Kafka 2.5


@dataclass(frozen=True, slots=True)
class AlterPartitionProposal:
    """An ISR change the leader asks the controller for (one AlterPartition topic-partition)."""

    topic: str
    partition: int
    leader_id: int
    leader_epoch: int
    partition_epoch: int
    new_isr: tuple[int, ...]
    new_isr_broker_epochs: tuple[int, ...]  # parallel to new_isr; -1 where unknown
    kind: str  # "expand" or "shrink"


@dataclass(frozen=True, slots=True)
class IsrState:
    """The committed ISR, and the change in flight if there is one."""

    isr: frozenset[int]
    pending: AlterPartitionProposal | None = None

    @property
    def maximal_isr(self) -> frozenset[int]:
        """The ISR to wait for: a proposed addition counts at once, a proposed removal only
        once the controller confirms it (either way the HW errs on the safe side)."""
        if self.pending is not None and self.pending.kind == "expand":
            return self.isr | frozenset(self.pending.new_isr)
        return self.isr


class Partition:
    """One topic-partition hosted by this broker, as leader or follower."""

    def __init__(
        self, topic: str, partition: int, local_broker_id: int, log: ReplicaLog,
        settings: ReplicationSettings, eligibility: IsrEligibility, local_broker_epoch: int = -1,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.local_broker_id = local_broker_id
        self.local_broker_epoch = local_broker_epoch  # this broker's registration epoch
        self.log = log
        self.settings = settings
        self.eligibility = eligibility
        self.leader_id = NO_LEADER
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.replicas: tuple[int, ...] = ()
        self.isr_state = IsrState(frozenset())
        self.leader_epoch_start_offset: int | None = None
        self.followers: dict[int, ReplicaState] = {}
        self._listeners: list[Callable[[ev.ReplicationEvent], None]] = []
        # Kafka's DelayedOperations.checkAndCompleteAll: parked produces and fetches on this
        # partition are re-checked whenever the HW moves. Set by the replica manager.
        self.on_high_watermark_moved: Callable[[str, int], None] | None = None

    # --- observation ---------------------------------------------------------------------------

    def subscribe(self, listener: Callable[[ev.ReplicationEvent], None]) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def _emit(self, event: ev.ReplicationEvent) -> None:
        for listener in self._listeners:
            listener(event)

    @property
    def _watched(self) -> bool:
        return bool(self._listeners)

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_broker_id

    @property
    def isr(self) -> frozenset[int]:
        return self.isr_state.isr

    @property
    def is_under_min_isr(self) -> bool:
        return self.is_leader and len(self.isr) < self.log.config.min_insync_replicas

    # --- becoming leader or follower -----------------------------------------------------------

    def make_leader(self, registration: PartitionRegistration, now_ms: int) -> bool:
        """Apply a registration naming this broker leader; True if it was not leader before.

        A registration older than what we applied (lower partition epoch) is ignored."""
        assert registration.leader == self.local_broker_id
        if registration.partition_epoch < self.partition_epoch:
            return False
        is_new_leader = not self.is_leader
        old_isr = tuple(sorted(self.isr))
        self._set_assignment(registration, leader=True)
        new_epoch = registration.leader_epoch > self.leader_epoch
        if new_epoch:
            start = self.log.log_end_offset
            self.log.assign_epoch_start_offset(registration.leader_epoch, start)
            self.followers = {
                replica_id: state.reset(now_ms, start, is_new_leader=is_new_leader,
                                        in_sync=replica_id in registration.isr)
                for replica_id, state in self.followers.items()
            }
            self.leader_epoch = registration.leader_epoch
            self.leader_epoch_start_offset = start
        self.partition_epoch = registration.partition_epoch
        self.leader_id = self.local_broker_id
        if self._watched:
            new_isr = tuple(sorted(self.isr))
            if new_epoch or is_new_leader:
                self._emit(ev.BecameLeader(self.topic, self.partition, self.leader_epoch, new_isr))
            elif new_isr != old_isr:  # the controller's image carries an ISR change (ours or its own)
                self._emit(ev.IsrChanged(self.topic, self.partition, old_isr, new_isr, self.partition_epoch))
        self.maybe_increment_high_watermark(now_ms)
        return is_new_leader

    def make_follower(self, registration: PartitionRegistration) -> bool:
        """Apply a registration naming another broker (or none) leader; True if the leader
        epoch is new, which tells the caller to restart fetching (and truncation)."""
        if registration.partition_epoch < self.partition_epoch:
            return False
        is_new_epoch = registration.leader_epoch > self.leader_epoch
        self.leader_id = registration.leader
        self.leader_epoch = registration.leader_epoch
        self.leader_epoch_start_offset = None
        self.partition_epoch = registration.partition_epoch
        self._set_assignment(registration, leader=False)
        if self._watched:
            self._emit(ev.BecameFollower(self.topic, self.partition, self.leader_epoch, registration.leader))
        return is_new_epoch

    def _set_assignment(self, registration: PartitionRegistration, *, leader: bool) -> None:
        self.replicas = registration.replicas
        if leader:
            others = [r for r in registration.replicas if r != self.local_broker_id]
            self.followers = {r: self.followers.get(r, ReplicaState()) for r in others}
            self.isr_state = IsrState(frozenset(registration.isr))
        else:
            self.followers = {}
            self.isr_state = IsrState(frozenset())  # a follower does not track the ISR

    # --- the leader's view of its followers ----------------------------------------------------

    def update_follower_fetch_state(
        self, replica_id: int, fetch_offset: int, log_start_offset: int, now_ms: int,
        broker_epoch: int = -1,
    ) -> AlterPartitionProposal | None:
        """Record a follower's fetch; may move the HW and may propose adding it to the ISR."""
        state = self.followers.get(replica_id)
        if not self.is_leader or state is None:
            raise NotLeaderOrFollowerError(
                f"broker {self.local_broker_id} has no follower {replica_id} for "
                f"{self.topic}-{self.partition} (leader {self.leader_id})")
        leader_end_offset = self.log.log_end_offset
        self.followers[replica_id] = state.after_fetch(
            fetch_offset, log_start_offset, now_ms, leader_end_offset, broker_epoch)
        proposal = self._maybe_expand_isr(replica_id)
        if fetch_offset != state.log_end_offset:
            self.maybe_increment_high_watermark(now_ms)
        return proposal

    def _maybe_expand_isr(self, replica_id: int) -> AlterPartitionProposal | None:
        if self.isr_state.pending is not None or replica_id in self.isr:
            return None
        state = self.followers[replica_id]
        assert self.leader_epoch_start_offset is not None
        in_sync = (state.log_end_offset >= self.log.high_watermark
                   and state.log_end_offset >= self.leader_epoch_start_offset)
        if not in_sync or not self.eligibility.is_isr_eligible(replica_id, state.broker_epoch):
            return None
        return self._propose(self.isr | {replica_id}, "expand")

    def out_of_sync_replicas(self, now_ms: int) -> frozenset[int]:
        """ISR members (other than the leader) not caught up within the lag window; empty
        while an ISR change is in flight."""
        if self.isr_state.pending is not None:
            return frozenset()
        end = self.log.log_end_offset
        lag_ms = self.settings.replica_lag_time_max_ms
        return frozenset(
            r for r in self.isr - {self.local_broker_id}
            if r not in self.followers or not self.followers[r].is_caught_up(end, now_ms, lag_ms)
        )

    def maybe_shrink_isr(self, now_ms: int) -> AlterPartitionProposal | None:
        """Propose removing the out-of-sync ISR members. Kafka checks this every
        ``replica.lag.time.max.ms / 2``; the replica manager schedules it."""
        if not self.is_leader:
            return None
        lagging = self.out_of_sync_replicas(now_ms)
        if not lagging:
            return None
        return self._propose(self.isr - lagging, "shrink")

    def _propose(self, new_isr: Iterable[int], kind: str) -> AlterPartitionProposal:
        ordered = tuple(sorted(new_isr))
        epochs = tuple(self._broker_epoch_of(r) for r in ordered)
        proposal = AlterPartitionProposal(
            self.topic, self.partition, self.local_broker_id, self.leader_epoch,
            self.partition_epoch, ordered, epochs, kind)
        self.isr_state = IsrState(self.isr, pending=proposal)
        if self._watched:
            self._emit(ev.IsrChangeProposed(self.topic, self.partition, tuple(sorted(self.isr)), ordered))
        return proposal

    def _broker_epoch_of(self, replica_id: int) -> int:
        if replica_id == self.local_broker_id:
            return self.local_broker_epoch
        state = self.followers.get(replica_id)
        return -1 if state is None or state.broker_epoch is None else state.broker_epoch

    def check_current_leader_epoch(self, current_leader_epoch: int) -> None:
        """Fence a request built on another leader epoch (Fetch v9+, KIP-320); -1 skips it."""
        if current_leader_epoch < 0 or current_leader_epoch == self.leader_epoch:
            return
        code = ErrorCode.FENCED_LEADER_EPOCH if current_leader_epoch < self.leader_epoch else ErrorCode.UNKNOWN_LEADER_EPOCH
        raise LeaderEpochError(
            f"request for {self.topic}-{self.partition} names leader epoch {current_leader_epoch}, "
            f"this broker is at {self.leader_epoch}", error_code=code)

    def check_follower_fetch(
        self, replica_id: int, current_leader_epoch: int, fetch_offset: int, last_fetched_epoch: int,
    ) -> EpochEndOffset | None:
        """Validate a follower's fetch before reading (Kafka's ``fetchRecords`` for followers):
        returns the diverging epoch when the follower's log went astray, else None."""
        self.check_current_leader_epoch(current_leader_epoch)
        if not self.is_leader:
            raise NotLeaderOrFollowerError(
                f"broker {self.local_broker_id} is not the leader of {self.topic}-{self.partition}")
        if replica_id not in self.followers:
            # A replica being added by a reassignment may fetch before we know of it: it retries.
            code = ErrorCode.UNKNOWN_LEADER_EPOCH if current_leader_epoch >= 0 else ErrorCode.NOT_LEADER_OR_FOLLOWER
            raise LeaderEpochError(
                f"replica {replica_id} is not a replica of {self.topic}-{self.partition} in leader "
                f"epoch {self.leader_epoch}", error_code=code)
        if last_fetched_epoch < 0:
            return None
        return diverging_epoch(self.log.leader_epoch_cache, self.log.log_start_offset,
                               self.log.log_end_offset, last_fetched_epoch, fetch_offset)

    # --- the controller's answer ---------------------------------------------------------------

    def on_alter_partition_accepted(
        self, proposal: AlterPartitionProposal, isr: tuple[int, ...], leader_epoch: int,
        partition_epoch: int, now_ms: int,
    ) -> bool:
        """Apply the controller's answer to ``proposal``; returns whether the HW moved.

        An answer to a proposal we no longer wait for, from an older leader epoch, or about an
        older partition epoch than ours is ignored, as Kafka's ``handleAlterPartitionUpdate``."""
        if self.isr_state.pending is not proposal:
            return False
        if leader_epoch != self.leader_epoch or partition_epoch < self.partition_epoch:
            return False
        old = tuple(sorted(self.isr))
        self.isr_state = IsrState(frozenset(isr))
        self.partition_epoch = partition_epoch
        if self._watched:
            self._emit(ev.IsrChanged(self.topic, self.partition, old, tuple(sorted(isr)), partition_epoch))
        return self.maybe_increment_high_watermark(now_ms)

    def on_alter_partition_failed(self, proposal: AlterPartitionProposal, error: ErrorCode) -> bool:
        """The controller refused or the request failed; returns whether to send it again.

        Only OPERATION_NOT_ATTEMPTED and INELIGIBLE_REPLICA prove the change was not applied,
        so only they return the partition to its committed state. Errors that mean our view is
        stale wait for new metadata; anything else is retried."""
        if self.isr_state.pending is not proposal:
            return False
        if error in _RESET_ON:
            self.isr_state = IsrState(self.isr)
            return False
        return error not in _WAIT_FOR_METADATA

    # --- high watermark and acks=all -----------------------------------------------------------

    def follower_high_watermark_updated(self, old: int) -> None:
        """As a follower, our HW came from the leader's fetch answer: report a move as
        :meth:`maybe_increment_high_watermark` reports the leader's."""
        if self.log.high_watermark == old:
            return
        if self._watched:
            self._emit(ev.HighWatermarkMoved(self.topic, self.partition, old, self.log.high_watermark, follower=True))
        if self.on_high_watermark_moved is not None:
            self.on_high_watermark_moved(self.topic, self.partition)

    def maybe_increment_high_watermark(self, now_ms: int) -> bool:
        """Move the HW to the smallest LEO that counts (see the module docstring)."""
        if not self.is_leader or self.is_under_min_isr:
            return False
        new_hw = self.log.log_end_offset
        maximal = self.isr_state.maximal_isr
        lag_ms = self.settings.replica_lag_time_max_ms
        for replica_id, state in self.followers.items():
            if state.log_end_offset >= new_hw:
                continue
            waits = replica_id in maximal or (
                state.is_caught_up(new_hw, now_ms, lag_ms)
                and self.eligibility.is_isr_eligible(replica_id, state.broker_epoch))
            if waits:
                new_hw = state.log_end_offset
        old = self.log.high_watermark
        if not self.log.maybe_increment_high_watermark(new_hw):
            return False
        if self._watched:
            self._emit(ev.HighWatermarkMoved(self.topic, self.partition, old, self.log.high_watermark))
        if self.on_high_watermark_moved is not None:
            self.on_high_watermark_moved(self.topic, self.partition)
        return True

    def check_enough_replicas_reach_offset(self, required_offset: int) -> tuple[bool, ErrorCode]:
        """For a waiting acks=all produce: (done, error). Kafka's ``checkEnoughReplicasReachOffset``."""
        if not self.is_leader:
            return False, ErrorCode.NOT_LEADER_OR_FOLLOWER
        if self.log.high_watermark < required_offset:
            return False, ErrorCode.NONE
        if len(self.isr_state.maximal_isr) < self.log.config.min_insync_replicas:
            return True, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return True, ErrorCode.NONE

    def append_records_to_leader(
        self, records: bytes | bytearray | memoryview, required_acks: int, now_ms: int, *, in_place: bool = False,
        origin: AppendOrigin = AppendOrigin.CLIENT,
    ) -> LogAppendInfo:
        """Kafka's ``appendRecordsToLeader``: refuse if we must not take it, append stamped with
        our leader epoch, then move the HW (with no followers to wait for, straight to the LEO).
        ``origin`` is COORDINATOR for transaction markers."""
        self.check_leader_for_append(required_acks)
        info = self.log.append_as_leader(records, self.leader_epoch, in_place=in_place, origin=origin)
        self.maybe_increment_high_watermark(now_ms)
        return info

    def check_leader_for_append(self, required_acks: int) -> None:
        """Refuse an append this broker must not take: not the leader, or acks=all with the
        ISR under ``min.insync.replicas`` (Kafka checks before appending, so nothing is written)."""
        if not self.is_leader:
            raise NotLeaderOrFollowerError(
                f"broker {self.local_broker_id} is not the leader of {self.topic}-{self.partition}")
        isr_size = len(self.isr)
        if required_acks == -1 and isr_size < self.log.config.min_insync_replicas:
            raise NotEnoughReplicasError(
                f"The size of the current ISR {sorted(self.isr)} is insufficient to satisfy the "
                f"min.isr requirement of {self.log.config.min_insync_replicas} for partition "
                f"{self.topic}-{self.partition}")


_RESET_ON = frozenset({ErrorCode.OPERATION_NOT_ATTEMPTED, ErrorCode.INELIGIBLE_REPLICA})
_WAIT_FOR_METADATA = frozenset({
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.FENCED_LEADER_EPOCH,
    ErrorCode.INVALID_UPDATE_VERSION, ErrorCode.INVALID_REQUEST, ErrorCode.NEW_LEADER_ELECTED,
})


__all__ = [
    "AlterPartitionProposal", "IsrEligibility", "IsrState", "LeaderEpochError", "NotEnoughReplicasError", "NotLeaderOrFollowerError",
    "Partition", "ReplicaLog", "ReplicationSettings",
]
