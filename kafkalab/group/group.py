"""One classic group: its members, generation, chosen protocol and state (Kafka's ``ClassicGroup``).

Theory of operation
-------------------
A member is known by its member id (``client_id-UUID``, chosen by the coordinator) and, when
static (KIP-345), also by its ``group.instance.id``. Each member lists the protocols it supports
in order of preference, each with opaque metadata (a consumer's subscription); the group only
ever uses protocols every member supports (:meth:`ClassicGroup.select_protocol`: each member
votes for its first candidate, most votes wins, Kafka's ``ClassicGroup.selectProtocol``).

During a rebalance a member "has joined" once its JoinGroup is parked (``join_callback``); the
join completes when every member has joined and no member id handed out with
MEMBER_ID_REQUIRED is still pending. A generation starts with each completed join; the leader
is the first member that joined.

Worked example: members ``a`` (protocols ``[range, roundrobin]``) and ``b`` (``[roundrobin,
range]``) both support both; ``a`` votes range, ``b`` roundrobin; the tie goes to the candidate
that comes first in the order the members joined, so ``range`` wins.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafkalab.group.state import GroupEvent, GroupState, next_state

JoinCallback = Callable[[Any], None]
SyncCallback = Callable[[Any], None]


@dataclass(slots=True)
class Member:
    """One member of a classic group. Mutable; owned by its group."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]  # (name, metadata), in preference order
    assignment: bytes = b""
    join_callback: JoinCallback | None = None
    sync_callback: SyncCallback | None = None

    def metadata(self, protocol: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        raise KeyError(protocol)

    def protocol_names(self) -> set[str]:
        return {name for name, _ in self.protocols}

    def vote(self, candidates: set[str]) -> str:
        return next(name for name, _ in self.protocols if name in candidates)


@dataclass(slots=True)
class ClassicGroup:
    """A classic group. Mutable; owned by the group coordinator. Not thread-safe."""

    group_id: str
    state: GroupState = GroupState.EMPTY
    state_timestamp_ms: int = -1
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    pending_members: set[str] = field(default_factory=set)  # ids handed out, not yet joined
    pending_heartbeats: dict[str, Any] = field(default_factory=dict)
    pending_sync: set[str] = field(default_factory=set)  # members of this generation yet to sync
    sync_operation: Any = None  # the DelayedSync of the current generation
    new_member_added: bool = False  # during the initial delay: wait once more (InitialDelayedJoin)
    join_operation: Any = None  # the DelayedJoin / InitialDelayedJoin of the rebalance in progress
    rebalance_reason: str = ""  # why the latest rebalance started, as Kafka logs it

    def transition(self, event: GroupEvent, now_ms: int) -> None:
        self.state = next_state(self.group_id, self.state, event)
        self.state_timestamp_ms = now_ms

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    # --- membership -----------------------------------------------------------------------

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if member.group_instance_id is not None and self.static_members.get(member.group_instance_id) == member_id:
            del self.static_members[member.group_instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
            joined = [m for m in self.members.values() if m.join_callback is not None]
            if joined:
                self.leader_id = joined[0].member_id
        return member

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> Member:
        """A static member rejoined with an empty member id: it keeps its place under a new id."""
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        self.static_members[instance_id] = new_id
        if self.leader_id == old_id:
            self.leader_id = new_id
        return member

    def member_for_instance(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def all_members_joined(self) -> bool:
        return not self.pending_members and all(m.join_callback is not None for m in self.members.values())

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # --- protocols ------------------------------------------------------------------------

    def candidate_protocols(self) -> set[str]:
        members = list(self.members.values())
        if not members:
            return set()
        candidates = members[0].protocol_names()
        for member in members[1:]:
            candidates &= member.protocol_names()
        return candidates

    def supports_protocols(self, protocol_type: str, names: set[str]) -> bool:
        """May a member with these protocols join? (Kafka's ``supportsProtocols``.)"""
        if not self.members:
            return bool(protocol_type) and bool(names)
        return protocol_type == self.protocol_type and bool(names & self.candidate_protocols())

    def select_protocol(self) -> str:
        candidates = self.candidate_protocols()
        assert candidates, f"group {self.group_id} has members but no common protocol"
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=lambda name: votes[name])  # ties: the first voted for, in join order
