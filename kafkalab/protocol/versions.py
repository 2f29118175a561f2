"""What the broker advertises in ApiVersions, and why each range is what it is.

Clients pick, per API, the highest version both sides speak, so the advertised ranges decide what
real clients send (kafka-facts A2-A4). Most ranges are simply the versions kafkalab implements.
Two are deliberately wider or narrower:

* Produce is advertised from v0 though only v3+ (magic 2 record batches) is implemented, because
  librdkafka sends gzip, snappy and lz4 batches only to brokers whose Produce range includes 0.
  Apache Kafka 4.x does the same and rejects v0-v2 when they actually arrive (KIP-896).
* FindCoordinator is advertised although kafkalab has no coordinator yet: librdkafka enables LZ4
  only for brokers advertising FindCoordinator v0. Calls are answered COORDINATOR_NOT_AVAILABLE.

InitProducerId hands out producer ids so idempotent producers (kafka-python's and Java's
default) can start; duplicate detection by sequence number arrives with the transactions
subsystem. Consumer-group and transaction APIs are *not* advertised until they are implemented, so clients
fail fast with a clear "not supported by broker" error rather than retrying forever.

Worked example: kafka-python 3.0 speaks Metadata 0-13 and kafkalab advertises 0-12, so it sends
v12; librdkafka 2.0.2 speaks 0-4 and sends v4; aiokafka speaks 0-5 and sends v5.
"""

from __future__ import annotations

from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.messages import SCHEMAS

PRODUCE_ADVERTISED_MIN = 0  # see the module docstring: librdkafka's compression rule

ADVERTISED: dict[int, tuple[int, int]] = {
    api_key: (request.valid[0], request.valid[1]) for api_key, (request, _) in SCHEMAS.items()
}
ADVERTISED[ApiKey.PRODUCE] = (PRODUCE_ADVERTISED_MIN, SCHEMAS[ApiKey.PRODUCE][0].valid[1])


def is_implemented(api_key: int, api_version: int) -> bool:
    """True when a request at this version can be decoded and handled."""
    pair = SCHEMAS.get(api_key)
    return pair is not None and pair[0].valid[0] <= api_version <= pair[0].valid[1]
