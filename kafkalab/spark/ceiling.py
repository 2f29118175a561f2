"""A same-schema reference source that measures what Spark itself costs per row.

Theory of operation
-------------------
A Python data source hands Arrow record batches from a Python worker to the JVM, which reads
them from a socket and turns every row into Spark's internal row format. That hand-off has a
cost per row and per byte that no decoder can remove, so a scan of the ``kafkalog`` source can
only be judged fairly against it. ``format("kafkalog_ceiling")`` yields the *same* Arrow record
batch again and again: the first chunk of the first segment under ``path``, decoded once per
worker by :func:`kafkalab.spark.datasource.read_split` -- identical schema, identical bytes per
row, zero decoding work. Its rate is the ceiling for the real scan on the same machine in the
same run; ``real rate / ceiling`` says how much of the scan's time is ours.

Worked example: with ``rows=3000000`` and ``partitions=6`` each of six tasks yields its 500,000
rows as three 131,072-row batches and one 106,784-row slice (slices are zero-copy).

Options: ``path`` (a kafkalog data directory), ``rows``, ``partitions``, ``level`` (``records``
| ``batches``) and a user schema for a projected ceiling, as for ``kafkalog``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from kafkalab.errors import ConfigError
from kafkalab.spark import planning, schema
from kafkalab.spark.datasource import LEVELS, parse_level, projected_fields

ROWS_MAX = 10**10  # a reference scan larger than this is a typo
PARTITIONS_MAX = 10_000
_TEMPLATES: dict[tuple[str, str, tuple[str, ...] | None], Any] = {}  # one decoded chunk per worker


def _bounded_int(options: dict[str, str], name: str, low: int, high: int) -> int:
    raw = options.get(name, "")
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"kafkalog_ceiling option {name}={raw!r} is not an integer") from None
    if not low <= value <= high:
        raise ConfigError(f"kafkalog_ceiling option {name}={value} is outside [{low}, {high}]")
    return value


class RowCount(InputPartition):
    """One task's share of the rows (picklable)."""

    def __init__(self, rows: int) -> None:
        super().__init__(rows)
        self.rows = rows


class CeilingDataSource(DataSource):
    """``format("kafkalog_ceiling")``: one real chunk of ``kafkalog`` rows, repeated."""

    @classmethod
    def name(cls) -> str:
        return "kafkalog_ceiling"

    def schema(self) -> str:
        return schema.ddl(LEVELS[parse_level(self.options)])

    def reader(self, schema: Any) -> DataSourceReader:
        return CeilingReader(dict(self.options), schema)


class CeilingReader(DataSourceReader):
    """Splits ``rows`` over ``partitions`` tasks; each repeats the template chunk."""

    def __init__(self, options: dict[str, str], requested: Any = None) -> None:
        self.path = options.get("path") or ""
        if not self.path:
            raise ConfigError("kafkalog_ceiling needs a path to take its template chunk from")
        self.level = parse_level(options)
        self.rows = _bounded_int(options, "rows", 1, ROWS_MAX)
        self.partition_count = _bounded_int(options, "partitions", 1, PARTITIONS_MAX)
        self.fields = projected_fields(requested, self.level) if requested is not None else None

    def partitions(self) -> Sequence[InputPartition]:
        share, extra = divmod(self.rows, self.partition_count)
        return [RowCount(share + (1 if i < extra else 0)) for i in range(self.partition_count)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if not isinstance(partition, RowCount):
            raise ConfigError(f"kafkalog_ceiling cannot read a {type(partition).__name__}")
        template = template_chunk(self.path, self.level, self.fields)
        left = partition.rows
        while left > 0:
            take = min(left, template.num_rows)
            yield template if take == template.num_rows else template.slice(0, take)
            left -= take


def template_chunk(path: str, level: str, fields: list[str] | None) -> Any:
    """The first Arrow batch ``kafkalog`` yields for the first segment under ``path``."""
    from kafkalab.spark.datasource import read_split

    key = (path, level, tuple(fields) if fields is not None else None)
    if key not in _TEMPLATES:
        splits = planning.plan_splits(planning.find_partition_dirs(path))
        first = next((b for s in splits for b in read_split(s, level, fields=fields)), None)
        if first is None:
            raise ConfigError(f"kafkalog_ceiling found no rows under {path} to repeat")
        _TEMPLATES[key] = first
    return _TEMPLATES[key]
