"""The built-in partitioner: murmur2 for keys, the uniform sticky partitioner (KIP-794) without.

Theory of operation
-------------------
A record names its partition, or has a key, or has neither:

* an explicit partition is used as given, once checked against the partition count (Kafka's
  "Invalid partition given with record: 1 is not in the range [0...1).");
* a key picks ``(murmur2(key) & 0x7fffffff) % partitions`` (:mod:`kafkalab.partitioner`), so one
  key always lands in one partition while the count stays the same;
* no key: the record goes to the topic's *sticky* partition. Spreading keyless records one by
  one (the round robin of old articles, before Kafka 2.4) makes many small batches; sticking to
  one partition fills one batch at a time. KIP-480 switched partition whenever a new batch was
  opened, which sent *more* to slow brokers (their batches fill longer); KIP-794 (Kafka 3.3)
  switches once ``batch.size`` bytes went to the sticky partition and the append that got there
  opened a new batch or filled one (or at ``2 x batch.size`` bytes, regardless), choosing the
  next partition at random among those with a leader.

Worked example (``batch.size`` 16384, three partitions, 1 KiB values, 1,030 bytes a record):
15 keyless records fill a batch of 15,511 bytes on, say, partition 2; the 16th does not fit, so
it opens a second batch there and brings the produced bytes to 16,480 >= 16,384, so the 17th
record goes to a partition drawn anew. The draw uses the ``random.Random`` the producer was
given, so a seeded run replays.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from kafkalab.errors import InvalidPartitionsError
from kafkalab.partitioner import partition_for_key


@dataclass(slots=True)
class StickyPartition:
    """The topic's current sticky partition and the bytes produced to it since it was chosen."""

    partition: int
    produced_bytes: int = 0


class BuiltInPartitioner:
    """Chooses partitions for one producer. Not thread-safe; owned by one producer."""

    def __init__(self, batch_size: int, rng: random.Random) -> None:
        self.sticky_batch_size = max(batch_size, 1)
        self.rng = rng
        self.sticky: dict[str, StickyPartition] = {}

    def partition(self, topic: str, key: bytes | None, partition: int | None, num_partitions: int,
                  available: Sequence[int]) -> int:
        """The partition for one record; ``available`` lists partitions that have a leader."""
        if partition is not None:
            if not 0 <= partition < num_partitions:
                raise InvalidPartitionsError(
                    f"Invalid partition given with record: {partition} is not in the range [0...{num_partitions}).")
            return partition
        if key is not None:
            return partition_for_key(key, num_partitions)
        sticky = self.sticky.get(topic)
        if sticky is None or sticky.partition >= num_partitions:
            sticky = self.sticky[topic] = StickyPartition(self._next(num_partitions, available))
        return sticky.partition

    def on_append(self, topic: str, partition: int, appended_bytes: int, enable_switch: bool,
                  num_partitions: int, available: Sequence[int]) -> None:
        """Count bytes sent to the sticky partition and switch per KIP-794 (Kafka's
        ``BuiltInPartitioner.updatePartitionInfo``)."""
        sticky = self.sticky.get(topic)
        if sticky is None or sticky.partition != partition:
            return  # a keyed or explicit record: the sticky partition is not concerned
        sticky.produced_bytes += appended_bytes
        if (sticky.produced_bytes >= self.sticky_batch_size and enable_switch
                or sticky.produced_bytes >= 2 * self.sticky_batch_size):
            self.sticky[topic] = StickyPartition(self._next(num_partitions, available))

    def _next(self, num_partitions: int, available: Sequence[int]) -> int:
        if num_partitions <= 0:
            raise InvalidPartitionsError(f"cannot choose a partition among {num_partitions}")
        choices = list(available) or list(range(num_partitions))
        return choices[self.rng.randrange(len(choices))]
