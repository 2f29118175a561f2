"""What a :class:`~kafkalab.controller.raft.node.RaftNode` takes and gives back: its timeouts,
the output of each event, its DescribeQuorum answer, and the error of an append on a non-leader.

Worked example: ``RaftConfig()`` holds Kafka's defaults (election timeout 1000 ms, fetch timeout
2000 ms); a leader's ``append`` returns ``Output(sends=[...], high_watermark=None)`` until a
majority holds the batch, then a later event's ``Output`` carries the new high watermark.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kafkalab.controller.raft.leader import ReplicaDescription
from kafkalab.controller.raft.messages import Send
from kafkalab.errors import ErrorCode, KafkaError

FETCH_MAX_WAIT_MS = 500  # KafkaRaftClient.MAX_FETCH_WAIT_MS: how long a leader parks an empty fetch
FETCH_MAX_BYTES = 8 * 1024 * 1024  # KafkaRaftClient.MAX_FETCH_SIZE_BYTES


@dataclass(frozen=True, slots=True)
class RaftConfig:
    """QuorumConfig's timeouts; defaults are Kafka's (``controller.quorum.*``)."""

    election_timeout_ms: int = 1000  # controller.quorum.election.timeout.ms
    fetch_timeout_ms: int = 2000  # controller.quorum.fetch.timeout.ms
    election_backoff_max_ms: int = 1000  # controller.quorum.election.backoff.max.ms
    request_timeout_ms: int = 2000  # controller.quorum.request.timeout.ms
    retry_backoff_ms: int = 20  # controller.quorum.retry.backoff.ms

    def __post_init__(self) -> None:
        for name in ("election_timeout_ms", "fetch_timeout_ms", "request_timeout_ms"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")


class NotLeaderError(KafkaError):
    """An append on a node that is not the leader of the current epoch."""

    def __init__(self, message: str) -> None:
        super().__init__(message, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER)


@dataclass(slots=True)
class Output:
    """What one event produced: messages to send, and the new high watermark if it moved."""

    sends: list[Send] = field(default_factory=list)
    high_watermark: int | None = None


@dataclass(frozen=True, slots=True)
class QuorumDescription:
    """DescribeQuorumResponse's partition fields: leader, epoch, high watermark, voters."""

    leader_id: int
    leader_epoch: int
    high_watermark: int
    current_voters: tuple[ReplicaDescription, ...]
    observers: tuple[ReplicaDescription, ...] = ()


__all__ = ["NotLeaderError", "Output", "QuorumDescription", "RaftConfig"]
