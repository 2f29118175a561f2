"""A fetcher's side of an incremental fetch session (KIP-227), for consumers and followers.

Theory of operation
-------------------
Mirrors Kafka's ``FetchSessionHandler``: one per (fetcher, broker). Each time the fetcher is
about to send a Fetch it hands :meth:`FetchSessionHandler.build` every partition it wants, with
its fetch offset, epochs and byte limit; the handler compares them with what the session
already holds and returns what the request must say:

* no session yet (or after an error): a *full* request naming every partition, epoch 0, so the
  broker opens a session and answers with its id;
* in a session: an *incremental* request, epoch 1, 2, ..., naming only partitions that are new
  or whose request data changed (they go last, in the order first seen), and in
  ``forgotten_topics_data`` the partitions no longer wanted.

:meth:`FetchSessionHandler.handle_response` checks the answer and moves the epoch on. A full
answer must name exactly the session's partitions, an incremental one no partition outside it;
a top-level error, or an answer that breaks those rules, sends the next request full again
(FETCH_SESSION_ID_NOT_FOUND: without the old id; otherwise closing it, epoch 0).
:meth:`handle_error` does the same for a request that got no answer.

Worked example: a follower of ``orders-0..2`` sends ``(session 0, epoch 0)`` naming all three;
the leader answers with session 683 and all three. Next, only orders-1 moved (fetch offset
41 -> 44): the request is ``(683, 1)`` naming orders-1 alone; orders-0 and orders-2 are implied.
The follower then stops following orders-2: ``(683, 2)`` names nothing and forgets orders-2.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter
from typing import Any

from kafkalab.errors import ErrorCode
from kafkalab.protocol.fetch_metadata import INITIAL, INVALID_SESSION_ID, FetchMetadata
from kafkalab.protocol.messages.fetch import FETCH_REQUEST

PartitionKey = tuple[str, int]  # (topic, partition)
SESSIONS_VERSION = 7  # Fetch v7+ carries session_id, session_epoch and forgotten_topics_data

_REQ = FETCH_REQUEST.cls


@dataclass(frozen=True, slots=True)
class FetchRequestData:
    """What the next Fetch says: the partitions it names, those it forgets, its session id and
    epoch; and every partition the session holds once it is sent (named or implied)."""

    to_send: tuple[tuple[PartitionKey, Any], ...]  # (key, FetchPartition), in request order
    to_forget: tuple[PartitionKey, ...]
    metadata: FetchMetadata
    session_partitions: tuple[PartitionKey, ...]

    def topics(self) -> tuple[Any, ...]:
        """``to_send`` as the request's FetchTopic list, consecutive partitions of a topic together."""
        return tuple(_REQ.FetchTopic(topic=topic, partitions=tuple(w for _, w in group))
                     for topic, group in groupby(self.to_send, key=lambda item: item[0][0]))

    def forgotten_topics(self) -> tuple[Any, ...]:
        return tuple(_REQ.ForgottenTopic(topic=topic, partitions=tuple(p for _, p in group))
                     for topic, group in groupby(self.to_forget, key=itemgetter(0)))


class FetchSessionHandler:
    """The session a fetcher keeps with one broker. Not thread-safe; owned by one fetcher.

    ``full_requests`` and ``incremental_requests`` count what :meth:`build` produced,
    ``refused`` the answers :meth:`handle_response` could not use and the requests that got none."""

    def __init__(self) -> None:
        self.next_metadata: FetchMetadata = INITIAL
        self.session_partitions: dict[PartitionKey, Any] = {}  # the FetchPartition last sent for each
        self.full_requests = 0
        self.incremental_requests = 0
        self.refused = 0

    @property
    def session_id(self) -> int:
        return self.next_metadata.session_id

    def build(self, wanted: Iterable[tuple[PartitionKey, Any]]) -> FetchRequestData:
        """The next request for ``wanted`` ((topic, partition), FetchPartition); the session
        takes it as sent (Kafka's ``Builder.build``)."""
        wanted_now = dict(wanted)
        if self.next_metadata.is_full:
            self.full_requests += 1
            self.session_partitions = wanted_now
            return FetchRequestData(tuple(wanted_now.items()), (), self.next_metadata, tuple(wanted_now))
        self.incremental_requests += 1
        to_forget = []
        for key, before in list(self.session_partitions.items()):
            now = wanted_now.pop(key, None)
            if now is None:
                del self.session_partitions[key]
                to_forget.append(key)
            elif now != before:
                wanted_now[key] = now  # changed: named again, after the new ones
                self.session_partitions[key] = now
        for key, data in wanted_now.items():
            if key in self.session_partitions:
                break  # the changed ones, re-added at the end: the new ones are all in
            self.session_partitions[key] = data
        return FetchRequestData(tuple(wanted_now.items()), tuple(to_forget), self.next_metadata,
                                tuple(self.session_partitions))

    def handle_response(self, response: Any) -> bool:
        """Take the broker's answer to the request last built; False if it cannot be used as
        it is (the partitions it names are then no answer to the request)."""
        if response.session_id < 0:  # not a session id: a broker bug, treated as a session error
            self.refused += 1
            self.next_metadata = INITIAL
            return False
        if response.error_code != ErrorCode.NONE:
            self.refused += 1
            if response.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND:
                self.next_metadata = INITIAL
            else:
                self.next_metadata = self.next_metadata.close_existing_attempt_new()
            return False
        named = {(topic.topic, p.partition_index) for topic in response.responses for p in topic.partitions}
        session = self.session_partitions.keys()
        if self.next_metadata.is_full:
            if named != set(session):  # a full answer names every partition of the request
                self.refused += 1
                self.next_metadata = INITIAL
                return False
            self.next_metadata = INITIAL if response.session_id == INVALID_SESSION_ID else \
                FetchMetadata(response.session_id, 1)
            return True
        if not named <= set(session):  # an incremental answer names only the session's partitions
            self.refused += 1
            self.next_metadata = self.next_metadata.close_existing_attempt_new()
            return False
        self.next_metadata = INITIAL if response.session_id == INVALID_SESSION_ID else \
            self.next_metadata.next_incremental()
        return True

    def handle_error(self) -> None:
        """The request got no answer: the next one is full, closing the session."""
        self.refused += 1
        self.next_metadata = self.next_metadata.close_existing_attempt_new()

    def notify_close(self) -> None:
        """The fetcher is going away: the next request (if any) closes the session."""
        self.next_metadata = self.next_metadata.close_existing()


__all__ = ["SESSIONS_VERSION", "FetchRequestData", "FetchSessionHandler", "PartitionKey"]
