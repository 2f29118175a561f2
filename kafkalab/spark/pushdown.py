"""Spark filters -> :class:`~kafkalab.spark.planning.ScanBounds` (Spark >= 4.1 only).

Theory of operation
-------------------
Spark hands ``pushFilters`` the conjuncts of a query's WHERE clause as small objects such as
``GreaterThanOrEqual(("offset",), 900000)``. Each one that names a column kafkalog can prune on
narrows an inclusive range; anything else is ignored here (Spark evaluates all filters anyway).

Worked example: ``topic = 'orders' AND partition IN (1, 2) AND offset > 99 AND offset <= 500``
becomes ``ScanBounds(topics={'orders'}, partitions={1, 2}, offset_min=100, offset_max=500)``.

At the batch level the offset and time columns are the header fields: a batch with
``last_offset >= N`` may hold offset N, a batch with ``base_offset <= N`` too, and
``max_timestamp >= T`` keeps the batches that may hold a record at or after T.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from pyspark.sql.datasource import (
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
)

from kafkalab.spark.planning import ScanBounds

# column -> which bound a lower / upper comparison sets, per level
_RANGE_COLUMNS: dict[str, dict[str, tuple[str | None, str | None]]] = {
    "records": {"offset": ("offset_min", "offset_max"),
                "timestamp": ("timestamp_min", "timestamp_max")},
    "batches": {"last_offset": ("offset_min", None), "base_offset": (None, "offset_max"),
                "max_timestamp": ("timestamp_min", None)},
}


def _lower(value: int, strict: bool) -> int:
    return value + 1 if strict else value


def _upper(value: int, strict: bool) -> int:
    return value - 1 if strict else value


def _narrow(bounds: ScanBounds, field: str | None, value: int, tighter: Callable[[int, int], int]) -> ScanBounds:
    if field is None:
        return bounds
    return _replace(bounds, {field: tighter(getattr(bounds, field), value)})


def _replace(bounds: ScanBounds, changes: dict[str, Any]) -> ScanBounds:
    """``bounds`` with the fields named in ``changes`` replaced (names come from the tables
    above, values from the filter's column type)."""
    return dataclasses.replace(bounds, **changes)


def _column(f: Any) -> str | None:
    """The single column a filter names, e.g. ``("offset",)`` -> ``"offset"``; None for nested."""
    attribute: tuple[str, ...] = tuple(getattr(f, "attribute", ()))
    return attribute[0] if len(attribute) == 1 else None


def _apply_range(bounds: ScanBounds, f: Any, columns: dict[str, tuple[str | None, str | None]]) -> ScanBounds:
    column = _column(f)
    value = getattr(f, "value", None)
    if column not in columns or not isinstance(value, int) or isinstance(value, bool):
        return bounds
    low_field, high_field = columns[column]
    if isinstance(f, (GreaterThan, GreaterThanOrEqual)):
        return _narrow(bounds, low_field, _lower(f.value, isinstance(f, GreaterThan)), max)
    if isinstance(f, (LessThan, LessThanOrEqual)):
        return _narrow(bounds, high_field, _upper(f.value, isinstance(f, LessThan)), min)
    if isinstance(f, EqualTo):
        return _narrow(_narrow(bounds, low_field, f.value, max), high_field, f.value, min)
    return bounds


def _apply_set(bounds: ScanBounds, f: Any) -> ScanBounds:
    column = _column(f)
    values = (f.value,) if isinstance(f, EqualTo) else tuple(f.value) if isinstance(f, In) else None
    if values is None or column not in ("topic", "partition"):
        return bounds
    field = "topics" if column == "topic" else "partitions"
    wanted = frozenset(values)
    current = getattr(bounds, field)
    return _replace(bounds, {field: wanted if current is None else current & wanted})


def bounds_from_filters(filters: list[Any], level: str) -> ScanBounds:
    """The bounds implied by the AND of ``filters`` (unknown filters leave bounds open)."""
    bounds = ScanBounds()
    for f in filters:
        bounds = _apply_set(bounds, f)
        bounds = _apply_range(bounds, f, _RANGE_COLUMNS[level])
    return bounds
