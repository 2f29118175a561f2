"""The KRaft RPCs between voters, as the sans-I/O Raft node sends and receives them.

Each dataclass holds the fields of one wire message for the single partition Raft replicates,
``__cluster_metadata-0`` (so ``TopicName`` / ``PartitionIndex`` are implied, and a response's
``Topics[0].Partitions[0]`` fields sit beside its top-level ``error_code``). An adapter encodes
them with the schemas in :mod:`kafkalab.protocol.messages.raft` (Vote 52, BeginQuorumEpoch 53,
EndQuorumEpoch 54) and Fetch v13+ (key 1); the field names are the schemas' names:

=========================  ====================================================================
``VoteRequest``            ClusterId, CandidateEpoch, CandidateId, LastOffsetEpoch, LastOffset
``VoteResponse``           ErrorCode, partition ErrorCode, LeaderId, LeaderEpoch, VoteGranted
``BeginQuorumEpoch*``      ClusterId, LeaderId, LeaderEpoch / ErrorCode, LeaderId, LeaderEpoch
``EndQuorumEpochRequest``  ClusterId, LeaderId, LeaderEpoch, PreferredSuccessors (v0)
``FetchRequest``           ClusterId (tag 0), ReplicaId, MaxWaitMs, CurrentLeaderEpoch,
                           FetchOffset, LastFetchedEpoch
``FetchResponse``          ErrorCode, partition ErrorCode, HighWatermark, CurrentLeader
                           {LeaderId, LeaderEpoch}, DivergingEpoch {Epoch, EndOffset}, Records,
                           SnapshotId {EndOffset, Epoch}
``FetchSnapshotRequest``   ClusterId (tag 0), ReplicaId, MaxBytes, CurrentLeaderEpoch,
                           SnapshotId {EndOffset, Epoch}, Position
``FetchSnapshotResponse``  ErrorCode, partition ErrorCode, CurrentLeader {LeaderId, LeaderEpoch},
                           SnapshotId {EndOffset, Epoch}, Size, Position, UnalignedRecords
=========================  ====================================================================

Worked example: candidate 2 of epoch 5 whose log ends at offset 40 in epoch 4 sends
``VoteRequest("", candidate_epoch=5, candidate_id=2, last_offset_epoch=4, last_offset=40)``.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkalab.errors import ErrorCode

NO_ERROR = int(ErrorCode.NONE)


def _check_epoch(what: str, epoch: int) -> None:
    if epoch < -1:
        raise ValueError(f"{what} epoch must be >= -1, got {epoch}")


@dataclass(frozen=True, slots=True)
class VoteRequest:
    cluster_id: str | None
    candidate_epoch: int
    candidate_id: int
    last_offset_epoch: int
    last_offset: int

    def __post_init__(self) -> None:
        _check_epoch("candidate", self.candidate_epoch)
        if self.last_offset < 0:
            raise ValueError(f"a candidate's last offset must be >= 0, got {self.last_offset}")


@dataclass(frozen=True, slots=True)
class VoteResponse:
    error_code: int
    partition_error_code: int
    leader_id: int
    leader_epoch: int
    vote_granted: bool


@dataclass(frozen=True, slots=True)
class BeginQuorumEpochRequest:
    cluster_id: str | None
    leader_id: int
    leader_epoch: int

    def __post_init__(self) -> None:
        _check_epoch("leader", self.leader_epoch)


@dataclass(frozen=True, slots=True)
class BeginQuorumEpochResponse:
    error_code: int
    partition_error_code: int
    leader_id: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class EndQuorumEpochRequest:
    cluster_id: str | None
    leader_id: int
    leader_epoch: int
    preferred_successors: tuple[int, ...]

    def __post_init__(self) -> None:
        _check_epoch("leader", self.leader_epoch)


@dataclass(frozen=True, slots=True)
class EndQuorumEpochResponse:
    error_code: int
    partition_error_code: int
    leader_id: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class FetchRequest:
    cluster_id: str | None
    replica_id: int
    max_wait_ms: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int

    def __post_init__(self) -> None:
        _check_epoch("current leader", self.current_leader_epoch)
        if self.fetch_offset < 0 or self.max_wait_ms < 0:
            raise ValueError(f"fetch offset {self.fetch_offset} and max wait {self.max_wait_ms} ms "
                             "must be >= 0")


@dataclass(frozen=True, slots=True)
class FetchResponse:
    error_code: int
    partition_error_code: int
    high_watermark: int
    leader_id: int
    leader_epoch: int
    diverging_epoch: int = -1
    diverging_end_offset: int = -1
    records: bytes = b""
    snapshot_end_offset: int = -1  # SnapshotId (tag 2): fetch offset below the log start
    snapshot_epoch: int = -1


@dataclass(frozen=True, slots=True)
class FetchSnapshotRequest:
    """FetchSnapshot (59): ``max_bytes`` of snapshot ``(end_offset, epoch)`` from ``position``."""

    cluster_id: str | None
    replica_id: int
    max_bytes: int
    current_leader_epoch: int
    end_offset: int
    epoch: int
    position: int

    def __post_init__(self) -> None:
        _check_epoch("current leader", self.current_leader_epoch)
        if self.position < 0 or self.max_bytes <= 0:
            raise ValueError(f"snapshot position {self.position} must be >= 0 and max bytes "
                             f"{self.max_bytes} > 0")


@dataclass(frozen=True, slots=True)
class FetchSnapshotResponse:
    error_code: int
    partition_error_code: int
    leader_id: int
    leader_epoch: int
    end_offset: int = -1
    epoch: int = -1
    size: int = -1
    position: int = -1
    unaligned_records: bytes = b""


RaftMessage = (
    VoteRequest | VoteResponse | BeginQuorumEpochRequest | BeginQuorumEpochResponse
    | EndQuorumEpochRequest | EndQuorumEpochResponse | FetchRequest | FetchResponse
    | FetchSnapshotRequest | FetchSnapshotResponse
)


@dataclass(frozen=True, slots=True)
class Send:
    """A message a node wants delivered to voter ``dst``; a response echoes its request's
    ``correlation_id``, as Kafka's request header does."""

    dst: int
    correlation_id: int
    message: RaftMessage


__all__ = [
    "NO_ERROR", "BeginQuorumEpochRequest", "BeginQuorumEpochResponse", "EndQuorumEpochRequest",
    "EndQuorumEpochResponse", "FetchRequest", "FetchResponse", "FetchSnapshotRequest", "FetchSnapshotResponse", "RaftMessage", "Send", "VoteRequest",
    "VoteResponse",
]
