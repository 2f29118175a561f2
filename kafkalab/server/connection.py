"""One client connection: an asyncio BufferedProtocol that cuts frames, hands them to the broker
one at a time, and writes each response straight to the socket.

Theory of operation
-------------------
The event loop asks :meth:`Connection.get_buffer` where to put the socket's next bytes, reads
into it (``recv_into``) and reports the count to :meth:`Connection.buffer_updated`. The buffer
comes from the connection's :class:`~kafkalab.protocol.framing.FrameDecoder`: a scratch area for
small requests, or -- once a large frame's size is known -- that frame's own ``bytearray``, so a
1 MiB produce request is written by the kernel straight into the buffer the broker parses and
the log stamps in place. Right there, in the same callback, each whole frame goes to the broker
(``submit``)::

    socket readable --> recv_into(get_buffer()) --> buffer_updated --> frame --> broker.handle
                                                                                     |
        next frame (if any) <-- finish <-- write parts now <-- deliver(Outgoing)

Only one request per connection is in the broker at a time (Kafka's ``SocketServer`` mutes a
channel until its response is sent), so responses leave in request order. A request the broker
answers at once -- a fetch that finds records, a produce with acks=1 -- is delivered during
``submit`` and written before ``buffer_updated`` returns: no task, no queue, no extra trip around
the event loop, which a consumer with one fetch in flight feels on every megabyte. A request the
broker answers later (a parked fetch) leaves the connection *busy*: later frames wait in the
decoder, and the response's ``deliver`` -- from the timer task or another connection's produce
-- writes it and then handles the frames that waited. While busy with more than
``PAUSE_READING_BYTES`` buffered, the connection stops reading the socket (TCP flow control does
the rest), so a client that pipelines cannot make the broker buffer without bound.

A response is written straight to the socket while the socket takes it: the in-memory parts are
joined so that the size prefix and header leave in one ``write``, a file slice goes with
``os.sendfile`` from a file opened with ``os.open`` (no file object), and only what the socket
buffer cannot take waits for the transport (``drain`` and ``loop.sendfile``) in a task bounded
by ``WRITE_TIMEOUT_S``; the connection stays busy until that task ends. Worked example: a fetch
response of parts ``[size 4 B, header 61 B, slice 999,875 B, tags 3 B]`` leaves as a 65-byte
``write``, ``open``, one ``sendfile`` of 999,875 bytes, ``close`` and a 3-byte ``write`` -- five
system calls, all inside the ``buffer_updated`` that brought the fetch.

Why not ``TCP_CORK`` around the parts, so that the 65-byte header does not leave on its own?
Measured on loopback with librdkafka consuming, corking made each round of 4 MB *slower*
(median 5.8-5.9 ms against 5.3 ms uncorked, 80 alternating rounds, twice): held until the
uncork, the whole megabyte reaches the client in one burst instead of streaming to it while
``sendfile`` is still queuing it, and a plain client reading 1 MB responses waited about three
times as long per response (285 us against 90 us).

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
from kafkalab.storage.positions import FileSlice

# While a request is in the broker, reading stops once this much of the next requests is
# buffered; the kernel's socket buffer and TCP flow control hold the rest.
PAUSE_READING_BYTES = 1024 * 1024
SEND_CALLS_MAX = 64  # direct write/sendfile calls per part before handing over to the transport
_HAVE_SENDFILE = hasattr(os, "sendfile")
IDLE_TIMEOUT_S = 600.0  # connections.max.idle.ms default (10 minutes)
WRITE_TIMEOUT_S = 30.0  # a client that does not read its response for this long is dropped

log = logging.getLogger("kafkalab.server")

Submit = Callable[["Connection", bytes | bytearray], None]


class Connection(asyncio.BufferedProtocol):
    """One client socket. Owned by the server's event loop; not thread-safe.

    ``submit(connection, frame)`` hands a frame to the broker; the broker's answer comes back
    through :meth:`deliver`, during ``submit`` or later. ``on_open(connection)`` may refuse the
    connection (the server is full); ``on_close(connection)`` runs once when the socket is gone."""

    def __init__(self, connection_id: int, submit: Submit, frame_bytes_max: int, *,
                 on_open: Callable[[Connection], bool] = lambda connection: True,
                 on_close: Callable[[Connection], None] = lambda connection: None) -> None:
        self.connection_id = connection_id
        self.peer: Any = None
        self._submit = submit
        self._on_open = on_open
        self._on_close = on_close
        self._decoder = FrameDecoder(frame_bytes_max)
        self._transport: asyncio.Transport | None = None
        self._busy = False  # a request is in the broker, or its response is still being written
        self._handling = False  # inside _handle_frames: a response delivered now must not recurse
        self._paused = False
        self._closed = False
        self._drained: asyncio.Future[None] | None = None  # set while the transport is full
        self._writer_task: asyncio.Task[None] | None = None
        self._last_active_s = 0.0
        self._idle_check: asyncio.TimerHandle | None = None

    # --- asyncio.BufferedProtocol ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        self.peer = transport.get_extra_info("peername")
        loop = asyncio.get_running_loop()
        self._last_active_s = loop.time()
        self._idle_check = loop.call_later(IDLE_TIMEOUT_S, self._check_idle)
        if not self._on_open(self):
            self.close("refused: the server has as many connections as it takes")

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._decoder.get_buffer(sizehint)

    def buffer_updated(self, nbytes: int) -> None:
        self._decoder.buffer_updated(nbytes)
        self._handle_frames()

    def eof_received(self) -> bool:
        return False  # the transport closes; a half-closed client gets no more responses

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None:
            log.info("connection %s from %s ended: %r", self.connection_id, self.peer, exc)
        self._closed = True
        if self._idle_check is not None:
            self._idle_check.cancel()
        if self._writer_task is not None:
            self._writer_task.cancel()
        if self._drained is not None and not self._drained.done():
            self._drained.set_exception(ConnectionError("connection lost while writing a response"))
        self._on_close(self)

    def pause_writing(self) -> None:
        self._drained = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        self._drained = None

    # --- requests in, responses out -----------------------------------------------------------

    def deliver(self, outgoing: Outgoing) -> None:
        """The broker's answer to this connection's request in flight: write it, then go on
        with the frames that waited (unless it says close)."""
        if self._closed or self._transport is None:
            return
        if outgoing.parts is not None:
            try:
                rest = self._write_now(outgoing.parts)
            except OSError as error:
                self.close(f"write failed: {error!r}")
                return
            if rest is not None:  # the socket is full: a task finishes the write, then this
                self._writer_task = asyncio.get_running_loop().create_task(self._write_rest(outgoing, *rest))
                return
        self._finish(outgoing)

    def close(self, reason: str) -> None:
        if not self._closed and self._transport is not None:
            log.info("closing connection %s from %s: %s", self.connection_id, self.peer, reason)
            self._closed = True
            self._transport.close()

    def _handle_frames(self) -> None:
        """Submit every whole frame, one at a time, while the previous one has been answered."""
        if self._handling:
            return
        self._handling = True
        try:
            while not self._busy and not self._closed:
                try:
                    frame = self._decoder.next_frame()
                except KafkaError as error:
                    self.close(str(error))
                    return
                if frame is NEED_DATA:
                    break
                self._busy = True
                self._last_active_s = asyncio.get_running_loop().time()
                self._submit(self, frame)
        finally:
            self._handling = False
        self._pause_or_resume_reading()

    def _finish(self, outgoing: Outgoing) -> None:
        if outgoing.close:
            self.close(outgoing.reason)
            return
        self._busy = False
        self._handle_frames()

    def _pause_or_resume_reading(self) -> None:
        if self._closed or self._transport is None:
            return
        full = self._busy and self._decoder.buffered_bytes > PAUSE_READING_BYTES
        if full and not self._paused:
            self._transport.pause_reading()
        elif self._paused and not full:
            self._transport.resume_reading()
        self._paused = full

    def _check_idle(self) -> None:
        loop = asyncio.get_running_loop()
        idle_s = loop.time() - self._last_active_s
        if idle_s >= IDLE_TIMEOUT_S and not self._busy:
            self.close(f"idle for {idle_s:.0f} s (connections.max.idle.ms)")
            return
        self._idle_check = loop.call_later(max(IDLE_TIMEOUT_S - idle_s, 1.0), self._check_idle)

    # --- the write path -----------------------------------------------------------------------

    def _write_now(self, parts: list[bytes | FileSlice]) -> tuple[list[bytes | FileSlice], int] | None:
        """Send a response straight to the socket while it takes the bytes; None when all of
        it went, else the parts left and how many bytes of the first one were sent."""
        assert self._transport is not None
        pending = coalesce(parts)
        sock = self._transport.get_extra_info("socket")
        if sock is None or self._transport.get_write_buffer_size() != 0:
            return pending, 0
        index, done_bytes = _send_now(sock.fileno(), pending)
        return None if index == len(pending) else (pending[index:], done_bytes)

    async def _write_rest(self, outgoing: Outgoing, parts: list[bytes | FileSlice], done_bytes: int) -> None:
        """The transport's road for what the socket did not take at once, bounded by
        ``WRITE_TIMEOUT_S``; then the response counts as sent."""
        try:
            async with asyncio.timeout(WRITE_TIMEOUT_S):
                await self._send_through_transport(parts, done_bytes)
        except (ConnectionError, TimeoutError, OSError) as error:
            self.close(f"response not sent: {error!r}")
            return
        finally:
            self._writer_task = None
        self._finish(outgoing)

    async def _send_through_transport(self, parts: list[bytes | FileSlice], done_bytes: int) -> None:
        """``done_bytes`` of the first part are already sent. Waits for the socket to drain;
        file slices go through ``loop.sendfile``."""
        assert self._transport is not None
        loop = asyncio.get_running_loop()
        for part in parts:
            if isinstance(part, bytes):
                self._transport.write(part[done_bytes:] if done_bytes else part)
            else:
                await self._drain()
                with open(part.path, "rb") as file:
                    size_bytes = part.size_bytes - done_bytes
                    sent = await loop.sendfile(self._transport, file, part.position + done_bytes, size_bytes)
                if sent != size_bytes:
                    raise ConnectionError(f"sendfile wrote {done_bytes + sent} of {part.size_bytes} bytes "
                                          f"from {part.path}")
            done_bytes = 0
        await self._drain()

    async def _drain(self) -> None:
        if self._closed:
            raise ConnectionError("connection closed while writing a response")
        if self._drained is not None:
            await self._drained


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
