"""What the classic group protocol's requests carry into the coordinators and what they answer.

JoinGroup and SyncGroup reach either coordinator: a classic group's (:mod:`kafkalab.group.coordinator`)
or, for a classic member of a KIP-848 consumer group, the consumer group's
(:mod:`kafkalab.group.consumer.classic_members`). Both speak these frozen messages, decoded and
encoded by the broker's handlers. A JoinGroup or SyncGroup that must wait is answered later
through its ``Respond`` callback. Worked example: a follower's JoinGroup for generation 3 of a
``range`` group answers ``JoinResult(0, "c2-...", 3, "consumer", "range", leader_id="c1-...")``
with no member list (only the leader gets one).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class JoinRequest:
    group_id: str
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    api_version: int


@dataclass(frozen=True, slots=True)
class JoinResult:
    error_code: int
    member_id: str = ""
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    members: tuple[tuple[str, str | None, bytes], ...] = ()  # (member id, instance id, metadata)


@dataclass(frozen=True, slots=True)
class SyncResult:
    error_code: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


Respond = Callable[[Any], None]
