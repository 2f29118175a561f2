"""Zig-zag variable-length integers, as in protobuf and Kafka's ``ByteUtils``.

Theory of operation
-------------------
A v2 record spends most of its header on small numbers (a timestamp delta, an offset delta, a
key length), so Kafka writes them as *varints*: 7 bits per byte, least significant group first,
the top bit of each byte saying "more bytes follow". Signed values are first *zig-zag* mapped
so that small negative numbers stay short::

    value   zig-zag   bytes
      0        0      00
     -1        1      01          (a null key: keyLength = -1)
      1        2      02
     -2        3      03
     63      126      7e
     64      128      80 01       (128 = 0b1_0000000: low group 0 with "more", then 1)
    300      600      d8 04

An int32 ``varint`` needs at most 5 bytes and an int64 ``varlong`` at most 10. A longer run of
continuation bits is corruption (Kafka: "Varint is too long"), so the reader stops after
``VARINT_BYTES_MAX`` / ``VARLONG_BYTES_MAX`` bytes instead of looping over attacker-chosen input.
"""

from __future__ import annotations

from kafkalab.errors import CorruptRecordError

VARINT_BYTES_MAX = 5  # ceil(32 / 7)
VARLONG_BYTES_MAX = 10  # ceil(64 / 7)
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def zigzag_encode(value: int) -> int:
    """Map a signed int64 to an unsigned one: 0,-1,1,-2,... -> 0,1,2,3,..."""
    return ((value << 1) ^ (value >> 63)) & 0xFFFF_FFFF_FFFF_FFFF


def zigzag_decode(raw: int) -> int:
    return (raw >> 1) ^ -(raw & 1)


_ONE_BYTE = tuple(bytes((raw,)) for raw in range(0x80))  # the common case, prebuilt
# Two-byte varints, kept once built: a producer encodes the same lengths and offset deltas for
# record after record, and a lookup costs a fraction of building the bytes. At most 16,384
# entries (the values -8192..8191), about 0.6 MB.
_TWO_BYTES: dict[int, bytes] = {}


def _encode_unsigned(raw: int) -> bytes:
    if raw < 0x80:
        return _ONE_BYTE[raw]
    if raw < 0x4000:
        return bytes(((raw & 0x7F) | 0x80, raw >> 7))
    out = bytearray()
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


def encode_varint(value: int) -> bytes:
    """Encode an int32 as a zig-zag varint (1 to 5 bytes)."""
    if -64 <= value < 64:  # one byte; most deltas, lengths and counts in a record
        return _ONE_BYTE[(value << 1) ^ (value >> 63)]
    if -8192 <= value < 8192:  # two bytes: a 1 KiB value's length, an offset delta below 8192
        encoded = _TWO_BYTES.get(value)
        if encoded is None:
            raw = (value << 1) ^ (value >> 63)
            encoded = _TWO_BYTES[value] = bytes(((raw & 0x7F) | 0x80, raw >> 7))
        return encoded
    if not INT32_MIN <= value <= INT32_MAX:
        raise ValueError(f"varint value {value} outside int32 range")
    return _encode_unsigned(zigzag_encode(value) & 0xFFFF_FFFF)


def encode_varlong(value: int) -> bytes:
    """Encode an int64 as a zig-zag varlong (1 to 10 bytes)."""
    if -64 <= value < 64:
        return _ONE_BYTE[(value << 1) ^ (value >> 63)]
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(f"varlong value {value} outside int64 range")
    return _encode_unsigned(zigzag_encode(value))


def size_of_varint(value: int) -> int:
    """How many bytes :func:`encode_varint` / :func:`encode_varlong` would write."""
    raw = zigzag_encode(value)
    size = 1
    while raw >= 0x80:
        raw >>= 7
        size += 1
    return size


def _read_unsigned(buf, position: int, end: int, bytes_max: int, what: str) -> tuple[int, int]:
    raw = 0
    shift = 0
    for i in range(bytes_max):
        if position + i >= end:
            raise CorruptRecordError(f"{what} runs past the end of its region", position=position)
        byte = buf[position + i]
        raw |= (byte & 0x7F) << shift
        if byte < 0x80:
            return raw, position + i + 1
        shift += 7
    raise CorruptRecordError(f"{what} is longer than {bytes_max} bytes", position=position)


def read_varint(buf, position: int, end: int) -> tuple[int, int]:
    """Decode an int32 varint at ``position`` (not reading at or past ``end``);
    return ``(value, next_position)``. Bits beyond 32 are dropped, as Java's int arithmetic does."""
    raw, nxt = _read_unsigned(buf, position, end, VARINT_BYTES_MAX, "varint")
    return zigzag_decode(raw & 0xFFFF_FFFF), nxt


def read_varlong(buf, position: int, end: int) -> tuple[int, int]:
    """Decode an int64 varlong; return ``(value, next_position)``."""
    raw, nxt = _read_unsigned(buf, position, end, VARLONG_BYTES_MAX, "varlong")
    return zigzag_decode(raw & 0xFFFF_FFFF_FFFF_FFFF), nxt
