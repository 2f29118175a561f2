"""The same-schema reference source: the real source's first chunk, repeated."""

from __future__ import annotations

from pathlib import Path

import pytest
from logs import write_partition

from kafkalab.errors import ConfigError
from kafkalab.spark.ceiling import CeilingDataSource, CeilingReader, RowCount

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ceiling-logs")
    write_partition(root / "orders-0", records=700, records_per_segment=1000, codec=0, seed=5)
    return root


def test_rows_are_the_real_sources_rows_repeated(spark, data_dir: Path) -> None:  # type: ignore[no-untyped-def]
    spark.dataSource.register(CeilingDataSource)
    real = spark.read.format("kafkalog").load(str(data_dir))
    ceiling = spark.read.format("kafkalog_ceiling").options(rows="1500", partitions="3").load(str(data_dir))
    assert ceiling.schema == real.schema
    assert ceiling.count() == 1500
    first = sorted(tuple(r) for r in real.select("offset", "value").collect())
    got = sorted(tuple(r) for r in ceiling.select("offset", "value").collect())
    assert got == sorted(first[:500] * 3)  # each task: the first 500 rows of the 700-row chunk


def test_row_split_and_option_errors() -> None:
    reader = CeilingReader({"path": "/x", "rows": "10", "partitions": "4"})
    assert [p.rows for p in reader.partitions() if isinstance(p, RowCount)] == [3, 3, 2, 2]
    with pytest.raises(ConfigError, match="rows=0 is outside"):
        CeilingReader({"path": "/x", "rows": "0", "partitions": "1"})
    with pytest.raises(ConfigError, match="partitions='two' is not an integer"):
        CeilingReader({"path": "/x", "rows": "5", "partitions": "two"})
    with pytest.raises(ConfigError, match="needs a path"):
        CeilingReader({"rows": "5", "partitions": "1"})
