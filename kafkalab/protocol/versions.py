"""What the broker advertises in ApiVersions, and why each range is what it is.

Clients pick, per API, the highest version both sides speak, so the advertised ranges decide what
real clients send (kafka-facts A2-A4). Most ranges are simply the versions kafkalab implements.
Two are deliberately wider or narrower:

* Produce is advertised from v0 though only v3+ (magic 2 record batches) is implemented, because
  librdkafka sends gzip, snappy and lz4 batches only to brokers whose Produce range includes 0.
  Apache Kafka 4.x does the same and rejects v0-v2 when they actually arrive (KIP-896).
* The group APIs start at v0 (FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup):
  librdkafka 2.0.2 turns its balanced consumer on only when each range includes 0, and LZ4 only
  when FindCoordinator's does (kafka-facts A3). OffsetCommit starts at v2 and OffsetFetch at
  v1, Kafka 4.0's minimums (KIP-896); librdkafka's pinned OffsetCommit [1, 2] still overlaps.
  FindCoordinator answers for groups (key_type 0) and transactional ids (key_type 1).

InitProducerId hands out producer ids to idempotent and transactional producers. The
transaction APIs stop below the versions of Kafka's transaction version 2 (KIP-890 part 2), which
kafkalab does not implement: EndTxn and TxnOffsetCommit at v4, InitProducerId at v4
(see :mod:`kafkalab.protocol.messages.transactions`). WriteTxnMarkers (v1) is the partition
leaders' half, which a transaction coordinator calls; clients never send it.

ConsumerGroupHeartbeat and ConsumerGroupDescribe (KIP-848) are advertised at v0, the only
version Kafka 3.9 defines and the one its Java client sends with ``group.protocol=consumer``.

AlterPartitionReassignments is advertised at 0-1: v1 (KIP-860, Kafka 4.1) only adds
``allow_replication_factor_change``; Kafka 3.9's Java client knows v0 and sends it.
ListPartitionReassignments has only v0.

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
