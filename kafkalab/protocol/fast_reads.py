"""What kafkalab's hand-written codecs share: the irregular-body signal and a uvarint reader.

The schema interpreter (:mod:`kafkalab.protocol.schema`) decodes every message and version, and
names every malformed field in its error. The hottest messages also have a hand-written reader
(:mod:`~kafkalab.protocol.fetch_codec`, :mod:`~kafkalab.protocol.offset_commit_codec`) that
reads only their common shape, several times faster. Whenever such a reader meets anything
else -- a tagged field it does not expect, a null where it wants a value, a varint longer than
the interpreter allows -- it raises :class:`IrregularBody`, and its caller hands the same bytes
to the interpreter, which decodes them or raises the typed error. So a hand-written reader never
decides an error on its own.

Worked example: ``read_uvarint(memoryview(b"\\x96\\x01"), 0)`` is ``(150, 2)``: 0x96 has its high
bit set, so 0x16 is the low 7 bits and 0x01 << 7 the next ones; six continuation bytes raise
:class:`IrregularBody`.
"""

from __future__ import annotations

from kafkalab.protocol.types import UVARINT_BYTES_MAX


class IrregularBody(Exception):
    """The body is not in the common shape: let the generic codec handle it."""


def read_uvarint(view: memoryview, position: int) -> tuple[int, int]:
    """A uvarint of at most five bytes, as the generic reader takes; longer is irregular."""
    first = view[position]
    if first < 0x80:
        return first, position + 1
    value = 0
    for index in range(UVARINT_BYTES_MAX):
        byte = view[position + index]
        value |= (byte & 0x7F) << (7 * index)
        if byte < 0x80:
            return value, position + index + 1
    raise IrregularBody("long varint")


__all__ = ["IrregularBody", "read_uvarint"]
