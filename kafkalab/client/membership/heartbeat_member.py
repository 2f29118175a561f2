"""A consumer's membership in a KIP-848 consumer group, sans I/O: it only ever heartbeats.

Theory of operation
-------------------
:class:`HeartbeatMember` is the client half of the consumer group protocol (Kafka's
``ConsumerMembershipManager`` and ``ConsumerHeartbeatRequestManager``, the machinery behind a
Java consumer with ``group.protocol=consumer``), driven like the classic
:class:`~kafkalab.client.membership.GroupMember`: ``poll(now_ms)`` gives the request due now,
``on_response`` / ``on_failure`` take its outcome, ``next_deadline_ms`` says when to poll again.

There is no JoinGroup, SyncGroup or leader. After FindCoordinator the member sends one
ConsumerGroupHeartbeat every ``heartbeat_interval_ms`` (which the *coordinator* chooses, from
``group.consumer.heartbeat.interval.ms``). Its first one, at member epoch 0, carries the
subscription and the rebalance timeout (``max.poll.interval.ms``); later ones leave them null
("unchanged") and carry the partitions the member owns. Each answer carries the member epoch
and, when it changed, the assignment: the partitions the member may own *now*. The member
reconciles at once -- partitions missing from the answer are revoked (what a
``ConsumerRebalanceListener.onPartitionsRevoked`` would hear), new ones assigned -- and sends
the next heartbeat straight away to report what it owns, which is how the coordinator learns
that a revoked partition is free to be given to someone else.

The states and the events that move them, as :data:`TRANSITIONS`::

               found                answer: what I own changed
    FINDING_COORDINATOR --> JOINING ---------------------------> ACKNOWLEDGING (heartbeat now)
          ^                    |  ^                                 |      ^
          | coordinator lost   |  | FENCED_MEMBER_EPOCH,            |      | changed again
          | (any live state)   |  | UNKNOWN_MEMBER_ID: partitions   v      |
          +--------------------+  +---- lost, rejoin at epoch 0 -- STABLE -+
                                         answer: nothing changed -> STABLE

    leave(): revoke everything, heartbeat at epoch -1 (LEAVING) --> LEFT;  other errors --> FATAL

Worked example (``orders`` with 4 partitions, alone at first): m1 finds coordinator 1 and
joins at epoch 0; the answer gives it a member id, epoch 1 and all four partitions; it heartbeats
at once owning 0-3 (ACKNOWLEDGING), then every interval (STABLE). m2 joins: epoch 2, nothing
yet. m1's next answer says epoch 1 and only {0, 1}: m1 revokes 2 and 3 and heartbeats at once
owning {0, 1}; that answer moves it to epoch 2. m2's next heartbeat receives {2, 3}.

What kafkalab leaves out: before it acknowledges a revocation, Java's member commits the
revoked partitions' offsets (with auto commit) and runs ``onPartitionsRevoked``, which takes as
long as the application makes it; and it resolves topic ids to names with Metadata requests.
Here the owner supplies the names (``topic_name``) and a revocation takes no time.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kafkalab.client.membership.member import COORDINATOR_ERRORS, GROUP_KEY_TYPE, Notification, Outgoing
from kafkalab.client.membership.member import VERSIONS as CLASSIC_VERSIONS
from kafkalab.errors import ConfigError, ErrorCode, KafkaError
from kafkalab.protocol import SCHEMAS
from kafkalab.protocol.api_keys import ApiKey

JOIN_EPOCH = 0  # member epoch of a (re)joining member
LEAVE_EPOCH = -1  # member epoch of a member leaving the group
VERSIONS: dict[int, int] = {
    ApiKey.FIND_COORDINATOR: CLASSIC_VERSIONS[ApiKey.FIND_COORDINATOR],
    ApiKey.CONSUMER_GROUP_HEARTBEAT: 0,  # Kafka 3.9's only version
}
HISTORY_MAX = 10_000  # epoch and notification logs are for timelines; a bound on their length
FENCING_ERRORS = frozenset({ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID})
Owned = Mapping[uuid.UUID, frozenset[int]]  # topic id -> partitions


class HeartbeatState(enum.Enum):
    FINDING_COORDINATOR = "finding coordinator"
    JOINING = "joining"
    ACKNOWLEDGING = "acknowledging"  # owns a new set of partitions and says so at once
    STABLE = "stable"
    LEAVING = "leaving"
    LEFT = "left"
    FATAL = "fatal"


class HeartbeatEvent(enum.Enum):
    COORDINATOR_FOUND = "coordinator found"
    COORDINATOR_LOST = "coordinator lost"
    ASSIGNMENT_CHANGED = "assignment changed"
    ANSWERED = "answered"  # a heartbeat answer that changed nothing the member owns
    FENCED = "fenced"
    LEAVE = "leave"
    LEFT = "left"
    FAILED = "failed"


S, E = HeartbeatState, HeartbeatEvent
_LIVE = (S.JOINING, S.ACKNOWLEDGING, S.STABLE)
TRANSITIONS: dict[tuple[HeartbeatState, HeartbeatEvent], HeartbeatState] = {
    (S.FINDING_COORDINATOR, E.COORDINATOR_FOUND): S.JOINING,
    (S.FINDING_COORDINATOR, E.LEAVE): S.LEFT,  # never joined: nothing to tell anyone
    **{(state, E.COORDINATOR_LOST): S.FINDING_COORDINATOR for state in (S.FINDING_COORDINATOR, *_LIVE)},
    **{(state, E.ASSIGNMENT_CHANGED): S.ACKNOWLEDGING for state in _LIVE},
    **{(state, E.ANSWERED): S.STABLE for state in _LIVE},
    **{(state, E.FENCED): S.JOINING for state in _LIVE},
    **{(state, E.LEAVE): S.LEAVING for state in _LIVE},
    **{(state, E.FAILED): S.FATAL for state in (S.FINDING_COORDINATOR, *_LIVE)},
    (S.LEAVING, E.LEFT): S.LEFT,
}


class IllegalHeartbeatTransition(KafkaError):
    """An event the member's state has no arrow for (a bug in the member, not in the broker)."""


@dataclass(frozen=True, slots=True)
class HeartbeatMemberConfig:
    """A KIP-848 member's settings, named after the consumer configs they mirror. There is no
    ``partition.assignment.strategy``, ``session.timeout.ms`` or ``heartbeat.interval.ms``:
    the coordinator assigns and sets both timings (``group.consumer.*`` broker configs)."""

    group_id: str
    topics: tuple[str, ...]
    rebalance_timeout_ms: int = 300_000  # max.poll.interval.ms
    server_assignor: str | None = None  # group.remote.assignor: None lets the broker choose
    retry_backoff_ms: int = 100  # retry.backoff.ms
    request_timeout_ms: int = 30_000  # request.timeout.ms

    def __post_init__(self) -> None:
        if not self.group_id or not self.topics:
            raise ConfigError("a consumer group member needs a group.id and at least one topic")
        if self.rebalance_timeout_ms <= 0:
            raise ConfigError(f"max.poll.interval.ms ({self.rebalance_timeout_ms}) must be positive")


def _cls(api_key: int) -> Any:
    return SCHEMAS[api_key][0].cls


class HeartbeatMember:
    """One consumer's membership of a consumer group. Not thread-safe; owned by one consumer."""

    def __init__(self, config: HeartbeatMemberConfig, topic_name: Callable[[uuid.UUID], str] = str) -> None:
        self.config = config
        self.topic_name = topic_name
        self.state = S.FINDING_COORDINATOR
        self.member_id = ""
        self.member_epoch = JOIN_EPOCH
        self.owned: dict[uuid.UUID, frozenset[int]] = {}
        self.coordinator: int | None = None
        self.heartbeat_interval_ms = 0  # the coordinator's, learnt from each answer
        self.epochs: list[tuple[int, int]] = []  # (at_ms, member epoch) whenever it changed
        self.notifications: list[Notification] = []
        self.error: KafkaError | None = None
        self._due_ms = 0
        self._in_flight: int | None = None  # the request id awaiting an answer
        self._request_ids = 0
        self._full = True  # the next heartbeat repeats the subscription (first one, or after a failure)

    # --- driven by the owner ------------------------------------------------------------------

    def poll(self, now_ms: int) -> list[Outgoing]:
        """The request due now, if any (at most one in flight, as Kafka's client)."""
        if self._in_flight is not None or now_ms < self._due_ms or self.state in (S.LEFT, S.FATAL):
            return []
        if self.state is S.FINDING_COORDINATOR:
            body = _cls(ApiKey.FIND_COORDINATOR)(key=self.config.group_id, key_type=GROUP_KEY_TYPE,
                                                 coordinator_keys=(self.config.group_id,))
            return [self._send(ApiKey.FIND_COORDINATOR, body, None)]
        return [self._send(ApiKey.CONSUMER_GROUP_HEARTBEAT, self._heartbeat_body(), self.coordinator)]

    def on_response(self, api_key: int, body: Any, now_ms: int, request_id: int | None = None) -> None:
        if request_id is not None and request_id != self._in_flight:
            return  # the answer to a request this member gave up on
        self._in_flight = None
        if api_key == ApiKey.FIND_COORDINATOR:
            self._on_find_coordinator(body, now_ms)
        else:
            self._on_heartbeat(body, now_ms)

    def on_failure(self, api_key: int, now_ms: int, request_id: int | None = None) -> None:
        """No answer within ``request.timeout.ms``: look for the coordinator again."""
        if request_id is not None and request_id != self._in_flight:
            return
        self._in_flight = None
        self._full = True
        if self.state is S.LEAVING:
            self._fire(E.LEFT)  # a consumer closing does not wait for its goodbye's answer
        else:
            self._fire(E.COORDINATOR_LOST)
            self._due_ms = now_ms + self.config.retry_backoff_ms

    def next_deadline_ms(self) -> int | None:
        """When :meth:`poll` has something to send; None while an answer is awaited or after the end."""
        if self._in_flight is not None or self.state in (S.LEFT, S.FATAL):
            return None
        return self._due_ms

    def leave(self, now_ms: int) -> None:
        """Close the consumer: revoke everything, then heartbeat at member epoch -1."""
        if self.state in (S.LEAVING, S.LEFT, S.FATAL):
            return
        self._set_owned({}, now_ms, "revoked")
        self._fire(E.LEAVE)
        self._due_ms = now_ms

    # --- answers ------------------------------------------------------------------------------------

    def _on_find_coordinator(self, body: Any, now_ms: int) -> None:
        answer = body.coordinators[0] if getattr(body, "coordinators", None) else body
        if answer.error_code != ErrorCode.NONE:
            self._due_ms = now_ms + self.config.retry_backoff_ms  # the offsets topic may be new
            return
        self.coordinator = answer.node_id
        self._fire(E.COORDINATOR_FOUND)
        self._due_ms = now_ms

    def _on_heartbeat(self, body: Any, now_ms: int) -> None:
        error = ErrorCode(body.error_code)
        if self.state is S.LEAVING:
            self._set_epoch(LEAVE_EPOCH, now_ms)
            self._fire(E.LEFT)
        elif error is ErrorCode.NONE:
            self._accept(body, now_ms)
        elif error in FENCING_ERRORS:
            self._set_owned({}, now_ms, "lost")  # another member may own them already
            self._set_epoch(JOIN_EPOCH, now_ms)
            self._full = True
            self._fire(E.FENCED)
            self._due_ms = now_ms
        elif error in COORDINATOR_ERRORS or error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            self._full = True
            if error in COORDINATOR_ERRORS:
                self._fire(E.COORDINATOR_LOST)
            self._due_ms = now_ms + self.config.retry_backoff_ms  # loading: the same request again
        else:
            self.error = KafkaError(f"ConsumerGroupHeartbeat in group {self.config.group_id!r} failed with "
                                    f"{error.name}: {body.error_message}", error_code=error)
            self._fire(E.FAILED)

    def _accept(self, body: Any, now_ms: int) -> None:
        self.member_id = body.member_id or self.member_id
        self.heartbeat_interval_ms = body.heartbeat_interval_ms
        self._full = False
        self._set_epoch(body.member_epoch, now_ms)
        if body.assignment is not None and _owned(body.assignment) != self.owned:
            self._set_owned(_owned(body.assignment), now_ms, "")
            self._fire(E.ASSIGNMENT_CHANGED)
            self._due_ms = now_ms  # acknowledge at once: the coordinator waits for it
            return
        self._fire(E.ANSWERED)
        self._due_ms = now_ms + self.heartbeat_interval_ms

    # --- helpers -------------------------------------------------------------------------------------

    def _heartbeat_body(self) -> Any:
        request = _cls(ApiKey.CONSUMER_GROUP_HEARTBEAT)
        leaving = self.state is S.LEAVING
        full = self._full or self.member_epoch == JOIN_EPOCH
        owned = tuple(request.TopicPartitions(topic_id=t, partitions=tuple(sorted(p)))
                      for t, p in sorted(self.owned.items()) if p)
        return request(
            group_id=self.config.group_id, member_id=self.member_id,
            member_epoch=LEAVE_EPOCH if leaving else self.member_epoch, instance_id=None, rack_id=None,
            rebalance_timeout_ms=self.config.rebalance_timeout_ms if full and not leaving else -1,
            subscribed_topic_names=list(self.config.topics) if full and not leaving else None,
            server_assignor=self.config.server_assignor if full and not leaving else None,
            topic_partitions=None if leaving else owned)

    def _send(self, api_key: int, body: Any, destination: int | None) -> Outgoing:
        self._request_ids += 1
        self._in_flight = self._request_ids
        return Outgoing(api_key, VERSIONS[api_key], body, destination, self.config.request_timeout_ms,
                        self._request_ids)

    def _set_owned(self, owned: Owned, now_ms: int, kind: str) -> None:
        """Move to ``owned``: partitions dropped are ``kind`` ("revoked" or "lost"; "" picks
        "revoked"), new ones "assigned" -- in that order, as the listener hears them."""
        dropped = [(t, p) for t, parts in self.owned.items() for p in sorted(parts - owned.get(t, frozenset()))]
        added = [(t, p) for t, parts in owned.items() for p in sorted(parts - self.owned.get(t, frozenset()))]
        for what, partitions in ((kind or "revoked", dropped), ("assigned", added)):
            if partitions and len(self.notifications) < HISTORY_MAX:
                named = tuple(sorted((self.topic_name(t), p) for t, p in partitions))
                self.notifications.append(Notification(now_ms, what, named))
        self.owned = {t: frozenset(p) for t, p in owned.items() if p}

    def _set_epoch(self, epoch: int, now_ms: int) -> None:
        if epoch != self.member_epoch or not self.epochs:
            if len(self.epochs) < HISTORY_MAX:
                self.epochs.append((now_ms, epoch))
        self.member_epoch = epoch

    def _fire(self, event: HeartbeatEvent) -> None:
        after = TRANSITIONS.get((self.state, event))
        if after is None:
            raise IllegalHeartbeatTransition(
                f"group {self.config.group_id!r}: no transition from {self.state.value} on {event.value}")
        self.state = after

    @property
    def owned_partitions(self) -> list[tuple[str, int]]:
        """What the member owns now, by topic name."""
        return sorted((self.topic_name(t), p) for t, parts in self.owned.items() for p in parts)


def _owned(assignment: Any) -> dict[uuid.UUID, frozenset[int]]:
    owned: dict[uuid.UUID, frozenset[int]] = {}
    for entry in assignment.topic_partitions:
        owned[entry.topic_id] = owned.get(entry.topic_id, frozenset()) | frozenset(entry.partitions)
    return {t: p for t, p in owned.items() if p}


__all__ = ["HeartbeatEvent", "HeartbeatMember", "HeartbeatMemberConfig", "HeartbeatState",
           "IllegalHeartbeatTransition", "TRANSITIONS"]
