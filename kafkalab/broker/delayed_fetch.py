"""Delayed fetches: fetch requests parked until enough data arrives or their wait runs out.

Theory of operation
-------------------
A consumer asks for at least ``min_bytes`` and will wait up to ``max_wait_ms``. If the log holds
less, the broker parks the request here instead of answering with nothing -- Kafka's
``DelayedFetch`` in the fetch purgatory. Each parked fetch is *watched* under every
topic-partition it reads; a produce to ``orders-0`` re-checks only the fetches watching
``orders-0``. A fetch leaves the purgatory exactly once, either because a check found enough
bytes (completion) or because the clock passed its deadline (expiry); both answer it with
whatever the log holds then.

Worked example: fetch F1 (min 1 byte, wait 500 ms) arrives at t=1000 on an empty ``orders-0``:
parked with deadline 1500, watched under ``("orders", 0)``. A produce at t=1200 calls
``watchers(("orders", 0))`` -> [F1]; the broker re-reads, finds 80 bytes >= 1 and completes F1.
Had nothing arrived, ``expire(1500)`` would have returned [F1].

Deadlines sit in a heap, so expiry costs O(log n); completed fetches are removed lazily from the
heap. The number parked is bounded: each connection has at most one request in flight.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass
from typing import Any

DELAYED_FETCHES_MAX = 10_000  # more than this and new fetches are answered at once

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class DelayedFetch:
    """A parked fetch: who asked, what, and until when. Immutable."""

    fetch_id: int
    connection_id: int
    api_version: int
    correlation_id: int
    request: Any
    deadline_ms: int
    watch_keys: frozenset[TopicPartition]


class FetchPurgatory:
    """Parked fetches by id, by watch key and by deadline. Not thread-safe; owned by the broker."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._parked: dict[int, DelayedFetch] = {}
        self._watchers: dict[TopicPartition, set[int]] = {}
        self._deadlines: list[tuple[int, int]] = []

    def __len__(self) -> int:
        return len(self._parked)

    def is_full(self) -> bool:
        return len(self._parked) >= DELAYED_FETCHES_MAX

    def park(
        self, connection_id: int, api_version: int, correlation_id: int, request: Any,
        deadline_ms: int, watch_keys: frozenset[TopicPartition],
    ) -> DelayedFetch:
        fetch = DelayedFetch(
            next(self._ids), connection_id, api_version, correlation_id, request, deadline_ms, watch_keys
        )
        self._parked[fetch.fetch_id] = fetch
        for key in watch_keys:
            self._watchers.setdefault(key, set()).add(fetch.fetch_id)
        heapq.heappush(self._deadlines, (deadline_ms, fetch.fetch_id))
        return fetch

    def watchers(self, key: TopicPartition) -> list[DelayedFetch]:
        """The parked fetches reading ``key``, oldest first."""
        return [self._parked[i] for i in sorted(self._watchers.get(key, ()))]

    def remove(self, fetch_id: int) -> DelayedFetch | None:
        """Take a fetch out (completed, expired or its connection closed)."""
        fetch = self._parked.pop(fetch_id, None)
        if fetch is None:
            return None
        for key in fetch.watch_keys:
            ids = self._watchers.get(key)
            if ids is not None:
                ids.discard(fetch_id)
                if not ids:
                    del self._watchers[key]
        return fetch

    def remove_connection(self, connection_id: int) -> None:
        for fetch in [f for f in self._parked.values() if f.connection_id == connection_id]:
            self.remove(fetch.fetch_id)

    def expire(self, now_ms: int) -> list[DelayedFetch]:
        """Remove and return every fetch whose deadline is <= ``now_ms``."""
        expired = []
        while self._deadlines and self._deadlines[0][0] <= now_ms:
            _, fetch_id = heapq.heappop(self._deadlines)
            fetch = self.remove(fetch_id)
            if fetch is not None:
                expired.append(fetch)
        return expired

    def next_deadline_ms(self) -> int | None:
        while self._deadlines and self._deadlines[0][1] not in self._parked:
            heapq.heappop(self._deadlines)  # drop entries of fetches already completed
        return self._deadlines[0][0] if self._deadlines else None
