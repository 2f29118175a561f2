"""Where batches sit in a segment's ``.log`` file: one entry's place, and a byte range to send.

A lookup answers an :class:`EntryPosition` -- the batch holding an offset, with its offsets,
start and size -- and a read answers :class:`FileSlice` ranges, which the server hands to
``sendfile``. Worked example: the batch holding offsets 42..97 starts at byte 4730 of
``00000000000000000000.log`` and is 1780 bytes long: ``EntryPosition(42, 97, 4730, 1780, ts)``,
and a fetch of it is ``FileSlice(path, 4730, 1780)``. A log's read answers a
:class:`FetchDataInfo`: the offset asked for and the slices, possibly over several segments.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from kafkalab.errors import StorageError


class EntryPosition(NamedTuple):
    """Where one batch (or legacy entry) sits in a ``.log`` file.

    A named tuple rather than a frozen dataclass: one is built per lookup, and a tuple is built
    several times faster. It is just as immutable."""

    base_offset: int
    last_offset: int
    position: int
    size_bytes: int
    max_timestamp: int


# An EntryPosition from a ready tuple of its fields, skipping the generated keyword-handling
# ``__new__`` (as records.header._new_header does): the scan builds one per lookup.
_new_entry = tuple.__new__


@dataclass(frozen=True, slots=True)
class FileSlice:
    """``size_bytes`` bytes of a segment file starting at ``position``.

    A log read returns these; the fetch response carries them as record data
    (:class:`kafkalab.protocol.types.RecordsParts`) and the server ``sendfile``s each range
    without copying it into memory.
    """

    path: Path
    position: int
    size_bytes: int

    def __post_init__(self) -> None:
        if self.position < 0 or self.size_bytes < 0:
            raise ValueError(
                f"FileSlice needs position >= 0 and size >= 0, got "
                f"position {self.position}, size {self.size_bytes}"
            )

    def read_bytes(self) -> bytes:
        """Copy the slice into memory (where sendfile is not available, and in tests)."""
        with open(self.path, "rb") as file:
            file.seek(self.position)
            data = file.read(self.size_bytes)
        if len(data) != self.size_bytes:
            raise StorageError(
                f"file slice {self.path} at {self.position} wants {self.size_bytes} bytes, "
                f"the file gave {len(data)}"
            )
        return data


@dataclass(frozen=True, slots=True)
class FetchDataInfo:
    """The result of a read: whole batches as file slices a server can ``sendfile``."""

    fetch_offset: int
    slices: tuple[FileSlice, ...] = field(default_factory=tuple)

    @property
    def size_bytes(self) -> int:
        return sum(s.size_bytes for s in self.slices)

    def read_bytes(self) -> bytes:
        return b"".join(s.read_bytes() for s in self.slices)
