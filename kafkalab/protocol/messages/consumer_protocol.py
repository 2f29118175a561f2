"""The consumer protocol's two blobs: a member's subscription and the leader's assignment.

Theory of operation
-------------------
The group coordinator does not understand consumers. In JoinGroup each member sends an opaque
``metadata`` blob per protocol (assignor) it supports, and in SyncGroup the leader sends one opaque
``assignment`` blob per member. Kafka's clients agree on their shape, ``ConsumerProtocolSubscription``
and ``ConsumerProtocolAssignment`` (Kafka's ``ConsumerProtocol``, specs ``ConsumerProtocol*.json``):
an int16 version followed by the struct at that version, never flexible (no compact strings, no
tagged fields)::

    Subscription v3  = version:int16  topics:[string]  user_data:nullable bytes
                       owned_partitions:[topic:string partitions:[int32]]   (v1+, KIP-429)
                       generation_id:int32                                 (v2+, KIP-792)
                       rack_id:nullable string                             (v3+, KIP-881)
    Assignment v0-3  = version:int16  assigned_partitions:[topic:string partitions:[int32]]
                       user_data:nullable bytes

Later versions only add fields at the end, so every subscription starts with the v0 fields. Three
layers read these blobs, all through the declarations below: the client
(:mod:`kafkalab.client.consumer_protocol`) writes and reads them whole; the group coordinator reads
only a subscription's v0 prefix, to learn which topics a ``consumer`` group uses (as Kafka's
``ClassicGroup.computeSubscribedTopics`` does); and ``kafkalab dump-log --offsets-decoder`` prints
them inside a group's ``GroupMetadataValue``, as Kafka's ``OffsetsMessageParser`` does. They are
messages without an API key, declared with the same ``message``/``f`` DSL as the wire messages.

Worked example: a v3 subscription to ``["a", "b"]`` owning ``a-0`` and ``a-1`` at generation 5
in rack ``r1`` is 43 bytes::

    0003 | 00000002 0001 61 0001 62 | ffffffff | 00000001 0001 61 00000002 00000000 00000001
    ver    topics: 2, "a", "b"        no user    owned: 1 topic "a", partitions [0, 1]
         | 00000005 | 0002 7231
           gen 5      rack "r1"
"""

from __future__ import annotations

from kafkalab.protocol.schema import f, message

PROTOCOL_TYPE = "consumer"  # JoinGroup's protocol_type for every consumer assignor
CONSUMER_PROTOCOL_VERSION_MAX = 3  # the highest version Kafka 3.9's client writes and reads
NO_GENERATION = -1  # generation_id's default: the member has not been in a generation

CONSUMER_PROTOCOL_SUBSCRIPTION = message(
    "ConsumerProtocolSubscription", valid=f"0-{CONSUMER_PROTOCOL_VERSION_MAX}", flexible="none", fields=[
    f("topics", "[]string"),
    f("user_data", "bytes", nullable="0+"),
    f("owned_partitions", "[]TopicPartition", "1+", fields=[
        f("topic", "string", "1+"),
        f("partitions", "[]int32", "1+"),
    ]),
    f("generation_id", "int32", "2+", default=NO_GENERATION),
    f("rack_id", "string", "3+", nullable="3+"),
])

CONSUMER_PROTOCOL_ASSIGNMENT = message(
    "ConsumerProtocolAssignment", valid=f"0-{CONSUMER_PROTOCOL_VERSION_MAX}", flexible="none", fields=[
    f("assigned_partitions", "[]TopicPartition", fields=[
        f("topic", "string"),
        f("partitions", "[]int32"),
    ]),
    f("user_data", "bytes", nullable="0+"),
])

__all__ = [
    "CONSUMER_PROTOCOL_ASSIGNMENT",
    "CONSUMER_PROTOCOL_SUBSCRIPTION",
    "CONSUMER_PROTOCOL_VERSION_MAX",
    "NO_GENERATION",
    "PROTOCOL_TYPE",
]
