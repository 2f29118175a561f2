"""A Fetch request's session id and session epoch (KIP-227), shared by broker and clients.

Theory of operation
-------------------
Fetch v7+ carries two ints that say how the request relates to a fetch session kept on the
broker. Mirrors Kafka's ``FetchMetadata``:

===============  ===============  ==========================================================
``session_id``   ``session_epoch``  meaning
===============  ===============  ==========================================================
0                -1               sessionless: a full request, create no session (pre-KIP-227
                                  clients such as kafka-python)
0                0                full request; please create a session
id               0                full request: close session ``id``, create a new one
id               -1               full request: close session ``id``, create none
id               1, 2, ...        incremental request in session ``id``: only changed
                                  partitions are named, the rest are implied
===============  ===============  ==========================================================

A request is *full* when its epoch is 0 or -1, and incremental otherwise. The epoch after
``e`` is ``e + 1``, wrapping from 2**31 - 1 to 1 (never back to 0, which would read as full);
the epoch after -1 stays -1. Worked example: a follower sends ``(0, 0)``; the leader answers
``session_id 683``; the follower's next requests are ``(683, 1)``, ``(683, 2)``, ... and it
closes the session with ``(683, -1)``.
"""

from __future__ import annotations

from dataclasses import dataclass

INVALID_SESSION_ID = 0  # no session: in a request, none wanted yet; in a response, none kept
INITIAL_EPOCH = 0  # a full request that asks for a new session
FINAL_EPOCH = -1  # a full request that asks for no session (or closes one)
EPOCH_MAX = 2**31 - 1  # an int32


def next_epoch(epoch: int) -> int:
    """The epoch that follows ``epoch`` (Kafka's ``FetchMetadata.nextEpoch``)."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == EPOCH_MAX else epoch + 1


@dataclass(frozen=True, slots=True)
class FetchMetadata:
    """The (session id, epoch) pair the next request will carry."""

    session_id: int
    epoch: int

    def __post_init__(self) -> None:
        # Built only from our own epochs and from session ids a caller has checked (>= 0).
        assert 0 <= self.session_id <= EPOCH_MAX, self.session_id
        assert FINAL_EPOCH <= self.epoch <= EPOCH_MAX, self.epoch

    @property
    def is_full(self) -> bool:
        return self.epoch in (INITIAL_EPOCH, FINAL_EPOCH)

    def next_incremental(self) -> FetchMetadata:
        return FetchMetadata(self.session_id, next_epoch(self.epoch))

    def close_existing(self) -> FetchMetadata:
        """Close this session and ask for no new one."""
        return FetchMetadata(self.session_id, FINAL_EPOCH)

    def close_existing_attempt_new(self) -> FetchMetadata:
        """Close this session and ask for a new one in the same (full) request."""
        return FetchMetadata(self.session_id, INITIAL_EPOCH)


INITIAL = FetchMetadata(INVALID_SESSION_ID, INITIAL_EPOCH)
SESSIONLESS = FetchMetadata(INVALID_SESSION_ID, FINAL_EPOCH)  # Kafka's FetchMetadata.LEGACY

__all__ = ["EPOCH_MAX", "FINAL_EPOCH", "INITIAL", "INITIAL_EPOCH", "INVALID_SESSION_ID", "SESSIONLESS",
           "FetchMetadata", "next_epoch"]
