"""Print a decoded message as Kafka's JSON, the way its generated ``...JsonConverter`` does.

Theory of operation
-------------------
Kafka generates, next to each message's reader and writer, a JSON converter; ``kafka-dump-log.sh``
prints internal records (``__consumer_offsets``, ``__transaction_state``, ``__cluster_metadata``)
with it. kafkalab reads such a record with the one interpreter of message schemas
(:mod:`kafkalab.protocol.schema`, the same code that decodes requests) and then walks the
declaration once more to print the value. The rules the converters follow, and this module
copies:

* keys are the spec's names with a lower-case first letter (``TopicId`` -> ``topicId``; a
  snake_case declaration is camel-cased first: ``leader_epoch`` -> ``leaderEpoch``), in
  declaration order;
* a field absent from the version being printed is left out;
* a *tagged* field (flexible versions only, KIP-482) is printed only when its value differs from
  its default -- in its declaration position, although on the wire it sits in the tag section
  at the end of its struct;
* a ``uuid`` prints as Kafka's ``Uuid.toString()``: URL-safe base64 of the 16 bytes, no padding;
  ``bytes`` print as standard base64 (Jackson's ``BinaryNode``); ``records`` print as ``""``.

Worked example: ``TopicRecord`` v0 (flexible) for ``"foo"`` is ``04 66 6f 6f`` (compact string:
length 3 + 1), sixteen topic-id bytes ``fe e6 98 cf ...``, then ``00`` (no tagged fields): 21
bytes that print as ``{"name":"foo","topicId":"_uaYz7wTRr2Ogdc1lPtl8A"}``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

from kafkalab.protocol.schema import Field, Message
from kafkalab.protocol.types import Reader

JsonValue = Any


def kafka_uuid(raw: bytes) -> str:
    """Kafka's ``Uuid.toString()``: URL-safe base64 without the two ``=`` of padding."""
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def to_json(value: JsonValue) -> str:
    """Compact JSON the way Jackson's ``ObjectNode.toString`` prints it (UTF-8, no spaces)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def message_json(message: Message, value: Any, version: int) -> dict[str, JsonValue]:
    """``value`` (a decoded ``message`` at ``version``) as Kafka's JSON converter builds it."""
    return _struct_json(message.struct.fields, value, version, message.is_flexible(version))


def read_json(message: Message, reader: Reader, version: int) -> dict[str, JsonValue]:
    """Read one ``message`` at ``version`` from ``reader`` and return its JSON form."""
    return message_json(message, message.read(reader, version), version)


def _struct_json(fields: Sequence[Field], value: Any, version: int,
                 flexible: bool) -> dict[str, JsonValue]:
    out: dict[str, JsonValue] = {}
    for fld in fields:
        if not fld.in_version(version):
            continue
        item = getattr(value, fld.name)
        if fld.tag is not None and (not flexible or item == fld.default):
            continue  # not sent, or sent holding its default: the converter leaves it out
        out[fld.json_name] = _value_json(fld, item, version, flexible, fld.is_array)
    return out


def _value_json(fld: Field, item: Any, version: int, flexible: bool, array: bool) -> JsonValue:
    if item is None:
        return None
    if array:
        return [_value_json(fld, element, version, flexible, False) for element in item]
    if fld.struct is not None:
        return _struct_json(fld.struct.fields, item, version, flexible)
    kind = fld.element_type
    if kind == "uuid":
        return kafka_uuid(item.bytes)
    if kind == "bytes":
        return base64.b64encode(item).decode("ascii")
    if kind == "records":
        return ""
    return item


__all__ = ["JsonValue", "kafka_uuid", "message_json", "read_json", "to_json"]
