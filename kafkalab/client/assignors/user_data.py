"""The sticky assignors' user data: how older members say what they own and in which generation.

Theory of operation
-------------------
Before subscription v1 (KIP-429) and v2 (KIP-792) a member could not put its owned partitions
or generation into the subscription itself, so the sticky assignors carry them in the
subscription's opaque ``user_data``. Kafka's Java client still writes them there:

* ``StickyAssignor`` (eager) writes its last assignment and generation (user data v1)::

      previous_assignment: [topic: string, partitions: [int32]]   generation: int32

  with topics in the order of the Java ``HashMap`` that groups them (see :mod:`.java_order`). The
  older v0 lacks the generation. A member that has never been assigned sends no user data.
* ``CooperativeStickyAssignor`` writes just ``generation: int32``, and reads it only when the
  subscription has no ``generation_id`` (a v0/v1 subscription).

Worked example: StickyAssignor after generation 3 with ``t-0`` and ``t-2`` writes 23 bytes,
``00000001 | 0001 74 | 00000002 00000000 00000002 | 00000003`` (one topic, ``"t"``, two
partitions 0 and 2, generation 3).

Decoding follows Kafka's leniency: bytes that are not v1 are tried as v0; bytes that are
neither mean "no partitions, generation -1" rather than an error, so one member with a broken
client cannot stop its whole group from rebalancing. :func:`member_view` turns a subscription
into what the assignor should see, per assignor, as Kafka's ``memberData`` does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from kafkalab.client.assignors.java_order import compute_if_absent_order
from kafkalab.client.assignors.sticky import COOPERATIVE_STICKY_NAME, STICKY_NAME
from kafkalab.client.consumer_protocol import NO_GENERATION, Subscription
from kafkalab.errors import ProtocolError
from kafkalab.protocol.types import Reader, Writer
from kafkalab.storage.checkpoints import TopicPartition

def encode_sticky_user_data(partitions: Sequence[TopicPartition], generation: int) -> bytes:
    """StickyAssignor's user data v1, byte for byte as Kafka's Java client writes it."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    writer = Writer()
    writer.int32(len(by_topic))
    for topic in compute_if_absent_order([topic for topic, _ in partitions]):
        writer.string(topic, False)
        writer.int32(len(by_topic[topic]))
        for partition in by_topic[topic]:
            writer.int32(partition)
    writer.int32(generation)
    return writer.to_bytes()


def _read_assignment(reader: Reader) -> tuple[TopicPartition, ...]:
    partitions: list[TopicPartition] = []
    for _ in range(reader.array_count(False, False)):
        topic = reader.string(False, False)
        assert topic is not None  # a non-nullable read never returns None
        partitions += [(topic, reader.int32()) for _ in range(reader.array_count(False, False))]
    return tuple(partitions)


def decode_sticky_user_data(data: bytes | None) -> tuple[tuple[TopicPartition, ...], int]:
    """(owned partitions, generation); v1, else v0 (generation -1), else nothing, as Kafka reads."""
    if not data:
        return (), NO_GENERATION
    try:
        reader = Reader(data)
        partitions = _read_assignment(reader)
        return partitions, reader.int32()
    except ProtocolError:
        pass
    try:
        return _read_assignment(Reader(data)), NO_GENERATION
    except ProtocolError:
        return (), NO_GENERATION


def encode_cooperative_user_data(generation: int) -> bytes:
    """CooperativeStickyAssignor's user data: the generation as an int32."""
    writer = Writer()
    writer.int32(generation)
    return writer.to_bytes()


def _cooperative_generation(data: bytes | None) -> int:
    if data is None:
        return NO_GENERATION
    try:
        return Reader(data).int32()
    except ProtocolError:
        return NO_GENERATION


def member_view(assignor: str, subscription: Subscription) -> Subscription:
    """The subscription as ``assignor`` reads it: StickyAssignor takes owned partitions and
    generation from its user data; CooperativeStickyAssignor takes the generation from user data
    when the subscription carries none; the others use the subscription as it is."""
    if assignor == STICKY_NAME:
        owned, generation = decode_sticky_user_data(subscription.user_data)
        owned = tuple(tp for tp in owned if tp[1] >= 0)  # no such partition: not a claim
        return dataclasses.replace(subscription, owned_partitions=owned, generation_id=generation)
    if assignor == COOPERATIVE_STICKY_NAME and subscription.generation_id < 0:
        generation = _cooperative_generation(subscription.user_data)
        return dataclasses.replace(subscription, generation_id=generation)
    return subscription
