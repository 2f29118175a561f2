"""One client connection: read frames, hand them to the broker one at a time, write responses.

Theory of operation
-------------------
Each connection is one asyncio task running a small loop::

    read <= 64 KiB --> FrameDecoder --> frame --> broker.handle --> wait for this connection's
         ^                                                            Outgoing
         +------------------- write parts (bytes, sendfile slices) <-----+

Only one request per connection is in the broker at a time (Kafka's ``SocketServer`` mutes a
channel until its response is sent), so responses leave in request order and a client that
pipelines requests simply waits in its own socket buffer. The decoder's buffer therefore never
holds more than one frame (at most ``socket.request.max.bytes``) plus one read.

A connection ends when the client closes it, stays idle past ``connections.max.idle.ms``, stops
reading its responses for ``WRITE_TIMEOUT_S``, sends a frame that cannot be parsed, or when the
broker asks for it (an Outgoing with ``close``). None of these affect other connections.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from kafkalab.broker.request import Outgoing
from kafkalab.errors import KafkaError
from kafkalab.protocol.framing import NEED_DATA, FrameDecoder
from kafkalab.protocol.types import FileSlice

READ_CHUNK_BYTES = 64 * 1024  # one socket read; bounds the decoder's buffer beyond one frame
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
                    await asyncio.wait_for(self._write(outgoing.parts), WRITE_TIMEOUT_S)
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
            data = await asyncio.wait_for(self._reader.read(READ_CHUNK_BYTES), IDLE_TIMEOUT_S)
            if not data:
                return None
            self._decoder.feed(data)

    async def _write(self, parts: list[bytes | FileSlice]) -> None:
        loop = asyncio.get_running_loop()
        for part in parts:
            if isinstance(part, bytes):
                self._writer.write(part)
                continue
            await self._writer.drain()
            with open(part.path, "rb") as file:
                sent = await loop.sendfile(self._writer.transport, file, part.position, part.size_bytes)
            if sent != part.size_bytes:
                raise ConnectionError(f"sendfile wrote {sent} of {part.size_bytes} bytes from {part.path}")
        await self._writer.drain()
