"""Incremental fetch sessions (KIP-227): the broker remembers what a fetcher asked for last time.

Theory of operation
-------------------
A follower or a consumer sends the same Fetch several times a second, naming every partition
it reads even when nothing changed. KIP-227 lets the broker keep that list: the first request
is *full* (it names every partition) and the answer carries a ``session_id``; each next request
is *incremental*: it names only the partitions whose fetch offset, log start offset, epochs or
byte limit changed, lists in ``forgotten_topics_data`` those to drop, and the broker reads the
rest from its cache. The incremental *answer* leaves out every partition that has nothing new
to say: no records, the same high watermark and log start offset as last sent, no error, no
diverging epoch and no preferred read replica. An idle follower's fetch and its answer become a
few dozen bytes whatever the number of partitions. Mirrors Kafka's ``FetchSession.scala``
(``FetchManager``, ``FetchSessionCache``, the fetch contexts); the epochs are
:mod:`kafkalab.protocol.fetch_metadata`.

:meth:`FetchSessionCache.new_context` turns a request into a :class:`FetchContext` that says
which partitions to read; :meth:`FetchSessionCache.respond` turns what was read into the
partitions the response names, its ``error_code`` and its ``session_id``::

    request (id, epoch)    context       reads                    responds
    (0, -1)                SESSIONLESS   the request's partitions all of them, session_id 0
    (0 or id, 0)           FULL          the request's partitions all of them; creates a session
                                                                  if a slot is free (else id 0)
    (id, e), e = expected  INCREMENTAL   the session's partitions the changed ones, session id
    (id, e), e wrong       SESSION_ERROR nothing                  INVALID_FETCH_SESSION_EPOCH
    (id, e), no such id    SESSION_ERROR nothing                  FETCH_SESSION_ID_NOT_FOUND

A full request naming a session id closes that session first; an incremental request that
forgets every partition closes its session and is answered sessionless. An incremental context
moves the session's epoch on when it is made; :meth:`respond` (which for a parked fetch comes
up to ``max_wait_ms`` later) answers INVALID_FETCH_SESSION_EPOCH if another request moved it
on meanwhile, as Kafka's ``IncrementalFetchContext`` does for a duplicate request. Partitions
that returned records move to the end of the session's order, so that under ``max_bytes`` the
others get their turn next time.

Topic ids: from Fetch v13 requests name topics by id, and a session made with ids cannot be
continued by a request without them or the other way round (FETCH_SESSION_TOPIC_ID_ERROR).
kafkalab serves Fetch up to v12, so its sessions use names; the rule is kept for v13+.

Eviction. The cache holds ``max.incremental.fetch.session.cache.slots`` sessions (1000). A new
session takes a free slot, else it may evict one (Kafka's ``tryEvict``):

1. the least recently used session, if unused for more than ``SESSION_EVICTION_MS`` (2 min);
2. else the smallest *evictable* session, by (privileged, partition count, id), if the new one
   is greater: privileged (a follower's) beats unprivileged, then more partitions beat fewer.
   A session is evictable by all once it is older than ``SESSION_EVICTION_MS``; an
   unprivileged one is evictable by a privileged newcomer at any age (both judged when the
   session was last used).

Worked example: ``slots=1``. At t=0 consumer C opens a 3-partition session (id 17). At t=1000
follower F opens a 10-partition full fetch: C is not stale, but F is privileged and C is not,
so C is evicted and F gets the slot. C's next incremental fetch ``(17, 1)`` is answered
FETCH_SESSION_ID_NOT_FOUND and C falls back to a full request, which cannot evict F (F is
privileged and younger than 2 minutes) and so is served without a session (id 0).

Kafka shards the cache over its request threads and keeps its sessions in sorted trees; one
single-threaded broker needs neither, so eviction scans the (at most ``slots``) sessions.
Session ids come from an injected ``random.Random``; time is the caller's ``now_ms``.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from kafkalab.errors import ErrorCode
from kafkalab.protocol.fetch_metadata import (
    EPOCH_MAX, FINAL_EPOCH, INITIAL_EPOCH, INVALID_SESSION_ID, next_epoch,
)
from kafkalab.protocol.types import RecordsParts
from kafkalab.replication.replica_selector import NO_PREFERRED_REPLICA

SESSION_EVICTION_MS = 120_000  # KafkaServer.MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS
TOPIC_IDS_VERSION = 13  # Fetch v13+ names topics by id (KIP-516)
SESSION_ID_DRAWS_MAX = 1000  # redraws before giving up on a free id (a full cache has <= slots ids)

PartitionKey = tuple[str, int]  # (topic, partition): the topic's name, or its id from v13
TopicPartitionData = tuple[str, Any]  # (topic, a request's FetchPartition or a response's PartitionData)


@dataclass(slots=True)
class CachedPartition:
    """What the session remembers of one partition: the fetcher's last request for it (Kafka's
    ``reqData``) and the offsets last sent back. Not thread-safe; owned by one session."""

    wanted: Any  # the request's FetchPartition: fetch offset, epochs, log start, byte limit
    high_watermark: int = -1  # -1 until sent, and after an error: the next answer is sent
    log_start_offset: int = -1  # the local log's start offset as last sent

    def must_respond(self, answer: Any) -> bool:
        """Whether ``answer`` goes into an incremental response; remembers what it sends
        (Kafka's ``CachedPartition.maybeUpdateResponseData``)."""
        respond = has_records(answer) or answer.diverging_epoch is not None
        respond = respond or answer.preferred_read_replica != NO_PREFERRED_REPLICA
        if self.high_watermark != answer.high_watermark:
            self.high_watermark = answer.high_watermark
            respond = True
        if self.log_start_offset != answer.log_start_offset:
            self.log_start_offset = answer.log_start_offset
            respond = True
        if answer.error_code != ErrorCode.NONE:
            self.high_watermark = -1  # so that the answer after the error clears is sent
            respond = True
        return respond


@dataclass(slots=True, eq=False)
class FetchSession:
    """One fetcher's session. Not thread-safe; owned by the :class:`FetchSessionCache`."""

    session_id: int
    privileged: bool  # a follower's session
    uses_topic_ids: bool
    creation_ms: int
    last_used_ms: int
    epoch: int  # the epoch the next incremental request must carry
    partitions: dict[PartitionKey, CachedPartition] = field(default_factory=dict)
    # Judged at the last use, as Kafka files sessions in its eviction trees when touched:
    evictable_by_all: bool = False
    evictable_by_privileged: bool = False
    cached_size: int = 0

    def update(self, fetch_data: Iterable[TopicPartitionData], forgotten: Iterable[PartitionKey]) -> None:
        """Take an incremental request: new or changed partitions, then the forgotten ones."""
        for topic, wanted in fetch_data:
            key = (topic, wanted.partition)
            cached = self.partitions.get(key)
            if cached is None:
                self.partitions[key] = CachedPartition(wanted)
            else:
                cached.wanted = wanted
        for key in forgotten:
            self.partitions.pop(key, None)

    def wanted(self) -> tuple[TopicPartitionData, ...]:
        """Every partition of the session with the fetcher's last request for it, in order."""
        return tuple((topic, cached.wanted) for (topic, _), cached in self.partitions.items())

    def eviction_key(self) -> tuple[bool, int, int]:
        return (self.privileged, self.cached_size, self.session_id)


class ContextKind(Enum):
    SESSIONLESS = "sessionless"
    FULL = "full"
    INCREMENTAL = "incremental"
    SESSION_ERROR = "session error"


@dataclass(frozen=True, slots=True)
class FetchContext:
    """How to serve one Fetch: the partitions to read, in order, and what the answer will need
    (Kafka's ``FetchContext`` subclasses, as one value)."""

    kind: ContextKind
    partitions: tuple[TopicPartitionData, ...]  # (topic, FetchPartition) to read
    error_code: ErrorCode = ErrorCode.NONE  # SESSION_ERROR only
    session: FetchSession | None = None  # INCREMENTAL only
    expected_epoch: int = 0  # INCREMENTAL: the session epoch the response must still find
    privileged: bool = False  # FULL: a follower asks
    uses_topic_ids: bool = False  # FULL


@dataclass(frozen=True, slots=True)
class SessionAnswer:
    """The response's top-level error, its session id, and the partitions it names."""

    error_code: ErrorCode
    session_id: int
    partitions: tuple[TopicPartitionData, ...]


class FetchSessionCache:
    """The broker's fetch sessions by id, bounded by ``slots``, with Kafka's eviction.

    Not thread-safe; owned by one broker. ``incremental_fetches`` counts the incremental
    requests served, for tests and the book to see sessions at work.
    """

    def __init__(self, slots: int, rng: random.Random, eviction_ms: int = SESSION_EVICTION_MS) -> None:
        if slots < 0:
            raise ValueError(f"max.incremental.fetch.session.cache.slots is {slots}; it must be >= 0")
        self.slots = slots
        self.eviction_ms = eviction_ms
        self._rng = rng
        self.sessions: dict[int, FetchSession] = {}
        self.incremental_fetches = 0
        self.evictions = 0

    def __len__(self) -> int:
        return len(self.sessions)

    @property
    def partitions_cached(self) -> int:
        """Kafka's ``NumIncrementalFetchPartitionsCached``."""
        return sum(s.cached_size for s in self.sessions.values())

    # --- a request arrives --------------------------------------------------------------------

    def new_context(
        self, version: int, session_id: int, session_epoch: int, privileged: bool,
        fetch_data: Sequence[TopicPartitionData], forgotten: Sequence[PartitionKey], now_ms: int,
    ) -> FetchContext:
        """The context for a request (Kafka's ``FetchManager.newContext``)."""
        uses_topic_ids = version >= TOPIC_IDS_VERSION
        if session_epoch in (INITIAL_EPOCH, FINAL_EPOCH):  # a full request
            if session_id != INVALID_SESSION_ID:
                self.remove(session_id)  # a full request closes the session it names
            kind = ContextKind.SESSIONLESS if session_epoch == FINAL_EPOCH else ContextKind.FULL
            return FetchContext(kind, tuple(fetch_data), privileged=privileged, uses_topic_ids=uses_topic_ids)
        session = self.sessions.get(session_id)
        if session is None:
            return FetchContext(ContextKind.SESSION_ERROR, (), ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != session_epoch:
            return FetchContext(ContextKind.SESSION_ERROR, (), ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        if session.uses_topic_ids != uses_topic_ids:
            return FetchContext(ContextKind.SESSION_ERROR, (), ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
        session.update(fetch_data, forgotten)
        if not session.partitions:  # every partition forgotten: the session ends
            self.remove(session_id)
            return FetchContext(ContextKind.SESSIONLESS, tuple(fetch_data))
        self._touch(session, now_ms)
        session.epoch = next_epoch(session.epoch)
        self.incremental_fetches += 1
        return FetchContext(ContextKind.INCREMENTAL, session.wanted(), session=session, expected_epoch=session.epoch)

    # --- its answer is ready ------------------------------------------------------------------

    def respond(self, context: FetchContext, answers: Sequence[TopicPartitionData], now_ms: int) -> SessionAnswer:
        """What the response carries, given the answers read for ``context.partitions``
        (Kafka's ``updateAndGenerateResponseData``)."""
        kind = context.kind
        if kind is ContextKind.SESSION_ERROR:
            return SessionAnswer(context.error_code, INVALID_SESSION_ID, ())
        if kind is ContextKind.SESSIONLESS:
            return SessionAnswer(ErrorCode.NONE, INVALID_SESSION_ID, tuple(answers))
        if kind is ContextKind.FULL:
            session_id = self._maybe_create(context, answers, now_ms)
            return SessionAnswer(ErrorCode.NONE, session_id, tuple(answers))
        session = context.session
        assert session is not None, "an incremental context has its session"
        if session.epoch != context.expected_epoch:  # another request moved the session on
            return SessionAnswer(ErrorCode.INVALID_FETCH_SESSION_EPOCH, session.session_id, ())
        return SessionAnswer(ErrorCode.NONE, session.session_id, _changed(session, answers))

    # --- the cache ------------------------------------------------------------------------------

    def remove(self, session_id: int) -> FetchSession | None:
        return self.sessions.pop(session_id, None)

    def _maybe_create(self, context: FetchContext, answers: Sequence[TopicPartitionData], now_ms: int) -> int:
        """A new session for a full request, if a slot is free or can be freed (Kafka's
        ``maybeCreateSession``); INVALID_SESSION_ID otherwise."""
        if len(self.sessions) >= self.slots and not self._try_evict(context.privileged, len(answers), now_ms):
            return INVALID_SESSION_ID
        wanted = {(topic, w.partition): w for topic, w in context.partitions}
        session = FetchSession(self._new_session_id(), context.privileged, context.uses_topic_ids, now_ms, now_ms,
                               next_epoch(INITIAL_EPOCH))
        for topic, answer in answers:
            key = (topic, answer.partition_index)
            session.partitions[key] = CachedPartition(wanted[key], answer.high_watermark, answer.log_start_offset)
        self.sessions[session.session_id] = session
        self._touch(session, now_ms)
        return session.session_id

    def _try_evict(self, privileged: bool, size: int, now_ms: int) -> bool:
        """Free one slot for a new session of ``size`` partitions, by the rules above."""
        if not self.sessions:
            return False
        oldest = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.session_id))
        if now_ms - oldest.last_used_ms > self.eviction_ms:
            return self._evict(oldest)
        evictable = [s for s in self.sessions.values()
                     if (s.evictable_by_privileged if privileged else s.evictable_by_all)]
        if not evictable:
            return False
        smallest = min(evictable, key=FetchSession.eviction_key)
        if (privileged, size, 0) < smallest.eviction_key():
            return False
        return self._evict(smallest)

    def _evict(self, session: FetchSession) -> bool:
        self.remove(session.session_id)
        self.evictions += 1
        return True

    def _touch(self, session: FetchSession, now_ms: int) -> None:
        """Mark ``session`` used now and file it for eviction (Kafka's ``touch``)."""
        session.last_used_ms = now_ms
        session.cached_size = len(session.partitions)
        old = now_ms - session.creation_ms > self.eviction_ms
        session.evictable_by_privileged = old or not session.privileged
        session.evictable_by_all = old

    def _new_session_id(self) -> int:
        for _ in range(SESSION_ID_DRAWS_MAX):
            session_id = self._rng.randrange(1, EPOCH_MAX)
            if session_id not in self.sessions:
                return session_id
        raise AssertionError(f"no free fetch session id in {SESSION_ID_DRAWS_MAX} draws with "
                             f"{len(self.sessions)} of 2**31 - 2 ids taken")


def has_records(answer: Any) -> bool:
    """Whether a partition's answer carries record bytes (Kafka's ``recordsSize > 0``)."""
    records = answer.records
    if records is None:
        return False
    return (records.size_bytes if isinstance(records, RecordsParts) else len(records)) > 0


def _changed(session: FetchSession, answers: Sequence[TopicPartitionData]) -> tuple[TopicPartitionData, ...]:
    """The answers an incremental response names, in order; those with records move to the
    end of the session's order (Kafka's ``PartitionIterator``)."""
    kept = []
    partitions = session.partitions
    for topic, answer in answers:
        key = (topic, answer.partition_index)
        cached = partitions.get(key)
        if cached is None:  # not in the session (cannot happen for a request it served): send it
            kept.append((topic, answer))
            continue
        if cached.must_respond(answer):
            kept.append((topic, answer))
            if has_records(answer):
                partitions[key] = partitions.pop(key)
    return tuple(kept)


__all__ = [
    "SESSION_EVICTION_MS", "TOPIC_IDS_VERSION", "CachedPartition", "ContextKind",
    "FetchContext", "FetchSession", "FetchSessionCache", "SessionAnswer",
]
