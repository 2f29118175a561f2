"""What a broker asks the active controller on someone else's behalf, or for itself:
Envelope (58, KIP-590) and AllocateProducerIds (67, KIP-730).

* **Envelope** -- a KRaft broker does not decide admin requests (CreateTopics, DeleteTopics,
  CreatePartitions, AlterConfigs, IncrementalAlterConfigs, ElectLeaders, the reassignment APIs):
  it forwards them to the active controller unopened. ``request_data`` is the client's frame
  without its size prefix -- the client's request header (its correlation id, client id) and
  body, byte for byte; ``request_principal`` is who the client authenticated as, serialized as
  Kafka's ``DefaultPrincipalData`` with a version prefix; ``client_host_address`` the client's
  IP address as raw bytes (4 for IPv4). The controller answers with ``response_data``, the
  response header and body it would have sent the client, and the broker relays that answer.
  A non-zero ``error_code`` means the envelope itself failed (NOT_CONTROLLER: ask the new
  controller; INVALID_REQUEST: the inner frame did not parse or may not be forwarded).
* **AllocateProducerIds** -- a broker that hands out producer ids (InitProducerId) asks the
  controller for its next block of 1000; the controller writes a ProducerIdsRecord and answers
  ``producer_id_start`` and ``producer_id_len``.

Worked example: a client sends CreateTopics v7 with correlation id 5 to broker 2; broker 2
sends ``Envelope{request_data: <the client's 40 bytes>, request_principal: 00 00 05 "User"
0a "ANONYMOUS" 00 00, client_host_address: 7f 00 00 01}`` to the controller, which answers
``{response_data: <00 00 00 05 00 ... the CreateTopics v7 response>, error_code: 0}``.
"""

from __future__ import annotations

from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.schema import f, message

ENVELOPE_VERSION = 0
ALLOCATE_PRODUCER_IDS_VERSION = 0

ENVELOPE_REQUEST = message(
    "EnvelopeRequest", api_key=ApiKey.ENVELOPE, valid="0", flexible="0+", fields=[
        f("request_data", "bytes"),
        f("request_principal", "bytes", nullable="0+"),
        f("client_host_address", "bytes"),
    ])

ENVELOPE_RESPONSE = message(
    "EnvelopeResponse", api_key=ApiKey.ENVELOPE, valid="0", flexible="0+", fields=[
        f("response_data", "bytes", nullable="0+", default=None),
        f("error_code", "int16"),
    ])

ALLOCATE_PRODUCER_IDS_REQUEST = message(
    "AllocateProducerIdsRequest", api_key=ApiKey.ALLOCATE_PRODUCER_IDS, valid="0", flexible="0+", fields=[
        f("broker_id", "int32"),
        f("broker_epoch", "int64", default=-1),
    ])

ALLOCATE_PRODUCER_IDS_RESPONSE = message(
    "AllocateProducerIdsResponse", api_key=ApiKey.ALLOCATE_PRODUCER_IDS, valid="0", flexible="0+", fields=[
        f("throttle_time_ms", "int32"),
        f("error_code", "int16"),
        f("producer_id_start", "int64"),
        f("producer_id_len", "int32"),
    ])

# Kafka's DefaultPrincipalData (a "data" message, no API key), which the Envelope's
# request_principal carries after a two-byte version.
PRINCIPAL_DATA_VERSION = 0
DEFAULT_PRINCIPAL_DATA = message(
    "DefaultPrincipalData", valid="0", flexible="0+", fields=[
        f("type", "string"),
        f("name", "string"),
        f("token_authenticated", "bool"),
    ])


def serialize_principal(principal_type: str, name: str) -> bytes:
    """Kafka's ``DefaultKafkaPrincipalBuilder.serialize``: the version, then the data."""
    data = DEFAULT_PRINCIPAL_DATA.cls(type=principal_type, name=name, token_authenticated=False)
    return PRINCIPAL_DATA_VERSION.to_bytes(2, "big") + DEFAULT_PRINCIPAL_DATA.encode(data, PRINCIPAL_DATA_VERSION)


ANONYMOUS_PRINCIPAL = serialize_principal("User", "ANONYMOUS")  # a PLAINTEXT listener's client

__all__ = [
    "ALLOCATE_PRODUCER_IDS_REQUEST", "ALLOCATE_PRODUCER_IDS_RESPONSE", "ALLOCATE_PRODUCER_IDS_VERSION",
    "ANONYMOUS_PRINCIPAL", "DEFAULT_PRINCIPAL_DATA", "ENVELOPE_REQUEST", "ENVELOPE_RESPONSE", "ENVELOPE_VERSION",
    "serialize_principal",
]
