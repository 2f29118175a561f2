"""Java's iteration orders, where Kafka's assignors let them decide the outcome.

Theory of operation
-------------------
Kafka's sticky assignors walk ``HashMap`` and ``HashSet`` collections, and in a few places the
walk order decides the result: which member keeps its extra partition when every member owns too
many, which of two same-generation claims wins, which partition travels back along a movement.
The Java consumer that leads a group builds its subscription map as a ``HashMap`` keyed by member
id, in the order the JoinGroup response lists the members. To give the same answer as that leader,
kafkalab reproduces the order in which such a map iterates:

* a key's hash is Java's ``String.hashCode`` (``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code
  units, in int32 arithmetic), spread as ``h ^ (h >>> 16)``;
* the table has a power-of-two size, 16 at first, doubled whenever the number of keys passes
  three quarters of it; a key lives in bucket ``spread & (size - 1)``;
* iteration visits buckets in index order and, inside a bucket, keys in insertion order (a
  resize splits a bucket without reordering it).

Worked example: member ids ``"c"``, ``"a"``, ``"b"`` hash to 99, 97, 98, which are their buckets
in a 16-slot table (99 & 15 = 3, 97 & 15 = 1, 98 & 15 = 2), so the map iterates ``a, b, c``
whatever order they were inserted in. ``"Aa"`` and ``"BB"`` share the hash 2112 and so iterate in
insertion order.

A map filled through ``computeIfAbsent`` (Kafka's ``CollectionUtils.groupPartitionsByTopic``,
behind the sticky assignor's user data) differs in two ways, both modelled by
:func:`compute_if_absent_order`: a new key goes to the *front* of its bucket, and the table grows
at the start of a call, once the count already exceeds three quarters of the table -- so 13 keys
still fit 16 slots until one more call is made.

Kafka turns a bucket of eight or more keys into a small tree, which changes the order inside
that bucket; with real member ids (a client id and a UUID) that does not happen in practice, and
this module does not model it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kafkalab.partitioner import java_string_hash, to_int32

INT32_MASK = 0xFFFFFFFF
HASHMAP_INITIAL_CAPACITY = 16  # java.util.HashMap's default table size
HASHMAP_LOAD_FACTOR = 0.75  # and its default load factor


def java_string_key(text: str) -> bytes:
    """A sort key that orders strings as Java's ``String.compareTo`` does (by UTF-16 code unit)."""
    return text.encode("utf-16-be")


def topic_partition_hash(topic: str, partition: int) -> int:
    """Kafka's ``TopicPartition.hashCode``: ``31 * (31 + partition) + topic.hashCode()``."""
    return to_int32(31 * (31 + partition) + java_string_hash(topic))


def spread(h: int) -> int:
    """``HashMap.hash``: fold the high half into the low half (unsigned result)."""
    h &= INT32_MASK
    return h ^ (h >> 16)


def table_size_for(count: int) -> int:
    """The table size of a default ``HashMap`` after ``count`` distinct keys were put into it."""
    size = HASHMAP_INITIAL_CAPACITY
    while count > size * HASHMAP_LOAD_FACTOR:
        size *= 2
    return size


def hashmap_order(keys: Sequence[str], hashes: Iterable[int] | None = None) -> list[str]:
    """The order a default ``HashMap`` iterates ``keys``, given in insertion order."""
    size = table_size_for(len(keys))
    hash_list = list(hashes) if hashes is not None else [java_string_hash(k) for k in keys]
    ranked = sorted(range(len(keys)), key=lambda i: (spread(hash_list[i]) & (size - 1), i))
    return [keys[i] for i in ranked]


def compute_if_absent_order(calls: Sequence[str]) -> list[str]:
    """The order a default ``HashMap`` iterates after ``computeIfAbsent(key, ...)`` was called
    for each of ``calls`` in turn (repeats included: every call may grow the table)."""
    hashes: dict[str, int] = {}
    buckets: list[list[str]] = [[] for _ in range(HASHMAP_INITIAL_CAPACITY)]
    count = 0
    for key in calls:
        if count > len(buckets) * HASHMAP_LOAD_FACTOR:
            grown: list[list[str]] = [[] for _ in range(2 * len(buckets))]
            for bucket in buckets:  # a split keeps each bucket's relative order
                for k in bucket:
                    grown[spread(hashes[k]) & (len(grown) - 1)].append(k)
            buckets = grown
        if key not in hashes:
            hashes[key] = java_string_hash(key)
            buckets[spread(hashes[key]) & (len(buckets) - 1)].insert(0, key)
            count += 1
    return [key for bucket in buckets for key in bucket]
