"""A consumer's membership in a classic group, sans I/O: requests out, responses in, time given.

Theory of operation
-------------------
:class:`GroupMember` is the client half of the classic protocol (Kafka's ``AbstractCoordinator``
and ``ConsumerCoordinator``) with the sockets taken out, as h11 takes them out of HTTP. Its
owner -- a socket loop (:mod:`.sockets`) or the simulation (:mod:`kafkalab.sim.groups`) --
drives it with three calls::

    for out in member.poll(now_ms):          # the next request, if one is due
        send(out.api_key, out.version, out.body, to=out.destination)
    member.on_response(api_key, body, now_ms)  # its answer
    member.on_failure(api_key, now_ms)          # or: no answer within out.timeout_ms

and asks :meth:`GroupMember.next_deadline_ms` when to poll again (the next heartbeat, the end of
a retry backoff). One request is in flight at a time, as in Kafka's client, which never
heartbeats while a JoinGroup or SyncGroup is outstanding. A heartbeat left unanswered for a
whole ``session.timeout.ms`` is abandoned (the coordinator is presumed gone, as Kafka's
heartbeat thread decides); its late answer, if one comes, is recognised by ``request_id`` and
dropped. Every state change goes through the
table in :mod:`.state` and is kept in :attr:`GroupMember.transitions`.

The leader does the assigning: after JoinGroup names it leader it asks Metadata for the
partition counts of every topic any member subscribed to, decodes each member's subscription
(:mod:`kafkalab.client.consumer_protocol`), runs the chosen assignor from
:mod:`kafkalab.client.assignors` and sends every member's share in its SyncGroup.

Eager or cooperative is decided as in Kafka's ``ConsumerCoordinator``: cooperative (KIP-429)
only if every configured assignor supports it. Eager revokes every owned partition before it
rejoins; cooperative keeps them, lists them as owned in the subscription, gives up only what
the new assignment leaves out, and then rejoins once more so the leader can hand those
partitions to their new owners.

Worked example (eager, ``range``, one topic of 4 partitions): member A starts, finds coordinator
1, joins with member id "" and is told MEMBER_ID_REQUIRED with id ``A-1``; it joins again, is
leader of generation 1, asks Metadata (4 partitions), and its SyncGroup gives itself all four.
Member B joins (FindCoordinator, two JoinGroups); A's next Heartbeat answers
REBALANCE_IN_PROGRESS, A revokes 0-3 and rejoins; generation 2 completes once both have joined,
A asks Metadata again, and the SyncGroups give each member two partitions (Range orders members
by member id: the smaller id gets 0-1).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafkalab.client.assignors import ASSIGNORS, COOPERATIVE, Member
from kafkalab.client.assignors import range as range_
from kafkalab.client.assignors.sticky import COOPERATIVE_STICKY_NAME, STICKY_NAME
from kafkalab.client.assignors.user_data import (
    encode_cooperative_user_data,
    encode_sticky_user_data,
    member_view,
)
from kafkalab.client.consumer_protocol import (
    NO_GENERATION,
    PROTOCOL_TYPE,
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from kafkalab.client.membership.state import MemberEvent, MemberState, next_state
from kafkalab.errors import ConfigError, ErrorCode, KafkaError
from kafkalab.protocol import SCHEMAS
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.storage.checkpoints import TopicPartition

E, S = MemberEvent, MemberState

# The versions this member speaks; an adapter may negotiate lower ones with a broker.
VERSIONS: dict[int, int] = {
    ApiKey.FIND_COORDINATOR: 3, ApiKey.JOIN_GROUP: 7, ApiKey.SYNC_GROUP: 5,
    ApiKey.HEARTBEAT: 4, ApiKey.LEAVE_GROUP: 4, ApiKey.METADATA: 9,
}
GROUP_KEY_TYPE = 0  # FindCoordinator key_type for groups
JOIN_GROUP_TIMEOUT_LAPSE_MS = 5_000  # Kafka waits rebalance.timeout + 5 s for a JoinGroup answer
DEFAULT_ASSIGNORS = (range_.NAME, COOPERATIVE_STICKY_NAME)  # Kafka 3.x Java consumer's default
TRANSITIONS_KEPT_MAX = 10_000  # the transition log is for timelines; older entries are dropped

COORDINATOR_ERRORS = frozenset({ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR})
RESET_ERRORS = frozenset({ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID})


@dataclass(frozen=True, slots=True)
class MemberConfig:
    """A member's settings, named after the consumer configs they mirror."""

    group_id: str
    topics: tuple[str, ...]
    assignors: tuple[str, ...] = DEFAULT_ASSIGNORS  # partition.assignment.strategy
    session_timeout_ms: int = 45_000  # session.timeout.ms (KIP-735)
    heartbeat_interval_ms: int = 3_000  # heartbeat.interval.ms
    rebalance_timeout_ms: int = 300_000  # max.poll.interval.ms
    retry_backoff_ms: int = 100  # retry.backoff.ms
    request_timeout_ms: int = 30_000  # request.timeout.ms
    group_instance_id: str | None = None  # group.instance.id (KIP-345)
    rack_id: str | None = None  # client.rack (KIP-881)

    def __post_init__(self) -> None:
        unknown = [a for a in self.assignors if a not in ASSIGNORS]
        if not self.assignors or unknown:
            raise ConfigError(f"partition.assignment.strategy {list(self.assignors)}: unknown {unknown}; "
                              f"choose from {sorted(ASSIGNORS)}")
        if not self.group_id or not self.topics:
            raise ConfigError("a group member needs a group.id and at least one topic")
        if not 0 < self.heartbeat_interval_ms < self.session_timeout_ms:
            raise ConfigError(f"heartbeat.interval.ms ({self.heartbeat_interval_ms}) must be positive "
                              f"and below session.timeout.ms ({self.session_timeout_ms})")

    @property
    def cooperative(self) -> bool:
        """KIP-429: cooperative only when every assignor supports it."""
        return all(name in COOPERATIVE for name in self.assignors)


@dataclass(frozen=True, slots=True)
class Outgoing:
    """A request to send. ``destination`` is the coordinator's node id, or None for any broker;
    ``request_id`` goes back with the answer, so an answer to an abandoned request is ignored."""

    api_key: int
    version: int
    body: Any
    destination: int | None
    timeout_ms: int
    request_id: int = 0


@dataclass(frozen=True, slots=True)
class Coordinator:
    node_id: int
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class Transition:
    """One row of the member's history: what happened, from which state to which."""

    at_ms: int
    before: MemberState
    event: MemberEvent
    after: MemberState
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Notification:
    """What the consumer's ``ConsumerRebalanceListener`` would hear: assigned, revoked or lost."""

    at_ms: int
    kind: str
    partitions: tuple[TopicPartition, ...]


def _cls(api_key: int) -> Any:
    return SCHEMAS[api_key][0].cls


class GroupMember:
    """One consumer's group membership. Not thread-safe; owned by one consumer."""

    def __init__(self, config: MemberConfig) -> None:
        self.config = config
        self.state = S.UNJOINED
        self.member_id = ""
        self.generation_id = NO_GENERATION
        self.protocol_name: str | None = None
        self.leader_id = ""
        self.coordinator: Coordinator | None = None
        self.owned: tuple[TopicPartition, ...] = ()  # the partitions this member consumes now
        self.error: KafkaError | None = None
        self.transitions: list[Transition] = []
        self.notifications: list[Notification] = []
        self._in_flight: int | None = None
        self._in_flight_id = 0  # request_id of the request in flight
        self._due_ms = 0  # no request before this (backoff, next heartbeat)
        self._needs_join = True
        self._last_heartbeat_ok_ms = 0
        self._join_members: tuple[Any, ...] = ()
        self._assignments: dict[str, list[TopicPartition]] = {}
        self._sticky_memory: tuple[TopicPartition, ...] = ()  # StickyAssignor's user data

    # -- the three calls an adapter makes ---------------------------------------------------------

    def start(self, now_ms: int) -> None:
        self._fire(E.START, now_ms)

    def poll(self, now_ms: int) -> list[Outgoing]:
        """The request due now, if any (at most one: one request in flight)."""
        if self._session_expired(now_ms):
            self._in_flight = None  # abandon an unanswered heartbeat
            self._fire(E.COORDINATOR_LOST, now_ms, "no heartbeat answer within session.timeout.ms")
        if self._in_flight is not None or now_ms < self._due_ms:
            return []
        build = self._REQUESTS.get(self.state)
        out = None if build is None else build(self, now_ms)
        if out is None:
            return []
        self._in_flight_id += 1
        self._in_flight = out.api_key
        return [dataclasses.replace(out, request_id=self._in_flight_id)]

    def _session_expired(self, now_ms: int) -> bool:
        return (self.state is S.STABLE and self._in_flight in (None, ApiKey.HEARTBEAT)
                and now_ms - self._last_heartbeat_ok_ms >= self.config.session_timeout_ms)

    def _stale(self, api_key: int, request_id: int | None) -> bool:
        """An answer (or failure) of a request this member no longer waits for."""
        if request_id is not None:
            return request_id != self._in_flight_id or self._in_flight is None
        return self._in_flight is None

    def on_response(self, api_key: int, body: Any, now_ms: int, request_id: int | None = None) -> None:
        if self._stale(api_key, request_id):
            return
        assert api_key == self._in_flight, f"a response to API {api_key}, but {self._in_flight} is in flight"
        self._in_flight = None
        if self.state is S.LEAVING and api_key != ApiKey.LEAVE_GROUP:
            self._learn_while_leaving(api_key, body)
            return
        self._RESPONSES[api_key](self, body, now_ms)

    def _learn_while_leaving(self, api_key: int, body: Any) -> None:
        """An answer that arrived after :meth:`leave`: keep what LeaveGroup needs, nothing else."""
        if api_key == ApiKey.JOIN_GROUP and body.member_id:
            self.member_id = body.member_id
        elif api_key == ApiKey.FIND_COORDINATOR:
            answer = body.coordinators[0] if body.coordinators else body
            if answer.error_code == ErrorCode.NONE:
                self.coordinator = Coordinator(answer.node_id, answer.host, answer.port)

    def on_failure(self, api_key: int, now_ms: int, request_id: int | None = None) -> None:
        """The request got no answer (timeout, lost connection)."""
        if self._stale(api_key, request_id):
            return
        assert api_key == self._in_flight, f"a failure of API {api_key}, but {self._in_flight} is in flight"
        self._in_flight = None
        if self.state is S.LEAVING:
            self._leave_done(now_ms, E.LEFT, "no answer to LeaveGroup")
        elif api_key in (ApiKey.FIND_COORDINATOR, ApiKey.METADATA):
            self._retry(now_ms, f"no answer to API {api_key}")
        else:
            self._fire(E.COORDINATOR_LOST, now_ms, f"no answer to API {api_key}")

    def next_deadline_ms(self) -> int | None:
        """When :meth:`poll` has something to do next: send the next request, or give up on an
        unanswered heartbeat; None while waiting for any other answer."""
        if self.state is S.STABLE and self._in_flight == ApiKey.HEARTBEAT:
            return self._last_heartbeat_ok_ms + self.config.session_timeout_ms
        if self._in_flight is not None or self.state not in self._REQUESTS:
            return None
        return self._due_ms

    def leave(self, now_ms: int) -> None:
        """Leave the group (consumer close); a static member does not send LeaveGroup (KIP-345)."""
        if self.state in (S.LEFT, S.FATAL, S.LEAVING):
            return
        self._fire(E.LEAVE, now_ms)
        self._due_ms = now_ms

    @property
    def rebalance_protocol(self) -> str:
        return "cooperative" if self.config.cooperative else "eager"

    # -- state changes ----------------------------------------------------------------------------

    def _fire(self, event: MemberEvent, now_ms: int, detail: str = "") -> None:
        before = self.state
        self.state = next_state(self.config.group_id, before, event)
        self.transitions.append(Transition(now_ms, before, event, self.state, detail))
        del self.transitions[:-TRANSITIONS_KEPT_MAX]
        if event in (E.REJOIN_NEEDED, E.MEMBER_RESET, E.LEAVE) and not self.config.cooperative:
            self._give_up(now_ms, "revoked")  # eager: revoke everything before joining again
        if event in (E.REJOIN_NEEDED, E.MEMBER_RESET, E.COORDINATOR_FOUND):
            self._needs_join = True
            self._due_ms = now_ms
        if event is E.COORDINATOR_LOST:
            self.coordinator = None
            self._due_ms = now_ms + self.config.retry_backoff_ms

    def _give_up(self, now_ms: int, kind: str) -> None:
        if self.owned:
            self.notifications.append(Notification(now_ms, kind, self.owned))
        self.owned = ()

    def _retry(self, now_ms: int, detail: str) -> None:
        self._fire(E.RETRY, now_ms, detail)
        self._due_ms = now_ms + self.config.retry_backoff_ms

    def _reset(self, now_ms: int, error: ErrorCode) -> None:
        """ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID: the partitions are lost, not revoked."""
        self._give_up(now_ms, "lost")
        self.generation_id = NO_GENERATION
        if error == ErrorCode.UNKNOWN_MEMBER_ID:
            self.member_id = ""
        self._fire(E.MEMBER_RESET, now_ms, error.name)

    def _fatal(self, now_ms: int, error: ErrorCode, what: str) -> None:
        self.error = KafkaError(f"{what} in group {self.config.group_id!r} failed with {error.name}",
                                error_code=error)
        self._give_up(now_ms, "lost")
        self._fire(E.FENCED, now_ms, error.name)

    def _common_error(self, error: ErrorCode, now_ms: int, what: str) -> None:
        """What JoinGroup, SyncGroup and Heartbeat answers share."""
        if error in COORDINATOR_ERRORS:
            self._fire(E.COORDINATOR_LOST, now_ms, error.name)
        elif error in RESET_ERRORS:
            self._reset(now_ms, error)
        elif error == ErrorCode.REBALANCE_IN_PROGRESS:
            self._fire(E.REJOIN_NEEDED, now_ms, error.name)
        elif error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            self._retry(now_ms, error.name)
        else:
            self._fatal(now_ms, error, what)

    # -- requests -----------------------------------------------------------------------------------

    def _send(self, api_key: int, body: Any, *, to_coordinator: bool = True,
              timeout_ms: int | None = None) -> Outgoing:
        destination = self.coordinator.node_id if to_coordinator and self.coordinator else None
        return Outgoing(api_key, VERSIONS[api_key], body, destination,
                        timeout_ms or self.config.request_timeout_ms)

    def _find_coordinator(self, now_ms: int) -> Outgoing:
        body = _cls(ApiKey.FIND_COORDINATOR)(key=self.config.group_id, key_type=GROUP_KEY_TYPE,
                                             coordinator_keys=(self.config.group_id,))
        return self._send(ApiKey.FIND_COORDINATOR, body, to_coordinator=False)

    def _join_group(self, now_ms: int) -> Outgoing:
        request = _cls(ApiKey.JOIN_GROUP)
        protocols = tuple(request.JoinGroupRequestProtocol(name=name, metadata=self._subscription_bytes(name))
                          for name in self.config.assignors)
        body = request(group_id=self.config.group_id, session_timeout_ms=self.config.session_timeout_ms,
                       rebalance_timeout_ms=self.config.rebalance_timeout_ms, member_id=self.member_id,
                       group_instance_id=self.config.group_instance_id, protocol_type=PROTOCOL_TYPE,
                       protocols=protocols, reason=None)
        timeout_ms = max(self.config.request_timeout_ms, self.config.rebalance_timeout_ms + JOIN_GROUP_TIMEOUT_LAPSE_MS)
        return self._send(ApiKey.JOIN_GROUP, body, timeout_ms=timeout_ms)

    def _subscription_bytes(self, assignor: str) -> bytes:
        user_data = None
        if assignor == STICKY_NAME:
            user_data = encode_sticky_user_data(self._sticky_memory, self.generation_id)
        elif assignor == COOPERATIVE_STICKY_NAME:
            user_data = encode_cooperative_user_data(self.generation_id)
        return encode_subscription(Subscription(
            tuple(sorted(self.config.topics)), tuple(sorted(self.owned)), self.generation_id,
            self.config.rack_id, user_data))

    def _metadata(self, now_ms: int) -> Outgoing:
        request = _cls(ApiKey.METADATA)
        topics = sorted({t for m in self._join_members for t in decode_subscription(m.metadata).topics})
        body = request(topics=tuple(request.MetadataRequestTopic(name=t) for t in topics),
                       allow_auto_topic_creation=False)
        return self._send(ApiKey.METADATA, body, to_coordinator=False)

    def _sync_group(self, now_ms: int) -> Outgoing:
        request = _cls(ApiKey.SYNC_GROUP)
        assignments = tuple(
            request.SyncGroupRequestAssignment(member_id=m, assignment=encode_assignment(Assignment(tuple(ps))))
            for m, ps in self._assignments.items())
        body = request(group_id=self.config.group_id, generation_id=self.generation_id, member_id=self.member_id,
                       group_instance_id=self.config.group_instance_id, protocol_type=PROTOCOL_TYPE,
                       protocol_name=self.protocol_name, assignments=assignments)
        return self._send(ApiKey.SYNC_GROUP, body)

    def _heartbeat(self, now_ms: int) -> Outgoing:
        self._due_ms = now_ms + self.config.heartbeat_interval_ms
        body = _cls(ApiKey.HEARTBEAT)(group_id=self.config.group_id, generation_id=self.generation_id,
                                      member_id=self.member_id, group_instance_id=self.config.group_instance_id)
        return self._send(ApiKey.HEARTBEAT, body)

    def _leave_group(self, now_ms: int) -> Outgoing | None:
        if not self.member_id or self.config.group_instance_id is not None or self.coordinator is None:
            self._leave_done(now_ms, E.LEFT, "nothing to tell the coordinator")
            return None
        request = _cls(ApiKey.LEAVE_GROUP)
        body = request(group_id=self.config.group_id, member_id=self.member_id, members=(
            request.MemberIdentity(member_id=self.member_id, group_instance_id=None, reason="the consumer is closing"),))
        return self._send(ApiKey.LEAVE_GROUP, body)

    _REQUESTS: dict[MemberState, Callable[[GroupMember, int], Outgoing | None]] = {
        S.FINDING_COORDINATOR: _find_coordinator, S.JOINING: _join_group,
        S.AWAITING_METADATA: _metadata, S.SYNCING: _sync_group, S.STABLE: _heartbeat,
        S.LEAVING: _leave_group,
    }

    # -- responses ----------------------------------------------------------------------------------

    def _on_find_coordinator(self, body: Any, now_ms: int) -> None:
        answer = body.coordinators[0] if body.coordinators else body
        if answer.error_code != ErrorCode.NONE:
            self._retry(now_ms, ErrorCode(answer.error_code).name)
            return
        self.coordinator = Coordinator(answer.node_id, answer.host, answer.port)
        # A coordinator found restarts the session clock, as Kafka's resetSessionTimeout does.
        self._last_heartbeat_ok_ms = self._due_ms = now_ms
        resume = not self._needs_join and self.generation_id != NO_GENERATION
        self._fire(E.COORDINATOR_FOUND_RESUME if resume else E.COORDINATOR_FOUND, now_ms,
                   f"node {answer.node_id}")

    def _on_join_group(self, body: Any, now_ms: int) -> None:
        error = ErrorCode(body.error_code)
        if error == ErrorCode.MEMBER_ID_REQUIRED:
            self.member_id = body.member_id
            self._fire(E.MEMBER_ID_ASSIGNED, now_ms, body.member_id)
            self._due_ms = now_ms
        elif error != ErrorCode.NONE:
            self._common_error(error, now_ms, "JoinGroup")
        else:
            self.member_id, self.generation_id = body.member_id, body.generation_id
            self.protocol_name, self.leader_id = body.protocol_name, body.leader
            self._join_members = tuple(body.members)
            self._assignments = {}
            leader = body.leader == body.member_id
            self._fire(E.JOINED_AS_LEADER if leader else E.JOINED_AS_FOLLOWER, now_ms,
                       f"generation {body.generation_id}")

    def _on_metadata(self, body: Any, now_ms: int) -> None:
        counts = {t.name: len(t.partitions) for t in body.topics if t.error_code == ErrorCode.NONE}
        assert self.protocol_name is not None, "a leader knows the group's protocol"
        members = [Member(m.member_id, member_view(self.protocol_name, decode_subscription(m.metadata)),
                          m.group_instance_id) for m in self._join_members]
        self._assignments = ASSIGNORS[self.protocol_name](counts, members)
        self._fire(E.METADATA_RECEIVED, now_ms, f"{sum(counts.values())} partitions")

    def _on_sync_group(self, body: Any, now_ms: int) -> None:
        error = ErrorCode(body.error_code)
        if error != ErrorCode.NONE:
            self._common_error(error, now_ms, "SyncGroup")
            return
        assigned = tuple(tp for tp in decode_assignment(body.assignment).partitions if tp[0] in self.config.topics)
        revoked = tuple(sorted(set(self.owned) - set(assigned)))
        added = tuple(sorted(set(assigned) - set(self.owned)))
        if revoked:
            self.notifications.append(Notification(now_ms, "revoked", revoked))
        if added:
            self.notifications.append(Notification(now_ms, "assigned", added))
        self.owned = tuple(sorted(assigned))
        self._sticky_memory = self.owned
        self._needs_join = False
        self._last_heartbeat_ok_ms = now_ms
        self._fire(E.SYNCED, now_ms, f"{len(assigned)} partitions")
        self._due_ms = now_ms + self.config.heartbeat_interval_ms
        if revoked and self.config.cooperative:  # KIP-429: rejoin so the revoked ones find owners
            self._fire(E.REJOIN_NEEDED, now_ms, f"revoked {len(revoked)}")

    def _on_heartbeat(self, body: Any, now_ms: int) -> None:
        error = ErrorCode(body.error_code)
        if self.state is not S.STABLE:
            return  # answered after the member moved on (left, or lost its coordinator)
        if error == ErrorCode.NONE:
            self._last_heartbeat_ok_ms = now_ms
            self._fire(E.HEARTBEAT_OK, now_ms)
        else:
            self._common_error(error, now_ms, "Heartbeat")

    def _on_leave_group(self, body: Any, now_ms: int) -> None:
        self._leave_done(now_ms, E.LEFT, ErrorCode(body.error_code).name)

    def _leave_done(self, now_ms: int, event: MemberEvent, detail: str) -> None:
        self._give_up(now_ms, "revoked")
        self._fire(event, now_ms, detail)
        self.member_id, self.generation_id = "", NO_GENERATION

    _RESPONSES: dict[int, Callable[[GroupMember, Any, int], None]] = {
        ApiKey.FIND_COORDINATOR: _on_find_coordinator, ApiKey.JOIN_GROUP: _on_join_group,
        ApiKey.METADATA: _on_metadata, ApiKey.SYNC_GROUP: _on_sync_group,
        ApiKey.HEARTBEAT: _on_heartbeat, ApiKey.LEAVE_GROUP: _on_leave_group,
    }


def replace_config(member: GroupMember, **changes: Any) -> MemberConfig:
    """A copy of ``member``'s config with ``changes`` (for a restarted consumer)."""
    return dataclasses.replace(member.config, **changes)
