"""Events a log reports to its subscribers, so the book can animate what the engine does.

``log.subscribe(callback)`` registers a function that receives each event as it happens. The
engine checks for an empty subscriber list *before* building an event, so a log nobody watches
pays one list truthiness test per step and nothing else.

Example: looking up offset 23 in the book's chapter-04 log yields, in order::

    LookupStep(kind="segment", target_offset=23, base_offset=0, ...)       # floor segment
    LookupStep(kind="index_probe", slot=1, key_offset=20, ...)             # warm-section probes
    LookupStep(kind="index_result", offset=20, position=320, ...)
    LookupStep(kind="scan", position=320, bytes_scanned=..., ...)          # batch headers read

All events are frozen, slotted dataclasses; the ``kind`` strings are the keys the widgets use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class SegmentRolled:
    """A new active segment was created; ``reason`` names the Kafka rule that fired."""

    reason: str
    base_offset: int
    previous_base_offset: int | None
    previous_size_bytes: int


@dataclass(frozen=True, slots=True)
class IndexEntryAppended:
    """An entry was added to a segment's ``.index`` (``kind="offset"``) or ``.timeindex``."""

    kind: str
    segment_base_offset: int
    offset: int
    position_or_timestamp: int


@dataclass(frozen=True, slots=True)
class LookupStep:
    """One step of finding an offset or a timestamp: ``segment``, ``index_probe``,
    ``index_result``, ``scan``.

    An offset lookup fills the fields shown in the repr. A timestamp lookup (``ListOffsets``)
    also says which index a probe or result belongs to (``index="time"`` or ``"offset"``),
    carries its target in ``target_timestamp`` (``target_offset`` is -1), a segment's largest
    timestamp or a time-index key in ``timestamp``; these stay out of the repr.
    """

    kind: str
    target_offset: int
    segment_base_offset: int
    slot: int = -1
    offset: int = -1
    position: int = -1
    section: str = ""
    bytes_scanned: int = 0
    index: str = field(default="offset", repr=False)
    timestamp: int = field(default=-1, repr=False)
    target_timestamp: int = field(default=-1, repr=False)


@dataclass(frozen=True, slots=True)
class SegmentsDeleted:
    """Segments left the log (retention, DeleteRecords, truncation, compaction swap)."""

    reason: str
    base_offsets: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Truncated:
    """The log was cut back to ``new_log_end_offset`` (or emptied and restarted)."""

    old_log_end_offset: int
    new_log_end_offset: int
    fully: bool


@dataclass(frozen=True, slots=True)
class Recovered:
    """A segment was validated on open; ``truncated_bytes`` of torn or corrupt tail were cut."""

    base_offset: int
    valid_bytes: int
    truncated_bytes: int
    reason: str


@dataclass(frozen=True, slots=True)
class Flushed:
    """Data up to ``recovery_point`` (exclusive) is on disk."""

    recovery_point: int


LogEvent = (
    SegmentRolled | IndexEntryAppended | LookupStep | SegmentsDeleted | Truncated | Recovered | Flushed
)
Listener = Callable[[LogEvent], None]


def emit(listeners: list[Listener], event: LogEvent) -> None:
    """Deliver ``event`` to every listener (callers test ``if listeners:`` first)."""
    for listener in listeners:
        listener(event)
