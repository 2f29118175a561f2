"""Declarative, versioned message schemas: one declaration serves every version of a message.

Theory of operation
-------------------
Kafka describes each request and response once, in a JSON file under
``clients/src/main/resources/common/message/``, and generates Java code from it. kafkalab keeps
the same idea in a compact Python form and interprets it at run time::

    PRODUCE_RESPONSE = message("ProduceResponse", api_key=ApiKey.PRODUCE, valid="3-9",
                               flexible="9+", fields=[
        f("responses", "[]TopicProduceResponse", fields=[
            f("name", "string"),
            f("partition_responses", "[]PartitionProduceResponse", fields=[
                f("index", "int32"),
                f("error_code", "int16"),
                f("base_offset", "int64"),
                f("log_append_time_ms", "int64", "2+", default=-1),
            ]),
        ]),
        f("throttle_time_ms", "int32", "1+"),
    ])

The same declaration describes messages that are no request or response: the records Kafka
keeps in its internal topics (``OffsetCommitValue`` in ``__consumer_offsets``, ``TopicRecord`` in
``__cluster_metadata``, ...) have a version range and flexible versions but no API key, so
``message()`` takes ``api_key`` only for the wire APIs. :mod:`kafkalab.protocol.schema_json`
prints any decoded message as Kafka's generated JSON converters do (the dump tool's output).

Each field lists the versions it exists in (``"2+"``, ``"0-12"``), the versions in which it may be
null, an optional tag (a *tagged field*, KIP-482, sent only when it differs from its default) and
its default. A nullable struct-typed field is preceded by a presence byte (-1: null, 1: a struct
follows). A version is *flexible* from ``flexible`` upward: there strings, bytes and arrays use
the compact (uvarint N+1) encodings and every struct ends with a tagged-field section.

Every struct becomes a frozen, slotted dataclass (``PRODUCE_RESPONSE.cls`` and, nested inside it,
``PRODUCE_RESPONSE.cls.TopicProduceResponse``). Fields absent from a version decode to their
default, so handlers read ``request.transactional_id`` without checking the version first.

Worked example: Produce response v3 for one partition of ``"t"`` at base offset 42 is
``[1 topic]["t"][1 partition][index 0][error 0][base offset 42][log append time -1][throttle 0]``
-- 4 + 3 + 4 + 4 + 2 + 8 + 8 + 4 = 37 bytes. At v9 the three length prefixes shrink to one
uvarint byte each (-7), ``log_start_offset`` (+8), ``record_errors`` and ``error_message`` (+1 each)
appear, and each of the three structs ends with an empty tag section (+3): 43 bytes.

For speed, the per-version field plan (which fields, which codec) is built once per
(struct, version) and cached, and consecutive fixed-width fields in it are read and written
with one ``struct.Struct``: Fetch v12 opens with ``replica_id, max_wait_ms, min_bytes,
max_bytes, isolation_level, session_id, session_epoch`` -- one ``unpack_from(">iiiibii")``
instead of seven reads, each with its own bounds check.
"""

from __future__ import annotations

import dataclasses
import operator
import struct
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from kafkalab.errors import ProtocolError, UnsupportedVersionError
from kafkalab.protocol.types import FIXED_CODES, ZERO_UUID, Reader, Writer

VERSION_MAX = 32767  # "N+" means up to the largest int16 version
TAGGED_FIELDS_MAX = 1024  # a tagged-field section with more entries is hostile, not real

ReadFn = Callable[[Reader], Any]
WriteFn = Callable[[Writer, Any], None]

_UNSET: Any = object()


def parse_versions(text: str) -> tuple[int, int]:
    """``"3+"`` -> (3, 32767); ``"0-12"`` -> (0, 12); ``"5"`` -> (5, 5)."""
    if text.endswith("+"):
        return int(text[:-1]), VERSION_MAX
    low, _, high = text.partition("-")
    return int(low), int(high or low)


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a struct, valid in ``versions`` (inclusive)."""

    name: str
    type: str
    versions: tuple[int, int]
    nullable: tuple[int, int] | None
    tag: int | None
    default: Any
    struct: Struct | None

    def in_version(self, version: int) -> bool:
        return self.versions[0] <= version <= self.versions[1]

    def nullable_in(self, version: int) -> bool:
        return self.nullable is not None and self.nullable[0] <= version <= self.nullable[1]

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def json_name(self) -> str:
        """The key Kafka's JSON converters print: ``leader_epoch`` and ``LeaderEpoch`` both
        become ``leaderEpoch`` (camel case, lower-case first letter)."""
        head, *rest = self.name.split("_")
        return head[:1].lower() + head[1:] + "".join(word[:1].upper() + word[1:] for word in rest)


_PRIMITIVE_DEFAULTS: dict[str, Any] = {
    "int8": 0, "int16": 0, "int32": 0, "int64": 0, "uint16": 0, "uint32": 0, "float64": 0.0,
    "bool": False, "string": "", "bytes": b"", "records": None, "uuid": ZERO_UUID,
}


class Struct:
    """A named list of fields and the dataclass generated for it. Immutable after construction."""

    def __init__(self, name: str, fields: Sequence[Field]) -> None:
        self.name = name
        self.fields = tuple(fields)
        self.cls = dataclasses.make_dataclass(
            name,
            [(f.name, Any, dataclasses.field(default=f.default)) for f in self.fields],
            frozen=True,
            slots=True,
        )
        names = {f.name for f in self.fields}
        for f in self.fields:
            # Kafka's specs may name a field after its struct type (``KRaftVersionFeature``):
            # then the attribute is the field's, and the class stays reachable via ``.struct``.
            if f.struct is not None and f.struct.name not in names:
                setattr(self.cls, f.struct.name, f.struct.cls)
        self._plans: dict[tuple[int, bool], _Plan] = {}

    def plan(self, version: int, flexible: bool) -> _Plan:
        key = (version, flexible)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = _Plan.build(self, version, flexible)
        return plan

    def read(self, reader: Reader, version: int, flexible: bool) -> Any:
        return self.plan(version, flexible).read(reader)

    def write(self, writer: Writer, value: Any, version: int, flexible: bool) -> None:
        self.plan(version, flexible).write(writer, value)


def f(
    name: str,
    type_: str,
    versions: str = "0+",
    *,
    nullable: str | None = None,
    tag: int | None = None,
    default: Any = _UNSET,
    fields: Sequence[Field] = (),
) -> Field:
    """Declare a field. ``type_`` is a primitive, ``[]primitive``, ``StructName`` or ``[]StructName``."""
    element = type_[2:] if type_.startswith("[]") else type_
    struct = Struct(element, fields) if fields else None
    if struct is None and element not in _PRIMITIVE_DEFAULTS:
        raise ValueError(f"field {name!r}: unknown type {type_!r} and no struct fields given")
    if default is _UNSET:
        if type_.startswith("[]"):
            default = ()
        elif struct is not None:
            default = None
        elif nullable is not None and element in ("string", "bytes", "records"):
            default = None
        else:
            default = _PRIMITIVE_DEFAULTS[element]
    null_range = parse_versions(nullable) if nullable is not None else None
    return Field(name, type_, parse_versions(versions), null_range, tag, default, struct)


@dataclass(frozen=True, slots=True)
class Message:
    """A message schema: its valid versions and first flexible version, and for a request or
    response its API key (None for the records of Kafka's internal topics)."""

    name: str
    api_key: int | None
    valid: tuple[int, int]
    flexible_from: int
    struct: Struct = field(repr=False)

    @property
    def cls(self) -> Any:
        return self.struct.cls

    def is_flexible(self, version: int) -> bool:
        return version >= self.flexible_from

    def check_version(self, version: int, action: str = "read") -> None:
        """Kafka's generated code words this error ``Can't read version 5 of TopicRecord``."""
        if not self.valid[0] <= version <= self.valid[1]:
            raise UnsupportedVersionError(f"Can't {action} version {version} of {self.name}")

    def read(self, reader: Reader, version: int) -> Any:
        """Read one message at ``version`` from ``reader``, leaving it just after the message."""
        self.check_version(version)
        return self.struct.read(reader, version, self.is_flexible(version))

    def decode(self, data: bytes | bytearray | memoryview, version: int, *, allow_trailing: bool = False,
               records_as_views: bool = False) -> Any:
        """Decode a whole body; trailing bytes are an error unless ``allow_trailing`` (the broker
        reads requests as Kafka's generated readers do: field by field, ignoring what is left).
        ``records_as_views``: records fields are views of ``data``, not copies (see Reader)."""
        reader = Reader(data, records_as_views=records_as_views)
        value = self.read(reader, version)
        if reader.remaining_bytes and not allow_trailing:
            raise ProtocolError(
                f"{self.name} v{version}: {reader.remaining_bytes} unexpected trailing bytes "
                f"at byte {reader.position}"
            )
        return value

    def encode_into(self, writer: Writer, value: Any, version: int) -> None:
        self.check_version(version, "write")
        self.struct.write(writer, value, version, self.is_flexible(version))

    def encode(self, value: Any, version: int) -> bytes:
        writer = Writer()
        self.encode_into(writer, value, version)
        return writer.to_bytes()


def message(
    name: str, *, api_key: int | None = None, valid: str, flexible: str, fields: Sequence[Field]
) -> Message:
    """Declare a message; ``flexible="none"`` for messages without flexible versions, no
    ``api_key`` for an internal topic's record (``message("GroupMetadataKey", valid="0",
    flexible="none", fields=[f("group", "string")])``)."""
    flexible_from = VERSION_MAX + 1 if flexible == "none" else parse_versions(flexible)[0]
    return Message(name, api_key, parse_versions(valid), flexible_from, Struct(name, fields))


# --- the per-version plan ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Run:
    """Consecutive fixed-width fields read and written with one ``struct.Struct``: the eight
    int fields that open a Fetch request, the five that open each partition of its response."""

    names: tuple[str, ...]
    codec: struct.Struct
    singles: tuple[tuple[str, ReadFn, WriteFn], ...]  # the same fields one by one
    what: str  # how an error names the run: "fields a, b"; built once, read on every run
    values: Callable[[Any], tuple[Any, ...]]  # the run's values from a message, in order


@dataclass(frozen=True, slots=True)
class _Plan:
    """Which fields a struct has at one version, in wire order, with their codecs."""

    cls: Any
    defaults: dict[str, Any]
    untagged: tuple[tuple[str, ReadFn, WriteFn], ...]
    tagged: dict[int, tuple[str, ReadFn, WriteFn]]  # tag -> (field name, read, write), tag order
    flexible: bool
    steps: tuple[Any, ...]  # ``untagged`` with runs of fixed-width fields merged into _Run

    @staticmethod
    def build(struct: Struct, version: int, flexible: bool) -> _Plan:
        untagged = []
        codes = []
        tagged = {}
        defaults = {}
        for fld in struct.fields:
            defaults[fld.name] = fld.default
            if not fld.in_version(version):
                continue
            read, write = _codec(fld, version, flexible)
            if fld.tag is not None:
                if flexible:
                    tagged[fld.tag] = (fld.name, read, write)
            else:
                untagged.append((fld.name, read, write))
                codes.append(FIXED_CODES.get(fld.type) if fld.struct is None else None)
        return _Plan(struct.cls, defaults, tuple(untagged), dict(sorted(tagged.items())), flexible,
                     _merge_runs(untagged, codes))

    def read(self, reader: Reader) -> Any:
        values: dict[str, Any] = {}
        for step in self.steps:
            if type(step) is tuple:
                values[step[0]] = step[1](reader)
            elif reader.remaining_bytes >= step.codec.size:
                values.update(zip(step.names, reader.fixed_run(step.codec, step.what)))
            else:  # truncated: read one by one, so the error names the field that is cut short
                for name, read, _ in step.singles:
                    values[name] = read(reader)
        if self.flexible:
            self._read_tagged(reader, values)
        return self.cls(**values)

    def _read_tagged(self, reader: Reader, values: dict[str, Any]) -> None:
        count = reader.uvarint()
        if count > TAGGED_FIELDS_MAX:
            raise ProtocolError(f"tag section of {count} fields exceeds {TAGGED_FIELDS_MAX}")
        for _ in range(count):
            tag = reader.uvarint()
            size_bytes = reader.uvarint()
            known = self.tagged.get(tag)
            if known is None:
                reader.skip(size_bytes)  # unknown tags are skipped, as KIP-482 requires
                continue
            name, read, _ = known
            start = reader.position
            values[name] = read(reader)
            if reader.position - start != size_bytes:
                raise ProtocolError(
                    f"tagged field {name} (tag {tag}) declared {size_bytes} bytes but its value "
                    f"took {reader.position - start}"
                )

    def write(self, writer: Writer, value: Any) -> None:
        if isinstance(value, dict):  # for convenience in tests: a plain dict, defaults filled in
            value = SimpleNamespace(**{**self.defaults, **value})
        for step in self.steps:
            if type(step) is tuple:
                step[2](writer, getattr(value, step[0]))
            else:
                writer.fixed_run(step.codec, step.values(value), step.names)
        if not self.flexible:
            return
        present = []
        for tag, (name, _, write) in self.tagged.items():  # in tag order, as KIP-482 requires
            tag_value = getattr(value, name)
            if tag_value != self.defaults[name]:
                present.append((tag, write, tag_value))
        writer.uvarint(len(present))
        for tag, write, tag_value in present:
            inner = Writer()
            write(inner, tag_value)
            body = inner.to_bytes()
            writer.uvarint(tag)
            writer.uvarint(len(body))
            writer.raw(body)


def _merge_runs(untagged: list[tuple[str, ReadFn, WriteFn]], codes: list[str | None]) -> tuple[Any, ...]:
    """``untagged`` with every run of two or more fixed-width fields replaced by one _Run."""
    steps: list[Any] = []
    index = 0
    while index < len(untagged):
        end = index
        while end < len(untagged) and codes[end] is not None:
            end += 1
        if end - index >= 2:
            run = tuple(untagged[index:end])
            fmt = ">" + "".join(code for code in codes[index:end] if code is not None)
            names = tuple(name for name, _, _ in run)
            steps.append(_Run(names, struct.Struct(fmt), run, "fields " + ", ".join(names),
                              operator.attrgetter(*names)))
            index = end
        else:
            steps.append(untagged[index])
            index += 1
    return tuple(steps)


def _codec(fld: Field, version: int, flexible: bool) -> tuple[ReadFn, WriteFn]:
    nullable = fld.nullable_in(version)
    if fld.is_array:
        element_read, element_write = _element_codec(fld, version, flexible, False)
        return _array_codec(fld.name, element_read, element_write, flexible, nullable)
    return _element_codec(fld, version, flexible, nullable)


def _array_codec(
    name: str, read_one: ReadFn, write_one: WriteFn, compact: bool, nullable: bool
) -> tuple[ReadFn, WriteFn]:
    def read(reader: Reader) -> Any:
        count = reader.array_count(compact, nullable)
        if count == -1:
            return None
        return tuple([read_one(reader) for _ in range(count)])

    def write(writer: Writer, value: Any) -> None:
        if value is None:
            if not nullable:
                raise ProtocolError(f"array field {name!r} is not nullable in this version")
            writer.length(-1, compact)
            return
        writer.length(len(value), compact)
        for item in value:
            write_one(writer, item)

    return read, write


def _element_codec(fld: Field, version: int, flexible: bool, nullable: bool) -> tuple[ReadFn, WriteFn]:
    if fld.struct is not None:
        struct = fld.struct
        if nullable:
            return _nullable_struct_codec(struct, version, flexible)
        plan = struct.plan(version, flexible)  # a nested struct's plan, found once
        return plan.read, plan.write
    factory = _PRIMITIVE_CODECS[fld.element_type]
    return factory(flexible, nullable, fld.name)


def _nullable_struct_codec(struct: Struct, version: int, flexible: bool) -> tuple[ReadFn, WriteFn]:
    """A presence byte, then the struct: -1 means null (any negative byte reads as null)."""

    def read(reader: Reader) -> Any:
        if reader.int8() < 0:
            return None
        return struct.read(reader, version, flexible)

    def write(writer: Writer, value: Any) -> None:
        if value is None:
            writer.int8(-1)
            return
        writer.int8(1)
        struct.write(writer, value, version, flexible)

    return read, write


def _fixed(name: str) -> Callable[[bool, bool, str], tuple[ReadFn, WriteFn]]:
    def factory(compact: bool, nullable: bool, field_name: str) -> tuple[ReadFn, WriteFn]:
        return getattr(Reader, name), getattr(Writer, name)

    return factory


def _string_codec(compact: bool, nullable: bool, field_name: str) -> tuple[ReadFn, WriteFn]:
    def write(writer: Writer, value: str | None) -> None:
        if value is None and not nullable:
            raise ProtocolError(f"string field {field_name!r} is not nullable in this version")
        writer.string(value, compact)

    return (lambda r: r.string(compact, nullable)), write


def _bytes_codec(compact: bool, nullable: bool, field_name: str) -> tuple[ReadFn, WriteFn]:
    return (lambda r: r.bytes_(compact, nullable)), (lambda w, v: w.bytes_(v, compact))


def _records_codec(compact: bool, nullable: bool, field_name: str) -> tuple[ReadFn, WriteFn]:
    return (lambda r: r.records(compact, nullable)), (lambda w, v: w.records(v, compact))


def _uuid_codec(compact: bool, nullable: bool, field_name: str) -> tuple[ReadFn, WriteFn]:
    def write(writer: Writer, value: uuid.UUID) -> None:
        writer.uuid(value)

    return Reader.uuid, write


_PRIMITIVE_CODECS: dict[str, Callable[[bool, bool, str], tuple[ReadFn, WriteFn]]] = {
    "int8": _fixed("int8"),
    "int16": _fixed("int16"),
    "uint16": _fixed("uint16"),
    "int32": _fixed("int32"),
    "uint32": _fixed("uint32"),
    "int64": _fixed("int64"),
    "float64": _fixed("float64"),
    "bool": lambda c, n, name: (Reader.boolean, Writer.boolean),
    "string": _string_codec,
    "bytes": _bytes_codec,
    "records": _records_codec,
    "uuid": _uuid_codec,
}
