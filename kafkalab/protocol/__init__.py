"""The Kafka wire protocol, sans-I/O: primitive types, schemas, headers, framing, versions.

Nothing here touches a socket. The server feeds bytes to a :class:`FrameDecoder`, hands frames to
the broker, and writes back the parts :func:`encode_response` returns.
"""

from kafkalab.protocol.framing import FRAME_BYTES_MAX, NEED_DATA, FrameDecoder
from kafkalab.protocol.header import (
    RequestHeader,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response,
)
from kafkalab.protocol.messages import SCHEMAS
from kafkalab.protocol.types import RecordsParts

__all__ = [
    "FRAME_BYTES_MAX",
    "NEED_DATA",
    "SCHEMAS",
    "FrameDecoder",
    "RecordsParts",
    "RequestHeader",
    "decode_request_header",
    "decode_response",
    "encode_request",
    "encode_response",
]
