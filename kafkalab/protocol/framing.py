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

Receiving in place
------------------
``feed`` copies what it is given. A server can skip that copy: it asks :meth:`get_buffer` where
the next bytes should go, lets the socket write them there (``recv_into``) and reports how many
arrived with :meth:`buffer_updated` -- the shape of asyncio's ``BufferedProtocol``. Small frames
land in a fixed 64 KiB scratch buffer and leave it as ``bytes``. Once the size prefix of a frame
of ``DIRECT_FRAME_BYTES`` or more has arrived, the decoder allocates a ``bytearray`` of exactly
that size, moves the bytes already received into it, and hands out the rest of it as the
receive buffer, so the kernel writes the frame's remaining bytes straight into the frame the
broker will parse -- as Kafka's ``NetworkReceive`` reads into a buffer of the announced size.
Unlike Kafka's, the buffer of a frame above ``FIRST_BODY_BYTES_MAX`` (8 MiB) starts at that
size and doubles as the bytes arrive: an announced size alone cannot make the broker allocate
100 MiB. Worked example: a 1 MiB produce request arrives as a 64 KiB read into scratch (prefix plus
65,532 bytes, moved into the new frame) and then reads of up to 983,044 bytes into the frame
itself; the frame comes out as that ``bytearray``, which the broker owns from then on. Feeding
it through ``feed`` in 256 KiB pieces would instead copy every byte once more, and joining the
pieces would copy them again.
"""

from __future__ import annotations

import enum
import struct
from collections import deque

from kafkalab.errors import ProtocolError

FRAME_BYTES_MAX = 100 * 1024 * 1024  # socket.request.max.bytes default
SIZE_PREFIX_BYTES = 4
SCRATCH_BYTES = 64 * 1024  # where reads land until a large frame's size is known
DIRECT_FRAME_BYTES = 16 * 1024  # frames at least this large are received into their own buffer
# A large frame's buffer starts at most this big and doubles as bytes arrive, so four bytes
# announcing a 100 MiB frame cost 8 MiB, not 100 MiB, until the sender really sends them.
FIRST_BODY_BYTES_MAX = 8 * 1024 * 1024
_SIZE = struct.Struct(">i")


class NeedData(enum.Enum):
    NEED_DATA = "NEED_DATA"


NEED_DATA = NeedData.NEED_DATA


class FrameDecoder:
    """Splits a byte stream into frames. Not thread-safe; one per connection.

    Frames come out in stream order as ``bytes`` (small) or ``bytearray`` (received in place);
    either way the caller owns them and may keep or modify them."""

    def __init__(self, frame_bytes_max: int = FRAME_BYTES_MAX) -> None:
        self.frame_bytes_max = frame_bytes_max
        self._scratch = bytearray(SCRATCH_BYTES)
        self._start = 0  # scratch[_start:_end] holds received bytes not yet cut into frames
        self._end = 0
        self._body: bytearray | None = None  # a large frame being received in place
        self._body_size = 0  # the frame's announced size; len(_body) grows towards it
        self._body_filled = 0
        self._frames: deque[bytes | bytearray] = deque()  # whole frames not yet taken
        self._frames_bytes = 0
        self._error: ProtocolError | None = None
        self._failed = False

    @property
    def buffered_bytes(self) -> int:
        """Bytes received and not yet handed out, size prefixes included."""
        in_body = 0 if self._body is None else SIZE_PREFIX_BYTES + self._body_filled
        return self._frames_bytes + in_body + self._end - self._start

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Take ``data`` by copying it into the decoder's buffers."""
        view = memoryview(data).cast("B")
        while view and self._error is None:
            target = self.get_buffer()
            count = min(len(target), len(view))
            target[:count] = view[:count]
            self.buffer_updated(count)
            view = view[count:]

    def get_buffer(self, sizehint: int = -1) -> memoryview:
        """Where the next received bytes should be written: never empty. ``sizehint`` is
        asyncio's and is ignored: the buffer's size is what the decoder wants next."""
        if self._body is not None:
            if self._body_filled == len(self._body):  # full but the frame is not: double it
                grown = bytearray(min(2 * len(self._body), self._body_size))
                grown[: self._body_filled] = self._body
                self._body = grown
            return memoryview(self._body)[self._body_filled :]
        if self._error is not None:  # the stream is dead; give reads somewhere to go
            self._start = self._end = 0
        elif self._end == len(self._scratch):
            # What is left is the start of one frame smaller than DIRECT_FRAME_BYTES (larger
            # ones have moved to their own buffer): slide it to the front.
            pending = self._end - self._start
            self._scratch[:pending] = self._scratch[self._start : self._end]
            self._start, self._end = 0, pending
        return memoryview(self._scratch)[self._end :]

    def buffer_updated(self, nbytes: int) -> None:
        """``nbytes`` were written at the start of the buffer :meth:`get_buffer` returned."""
        if self._body is not None:
            self._body_filled += nbytes
            if self._body_filled == self._body_size:
                self._queue(self._body)
                self._body, self._body_filled = None, 0
            return
        self._end += nbytes
        if self._error is None:
            self._cut_scratch()

    def next_frame(self) -> bytes | bytearray | NeedData:
        """The next whole frame (without its size prefix), or NEED_DATA."""
        if self._failed:
            raise ProtocolError("frame decoder used after a framing error")
        if self._frames:
            frame = self._frames.popleft()
            self._frames_bytes -= SIZE_PREFIX_BYTES + len(frame)
            return frame
        if self._error is not None:
            self._failed = True
            raise self._error
        return NEED_DATA

    def _queue(self, frame: bytes | bytearray) -> None:
        self._frames.append(frame)
        self._frames_bytes += SIZE_PREFIX_BYTES + len(frame)

    def _cut_scratch(self) -> None:
        """Move every whole frame out of scratch; start a large frame's own buffer."""
        scratch, start, end = self._scratch, self._start, self._end
        while end - start >= SIZE_PREFIX_BYTES:
            (size_bytes,) = _SIZE.unpack_from(scratch, start)
            if size_bytes < 0 or size_bytes > self.frame_bytes_max:
                self._error = ProtocolError(
                    f"frame size {size_bytes} bytes is outside [0, {self.frame_bytes_max}] "
                    f"(socket.request.max.bytes)"
                )
                break
            frame_end = start + SIZE_PREFIX_BYTES + size_bytes
            if frame_end <= end:
                with memoryview(scratch) as view:
                    self._queue(bytes(view[start + SIZE_PREFIX_BYTES : frame_end]))
                start = frame_end
                continue
            if size_bytes >= DIRECT_FRAME_BYTES:
                received = end - start - SIZE_PREFIX_BYTES
                body = bytearray(min(size_bytes, max(FIRST_BODY_BYTES_MAX, 2 * received)))
                body[:received] = memoryview(scratch)[start + SIZE_PREFIX_BYTES : end]
                self._body, self._body_size, self._body_filled = body, size_bytes, received
                start = end
            break
        if start == end:
            start = end = 0
        self._start, self._end = start, end


def size_prefix(size_bytes: int) -> bytes:
    """The 4-byte big-endian size that precedes a frame of ``size_bytes``."""
    return _SIZE.pack(size_bytes)
