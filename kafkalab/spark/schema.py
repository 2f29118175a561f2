"""The two row shapes of the ``kafkalog`` source, kept free of heavy imports.

Spark's planning worker needs only the schema and the split plan; keeping the field lists here
means it never imports numba or pyarrow. Kinds are Spark type names (``long`` = bigint).
"""

from __future__ import annotations

RECORD_FIELDS = [
    ("topic", "string"), ("partition", "int"), ("offset", "long"), ("timestamp", "long"),
    ("timestamp_type", "string"), ("key", "binary"), ("value", "binary"), ("headers", "headers"),
    ("producer_id", "long"), ("producer_epoch", "short"), ("sequence", "int"),
    ("is_transactional", "boolean"), ("is_control", "boolean"), ("batch_base_offset", "long"),
    ("batch_position", "long"), ("segment", "string"), ("compression", "string"),
]
BATCH_FIELDS = [
    ("topic", "string"), ("partition", "int"), ("base_offset", "long"), ("last_offset", "long"),
    ("records_count", "int"), ("magic", "byte"), ("crc", "long"), ("attributes", "short"),
    ("compression", "string"), ("timestamp_type", "string"), ("is_transactional", "boolean"),
    ("is_control", "boolean"), ("partition_leader_epoch", "int"), ("base_timestamp", "long"),
    ("max_timestamp", "long"), ("producer_id", "long"), ("producer_epoch", "short"),
    ("base_sequence", "int"), ("segment", "string"), ("position", "long"), ("size", "int"),
]

_SPARK_TYPES = {"headers": "array<struct<key:string,value:binary>>", "long": "bigint",
                "short": "smallint", "byte": "tinyint"}


def spark_types(fields: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(name, Spark simple type string) pairs, e.g. ``("offset", "bigint")``."""
    return [(name, _SPARK_TYPES.get(kind, kind)) for name, kind in fields]


def ddl(fields: list[tuple[str, str]]) -> str:
    """Spark DDL for a field list, e.g. ``"topic string, partition int, ..."``."""
    return ", ".join(f"{name} {kind}" for name, kind in spark_types(fields))
