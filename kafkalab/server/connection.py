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
2 MiB beyond the decoder's frame); the in-memory parts
of a response are joined so that the size prefix and header leave in one ``send`` (a fetch
response is ``send`` + ``sendfile`` + ``send`` of the trailing bytes); a file slice is sent with
``os.sendfile`` straight away while the socket takes it, and only what is left waits in
``loop.sendfile``; timeouts use ``asyncio.timeout``, which adds no task. Worked example: a fetch response of parts
``[size 4 B, header 61 B, slice 999,875 B, tags 3 B]`` leaves as a 65-byte ``send``, one
``sendfile`` of 999,875 bytes and a 3-byte ``send``.

A connection ends when the client closes it, stays idle past ``connections.max.idle.ms``, stops
reading its responses for ``WRITE_TIMEOUT_S``, sends a frame that cannot be parsed, or when the
broker asks for it (an Outgoing with ``close``). None of these affect other connections.
"""

from __future__ import annotations

import asyncio
import logging
import os
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
SENDFILE_CALLS_MAX = 64  # direct sendfile calls per slice before handing over to loop.sendfile
_HAVE_SENDFILE = hasattr(os, "sendfile")
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
                    async with asyncio.timeout(WRITE_TIMEOUT_S):
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
        """Send the in-memory parts between file slices as one write each (the size prefix,
        the header and the fields before the first records go out in one ``send``), and each
        file slice with ``sendfile``."""
        for part in coalesce(parts):
            if isinstance(part, bytes):
                self._writer.write(part)
                continue
            await self._writer.drain()
            with open(part.path, "rb") as file:
                sent = await self._send_file(file.fileno(), file, part)
            if sent != part.size_bytes:
                raise ConnectionError(f"sendfile wrote {sent} of {part.size_bytes} bytes from {part.path}")
        await self._writer.drain()

    async def _send_file(self, file_descriptor: int, file: Any, part: FileSlice) -> int:
        """Bytes of ``part`` sent: straight away while the socket takes them, the rest (if any)
        through ``loop.sendfile``, which waits for the socket to drain.

        ``loop.sendfile`` alone costs an extra loop iteration and four epoll changes even when
        one ``sendfile`` call sends the whole slice, as it usually does for a 1 MB fetch into an
        empty socket buffer. Sending directly is safe only when the transport has no buffered
        bytes of its own, or the records would overtake the header."""
        transport = self._writer.transport
        sent = 0
        sock = transport.get_extra_info("socket")
        if _HAVE_SENDFILE and sock is not None and transport.get_write_buffer_size() == 0:
            sent = _sendfile_while_ready(sock.fileno(), file_descriptor, part.position, part.size_bytes)
        if sent < part.size_bytes:
            loop = asyncio.get_running_loop()
            sent += await loop.sendfile(transport, file, part.position + sent, part.size_bytes - sent)
        return sent


def _sendfile_while_ready(socket_descriptor: int, file_descriptor: int, position: int, size_bytes: int) -> int:
    """``os.sendfile`` on a non-blocking socket until the slice is sent, the socket buffer is
    full (EAGAIN) or the file ends; returns the bytes sent. At most ``SENDFILE_CALLS_MAX`` calls."""
    sent = 0
    for _ in range(SENDFILE_CALLS_MAX):
        if sent >= size_bytes:
            break
        try:
            count = os.sendfile(socket_descriptor, file_descriptor, position + sent, size_bytes - sent)
        except (BlockingIOError, InterruptedError):
            break
        if count == 0:  # the file is shorter than the slice; the caller reports the shortfall
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
