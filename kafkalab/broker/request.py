"""What flows between the broker and its handlers, and out to the network adapter."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafkalab.protocol.header import RequestHeader
from kafkalab.protocol.types import Part


class _Pending:
    """Returned by a handler that will answer later (a parked fetch)."""

    def __repr__(self) -> str:
        return "PENDING"


PENDING: Any = _Pending()
NO_RESPONSE: Any = None  # returned by a handler that must not answer (Produce with acks=0)


@dataclass(frozen=True, slots=True)
class Outgoing:
    """What to do on a connection: send ``parts`` (if any), then close it if ``close``."""

    connection_id: int
    parts: list[Part] | None
    close: bool = False
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Request:
    """A decoded request and where it came from. Immutable."""

    connection_id: int
    header: RequestHeader
    body: Any
    now_ms: int
