"""The sans-I/O client core: framing, correlation ids, version negotiation, bootstrap parsing."""

from __future__ import annotations

import socket
import struct

import pytest

from kafkalab.client.connection import (
    IN_FLIGHT_MAX, BrokerConnection, ClientProtocol, bootstrap, negotiate, parse_bootstrap,
)
from kafkalab.errors import NetworkError, ProtocolError, UnsupportedVersionError
from kafkalab.protocol import SCHEMAS, decode_request_header, encode_response

API_VERSIONS = 18


def api_versions_response(correlation_id: int, ranges: dict[int, tuple[int, int]]) -> bytes:
    cls = SCHEMAS[API_VERSIONS][1].cls
    body = cls(error_code=0, api_keys=tuple(cls.ApiVersion(k, lo, hi) for k, (lo, hi) in ranges.items()))
    return b"".join(bytes(p) for p in encode_response(API_VERSIONS, 0, correlation_id, body))


def test_api_versions_v0_request_bytes_follow_request_header_v1() -> None:
    protocol = ClientProtocol("kafkalab-client")
    data = protocol.send_request(API_VERSIONS, SCHEMAS[API_VERSIONS][0].cls())
    header = decode_request_header(data[4:])
    assert (header.api_key, header.api_version, header.correlation_id) == (18, 0, 0)
    assert header.client_id == "kafkalab-client"
    # size 25 | api_key 18 | version 0 | correlation 0 | client id (int16 length 15) | empty v0 body
    assert data == bytes.fromhex("00000019" "0012" "0000" "00000000" "000f") + b"kafkalab-client"


def test_response_split_across_reads_is_reassembled() -> None:
    protocol = ClientProtocol()
    protocol.send_request(API_VERSIONS, SCHEMAS[API_VERSIONS][0].cls())
    data = api_versions_response(0, {3: (0, 12), 18: (0, 4)})
    for byte in data[:-1]:
        protocol.receive_data(bytes([byte]))
        assert protocol.next_response() is None
    protocol.receive_data(data[-1:])
    response = protocol.next_response()
    assert response is not None and response.request.api_key == API_VERSIONS
    protocol.learn_versions(response.body)
    assert protocol.versions[3] == min(12, SCHEMAS[3][0].valid[1])


def test_mismatched_correlation_id_is_a_protocol_error() -> None:
    protocol = ClientProtocol()
    protocol.send_request(API_VERSIONS, SCHEMAS[API_VERSIONS][0].cls())
    protocol.receive_data(api_versions_response(7, {18: (0, 4)}))
    with pytest.raises(ProtocolError, match="correlation id 7 does not match"):
        protocol.next_response()


def test_response_without_request_is_a_protocol_error() -> None:
    protocol = ClientProtocol()
    protocol.receive_data(api_versions_response(0, {18: (0, 4)}))
    with pytest.raises(ProtocolError, match="no request in flight"):
        protocol.next_response()


def test_in_flight_limit() -> None:
    protocol = ClientProtocol()
    for _ in range(IN_FLIGHT_MAX):
        protocol.send_request(API_VERSIONS, SCHEMAS[API_VERSIONS][0].cls())
    with pytest.raises(ProtocolError, match="in flight"):
        protocol.send_request(API_VERSIONS, SCHEMAS[API_VERSIONS][0].cls())


def test_acks_zero_produce_expects_no_response() -> None:
    protocol = ClientProtocol()
    protocol.send_request(API_VERSIONS, SCHEMAS[API_VERSIONS][0].cls(), expect_response=False)
    protocol.receive_data(api_versions_response(0, {18: (0, 4)}))
    with pytest.raises(ProtocolError):
        protocol.next_response()


def test_oversized_response_frame_is_refused_before_allocation() -> None:
    protocol = ClientProtocol(response_bytes_max=1024)
    protocol.send_request(API_VERSIONS, SCHEMAS[API_VERSIONS][0].cls())
    protocol.receive_data(struct.pack(">i", 2**31 - 1))
    with pytest.raises(ProtocolError, match="outside"):
        protocol.next_response()


@pytest.mark.parametrize(("client", "broker", "expected"), [((0, 12), (0, 12), 12), ((0, 12), (0, 4), 4), ((4, 12), (0, 17), 12)])
def test_negotiate_picks_highest_common_version(client: tuple[int, int], broker: tuple[int, int], expected: int) -> None:
    assert negotiate(client, broker, 1) == expected


def test_negotiate_without_overlap_names_both_ranges() -> None:
    with pytest.raises(UnsupportedVersionError, match="broker speaks versions 13-17, this client 4-12"):
        negotiate((4, 12), (13, 17), 1)


def test_unnegotiated_api_raises_typed_error() -> None:
    with pytest.raises(UnsupportedVersionError):
        ClientProtocol().version_for(3)


def test_parse_bootstrap() -> None:
    assert parse_bootstrap("a:9092, b:9093") == [("a", 9092), ("b", 9093)]
    for bad in ("a", "a:", ":9092", "a:99999", "a:x"):
        with pytest.raises(NetworkError):
            parse_bootstrap(bad)


def test_unreachable_bootstrap_raises_network_error() -> None:
    with socket.socket() as probe:  # a port that was free a moment ago and has no listener
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(NetworkError, match="no bootstrap server answered"):
        bootstrap(f"127.0.0.1:{port}", request_timeout_ms=1000)


def test_silent_broker_times_out_with_network_error() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        with pytest.raises(NetworkError, match="within 200 ms"):
            BrokerConnection("127.0.0.1", listener.getsockname()[1], request_timeout_ms=200)
