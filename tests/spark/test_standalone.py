"""The kafkalog source on a real Spark standalone cluster: master, worker and two executor JVMs.

The query runs in a child Python (one SparkSession per process; the suite's own session is
local[2]). Its counts must equal the local[2] session's and a direct read of the same splits
without Spark.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from kafkalab.spark.datasource import read_split
from kafkalab.spark.planning import find_partition_dirs, plan_splits
from kafkalab.spark.standalone import StandaloneCluster
from kafkalab.tools.gen_log import GenSpec, generate

pytestmark = [pytest.mark.spark, pytest.mark.slow]  # ~40 s of JVMs: `make campaign` runs it

QUERY = textwrap.dedent("""
    import json, os, sys
    import kafkalab.spark
    spark = kafkalab.spark.session(app_name="standalone-test", extra_conf={
        "spark.executor.cores": "1", "spark.executor.memory": "512m", "spark.cores.max": "2"})
    df = spark.read.format("kafkalog").option("splitBytes", str(1 << 20)).load(sys.argv[1])
    counts = {r.topic: r["count"] for r in df.groupBy("topic").count().collect()}
    pids = df.rdd.mapPartitions(lambda rows: [os.getpid()]).collect()
    executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1  # minus the driver
    print(json.dumps({"master": spark.sparkContext.master, "counts": counts,
                      "python_workers": len(set(pids)), "executors": executors}))
    spark.stop()
""")


def test_a_multi_topic_directory_reads_the_same_on_a_cluster(spark, tmp_path: Path) -> None:
    for topic, partitions, records in (("orders", 3, 30_000), ("clicks", 2, 12_000)):
        generate(GenSpec(str(tmp_path), topic, partitions, records, 500, 1.1, 100, "none", 1,
                         1_700_000_000_000, 1_000, config=(("segment.bytes", str(1 << 20)),)),
                 workers=1, show_progress=False)
    expected: Counter[str] = Counter()
    for split in plan_splits(find_partition_dirs(tmp_path)):
        for batch in read_split(split, "batches"):
            expected[split.topic] += sum(batch.column("records_count").to_pylist())
    local = spark.read.format("kafkalog").load(str(tmp_path)).groupBy("topic").count().collect()
    assert {r.topic: r["count"] for r in local} == dict(expected)
    with StandaloneCluster(cores=2, memory="1g") as cluster:
        env = dict(os.environ, KAFKALAB_SPARK_MASTER=cluster.url)
        done = subprocess.run([sys.executable, "-c", QUERY, str(tmp_path)], env=env, capture_output=True,
                              text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["master"] == cluster.url
    assert result["counts"] == dict(expected) == {"orders": 30_000, "clicks": 12_000}
    assert result["executors"] == 2
    assert result["python_workers"] >= 2
