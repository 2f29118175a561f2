"""``format("kafkalog")`` through a real Spark session, checked against kafka-python."""

from __future__ import annotations

from pathlib import Path

import pytest
from logs import read_with_kafka_python, write_partition

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("kafka-logs")
    write_partition(root / "orders-0", records=4000, records_per_segment=1500, codec=0, seed=1)
    write_partition(root / "orders-1", records=2500, records_per_segment=1000, codec=3, seed=2)
    write_partition(root / "audit-0", records=300, records_per_segment=1000, codec=4, seed=3)
    return root


def _oracle(partition_dir: Path) -> list[tuple]:
    return [row for log in sorted(partition_dir.glob("*.log")) for row in read_with_kafka_python(log)]


def test_records_match_kafka_python(spark, data_dir: Path) -> None:  # type: ignore[no-untyped-def]
    df = spark.read.format("kafkalog").load(str(data_dir / "orders"))
    rows = df.select("partition", "offset", "timestamp", "key", "value").orderBy("partition", "offset").collect()
    for partition in (0, 1):
        got = [(r.offset, r.timestamp, None if r.key is None else bytes(r.key),
                None if r.value is None else bytes(r.value)) for r in rows if r.partition == partition]
        assert got == _oracle(data_dir / f"orders-{partition}")


def test_whole_data_dir_counts_per_topic_partition(spark, data_dir: Path) -> None:  # type: ignore[no-untyped-def]
    counts = spark.read.format("kafkalog").load(str(data_dir)).groupBy("topic", "partition").count().collect()
    assert sorted(tuple(r) for r in counts) == [("audit", 0, 300), ("orders", 0, 4000), ("orders", 1, 2500)]


def test_pushdown_prunes_without_changing_the_answer(spark, data_dir: Path) -> None:  # type: ignore[no-untyped-def]
    df = spark.read.format("kafkalog").load(str(data_dir))
    query = "topic = 'orders' AND partition = 1 AND offset >= 1100 AND offset < 1200"
    got = [r.offset for r in df.where(query).select("offset").orderBy("offset").collect()]
    assert got == list(range(1100, 1200))
    planned = df.where(query).select("segment").distinct().collect()
    assert [r.segment for r in planned] == [f"{1000:020d}.log"]


def test_batch_level_sums_to_record_count(spark, data_dir: Path) -> None:  # type: ignore[no-untyped-def]
    batches = spark.read.format("kafkalog").option("level", "batches").load(str(data_dir / "orders-1"))
    total = batches.selectExpr("sum(records_count) AS n", "sum(size) AS bytes").first()
    assert total.n == 2500
    assert total.bytes == sum(p.stat().st_size for p in (data_dir / "orders-1").glob("*.log"))


def test_bad_level_option_is_a_clear_error(spark, data_dir: Path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(Exception, match="level='rows' is not one of"):
        spark.read.format("kafkalog").option("level", "rows").load(str(data_dir)).count()


def test_user_schema_builds_only_the_named_columns(spark, data_dir: Path) -> None:  # type: ignore[no-untyped-def]
    df = spark.read.format("kafkalog").schema("value binary, offset bigint, headers array<struct<key:string,value:binary>>").load(str(data_dir / "orders-1"))
    assert df.columns == ["value", "offset", "headers"]
    rows = df.orderBy("offset").collect()
    assert [(r.offset, None if r.value is None else bytes(r.value)) for r in rows] == [
        (o, v) for o, _t, _k, v in _oracle(data_dir / "orders-1")]
    batches = spark.read.format("kafkalog").option("level", "batches").schema("records_count int, size int")
    assert batches.load(str(data_dir / "orders-1")).selectExpr("sum(records_count)").first()[0] == 2500


def test_user_schema_with_unknown_or_mistyped_column_is_a_clear_error(spark, data_dir: Path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(Exception, match="has no column 'payload'"):
        spark.read.format("kafkalog").schema("payload binary").load(str(data_dir)).count()
    with pytest.raises(Exception, match="column offset is bigint, not int"):
        spark.read.format("kafkalog").schema("offset int").load(str(data_dir)).count()


def test_check_crcs_option_must_be_boolean(spark, data_dir: Path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(Exception, match="check.crcs='maybe' is not true or false"):
        spark.read.format("kafkalog").option("check.crcs", "maybe").load(str(data_dir)).count()
    assert spark.read.format("kafkalog").option("check.crcs", "false").load(str(data_dir / "audit")).count() == 300
