"""Framing: cutting a byte stream into size-prefixed Kafka frames, sans-I/O.

Every request and response travels as ``int32 size`` followed by ``size`` bytes. TCP delivers a
stream, not messages, so a frame may arrive in pieces or several frames in one read. The decoder
buffers what it is fed and hands out whole frames::

    feed(b"\\x00\\x00\\x00\\x05ab")   next_frame() -> NEED_DATA     (2 of 5 bytes so far)
    feed(b"cde\\x00\\x00")           next_frame() -> b"abcde"       (the next size is incomplete)
                                   next_frame() -> NEED_DATA

A size above ``socket.request.max.bytes`` (100 MiB by default) or below zero is refused with a
:class:`ProtocolError` before any buffer is sized by it, exactly as Kafka's ``NetworkReceive``
refuses an ``InvalidReceiveException``. After such an error the stream cannot be resynchronised;
the caller closes the connection.
"""

from __future__ import annotations

import enum
import struct

from kafkalab.errors import ProtocolError

FRAME_BYTES_MAX = 100 * 1024 * 1024  # socket.request.max.bytes default
SIZE_PREFIX_BYTES = 4
_SIZE = struct.Struct(">i")


class NeedData(enum.Enum):
    NEED_DATA = "NEED_DATA"


NEED_DATA = NeedData.NEED_DATA


class FrameDecoder:
    """Splits a byte stream into frames. Not thread-safe; one per connection."""

    def __init__(self, frame_bytes_max: int = FRAME_BYTES_MAX) -> None:
        self.frame_bytes_max = frame_bytes_max
        self._buffer = bytearray()
        self._failed = False

    @property
    def buffered_bytes(self) -> int:
        return len(self._buffer)

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        self._buffer += data

    def next_frame(self) -> bytes | NeedData:
        """The next whole frame (without its size prefix), or NEED_DATA."""
        if self._failed:
            raise ProtocolError("frame decoder used after a framing error")
        if len(self._buffer) < SIZE_PREFIX_BYTES:
            return NEED_DATA
        (size_bytes,) = _SIZE.unpack_from(self._buffer, 0)
        if size_bytes < 0 or size_bytes > self.frame_bytes_max:
            self._failed = True
            raise ProtocolError(
                f"frame size {size_bytes} bytes is outside [0, {self.frame_bytes_max}] "
                f"(socket.request.max.bytes)"
            )
        end = SIZE_PREFIX_BYTES + size_bytes
        if len(self._buffer) < end:
            return NEED_DATA
        # One copy: through a view (slicing the bytearray first would copy twice), released
        # before the buffer shrinks; a buffer holding just this frame is cleared, not shifted.
        with memoryview(self._buffer) as view:
            frame = bytes(view[SIZE_PREFIX_BYTES:end])
        if end == len(self._buffer):
            self._buffer.clear()
        else:
            del self._buffer[:end]
        return frame


def size_prefix(size_bytes: int) -> bytes:
    """The 4-byte big-endian size that precedes a frame of ``size_bytes``."""
    return _SIZE.pack(size_bytes)
