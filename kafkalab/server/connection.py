"""One client connection: read frames, hand them to the broker one at a time, write responses.

Theory of operation
-------------------
Each connection is one asyncio task running a small loop::

    read <= 1 MiB --> FrameDecoder  --> frame --> broker.handle --> wait for this connection's
         ^                                                            Outgoing
         +------------------- write parts (bytes, sendfile slices) <-----+

Only one request per connection is in the broker at a time (Kafka's ``SocketServer`` mutes a
channel until its response is sent), so responses leave in request order and a client that
pipelines requests simply waits in its own socket buffer. The decoder's buffer therefore never
holds more than one frame (at most ``socket.request.max.bytes``) plus one read.

Every trip around the event loop costs a wake-up, and on a machine whose cores are busy a
wake-up may wait for a core, so the loop takes few of them per request: a 1 MB produce request
is taken from the stream buffer in pieces of up to ``READ_CHUNK_BYTES`` and never pauses the
socket (asyncio pauses above twice ``STREAM_LIMIT_BYTES``, so a connection buffers at most
2 MiB beyond the decoder's frame). A response is written straight to the socket while the
socket takes it: the in-memory parts are joined so that the size prefix and header leave in one
``write``, a file slice goes with ``os.sendfile`` from a file opened with ``os.open`` (no file
object), and only what the socket buffer cannot take waits for the transport (``drain`` and
``loop.sendfile``) under ``WRITE_TIMEOUT_S``; a response sent at once costs no timer. A
response of several parts is sent with ``TCP_CORK`` set (Linux), so the kernel holds the short
header and trailing bytes until the whole response is queued: the client is woken for full
segments, not for 65 bytes it cannot use without the records. Worked example: a fetch response
of parts ``[size 4 B, header 61 B, slice 999,875 B, tags 3 B]`` leaves as cork, a 65-byte
``write``, ``open``, one ``sendfile`` of 999,875 bytes, ``close``, a 3-byte ``write`` and
uncork: seven system calls and no event-loop trip.

A connection ends when the client closes it, stays idle past ``connections.max.idle.ms``, stops
reading its responses for ``WRITE_TIMEOUT_S``, sends a frame that cannot be parsed, or when the
broker asks for it (an Outgoing with ``close``). None of these affect other connections.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Callable
from typing import Any

from kafkalab.broker.request import Outgoing
from kafkalab.errors import KafkaError
from kafkalab.protocol.framing import NEED_DATA, FrameDecoder
from kafkalab.protocol.types import FileSlice

# The most one read takes from the stream buffer; bounds the decoder's buffer beyond one frame.
# A produce request is typically one ~1 MB batch (librdkafka's batch.size): taking it in one or
# two reads rather than sixteen 64 KiB ones saves event-loop round trips, and on a busy machine
# every round trip may wait for a core.
READ_CHUNK_BYTES = 1024 * 1024
# The stream buffer's limit: asyncio stops reading the socket above twice this, leaving the rest
# in the kernel (TCP flow control). At 64 KiB (asyncio's default) a 1 MB request paused and
# resumed the socket eight times.
STREAM_LIMIT_BYTES = 1024 * 1024
SEND_CALLS_MAX = 64  # direct write/sendfile calls per part before handing over to the transport
_HAVE_SENDFILE = hasattr(os, "sendfile")
_TCP_CORK: int | None = getattr(socket, "TCP_CORK", None)  # Linux only
IDLE_TIMEOUT_S = 600.0  # connections.max.idle.ms default (10 minutes)
WRITE_TIMEOUT_S = 30.0  # a client that does not read its response for this long is dropped

log = logging.getLogger("kafkalab.server")


class Connection:
    """One client socket. Owned by the server's event loop; not thread-safe."""

    def __init__(
        self, connection_id: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
        submit: Callable[[int, bytes], None], frame_bytes_max: int,
    ) -> None:
        self.connection_id = connection_id
        self._reader = reader
        self._writer = writer
        self._submit = submit
        self._decoder = FrameDecoder(frame_bytes_max)
        self._responses: asyncio.Queue[Outgoing] = asyncio.Queue()
        self.peer = writer.get_extra_info("peername")

    def deliver(self, outgoing: Outgoing) -> None:
        """Called by the server when the broker has this connection's response."""
        self._responses.put_nowait(outgoing)

    async def run(self) -> None:
        try:
            while True:
                frame = await self._next_frame()
                if frame is None:
                    return
                self._submit(self.connection_id, frame)
                outgoing = await self._responses.get()
                if outgoing.parts is not None:
                    await self._write(outgoing.parts)
                if outgoing.close:
                    log.info("closing connection %s from %s: %s", self.connection_id, self.peer, outgoing.reason)
                    return
        except KafkaError as error:
            log.info("closing connection %s from %s: %s", self.connection_id, self.peer, error)
        except (ConnectionError, asyncio.TimeoutError, OSError) as error:
            log.info("connection %s from %s ended: %r", self.connection_id, self.peer, error)
        finally:
            self._writer.close()

    async def _next_frame(self) -> bytes | None:
        """The next whole frame, or None when the client has gone or idled out."""
        while True:
            frame = self._decoder.next_frame()
            if frame is not NEED_DATA:
                return frame
            # asyncio.timeout rather than wait_for: no extra task, so no extra loop iteration.
            async with asyncio.timeout(IDLE_TIMEOUT_S):
                data = await self._reader.read(READ_CHUNK_BYTES)
            if not data:
                return None
            self._decoder.feed(data)

    async def _write(self, parts: list[bytes | FileSlice]) -> None:
        """Send a response: straight to the socket while it takes the bytes, the rest (if any)
        through the transport, bounded by ``WRITE_TIMEOUT_S``.

        A multi-part response (a fetch: header, file slice, trailing tags) is sent corked, so
        the kernel pushes it as full segments and one final short one instead of pushing the
        65-byte header and the 3 trailing bytes on their own; each push on its own wakes the
        client for bytes it cannot use yet."""
        pending = coalesce(parts)
        sock = self._writer.transport.get_extra_info("socket")
        direct = sock is not None and self._writer.transport.get_write_buffer_size() == 0
        corked = direct and len(pending) > 1 and _set_cork(sock, True)
        try:
            index, done_bytes = _send_now(sock.fileno(), pending) if direct else (0, 0)
            if index < len(pending):
                async with asyncio.timeout(WRITE_TIMEOUT_S):
                    await self._write_rest(pending[index:], done_bytes)
        finally:
            if corked:
                _set_cork(sock, False)

    async def _write_rest(self, parts: list[bytes | FileSlice], done_bytes: int) -> None:
        """The transport's road for what the socket did not take at once: ``done_bytes`` of
        the first part are already sent. Waits for the socket to drain; file slices go through
        ``loop.sendfile``."""
        loop = asyncio.get_running_loop()
        for part in parts:
            if isinstance(part, bytes):
                self._writer.write(part[done_bytes:] if done_bytes else part)
            else:
                await self._writer.drain()
                with open(part.path, "rb") as file:
                    size_bytes = part.size_bytes - done_bytes
                    sent = await loop.sendfile(self._writer.transport, file, part.position + done_bytes, size_bytes)
                if sent != size_bytes:
                    raise ConnectionError(f"sendfile wrote {done_bytes + sent} of {part.size_bytes} bytes "
                                          f"from {part.path}")
            done_bytes = 0
        await self._writer.drain()


def _set_cork(sock: Any, on: bool) -> bool:
    """Set TCP_CORK (Linux) on ``sock``; False where the option does not exist."""
    if _TCP_CORK is None:
        return False
    sock.setsockopt(socket.IPPROTO_TCP, _TCP_CORK, 1 if on else 0)
    return True


def _send_now(socket_descriptor: int, parts: list[bytes | FileSlice]) -> tuple[int, int]:
    """Send ``parts`` on a non-blocking socket until the socket buffer is full; returns the
    index of the first part not wholly sent and how many of its bytes were. In-memory parts go
    with ``write``, file slices with ``os.sendfile`` (the file opened with ``os.open``: no file
    object, no ``fstat``). At most ``SEND_CALLS_MAX`` system calls per part."""
    for index, part in enumerate(parts):
        if isinstance(part, bytes):
            done = _write_while_ready(socket_descriptor, part)
            size_bytes = len(part)
        elif _HAVE_SENDFILE:
            file_descriptor = os.open(part.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            try:
                done = _sendfile_while_ready(socket_descriptor, file_descriptor, part.position, part.size_bytes)
            finally:
                os.close(file_descriptor)
            size_bytes = part.size_bytes
        else:
            return index, 0
        if done < size_bytes:
            return index, done
    return len(parts), 0


def _write_while_ready(socket_descriptor: int, data: bytes) -> int:
    """``os.write`` on a non-blocking socket until ``data`` is sent or the buffer is full."""
    sent = 0
    view = memoryview(data)
    for _ in range(SEND_CALLS_MAX):
        if sent >= len(data):
            break
        try:
            sent += os.write(socket_descriptor, view[sent:])
        except (BlockingIOError, InterruptedError):
            break
    return sent


def _sendfile_while_ready(socket_descriptor: int, file_descriptor: int, position: int, size_bytes: int) -> int:
    """``os.sendfile`` on a non-blocking socket until the slice is sent, the socket buffer is
    full (EAGAIN) or the file ends; returns the bytes sent. At most ``SEND_CALLS_MAX`` calls."""
    sent = 0
    for _ in range(SEND_CALLS_MAX):
        if sent >= size_bytes:
            break
        try:
            count = os.sendfile(socket_descriptor, file_descriptor, position + sent, size_bytes - sent)
        except (BlockingIOError, InterruptedError):
            break
        if count == 0:  # the file is shorter than the slice; the transport's road reports it
            break
        sent += count
    return sent


def coalesce(parts: list[bytes | FileSlice]) -> list[bytes | FileSlice]:
    """Join runs of adjacent in-memory parts, keeping file slices where they are.

    ``[b"size", b"header", b"fields", slice, b"tags"]`` becomes
    ``[b"sizeheaderfields", slice, b"tags"]``: one system call instead of three.
    """
    out: list[bytes | FileSlice] = []
    run: list[bytes] = []
    for part in parts:
        if isinstance(part, bytes):
            run.append(part)
            continue
        if run:
            out.append(b"".join(run))
            run = []
        out.append(part)
    if run:
        out.append(b"".join(run))
    return out
