"""A small blocking Kafka client: one socket per broker, one request in flight at a time.

Theory of operation
-------------------
The work splits into a sans-I/O core and a thin socket adapter, like the server's:

* :class:`ClientProtocol` (no I/O) turns ``(api_key, body)`` into framed request bytes, stamps a
  fresh correlation id, remembers which request each id belongs to, and turns bytes received back
  into decoded responses. It checks that responses come back in request order with the right
  correlation id -- Kafka answers requests on one connection strictly in order.
* :class:`BrokerConnection` owns one socket: it sends the bytes, reads until the core has a
  whole response, and gives up with :class:`~kafkalab.errors.NetworkError` after
  ``request_timeout_ms``.

Version negotiation mirrors what every real client does first: send ApiVersions v0 (which every
broker accepts), and for each API use ``min(our highest, broker's highest)``, refusing when the
two ranges do not overlap. Worked example: kafkalab's schemas speak Metadata 0-12 and a broker
advertising 0-12 gets v12; a broker advertising only 0-4 (librdkafka 2.0.2's era) gets v4; a
broker advertising Fetch 13-17 while we speak 4-12 gets a clear ``UnsupportedVersionError``.

:func:`bootstrap` parses ``"host1:9092,host2:9092"`` and returns a connection to the first
broker that answers, as ``bootstrap.servers`` works in every Kafka client.
"""

from __future__ import annotations

import socket
from collections import deque
from dataclasses import dataclass
from typing import Any

from kafkalab.errors import BrokerResponseError, ErrorCode, NetworkError, ProtocolError, UnsupportedVersionError
from kafkalab.protocol import NEED_DATA, SCHEMAS, FrameDecoder, decode_response, encode_request
from kafkalab.protocol.api_keys import ApiKey

CLIENT_ID = "kafkalab-client"
RESPONSE_BYTES_MAX = 64 * 1024 * 1024  # above fetch.max.bytes (50 MiB) plus framing headroom
IN_FLIGHT_MAX = 5  # max.in.flight.requests.per.connection's default
REQUEST_TIMEOUT_MS = 30_000  # request.timeout.ms's default in the Java clients
RECV_CHUNK_BYTES = 256 * 1024
CORRELATION_ID_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class PendingRequest:
    """A request sent and not yet answered."""

    correlation_id: int
    api_key: int
    api_version: int


@dataclass(frozen=True, slots=True)
class Response:
    """A decoded response and the request it answers."""

    request: PendingRequest
    body: Any


def negotiate(client: tuple[int, int], broker: tuple[int, int], api_key: int) -> int:
    """The highest version in both ranges; mirrors the Java client's ``NodeApiVersions``."""
    low, high = max(client[0], broker[0]), min(client[1], broker[1])
    if low > high:
        raise UnsupportedVersionError(
            f"API {api_key}: broker speaks versions {broker[0]}-{broker[1]}, this client "
            f"{client[0]}-{client[1]}; no common version"
        )
    return high


class ClientProtocol:
    """The sans-I/O client side of one connection. Not thread-safe; owned by one connection."""

    def __init__(self, client_id: str = CLIENT_ID, *, response_bytes_max: int = RESPONSE_BYTES_MAX) -> None:
        self.client_id = client_id
        self.versions: dict[int, int] = {}
        self._decoder = FrameDecoder(response_bytes_max)
        self._pending: deque[PendingRequest] = deque()
        self._next_correlation_id = 0
        # Kafka's Java client reads a response field by field and ignores what is left; a client
        # of foreign brokers may do the same (librdkafka 2.x's mock cluster ends flexible
        # Metadata responses with one byte more than Kafka's schema describes).
        self.allow_trailing_bytes = False
        self.in_flight_max = IN_FLIGHT_MAX  # a client that counts its own requests may raise it

    def version_for(self, api_key: int) -> int:
        """The negotiated version, or ApiVersions v0 before negotiation."""
        if api_key in self.versions:
            return self.versions[api_key]
        if api_key == ApiKey.API_VERSIONS:
            return 0
        raise UnsupportedVersionError(f"API {api_key} is not supported by the broker (or not negotiated yet)")

    def send_request(self, api_key: int, body: Any, *, api_version: int | None = None,
                     expect_response: bool = True) -> bytes:
        """Frame ``body`` as a request; returns the bytes to write to the socket.

        ``expect_response=False`` is for Produce with ``acks=0``, which Kafka never answers."""
        if len(self._pending) >= self.in_flight_max:
            raise ProtocolError(f"{len(self._pending)} requests already in flight; the limit is {self.in_flight_max}")
        version = self.version_for(api_key) if api_version is None else api_version
        correlation_id = self._next_correlation_id
        self._next_correlation_id = (correlation_id + 1) % CORRELATION_ID_MAX
        data = encode_request(api_key, version, correlation_id, self.client_id, body)
        if expect_response:
            self._pending.append(PendingRequest(correlation_id, api_key, version))
        return data

    def receive_data(self, data: bytes) -> None:
        self._decoder.feed(data)

    def next_response(self) -> Response | None:
        """The next whole response, or None when more bytes are needed."""
        frame = self._decoder.next_frame()
        if frame is NEED_DATA:
            return None
        if not self._pending:
            raise ProtocolError(f"received a {len(frame)}-byte response with no request in flight")
        request = self._pending.popleft()
        correlation_id, body = decode_response(request.api_key, request.api_version, bytes(frame),
                                               allow_trailing=self.allow_trailing_bytes)
        if correlation_id != request.correlation_id:
            raise ProtocolError(
                f"response correlation id {correlation_id} does not match the oldest request "
                f"in flight ({request.correlation_id}, API {request.api_key})"
            )
        return Response(request, body)

    def learn_versions(self, api_versions_body: Any) -> None:
        """Record the negotiated version of every API both sides speak."""
        if api_versions_body.error_code != 0:
            raise BrokerResponseError(
                f"ApiVersions failed with error {api_versions_body.error_code}",
                error_code=_code(api_versions_body.error_code),
            )
        for api in api_versions_body.api_keys:
            schemas = SCHEMAS.get(api.api_key)
            if schemas is None:
                continue
            try:
                self.versions[api.api_key] = negotiate(
                    schemas[0].valid, (api.min_version, api.max_version), api.api_key)
            except UnsupportedVersionError:
                continue  # a request for this API will raise with a clear message


class BrokerConnection:
    """One blocking TCP connection to one broker. Not thread-safe; close it when done."""

    def __init__(self, host: str, port: int, *, request_timeout_ms: int = REQUEST_TIMEOUT_MS,
                 client_id: str = CLIENT_ID) -> None:
        self.host, self.port = host, port
        self.request_timeout_ms = request_timeout_ms
        self.protocol = ClientProtocol(client_id)
        try:
            self._socket = socket.create_connection((host, port), timeout=request_timeout_ms / 1000)
        except OSError as error:
            raise NetworkError(f"could not connect to {host}:{port}: {error}") from error
        self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        body = self.request(ApiKey.API_VERSIONS, SCHEMAS[ApiKey.API_VERSIONS][0].cls())
        self.protocol.learn_versions(body)

    def request(self, api_key: int, body: Any, *, api_version: int | None = None,
                expect_response: bool = True) -> Any:
        """Send one request and block until its response arrives; returns the response body
        (None when ``expect_response`` is False)."""
        data = self.protocol.send_request(api_key, body, api_version=api_version,
                                          expect_response=expect_response)
        try:
            self._socket.sendall(data)
            if not expect_response:
                return None
            while (response := self.protocol.next_response()) is None:
                chunk = self._socket.recv(RECV_CHUNK_BYTES)
                if not chunk:
                    raise NetworkError(f"{self.host}:{self.port} closed the connection while "
                                       f"API {api_key} v{self.protocol.version_for(api_key)} was in flight")
                self.protocol.receive_data(chunk)
        except TimeoutError as error:
            raise NetworkError(f"no response from {self.host}:{self.port} to API {api_key} "
                               f"within {self.request_timeout_ms} ms") from error
        except OSError as error:
            raise NetworkError(f"{self.host}:{self.port}: {error}") from error
        return response.body

    @property
    def socket(self) -> socket.socket:
        """The connected socket, for an adapter that waits on several brokers with ``select``."""
        return self._socket

    def metadata(self, topics: list[str] | None = None, *, allow_auto_topic_creation: bool = False) -> Any:
        """A Metadata response for ``topics`` (None = every topic)."""
        schema = SCHEMAS[ApiKey.METADATA][0]
        requested = None if topics is None else tuple(schema.cls.MetadataRequestTopic(name=t) for t in topics)
        return self.request(ApiKey.METADATA, schema.cls(
            topics=requested, allow_auto_topic_creation=allow_auto_topic_creation))

    def close(self) -> None:
        self._socket.close()

    def __enter__(self) -> BrokerConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def parse_bootstrap(servers: str) -> list[tuple[str, int]]:
    """``"a:9092,b:9093"`` -> ``[("a", 9092), ("b", 9093)]``; a bad entry raises ConfigError-like KafkaError."""
    addresses = []
    for entry in (s.strip() for s in servers.split(",")):
        host, sep, port = entry.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise NetworkError(f"bootstrap server {entry!r} is not host:port with a port in 1-65535")
        addresses.append((host.strip("[]"), int(port)))
    return addresses


def bootstrap(servers: str, *, request_timeout_ms: int = REQUEST_TIMEOUT_MS,
              client_id: str = CLIENT_ID) -> BrokerConnection:
    """Connect to the first reachable broker in ``servers`` and negotiate API versions."""
    failures = []
    for host, port in parse_bootstrap(servers):
        try:
            return BrokerConnection(host, port, request_timeout_ms=request_timeout_ms, client_id=client_id)
        except NetworkError as error:
            failures.append(str(error))
    raise NetworkError(f"no bootstrap server answered: {'; '.join(failures)}")


def check_error(error_code: int, what: str, message: str | None = None) -> None:
    """Raise :class:`BrokerResponseError` naming ``what`` when ``error_code`` is not 0."""
    if error_code != 0:
        code = _code(error_code)
        name = code.name if code is not ErrorCode.UNKNOWN_SERVER_ERROR or error_code == -1 else str(error_code)
        detail = f": {message}" if message else ""
        raise BrokerResponseError(f"{what} failed with {name} ({error_code}){detail}", error_code=code)


def _code(error_code: int) -> ErrorCode:
    try:
        return ErrorCode(error_code)
    except ValueError:
        return ErrorCode.UNKNOWN_SERVER_ERROR
