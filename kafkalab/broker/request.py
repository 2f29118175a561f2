"""What flows between the broker and its handlers, and out to the network adapter."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

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
    frame: bytes = b""  # the request's bytes without the size prefix, kept only to forward it


Result = TypeVar("Result")
Respond = Callable[[int, int, int, int, Any], None]  # Broker.respond(connection, api, version, correlation, body)


def answer_later(respond: Respond, request: Request, build: Callable[[Result], Any]) -> Callable[[Result], None]:
    """A callback that answers ``request`` with ``build(result)``: for a handler that returns
    PENDING because a component answers once its log write is committed."""
    header = request.header
    return lambda result: respond(request.connection_id, header.api_key, header.api_version, header.correlation_id,
                                  build(result))
