"""A TCP proxy that notes the (API key, version) of every request a client sends.

The broker is started with ``advertised.listeners`` pointing at the proxy, so a client's later
connections (to the coordinator, to partition leaders) come through it too. The proxy only
reads the 8-byte start of each request frame (size, api_key, api_version); bytes pass unchanged.
This is how the tests learn which versions each real client negotiates, without trusting the
broker's own account.
"""

from __future__ import annotations

import socket
import struct
import threading

FRAME_HEAD = struct.Struct(">ihh")  # size, api_key, api_version
READ_BYTES = 65536


class RecordingProxy:
    """Forwards 127.0.0.1:<port> to an upstream address. Thread-based; for tests only."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.upstream: tuple[str, int] | None = None
        self.seen: set[tuple[int, int]] = set()
        self._lock = threading.Lock()
        self._closing = False
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def take(self) -> set[tuple[int, int]]:
        """The (api_key, version) pairs seen since the last call."""
        with self._lock:
            seen, self.seen = self.seen, set()
        return seen

    def close(self) -> None:
        self._closing = True
        self._listener.close()
        for sock in list(self._sockets):
            try:
                sock.close()
            except OSError:
                pass

    def _accept(self) -> None:
        while not self._closing:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            assert self.upstream is not None
            server = socket.create_connection(self.upstream)
            self._sockets += [client, server]
            threading.Thread(target=self._requests, args=(client, server), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client), daemon=True).start()

    def _requests(self, source: socket.socket, target: socket.socket) -> None:
        pending = b""
        while data := _receive(source):
            pending += data
            while len(pending) >= FRAME_HEAD.size:
                size, api_key, api_version = FRAME_HEAD.unpack_from(pending)
                if len(pending) < 4 + size:
                    break
                with self._lock:
                    self.seen.add((api_key, api_version))
                target.sendall(pending[:4 + size])
                pending = pending[4 + size:]
        _shut(target)

    @staticmethod
    def _pump(source: socket.socket, target: socket.socket) -> None:
        while data := _receive(source):
            try:
                target.sendall(data)
            except OSError:
                return
        _shut(target)


def _receive(source: socket.socket) -> bytes:
    """The next bytes from ``source``; empty once it is closed or broken."""
    try:
        return source.recv(READ_BYTES)
    except OSError:
        return b""


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
