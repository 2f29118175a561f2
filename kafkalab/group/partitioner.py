"""Which ``__consumer_offsets`` partition -- and so which broker -- coordinates a group.

Kafka places group ``g`` on partition ``abs(g.hashCode()) % offsets.topic.num.partitions``
(Kafka's ``GroupCoordinatorService.partitionFor`` with ``Utils.abs``). Java's
``String.hashCode`` is ``s[0]*31^(n-1) + ... + s[n-1]`` over the string's UTF-16 code units in
wrapping 32-bit arithmetic, and ``Utils.abs`` maps ``Integer.MIN_VALUE`` to 0 (plain ``Math.abs``
would leave it negative).

Worked example: ``"my-group"`` hashes to -1_906_497_762, whose ``abs`` mod 50 is 12, so
partition 12 of ``__consumer_offsets`` holds its commits; ``"polygenelubricants"`` hashes to ``-2**31``, whose
``abs`` is 0, so it lands on partition 0.
"""

from __future__ import annotations

from kafkalab.partitioner import java_abs, java_string_hash

OFFSETS_TOPIC = "__consumer_offsets"  # Kafka's Topic.GROUP_METADATA_TOPIC_NAME
OFFSETS_TOPIC_PARTITIONS_DEFAULT = 50  # offsets.topic.num.partitions

__all__ = ["OFFSETS_TOPIC", "OFFSETS_TOPIC_PARTITIONS_DEFAULT", "java_abs", "java_string_hash", "partition_for"]

def partition_for(group_id: str, partition_count: int = OFFSETS_TOPIC_PARTITIONS_DEFAULT) -> int:
    """The ``__consumer_offsets`` partition that coordinates ``group_id``."""
    assert partition_count > 0
    return java_abs(java_string_hash(group_id)) % partition_count
