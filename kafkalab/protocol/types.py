"""Primitive wire types of the Kafka protocol: fixed-width integers, varints, strings, arrays.

Theory of operation
-------------------
Every Kafka request and response body is a sequence of a few primitive types, all big-endian:

=================  ===========================================================================
type               bytes on the wire
=================  ===========================================================================
int8/16/32/64      two's complement, 1/2/4/8 bytes
uint16             unsigned, 2 bytes
float64            IEEE 754 double, 8 bytes
bool               one byte, 0 or 1
uuid               16 bytes (a topic id)
uvarint            unsigned LEB128: 7 bits per byte, high bit set on all but the last byte
string             int16 length N then N UTF-8 bytes; a nullable string encodes null as N = -1
compact string     uvarint N+1 then N bytes; 0 means null (flexible versions, KIP-482)
bytes / records    int32 length then the bytes (-1 = null); compact: uvarint N+1
array              int32 count then the elements (-1 = null); compact: uvarint count+1
tagged fields      uvarint count, then per field: uvarint tag, uvarint size, size bytes
=================  ===========================================================================

Worked example: the compact string ``"kafka"`` is ``06 6b 61 66 6b 61`` -- length 5 is sent as
5 + 1 = 6 so that 0 can mean null -- and the plain string ``"kafka"`` is ``00 05 6b 61 66 6b 61``.
The uvarint 300 is ``ac 02``: the low seven bits 0101100 with the continuation bit set, then 10.

:class:`Reader` decodes from a buffer without copying and raises :class:`ProtocolError` on every
kind of truncation or out-of-range value, so no ``struct.error`` or ``IndexError`` ever escapes a
decoder. A length read from the wire is checked against the bytes that remain *before* anything is
allocated, so a hostile ``count = 2**31 - 1`` costs nothing. :class:`Writer` accumulates bytes and
may also carry file slices (:class:`kafkalab.storage.positions.FileSlice`, the storage layer's
byte range of a segment file): record data that the server sends straight from the segment file
with ``sendfile`` (zero-copy, as Kafka's ``FileRecords.writeTo`` does). The codec never opens
them; a part that is not ``bytes`` is a file slice.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Union

from kafkalab.errors import ProtocolError

if TYPE_CHECKING:
    from kafkalab.storage.positions import FileSlice

UVARINT_BYTES_MAX = 5  # a uvarint carrying an unsigned 32-bit value needs at most 5 bytes
UVARLONG_BYTES_MAX = 10  # and a 64-bit one at most 10
STRING_BYTES_MAX = 32767  # int16 length prefix of a non-compact string

_INT8 = struct.Struct(">b")
_INT16 = struct.Struct(">h")
_UINT16 = struct.Struct(">H")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT64 = struct.Struct(">q")
_FLOAT64 = struct.Struct(">d")

ZERO_UUID = uuid.UUID(int=0)
# struct format codes of the fixed-width types, for runs packed with one Struct (see schema.py)
FIXED_CODES = {"int8": "b", "int16": "h", "uint16": "H", "int32": "i", "int64": "q", "float64": "d"}
_CODE_NAMES = {code: name for name, code in FIXED_CODES.items()}


Part = Union[bytes, "FileSlice"]


@dataclass(frozen=True, slots=True)
class RecordsParts:
    """Record data assembled from in-memory bytes and file slices (a fetch response's records)."""

    parts: tuple[Part, ...]

    @property
    def size_bytes(self) -> int:
        return sum(len(p) if isinstance(p, bytes) else p.size_bytes for p in self.parts)

    def to_bytes(self) -> bytes:
        return b"".join(p if isinstance(p, bytes) else p.read_bytes() for p in self.parts)


class Reader:
    """Decodes primitives from a buffer, front to back. Not thread-safe; one per message."""

    __slots__ = ("_view", "position", "_end", "records_as_views")

    def __init__(self, data: bytes | bytearray | memoryview, position: int = 0, *,
                 records_as_views: bool = False) -> None:
        self._view = memoryview(data)
        self.position = position
        self._end = len(self._view)
        # True: a records field comes back as a memoryview of ``data`` instead of a copy, as
        # Kafka's MemoryRecords wraps the request buffer. The caller keeps ``data`` alive and
        # unchanged for as long as it uses the records -- or, owning ``data``, may change them.
        self.records_as_views = records_as_views

    @property
    def remaining_bytes(self) -> int:
        return self._end - self.position

    def _advance(self, size_bytes: int, what: str) -> int:
        """Move past ``size_bytes`` bytes; returns where they start."""
        start = self.position
        if size_bytes > self._end - start:
            raise ProtocolError(
                f"truncated {what} at byte {start}: need {size_bytes} bytes, {self._end - start} remain"
            )
        self.position = start + size_bytes
        return start

    def _take(self, size_bytes: int, what: str) -> memoryview:
        start = self._advance(size_bytes, what)
        return self._view[start : self.position]

    def _fixed(self, codec: struct.Struct, what: str) -> int:
        value: int = codec.unpack_from(self._view, self._advance(codec.size, what))[0]
        return value

    def fixed_run(self, codec: struct.Struct, what: str) -> tuple[Any, ...]:
        """Several fixed-width fields in one ``unpack_from`` (a schema's run of int fields)."""
        values: tuple[Any, ...] = codec.unpack_from(self._view, self._advance(codec.size, what))
        return values

    def int8(self) -> int:
        return self._fixed(_INT8, "int8")

    def int16(self) -> int:
        return self._fixed(_INT16, "int16")

    def uint16(self) -> int:
        return self._fixed(_UINT16, "uint16")

    def int32(self) -> int:
        return self._fixed(_INT32, "int32")

    def uint32(self) -> int:
        return self._fixed(_UINT32, "uint32")

    def int64(self) -> int:
        return self._fixed(_INT64, "int64")

    def float64(self) -> float:
        value: float = _FLOAT64.unpack_from(self._take(8, "float64"))[0]
        return value

    def boolean(self) -> bool:
        return self._take(1, "bool")[0] != 0

    def uuid(self) -> uuid.UUID:
        return uuid.UUID(bytes=bytes(self._take(16, "uuid")))

    def uvarint(self, bytes_max: int = UVARINT_BYTES_MAX) -> int:
        position = self.position
        if position < self._end and self._view[position] < 0x80:  # one byte: counts, lengths, tags
            self.position = position + 1
            return self._view[position]
        value = 0
        for index in range(bytes_max):
            if self.position >= self._end:
                raise ProtocolError(f"truncated varint at byte {self.position}")
            byte = self._view[self.position]
            self.position += 1
            value |= (byte & 0x7F) << (7 * index)
            if not byte & 0x80:
                return value
        raise ProtocolError(f"varint longer than {bytes_max} bytes ending at byte {self.position}")

    def varint(self) -> int:
        raw = self.uvarint()
        return (raw >> 1) ^ -(raw & 1)  # zig-zag decoding

    def _length(self, compact: bool, what: str) -> int:
        """A length prefix; -1 means null. Checked against the bytes that remain."""
        length = self.uvarint() - 1 if compact else self.int32()
        if length < -1:
            raise ProtocolError(f"negative {what} length {length} at byte {self.position}")
        if length > self.remaining_bytes:
            raise ProtocolError(
                f"{what} length {length} at byte {self.position} exceeds the "
                f"{self.remaining_bytes} bytes that remain"
            )
        return length

    def string(self, compact: bool, nullable: bool) -> str | None:
        if compact:
            length = self._length(True, "string")
        else:
            length = self.int16()
            if length < -1:
                raise ProtocolError(f"negative string length {length} at byte {self.position}")
        if length == -1:
            if not nullable:
                raise ProtocolError(f"null in a non-nullable string at byte {self.position}")
            return None
        raw = self._take(length, "string")
        try:
            return str(raw, "utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(f"string at byte {self.position - length} is not UTF-8: {exc}") from None

    def bytes_(self, compact: bool, nullable: bool) -> bytes | None:
        view = self._nullable_view(compact, nullable, "bytes")
        return None if view is None else bytes(view)

    def records(self, compact: bool, nullable: bool) -> bytes | memoryview | None:
        """A records field: bytes, or a view of the buffer when ``records_as_views``."""
        view = self._nullable_view(compact, nullable, "records")
        return view if view is None or self.records_as_views else bytes(view)

    def _nullable_view(self, compact: bool, nullable: bool, what: str) -> memoryview | None:
        length = self._length(compact, what)
        if length == -1:
            if not nullable:
                raise ProtocolError(f"null in non-nullable {what} at byte {self.position}")
            return None
        return self._take(length, what)

    def array_count(self, compact: bool, nullable: bool) -> int:
        """Element count of an array; -1 for null. Each element takes at least one byte."""
        count = self._length(compact, "array")
        if count == -1 and not nullable:
            raise ProtocolError(f"null in a non-nullable array at byte {self.position}")
        return count

    def skip(self, size_bytes: int) -> None:
        self._take(size_bytes, "tagged field")


class Writer:
    """Encodes primitives into growing bytes plus borrowed file slices. Not thread-safe."""

    __slots__ = ("_buffer", "_parts")

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._parts: list[Part] = []

    def raw(self, data: bytes | bytearray | memoryview) -> None:
        self._buffer += data

    def fixed_run(self, codec: struct.Struct, values: Sequence[Any], names: Sequence[str]) -> None:
        """Several fixed-width fields in one ``pack``; a value that does not fit its field is a
        ProtocolError naming the field."""
        try:
            self._buffer += codec.pack(*values)
        except struct.error:
            for name, code, value in zip(names, codec.format.lstrip(">"), values):
                _pack(struct.Struct(">" + code), value, f"{_CODE_NAMES[code]} (field {name!r})")
            raise  # unreachable: one of the values failed above

    def int8(self, value: int) -> None:
        self._buffer += _pack(_INT8, value, "int8")

    def int16(self, value: int) -> None:
        self._buffer += _pack(_INT16, value, "int16")

    def uint16(self, value: int) -> None:
        self._buffer += _pack(_UINT16, value, "uint16")

    def int32(self, value: int) -> None:
        self._buffer += _pack(_INT32, value, "int32")

    def uint32(self, value: int) -> None:
        self._buffer += _pack(_UINT32, value, "uint32")

    def int64(self, value: int) -> None:
        self._buffer += _pack(_INT64, value, "int64")

    def float64(self, value: float) -> None:
        self._buffer += _FLOAT64.pack(value)

    def boolean(self, value: bool) -> None:
        self._buffer.append(1 if value else 0)

    def uuid(self, value: uuid.UUID) -> None:
        self._buffer += value.bytes

    def uvarint(self, value: int) -> None:
        if value < 0:
            raise ProtocolError(f"cannot encode negative value {value} as an unsigned varint")
        while value >= 0x80:
            self._buffer.append((value & 0x7F) | 0x80)
            value >>= 7
        self._buffer.append(value)

    def varint(self, value: int) -> None:
        self.uvarint((value << 1) ^ (value >> 63))  # zig-zag encoding

    def length(self, length: int, compact: bool) -> None:
        """A length or count prefix; -1 for null."""
        if compact:
            self.uvarint(length + 1)
        else:
            self.int32(length)

    def string(self, value: str | None, compact: bool) -> None:
        if value is None:
            self.uvarint(0) if compact else self.int16(-1)
            return
        raw = value.encode("utf-8")
        if compact:
            self.uvarint(len(raw) + 1)
        else:
            if len(raw) > STRING_BYTES_MAX:
                raise ProtocolError(f"string of {len(raw)} bytes exceeds {STRING_BYTES_MAX}")
            self.int16(len(raw))
        self._buffer += raw

    def bytes_(self, value: bytes | None, compact: bool) -> None:
        if value is None:
            self.length(-1, compact)
            return
        self.length(len(value), compact)
        self._buffer += value

    def records(self, value: bytes | RecordsParts | None, compact: bool) -> None:
        """Record data: bytes, or parts whose file slices are sent without copying."""
        if not isinstance(value, RecordsParts):
            self.bytes_(value, compact)
            return
        self.length(value.size_bytes, compact)
        for part in value.parts:
            if isinstance(part, bytes):
                self._buffer += part
            else:
                self._flush()
                self._parts.append(part)

    def _flush(self) -> None:
        if self._buffer:
            self._parts.append(bytes(self._buffer))
            self._buffer = bytearray()

    def parts(self) -> list[Part]:
        """Everything written so far: bytes interleaved with file slices."""
        self._flush()
        return list(self._parts)

    def to_bytes(self) -> bytes:
        """Everything written so far as one byte string (file slices are read in)."""
        return b"".join(p if isinstance(p, bytes) else p.read_bytes() for p in self.parts())


def _pack(codec: struct.Struct, value: int, what: str) -> bytes:
    try:
        return codec.pack(value)
    except struct.error:
        raise ProtocolError(f"value {value!r} does not fit in an {what}") from None


def parts_size_bytes(parts: list[Part]) -> int:
    """Total bytes of a list of parts."""
    return sum(len(p) if isinstance(p, bytes) else p.size_bytes for p in parts)
