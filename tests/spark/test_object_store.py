"""The kafkalog source over an object store: a real S3 API server (moto's server mode) in a thread.

Logs are written locally (by kafka-python's encoder or ``kafkalab gen-log``), uploaded, and read
back through pyarrow's S3 client; every answer is compared with the same read of the local copy.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from kafkalab.errors import StorageError
from kafkalab.spark.datasource import read_split
from kafkalab.spark.files import Location, copy_tree
from kafkalab.spark.planning import find_partition_dirs, plan_splits
from kafkalab.tools import cli
from kafkalab.tools.gen_log import GenSpec, generate

from logs import write_partition

moto_server = pytest.importorskip("moto.server")
BUCKET = "kafkalab-logs"
MIB = 1024 * 1024


@pytest.fixture(scope="module")
def s3() -> Iterator[str]:
    """``s3://key:secret@bucket/{}?endpoint…``: format in a prefix. Credentials ride in the URL,
    so Spark's Python workers need no environment of their own."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    template = f"s3://testing:testing@{BUCKET}/{{}}?endpoint_override={host}:{port}&scheme=http"
    Location.of(template.format("") + "&allow_bucket_creation=true").filesystem.create_dir(BUCKET)
    yield template
    server.stop()


@pytest.fixture(scope="module")
def uploaded(s3: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """``orders-0``: one ~4 MiB segment with its offset index, by the storage engine (gen-log);
    ``orders-1``: three segments by kafka-python's encoder. Local and in the bucket."""
    local = tmp_path_factory.mktemp("local")
    generate(GenSpec(str(local), "orders", 1, 30_000, 1_000, 0.0, 100, "none", 1, 1_700_000_000_000, 1_000),
             workers=1, show_progress=False)
    write_partition(local / "orders-1", records=3_000, records_per_segment=1_000, codec=2, seed=2)
    url = s3.format("uploaded")
    copy_tree(Location.of(local), Location.of(url), show_progress=False)
    return local, url


def rows(splits: list, level: str = "records") -> pa.Table:
    batches = [b for split in splits for b in read_split(split, level)]
    offset = "offset" if level == "records" else "base_offset"
    return pa.Table.from_batches(batches).sort_by([("partition", "ascending"), (offset, "ascending")])


def test_planning_lists_the_same_partitions_and_segments(uploaded: tuple[Path, str]) -> None:
    local, url = uploaded
    assert [(t, p) for t, p, _ in find_partition_dirs(url)] == [("orders", 0), ("orders", 1)]
    assert [(t, p) for t, p, _ in find_partition_dirs(url.replace("/uploaded?", "/uploaded/orders-1?"))] == [("orders", 1)]
    remote = [(s.topic, s.partition, s.segment, s.start_position, s.end_position) for s in plan_splits(find_partition_dirs(url))]
    here = [(s.topic, s.partition, s.segment, s.start_position, s.end_position) for s in plan_splits(find_partition_dirs(local))]
    assert remote == here and len(remote) == 4


def test_a_large_segment_is_split_at_batch_boundaries_and_read_with_ranged_gets(uploaded: tuple[Path, str]) -> None:
    local, url = uploaded
    remote_splits = [s for s in plan_splits(find_partition_dirs(url), split_bytes=MIB) if s.partition == 0]
    assert len(remote_splits) >= 3 and all(s.filesystem is not None for s in remote_splits)
    local_rows = rows([s for s in plan_splits(find_partition_dirs(local)) if s.partition == 0])
    remote_rows = rows(remote_splits)
    assert remote_rows.num_rows == local_rows.num_rows == 30_000
    for column in ("offset", "timestamp", "key", "value", "batch_position"):
        assert remote_rows.column(column).equals(local_rows.column(column)), column
    positions = rows(remote_splits, "batches").column("position").to_numpy()
    assert set(s.start_position for s in remote_splits) <= set(positions.tolist())


def test_gen_log_writes_to_an_object_store_with_the_same_bytes(s3: str, tmp_path: Path) -> None:
    url = s3.format("generated")
    common = ["--topic", "clicks", "--partitions", "2", "--records", "20000", "--keys", "500",
              "--seed", "7", "--workers", "1"]
    staged_before = set(Path(tempfile.gettempdir()).glob("kafkalab-gen-log-*"))
    assert cli.main(["gen-log", "--data-dir", url, *common]) == 0
    assert cli.main(["gen-log", "--data-dir", str(tmp_path), *common]) == 0
    assert set(Path(tempfile.gettempdir()).glob("kafkalab-gen-log-*")) == staged_before
    remote = Location.of(url)
    for partition_dir in sorted(tmp_path.glob("clicks-*")):
        for local_file in sorted(partition_dir.iterdir()):
            copied = remote.child(partition_dir.name).child(local_file.name)
            assert copied.read_bytes() == local_file.read_bytes(), local_file.name


def test_bad_urls_are_typed_errors(s3: str) -> None:
    with pytest.raises(StorageError, match="scheme"):
        Location.of("ftp://host/logs")
    with pytest.raises(StorageError, match="no Kafka partition directories"):
        find_partition_dirs(s3.format("nothing-here"))


@pytest.mark.spark
def test_spark_reads_the_bucket_as_it_reads_the_directory(spark, uploaded: tuple[Path, str]) -> None:
    local, url = uploaded
    remote = spark.read.format("kafkalog").option("splitBytes", str(MIB)).load(url)
    here = spark.read.format("kafkalog").load(str(local))
    assert remote.rdd.getNumPartitions() > here.rdd.getNumPartitions()
    columns = ("partition", "offset", "timestamp", "key", "value")
    assert sorted(remote.select(*columns).collect()) == sorted(here.select(*columns).collect())
