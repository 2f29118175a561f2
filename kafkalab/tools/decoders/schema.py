"""Read a record body described like Kafka's JSON message specs, and print it as Kafka's JSON.

Theory of operation
-------------------
Kafka describes every internal record -- ``__consumer_offsets`` entries, ``__transaction_state``
entries, KRaft metadata records -- in a JSON spec (``OffsetCommitValue.json``,
``TopicRecord.json``, ...) and generates a reader and a ``...JsonConverter`` from it. The dump tool
prints those converters' output, so kafkalab mirrors both halves with one small interpreter:

* :func:`field` declares one field (Kafka's spec entry) and :class:`Spec` a whole message;
* :func:`read_message` walks the bytes with :class:`kafkalab.protocol.types.Reader` and returns an
  ordered ``dict`` keyed by the JSON names Kafka prints (the spec name with a lower-case first
  letter: ``TopicId`` -> ``topicId``).

The rules the generated converters follow, and this module copies:

* a field absent from the version being read is left out;
* a *tagged* field (flexible versions only, KIP-482) is printed only when its value differs from
  its default, and in declaration order, although on the wire it sits in the tag section at the
  end of its struct; unknown tags are skipped;
* a ``uuid`` prints as Kafka's ``Uuid.toString()``: URL-safe base64 of the 16 bytes, no padding;
  ``bytes`` print as standard base64 (Jackson's ``BinaryNode``); ``records`` print as ``""``.

Worked example: ``TopicRecord`` v0 (flexible) for ``"foo"`` is ``04 66 6f 6f`` (compact string:
length 3 + 1), sixteen topic-id bytes ``fe e6 98 cf ...``, then ``00`` (no tagged fields): 21
bytes that print as ``{"name":"foo","topicId":"_uaYz7wTRr2Ogdc1lPtl8A"}``.

Every length is checked against the bytes that remain before anything is allocated (the Reader
does this), so a hostile count costs nothing; all failures surface as :class:`ProtocolError`.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass, field as dc_field
from typing import Any

from kafkalab.errors import ProtocolError, UnsupportedVersionError
from kafkalab.protocol.schema import parse_versions
from kafkalab.protocol.types import Reader

TAGGED_FIELDS_MAX = 1024  # a tag section with more entries than this is hostile, not real
NESTING_MAX = 8  # deepest struct-in-struct of any spec declared here is 3

JsonValue = Any


def _versions(text: str | None) -> tuple[int, int] | None:
    """Kafka's version-range spelling, as the protocol schemas read it; None stays None."""
    return None if text is None else parse_versions(text)


def _within(span: tuple[int, int] | None, version: int) -> bool:
    return span is not None and span[0] <= version <= span[1]


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a spec. ``type`` is Kafka's spelling: int32, string, []int32, []Struct, ..."""

    name: str
    type: str
    versions: tuple[int, int]
    nullable: tuple[int, int] | None
    tag: int | None
    default: JsonValue
    fields: tuple[Field, ...] = ()

    @property
    def json_name(self) -> str:
        return self.name[:1].lower() + self.name[1:]


def field(name: str, type_: str, versions: str = "0+", *, nullable: str | None = None,
          tag: int | None = None, default: JsonValue = None,
          fields: tuple[Field, ...] = ()) -> Field:
    """Declare a field as Kafka's spec does; ``default`` matters only for tagged fields."""
    span = _versions(versions)
    assert span is not None
    return Field(name, type_, span, _versions(nullable), tag, default, fields)


@dataclass(frozen=True, slots=True)
class Spec:
    """A message: its name, valid versions and the first flexible version (None: never)."""

    name: str
    valid: tuple[int, int]
    flexible_from: int | None
    fields: tuple[Field, ...] = dc_field(default=())

    def is_flexible(self, version: int) -> bool:
        return self.flexible_from is not None and version >= self.flexible_from


def spec(name: str, valid: str, flexible: str | None, *fields: Field) -> Spec:
    span = _versions(valid)
    assert span is not None
    return Spec(name, span, None if flexible is None else int(flexible.rstrip("+")), fields)


# ----------------------------------------------------------------------------- primitives

def kafka_uuid(raw: bytes) -> str:
    """Kafka's ``Uuid.toString()``: URL-safe base64 without the two ``=`` of padding."""
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


_FIXED: dict[str, Callable[[Reader], JsonValue]] = {
    "int8": Reader.int8, "int16": Reader.int16, "uint16": Reader.uint16,
    "int32": Reader.int32, "uint32": Reader.uint32, "int64": Reader.int64,
    "float64": Reader.float64, "bool": Reader.boolean,
    "uuid": lambda r: kafka_uuid(r.uuid().bytes),
}


class _Context:
    """Where a read is: the reader, the version and whether it is flexible. Owned by one read."""

    __slots__ = ("reader", "version", "flexible")

    def __init__(self, reader: Reader, version: int, flexible: bool) -> None:
        self.reader, self.version, self.flexible = reader, version, flexible


def _nullable(f: Field, version: int) -> bool:
    return _within(f.nullable, version)


def _read_value(ctx: _Context, f: Field, type_: str, depth: int, nullable: bool) -> JsonValue:
    """One value of ``type_``; ``nullable`` is the field's, never an array element's."""
    reader = ctx.reader
    if type_ in _FIXED:
        return _FIXED[type_](reader)
    if type_ == "string":
        return reader.string(ctx.flexible, nullable)
    if type_ in ("bytes", "records"):
        raw = reader.bytes_(ctx.flexible, nullable)
        if raw is None:
            return None
        return "" if type_ == "records" else base64.b64encode(raw).decode("ascii")
    if type_.startswith("[]"):
        count = reader.array_count(ctx.flexible, nullable)
        if count < 0:
            return None
        return [_read_value(ctx, f, type_[2:], depth, False) for _ in range(count)]
    if f.fields:  # a struct; a nullable struct is preceded by a presence byte (-1 null, 1 set)
        if nullable and reader.int8() < 0:
            return None
        return _read_struct(ctx, f.fields, depth + 1)
    raise ProtocolError(f"field {f.name} has type {type_!r}, which the decoder does not know")


def _read_struct(ctx: _Context, fields: tuple[Field, ...], depth: int) -> dict[str, JsonValue]:
    """Fields in declaration order; tagged ones filled in from the tag section at the end."""
    if depth > NESTING_MAX:
        raise ProtocolError(f"structs nested deeper than {NESTING_MAX}")
    present = [f for f in fields if _within(f.versions, ctx.version)]
    values: dict[str, JsonValue] = {}
    for f in present:
        if f.tag is None:
            values[f.name] = _read_value(ctx, f, f.type, depth, _nullable(f, ctx.version))
    if ctx.flexible:
        _read_tags(ctx, {f.tag: f for f in present if f.tag is not None}, values, depth)
    out: dict[str, JsonValue] = {}
    for f in present:
        if f.name not in values:
            continue  # a tagged field that was not sent: it holds its default, not printed
        if f.tag is not None and values[f.name] == f.default:
            continue
        out[f.json_name] = values[f.name]
    return out


def _read_tags(ctx: _Context, by_tag: dict[int, Field], values: dict[str, JsonValue],
               depth: int) -> None:
    reader = ctx.reader
    count = reader.uvarint()
    if count > TAGGED_FIELDS_MAX:
        raise ProtocolError(f"tag section of {count} fields exceeds {TAGGED_FIELDS_MAX}")
    for _ in range(count):
        tag, size_bytes = reader.uvarint(), reader.uvarint()
        known = by_tag.get(tag)
        if known is None:
            reader.skip(size_bytes)
            continue
        start = reader.position
        values[known.name] = _read_value(ctx, known, known.type, depth,
                                         _nullable(known, ctx.version))
        if reader.position - start != size_bytes:
            raise ProtocolError(f"tagged field {known.name} (tag {tag}) declared {size_bytes} "
                                f"bytes but its value took {reader.position - start}")


def read_message(message: Spec, reader: Reader, version: int) -> dict[str, JsonValue]:
    """Read one ``message`` at ``version`` from ``reader``; Kafka's JSON shape, in order."""
    if not message.valid[0] <= version <= message.valid[1]:
        raise UnsupportedVersionError(f"Can't read version {version} of {message.name}")
    ctx = _Context(reader, version, message.is_flexible(version))
    return _read_struct(ctx, message.fields, 0)


def to_json(value: JsonValue) -> str:
    """Compact JSON the way Jackson's ``ObjectNode.toString`` prints it (UTF-8, no spaces)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


__all__ = ["Field", "Spec", "field", "kafka_uuid", "read_message", "spec", "to_json"]
