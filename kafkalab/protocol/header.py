"""Request and response headers, and the two rules that make ApiVersions special.

Request header v1 is ``api_key int16, api_version int16, correlation_id int32, client_id``
(a nullable int16-length string); v2, used by flexible versions, adds a tagged-field section but
keeps ``client_id`` non-compact. Response header v0 is just ``correlation_id``; v1 adds tagged
fields. Which header version applies depends on whether the *API version* is flexible.

ApiVersions breaks the pattern twice (KIP-511): its response header is always v0, and an
ApiVersions request at a version the broker does not know is still answered (see
:func:`unsupported_api_versions_response`).

Worked example: kafka-python's first bytes on a connection are ApiVersions v4 with correlation
id 1 and client id ``"kafka-python-3.0"``: ``00 12 00 04 00 00 00 01 00 10 "kafka-python-3.0"
00`` -- 2+2+4+2+16 bytes of v2 header, then an empty tag section.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafkalab.errors import ProtocolError
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.fetch_codec import decode_fetch_request, decode_fetch_response, encode_fetch_response
from kafkalab.protocol.framing import size_prefix
from kafkalab.protocol.messages import SCHEMAS
from kafkalab.protocol.messages.api_versions import API_VERSIONS_RESPONSE
from kafkalab.protocol.messages.broker_lifecycle import CONTROLLER_SCHEMAS
from kafkalab.protocol.schema import TAGGED_FIELDS_MAX
from kafkalab.protocol.types import Part, Reader, Writer, parts_size_bytes



@dataclass(frozen=True, slots=True)
class RequestHeader:
    """A decoded request header; ``body_offset`` is where the body starts in the frame."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body_offset: int


def request_is_flexible(api_key: int, api_version: int) -> bool:
    """Header v2 iff this API version is flexible; unknown APIs are assumed not flexible."""
    pair = SCHEMAS.get(api_key) or CONTROLLER_SCHEMAS.get(api_key)
    return pair is not None and pair[0].is_flexible(api_version)


def _schemas(api_key: int) -> Any:
    """(request, response) schemas of an API clients use, or of a controller-only one."""
    return SCHEMAS[api_key] if api_key in SCHEMAS else CONTROLLER_SCHEMAS[api_key]


def decode_request_header(frame: bytes | bytearray | memoryview) -> RequestHeader:
    reader = Reader(frame)
    api_key = reader.int16()
    api_version = reader.int16()
    correlation_id = reader.int32()
    client_id = reader.string(compact=False, nullable=True)
    if request_is_flexible(api_key, api_version):
        _skip_tagged_fields(reader)
    return RequestHeader(api_key, api_version, correlation_id, client_id, reader.position)


def peek_correlation_id(frame: bytes | bytearray | memoryview) -> int | None:
    """The correlation id of a frame whose header may be malformed, if it has one."""
    if len(frame) < 8:
        return None
    return int.from_bytes(bytes(frame[4:8]), "big", signed=True)


def _skip_tagged_fields(reader: Reader) -> None:
    count = reader.uvarint()
    if count > TAGGED_FIELDS_MAX:
        raise ProtocolError(f"{count} header tagged fields exceed the limit of {TAGGED_FIELDS_MAX}")
    for _ in range(count):
        reader.uvarint()
        reader.skip(reader.uvarint())


def encode_request(
    api_key: int, api_version: int, correlation_id: int, client_id: str | None, body: Any
) -> bytes:
    """A whole framed request (used by tests and by kafkalab's own tools)."""
    request_schema = _schemas(api_key)[0]
    writer = Writer()
    writer.int16(api_key)
    writer.int16(api_version)
    writer.int32(correlation_id)
    writer.string(client_id, compact=False)
    if request_schema.is_flexible(api_version):
        writer.uvarint(0)
    request_schema.encode_into(writer, body, api_version)
    data = writer.to_bytes()
    return size_prefix(len(data)) + data


def decode_request_body(api_key: int, api_version: int, data: bytes | bytearray | memoryview) -> Any:
    """A request body as the broker reads it: field by field, ignoring trailing bytes (as
    Kafka's generated readers do). Fetch takes its dedicated reader (same result, faster).

    Records (a Produce request's batches) come back as views of ``data``, not copies: the
    broker owns the request frame, validates the batches where they lie and, as Kafka's
    LogValidator does for uncompressed batches, writes their offsets into them in place."""
    if api_key == ApiKey.FETCH:
        return decode_fetch_request(data, api_version)
    return _schemas(api_key)[0].decode(data, api_version, allow_trailing=True, records_as_views=True)


def encode_response(api_key: int, api_version: int, correlation_id: int, body: Any) -> list[Part]:
    """A whole framed response as parts (bytes and file slices for record data)."""
    if api_key == ApiKey.FETCH:
        parts = encode_fetch_response(correlation_id, api_version, body)
        if parts is not None:
            return parts
    response_schema = _schemas(api_key)[1]
    writer = Writer()
    writer.int32(correlation_id)
    if response_schema.is_flexible(api_version) and api_key != ApiKey.API_VERSIONS:
        writer.uvarint(0)
    response_schema.encode_into(writer, body, api_version)
    parts = writer.parts()
    return [size_prefix(parts_size_bytes(parts)), *parts]


def decode_response(api_key: int, api_version: int, frame: bytes, *, allow_trailing: bool = False) -> tuple[int, Any]:
    """(correlation id, body) of a response frame without its size prefix (tests and tools).
    ``allow_trailing`` ignores bytes after the body, as Kafka's Java client does."""
    response_schema = _schemas(api_key)[1]
    reader = Reader(frame)
    correlation_id = reader.int32()
    if response_schema.is_flexible(api_version) and api_key != ApiKey.API_VERSIONS:
        _skip_tagged_fields(reader)
    body = memoryview(frame)[reader.position :]
    if api_key == ApiKey.FETCH:
        return correlation_id, decode_fetch_response(body, api_version, allow_trailing=allow_trailing)
    return correlation_id, response_schema.decode(body, api_version, allow_trailing=allow_trailing)


def unsupported_api_versions_response(correlation_id: int, supported: tuple[int, int]) -> list[Part]:
    """KIP-511's fallback: a v0 body with UNSUPPORTED_VERSION and only ApiVersions' own range."""
    body = API_VERSIONS_RESPONSE.cls(
        error_code=35,
        api_keys=(API_VERSIONS_RESPONSE.cls.ApiVersion(ApiKey.API_VERSIONS, *supported),),
    )
    return encode_response(ApiKey.API_VERSIONS, 0, correlation_id, body)
