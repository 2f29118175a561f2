"""Annotated hexdumps of record batches, for the book and its widgets.

:func:`field_spans` names every byte range of one log entry -- each v2 header field, then each
record's fields (``records[0].length``, ``records[0].key``, ...) -- as
``(start, end, name, value)`` tuples that a widget can colour. :func:`annotated_hexdump` prints
the same spans as a table followed by a classic hexdump (from the ``hexdump`` package, imported
only here). Example for a one-record v2 batch::

        0-8     baseOffset                  0                  00 00 00 00 00 00 00 00
        8-12    batchLength                 58                 00 00 00 3a
        ...
       61-62    records[0].length           8                  10
"""

from __future__ import annotations

import struct

from kafkalab.records.header import V2_HEADER_SIZE, Compression, read_header
from kafkalab.records.varint import read_varint, read_varlong

Span = tuple[int, int, str, object]
HEX_PREVIEW_BYTES = 12  # how many bytes of a long field the table shows

_V2_FIELDS = (
    ("baseOffset", ">q"), ("batchLength", ">i"), ("partitionLeaderEpoch", ">i"), ("magic", ">b"),
    ("crc", ">I"), ("attributes", ">h"), ("lastOffsetDelta", ">i"), ("baseTimestamp", ">q"),
    ("maxTimestamp", ">q"), ("producerId", ">q"), ("producerEpoch", ">h"), ("baseSequence", ">i"),
    ("recordsCount", ">i"),
)
_LEGACY_FIELDS = {
    0: (("offset", ">q"), ("size", ">i"), ("crc", ">I"), ("magic", ">b"), ("attributes", ">b")),
    1: (("offset", ">q"), ("size", ">i"), ("crc", ">I"), ("magic", ">b"), ("attributes", ">b"),
        ("timestamp", ">q")),
}


def _fixed(data: bytes, fields: tuple[tuple[str, str], ...], start: int = 0) -> tuple[list[Span], int]:
    spans, cursor = [], start
    for name, fmt in fields:
        size = struct.calcsize(fmt)
        spans.append((cursor, cursor + size, name, struct.unpack_from(fmt, data, cursor)[0]))
        cursor += size
    return spans, cursor


def _varint_span(data: bytes, cursor: int, end: int, name: str, long: bool = False) -> tuple[Span, int]:
    value, nxt = (read_varlong if long else read_varint)(data, cursor, end)
    return (cursor, nxt, name, value), nxt


def _bytes_span(data: bytes, cursor: int, end: int, name: str, spans: list[Span]) -> int:
    span, cursor = _varint_span(data, cursor, end, f"{name}Length")
    spans.append(span)
    length = int(span[3])  # type: ignore[call-overload]
    if length > 0:
        spans.append((cursor, cursor + length, name, bytes(data[cursor : cursor + length])))
        cursor += length
    return cursor


def _record_spans(data: bytes, cursor: int, end: int, index: int) -> tuple[list[Span], int]:
    p = f"records[{index}]."
    length, body = _varint_span(data, cursor, end, p + "length")
    spans = [length, (body, body + 1, p + "attributes", data[body])]
    span, cursor = _varint_span(data, body + 1, end, p + "timestampDelta", long=True)
    spans.append(span)
    span, cursor = _varint_span(data, cursor, end, p + "offsetDelta")
    spans.append(span)
    cursor = _bytes_span(data, cursor, end, p + "key", spans)
    cursor = _bytes_span(data, cursor, end, p + "value", spans)
    span, cursor = _varint_span(data, cursor, end, p + "headersCount")
    spans.append(span)
    for h in range(int(span[3])):  # type: ignore[call-overload]
        cursor = _bytes_span(data, cursor, end, f"{p}headers[{h}].key", spans)
        cursor = _bytes_span(data, cursor, end, f"{p}headers[{h}].value", spans)
    return spans, cursor


def field_spans(entry: bytes) -> list[Span]:
    """Every named byte range of the log entry at the start of ``entry``, in order."""
    data = bytes(entry)
    header = read_header(data, 0)
    end = header.size_bytes
    if header.magic < 2:
        spans, cursor = _fixed(data, _LEGACY_FIELDS[header.magic])
        cursor = _legacy_bytes(data, cursor, "key", spans)
        _legacy_bytes(data, cursor, "value", spans)
        return spans
    spans, cursor = _fixed(data, _V2_FIELDS)
    if header.compression is not Compression.NONE:
        spans.append((V2_HEADER_SIZE, end, f"records ({header.compression.name.lower()})", f"{end - V2_HEADER_SIZE} bytes"))
        return spans
    for index in range(header.records_count):
        record, cursor = _record_spans(data, cursor, end, index)
        spans.extend(record)
    return spans


def _legacy_bytes(data: bytes, cursor: int, name: str, spans: list[Span]) -> int:
    (length,) = struct.unpack_from(">i", data, cursor)
    spans.append((cursor, cursor + 4, f"{name}Length", length))
    cursor += 4
    if length > 0:
        spans.append((cursor, cursor + length, name, data[cursor : cursor + length]))
        cursor += length
    return cursor


def _preview(raw: bytes) -> str:
    text = raw[:HEX_PREVIEW_BYTES].hex(" ")
    return text + (" ..." if len(raw) > HEX_PREVIEW_BYTES else "")


def annotated_hexdump(entry: bytes) -> str:
    """A field table (offsets, names, values, bytes) followed by a hexdump of the entry."""
    import hexdump  # presentation-only dependency, imported lazily

    data = bytes(entry)
    spans = field_spans(data)
    size = max((end for _, end, _, _ in spans), default=0)
    lines = [f"{start:6d}-{end:<6d} {name:<30} {_value(value):<20} {_preview(data[start:end])}"
             for start, end, name, value in spans]
    lines.append("")
    lines.append(hexdump.hexdump(data[:size], result="return"))
    return "\n".join(lines)


def _value(value: object) -> str:
    if isinstance(value, bytes):
        text = repr(value)
        return text if len(text) <= 20 else text[:17] + "..."
    return str(value)
