"""``--offsets-decoder`` on __consumer_offsets records built byte by byte from Kafka's specs.

The consumer-protocol bytes inside GroupMetadataValue are encoded by kafka-python (an
independent implementation of ConsumerProtocolSubscription/Assignment).
"""

from __future__ import annotations

import base64
import struct

import pytest
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from kafkalab.protocol.types import Writer
from kafkalab.records import Record
from kafkalab.tools.decoders.offsets import parse_offsets


def _s(text: str | None) -> bytes:
    """Non-compact (int16 length) string; None is length -1."""
    if text is None:
        return struct.pack(">h", -1)
    return struct.pack(">h", len(text)) + text.encode()


def _offset_key(group: str, topic: str, partition: int, record_type: int = 1) -> bytes:
    return struct.pack(">h", record_type) + _s(group) + _s(topic) + struct.pack(">i", partition)


def _parse(key: bytes | None, value: bytes | None, offset: int = 5) -> tuple[str | None, str | None]:
    return parse_offsets(Record(offset, 0, key, value))


KEY_JSON = '{"type":"1","data":{"group":"g1","topic":"orders","partition":3}}'


@pytest.mark.parametrize("version, body, data", [
    (0, struct.pack(">q", 42) + _s("m") + struct.pack(">q", 1000),
     '{"offset":42,"metadata":"m","commitTimestamp":1000}'),
    (1, struct.pack(">q", 42) + _s("") + struct.pack(">qq", 1000, 2000),
     '{"offset":42,"metadata":"","commitTimestamp":1000,"expireTimestamp":2000}'),
    (2, struct.pack(">q", 42) + _s("") + struct.pack(">q", 1000),
     '{"offset":42,"metadata":"","commitTimestamp":1000}'),
    (3, struct.pack(">qi", 42, 7) + _s("") + struct.pack(">q", 1000),
     '{"offset":42,"leaderEpoch":7,"metadata":"","commitTimestamp":1000}'),
    # v4 is flexible: compact string (length + 1) and an empty tag section at the end.
    (4, struct.pack(">qi", 42, 7) + b"\x03ab" + struct.pack(">q", 1000) + b"\x00",
     '{"offset":42,"leaderEpoch":7,"metadata":"ab","commitTimestamp":1000}'),
])
def test_offset_commit_value_versions(version: int, body: bytes, data: str) -> None:
    key, payload = _parse(_offset_key("g1", "orders", 3), struct.pack(">h", version) + body)
    assert key == KEY_JSON
    assert payload == f'{{"version":"{version}","data":{data}}}'


def test_legacy_key_type_zero_and_tombstone() -> None:
    key, payload = _parse(_offset_key("g1", "orders", 3, record_type=0), None)
    assert key == '{"type":"0","data":{"group":"g1","topic":"orders","partition":3}}'
    assert payload == "<DELETE>"


def _group_value_v3(protocol_type: str, subscription: bytes, assignment: bytes) -> bytes:
    member = (_s("m-1") + _s(None) + _s("client") + _s("/10.0.0.1")  # id, instance id, client, host
              + struct.pack(">ii", 300000, 45000)                       # rebalance, session timeouts
              + struct.pack(">i", len(subscription)) + subscription
              + struct.pack(">i", len(assignment)) + assignment)
    return (struct.pack(">h", 3) + _s(protocol_type) + struct.pack(">i", 4) + _s("range") + _s("m-1")
            + struct.pack(">q", 1_700_000_000_000) + struct.pack(">i", 1) + member)


def test_group_metadata_value_expands_the_consumer_protocol() -> None:
    subscription = ConsumerProtocolSubscription(
        topics=["orders"], user_data=None, owned_partitions=[], generation_id=5, rack_id=None,
        version=3).encode(version=3)
    assignment = ConsumerProtocolAssignment(
        assigned_partitions=[("orders", [0, 1])], user_data=b"", version=0).encode(version=0)
    key, payload = _parse(struct.pack(">h", 2) + _s("g1"),
                          _group_value_v3("consumer", subscription, assignment))
    assert key == '{"type":"2","data":{"group":"g1"}}'
    assert payload == (
        '{"version":"3","data":{"protocolType":"consumer","generation":4,"protocol":"range",'
        '"leader":"m-1","currentStateTimestamp":1700000000000,"members":[{"memberId":"m-1",'
        '"groupInstanceId":null,"clientId":"client","clientHost":"/10.0.0.1","rebalanceTimeout":300000,'
        '"sessionTimeout":45000,"subscription":{"topics":["orders"],"userData":null,'
        '"ownedPartitions":[],"generationId":5,"rackId":null},'
        '"assignment":{"assignedPartitions":[{"topic":"orders","partitions":[0,1]}],"userData":""}}]}}')


def test_group_metadata_value_keeps_other_protocols_as_base64() -> None:
    _, payload = _parse(struct.pack(">h", 2) + _s("g1"), _group_value_v3("connect", b"\x01\x02", b""))
    assert '"subscription":"AQI=","assignment":""' in (payload or "")


def test_undecodable_subscription_bytes_stay_as_bytes() -> None:
    _, payload = _parse(struct.pack(">h", 2) + _s("g1"), _group_value_v3("consumer", b"\x00\x00\xff", b""))
    assert f'"subscription":"{base64.b64encode(bytes([0, 0, 255])).decode()}"' in (payload or "")


def test_consumer_group_member_metadata_with_tagged_classic_metadata() -> None:
    w = Writer()
    w.int16(0)                                    # value version
    w.string(None, compact=True)                  # InstanceId
    w.string("rack-a", compact=True)              # RackId
    w.string("client", compact=True)              # ClientId
    w.string("/10.0.0.1", compact=True)           # ClientHost
    w.length(1, compact=True)
    w.string("orders", compact=True)              # SubscribedTopicNames
    w.string(None, compact=True)                  # SubscribedTopicRegex
    w.int32(45000)                                # RebalanceTimeoutMs
    w.string("uniform", compact=True)             # ServerAssignor
    classic = Writer()
    classic.int32(45000)                          # SessionTimeoutMs
    classic.length(1, compact=True)               # SupportedProtocols
    classic.string("range", compact=True)
    classic.bytes_(b"\x00\x01", compact=True)
    classic.uvarint(0)
    classic.uvarint(0)                            # ClassicMemberMetadata tags
    body = b"\x01" + classic.to_bytes()           # a nullable struct: presence byte first
    w.uvarint(1)
    w.uvarint(0)
    w.uvarint(len(body))
    w.raw(body)
    # Kafka's ConsumerGroupMemberMetadataKey.json: flexibleVersions none, so int16-length strings.
    key = struct.pack(">h", 5) + _s("g1") + _s("m-1")
    _, payload = _parse(key, w.to_bytes())
    assert payload == (
        '{"version":"0","data":{"instanceId":null,"rackId":"rack-a","clientId":"client",'
        '"clientHost":"/10.0.0.1","subscribedTopicNames":["orders"],"subscribedTopicRegex":null,'
        '"rebalanceTimeoutMs":45000,"serverAssignor":"uniform","classicMemberMetadata":'
        '{"sessionTimeoutMs":45000,"supportedProtocols":[{"name":"range","metadata":"AAE="}]}}}')


def test_consumer_group_current_member_assignment() -> None:
    topic_id = bytes(range(16))
    w = Writer()
    w.int16(0)
    w.int32(5)                                    # MemberEpoch
    w.int32(4)                                    # PreviousMemberEpoch
    w.int8(0)                                     # State
    w.length(1, compact=True)                     # AssignedPartitions
    w.raw(topic_id)
    w.length(2, compact=True)
    w.int32(0)
    w.int32(2)
    w.uvarint(0)
    w.length(0, compact=True)                     # PartitionsPendingRevocation
    w.uvarint(0)
    key = struct.pack(">h", 8) + _s("g1") + _s("m-1")  # not flexible, as Kafka's spec says
    k, payload = _parse(key, w.to_bytes())
    assert k == '{"type":"8","data":{"groupId":"g1","memberId":"m-1"}}'
    assert payload == (
        '{"version":"0","data":{"memberEpoch":5,"previousMemberEpoch":4,"state":0,'
        '"assignedPartitions":[{"topicId":"AAECAwQFBgcICQoLDA0ODw","partitions":[0,2]}],'
        '"partitionsPendingRevocation":[]}}')


@pytest.mark.parametrize("key, value, expected", [
    (struct.pack(">h", 99) + _s("g"), None, "Unknown record type 99 at offset 5, skipping."),
    (b"\x00", None, "Error at offset 5, skipping. Could not read version from key's buffer."),
    (_offset_key("g1", "orders", 3), struct.pack(">h", 9) + b"\x00" * 30,
     "Error at offset 5, skipping. Could not read record with version 9 from value's buffer due to: "
     "Can't read version 9 of OffsetCommitValue."),
    (_offset_key("g1", "orders", 3), struct.pack(">hq", 3, 42),
     "Error at offset 5, skipping. Could not read record with version 3 from value's buffer due to: "
     "truncated int32"),
    (struct.pack(">h", 1) + struct.pack(">h", 30000), None,
     "Error at offset 5, skipping. Could not read record with version 0 from key's buffer"),
])
def test_bad_records_print_one_error_line(key: bytes, value: bytes | None, expected: str) -> None:
    text, payload = _parse(key, value)
    assert text is not None and text.startswith(expected)
    assert payload is None


def test_missing_key() -> None:
    text, payload = _parse(None, b"\x00\x00")
    assert text == ("Error at offset 5, skipping. Failed to decode message at offset 5 using the "
                    "specified decoder (message had a missing key)")
    assert payload is None
