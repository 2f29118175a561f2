"""``__consumer_offsets`` in Spark: committed offsets as rows.

Theory of operation
-------------------
The ``kafkalog`` source reads ``__consumer_offsets`` like any topic: each row is a record with
binary ``key`` and ``value``. What those bytes mean belongs to the group coordinator, so this
module does not parse them itself: :func:`committed_offsets` runs
:mod:`kafkalab.group.records` (Kafka's exact key and value schemas, the ones the coordinator
writes with) in the Spark workers, one Arrow batch at a time (``mapInPandas``), and keeps the
offset commits (record types 0 and 1). Group-metadata records (type 2) and the KIP-848 record
types are skipped; a tombstone (null value: an offset deleted or expired) becomes a row with a
null ``committed_offset``, so a monitor can tell "deleted" from "never committed".

Worked example: the record with key ``0001 0009 616e616c7974696373 0006 6f7264657273 00000000``
and a v3 value holding offset 4800 and commit timestamp 1700000600000 becomes the row
``(group="analytics", topic="orders", partition=0, committed_offset=4800,
commit_timestamp=1700000600000, offsets_partition=…, offsets_offset=…)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kafkalab.group.records import OffsetKey, decode_key, decode_offset_value, record_type

COMMIT_COLUMNS = ("group string, topic string, partition int, committed_offset bigint, "
                  "commit_timestamp bigint, offsets_partition int, offsets_offset bigint")
OFFSET_COMMIT_TYPES = (0, 1)


def committed_offsets(records: Any) -> Any:
    """The offset-commit rows of a ``kafkalog`` record-level DataFrame of ``__consumer_offsets``
    (it needs the columns ``partition``, ``offset``, ``key`` and ``value``)."""
    return records.select("partition", "offset", "key", "value").mapInPandas(_decode_batches, COMMIT_COLUMNS)


def _decode_batches(frames: Iterator[Any]) -> Iterator[Any]:
    import pandas as pd

    for frame in frames:
        rows = [row for row in map(_decode_row, frame.itertuples(index=False)) if row is not None]
        yield pd.DataFrame(rows, columns=[c.split()[0] for c in COMMIT_COLUMNS.split(", ")])


def _decode_row(row: Any) -> tuple[Any, ...] | None:
    partition, offset, key, value = row
    if key is None or record_type(bytes(key)) not in OFFSET_COMMIT_TYPES:
        return None
    decoded_key = decode_key(bytes(key))
    assert isinstance(decoded_key, OffsetKey)
    if value is None:
        return (decoded_key.group, decoded_key.topic, decoded_key.partition, None, None, partition, offset)
    decoded = decode_offset_value(bytes(value))
    return (decoded_key.group, decoded_key.topic, decoded_key.partition, decoded.offset,
            decoded.commit_timestamp, partition, offset)


__all__ = ["COMMIT_COLUMNS", "committed_offsets"]
