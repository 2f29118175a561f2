"""The controller's side of broker liveness: sessions, fencing and controlled shutdown.

Theory of operation
-------------------
Mirrors Kafka's ``BrokerHeartbeatManager``. Every registered broker has a *session*: the time
the controller last heard a heartbeat from it. A broker silent for ``broker.session.timeout.ms``
(9 s) has lost its session and is fenced: it leaves every ISR and its partitions elect other
leaders. Each heartbeat also says what the broker wants, and the controller moves it through
four control states by :data:`TRANSITIONS`, a table keyed by (state, what the heartbeat asks)::

                 caught up                 wants shutdown, leads something
      FENCED  ---------------> UNFENCED  ---------------------------------> CONTROLLED_SHUTDOWN
        |  ^   wants fence                 |                                    |
        |  +-------------------------------+                                    | leads nothing, and every
        |                                  | wants shutdown, leads nothing      | active broker has replayed
        +-- wants shutdown ----------------+----------------------------------> SHUTDOWN_NOW (should_shut_down)

*Caught up* means the broker's heartbeat reports a metadata offset at or beyond the offset of its
own RegisterBrokerRecord -- it has replayed its registration, so it knows the cluster it joins.
A broker in controlled shutdown is released once it leads no partition and every active broker
has replayed the log past the records that moved its leaderships (Kafka's
``lowestActiveOffset``), so nobody still sends it produce requests for them.

Worked example: broker 2 registers at offset 30 and heartbeats at t=0 with offset 12: it stays
FENCED (12 < 30). Its next heartbeat at t=2000 reports 31: UNFENCED. It then falls silent: at
t=2000+9000 its session has expired and :meth:`BrokerHeartbeatManager.stale_brokers` names it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kafkalab.config.definitions import broker_default
from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.metadata.image import BrokerRegistration

BROKER_SESSION_TIMEOUT_MS: int = broker_default("broker.session.timeout.ms")
BROKERS_MAX = 65_536  # a bound on sessions: node ids a cluster may register


class BrokerControlState(enum.Enum):
    FENCED = "FENCED"
    UNFENCED = "UNFENCED"
    CONTROLLED_SHUTDOWN = "CONTROLLED_SHUTDOWN"
    SHUTDOWN_NOW = "SHUTDOWN_NOW"

    @property
    def fenced(self) -> bool:
        return self is BrokerControlState.FENCED or self is BrokerControlState.SHUTDOWN_NOW

    @property
    def should_shut_down(self) -> bool:
        return self is BrokerControlState.SHUTDOWN_NOW


class Ask(enum.Enum):
    """What one heartbeat asks for, with the facts the table needs folded in."""

    SHUT_DOWN = "want_shut_down"  # want_shut_down, without want_fence
    SHUT_DOWN_NOW = "want_fence+want_shut_down"
    FENCE = "want_fence"
    RUN_CAUGHT_UP = "run, caught up"  # neither, and the broker has replayed its registration
    RUN_BEHIND = "run, behind"


S, A = BrokerControlState, Ask
# (state, ask) -> next state; CONTROLLED_SHUTDOWN -> SHUTDOWN_NOW and UNFENCED + SHUT_DOWN depend
# on leaderships, decided in next_state; a missing key is a bug reported by name.
TRANSITIONS: dict[tuple[BrokerControlState, Ask], BrokerControlState] = {
    (S.FENCED, A.SHUT_DOWN): S.SHUTDOWN_NOW,
    (S.FENCED, A.SHUT_DOWN_NOW): S.SHUTDOWN_NOW,
    (S.FENCED, A.FENCE): S.FENCED,
    (S.FENCED, A.RUN_CAUGHT_UP): S.UNFENCED,
    (S.FENCED, A.RUN_BEHIND): S.FENCED,
    (S.UNFENCED, A.SHUT_DOWN): S.CONTROLLED_SHUTDOWN,  # SHUTDOWN_NOW if it leads nothing
    (S.UNFENCED, A.SHUT_DOWN_NOW): S.SHUTDOWN_NOW,
    (S.UNFENCED, A.FENCE): S.FENCED,
    (S.UNFENCED, A.RUN_CAUGHT_UP): S.UNFENCED,
    (S.UNFENCED, A.RUN_BEHIND): S.UNFENCED,
    **{(S.CONTROLLED_SHUTDOWN, ask): S.CONTROLLED_SHUTDOWN for ask in Ask},  # until released
    **{(S.SHUTDOWN_NOW, ask): S.SHUTDOWN_NOW for ask in Ask},
}


class HeartbeatError(KafkaError):
    """A heartbeat the controller cannot take (unknown broker, stale epoch)."""


def ask_of(want_fence: bool, want_shut_down: bool, caught_up: bool) -> Ask:
    if want_shut_down:
        return Ask.SHUT_DOWN_NOW if want_fence else Ask.SHUT_DOWN
    if want_fence:
        return Ask.FENCE
    return Ask.RUN_CAUGHT_UP if caught_up else Ask.RUN_BEHIND


@dataclass(slots=True)
class BrokerSession:
    """One registered broker as the heartbeat manager tracks it."""

    broker_epoch: int
    last_contact_ms: int
    metadata_offset: int = -1
    state: BrokerControlState = BrokerControlState.FENCED
    controlled_shutdown_offset: int = -1  # the log end when the shutdown's records were written


class BrokerHeartbeatManager:
    """Sessions of the registered brokers. Not thread-safe; owned by the active controller.

    ``session_timeout_ms`` is ``broker.session.timeout.ms``."""

    def __init__(self, session_timeout_ms: int = BROKER_SESSION_TIMEOUT_MS) -> None:
        assert session_timeout_ms > 0
        self.session_timeout_ms = session_timeout_ms
        self.sessions: dict[int, BrokerSession] = {}

    def has_valid_session(self, broker_id: int, now_ms: int) -> bool:
        """An unfenced broker heard from within the session timeout (a fenced one has none)."""
        session = self.sessions.get(broker_id)
        return (session is not None and not session.state.fenced
                and now_ms - session.last_contact_ms <= self.session_timeout_ms)

    def register(self, broker_id: int, broker_epoch: int, now_ms: int) -> None:
        """A new registration: a new session, fenced until a heartbeat shows it caught up."""
        if broker_id not in self.sessions and len(self.sessions) >= BROKERS_MAX:
            raise HeartbeatError(f"registering broker {broker_id}: already {BROKERS_MAX} sessions",
                                 error_code=ErrorCode.INVALID_REQUEST)
        self.sessions[broker_id] = BrokerSession(broker_epoch, now_ms)

    def activate(self, registrations: Iterable[BrokerRegistration], now_ms: int) -> None:
        """A controller that starts (or restarts) over a metadata log that already registers
        brokers: one session per registration, as of ``now_ms``, so their heartbeats keep
        working (Kafka's ``ClusterControlManager.activate``). A broker unfenced in the log stays
        unfenced and is fenced if it does not heartbeat within the session timeout; a broker in
        controlled shutdown carries on shutting down."""
        for registration in registrations:
            state = (S.FENCED if registration.fenced
                     else S.CONTROLLED_SHUTDOWN if registration.in_controlled_shutdown else S.UNFENCED)
            self.register(registration.broker_id, registration.broker_epoch, now_ms)
            self.sessions[registration.broker_id].state = state

    def session(self, broker_id: int, broker_epoch: int) -> BrokerSession:
        """The session a heartbeat (or AlterPartition) from ``broker_id`` at ``broker_epoch``
        belongs to; Kafka's ``checkBrokerEpoch``."""
        session = self.sessions.get(broker_id)
        if session is None:
            raise HeartbeatError(f"broker {broker_id} is not registered",
                                 error_code=ErrorCode.BROKER_ID_NOT_REGISTERED)
        if session.broker_epoch != broker_epoch:
            raise HeartbeatError(f"broker {broker_id} sent epoch {broker_epoch}, registered with "
                                 f"{session.broker_epoch}", error_code=ErrorCode.STALE_BROKER_EPOCH)
        return session

    def next_state(self, session: BrokerSession, ask: Ask, has_leaderships: Callable[[], bool],
                   lowest_active_offset: Callable[[], int]) -> BrokerControlState:
        """Kafka's ``calculateNextBrokerState``: the table, plus the two leadership checks."""
        key = (session.state, ask)
        if key not in TRANSITIONS:
            raise AssertionError(f"no transition from {session.state.name} on {ask.name}")
        state = TRANSITIONS[key]
        if state is S.CONTROLLED_SHUTDOWN and not has_leaderships():
            if session.state is S.UNFENCED or session.controlled_shutdown_offset <= lowest_active_offset():
                state = S.SHUTDOWN_NOW
        return state

    def touch(self, session: BrokerSession, state: BrokerControlState, metadata_offset: int, now_ms: int) -> None:
        session.state = state
        session.metadata_offset = max(session.metadata_offset, metadata_offset)
        session.last_contact_ms = now_ms

    def lowest_active_offset(self) -> int:
        """The smallest metadata offset an unfenced, running broker has reported (Kafka's
        ``lowestActiveOffset``); a very large number when there is none."""
        active = [s.metadata_offset for s in self.sessions.values() if s.state is S.UNFENCED]
        return min(active, default=2**63 - 1)

    def stale_brokers(self, now_ms: int) -> list[int]:
        """Brokers not yet fenced whose session has expired, oldest contact first."""
        stale = [(s.last_contact_ms, b) for b, s in self.sessions.items()
                 if not s.state.fenced and now_ms - s.last_contact_ms >= self.session_timeout_ms]
        return [b for _, b in sorted(stale)]

    def fenced(self, broker_id: int) -> None:
        session = self.sessions.get(broker_id)
        if session is not None:
            session.state = S.FENCED

    def next_deadline_ms(self) -> int | None:
        """When the next unfenced session expires, or None."""
        times = [s.last_contact_ms + self.session_timeout_ms for s in self.sessions.values() if not s.state.fenced]
        return min(times, default=None)


__all__ = [
    "BROKER_SESSION_TIMEOUT_MS", "Ask", "BrokerControlState", "BrokerHeartbeatManager", "BrokerSession",
    "HeartbeatError", "TRANSITIONS", "ask_of",
]
