"""A real Spark standalone cluster on this machine: a master and a worker from pyspark's own jars.

Theory of operation
-------------------
``local[2]`` runs the driver and both task slots in one JVM. A cluster separates them: a
*master* accepts applications and hands out cores, *workers* start one *executor* JVM per
application (or several, with ``spark.executor.cores`` below the worker's cores), and each
executor starts its own Python workers, which is where the ``kafkalog`` source's ``read`` runs.
Splits planned on the driver are pickled and shipped to those processes, so a source that works
here works on a cluster of machines that can all reach the logs (an object store, or a shared
filesystem).

:class:`StandaloneCluster` starts both daemons with pyspark's ``bin/spark-class`` -- the
classes ``org.apache.spark.deploy.master.Master`` and ``org.apache.spark.deploy.worker.Worker``,
Spark's own scheduler, nothing of kafkalab's -- bound to 127.0.0.1, with Java found as for
:func:`kafkalab.spark.session` and their logs and work directories in one scratch directory.
It waits until the worker has registered with the master, and stops both on exit.

From a shell, ``python -m kafkalab.spark.standalone --cores 2`` starts one and prints its URL;
then ``KAFKALAB_SPARK_MASTER=spark://127.0.0.1:7077 jupyter lab`` points every lab at it, and a
lab's source runs there unchanged with
``PYSPARK_PYTHON=.venv/bin/python spark-submit --master spark://127.0.0.1:7077
labs/_src/05-consumer-lag.py`` (``PYSPARK_PYTHON`` makes the driver and the executors' Python
workers the interpreter that has kafkalab).

Worked example: ``with StandaloneCluster(cores=2) as cluster:`` then
``kafkalab.spark.session(master=cluster.url, extra_conf={"spark.executor.cores": "1"})`` gets
two executors, each in its own JVM with its own Python workers.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType

from kafkalab.errors import KafkaError
from kafkalab.spark.session import LOOPBACK, prepare_environment

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
START_TIMEOUT_S = 90.0  # two cold JVMs on a shared two-core machine
STOP_TIMEOUT_S = 20.0
WORKER_MEMORY_DEFAULT = "2g"
REGISTERED_LINE = "Successfully registered with master"


class SparkClusterError(KafkaError):
    """A standalone daemon did not start, or stopped, in time."""


def spark_class() -> Path:
    """pyspark's own ``bin/spark-class`` launcher."""
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-class"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


class StandaloneCluster:
    """One master and one worker with ``cores`` cores. Not thread-safe; use with ``with``."""

    def __init__(self, cores: int = 2, memory: str = WORKER_MEMORY_DEFAULT, port: int | None = None) -> None:
        self.cores = cores
        self.memory = memory
        self.port = port or free_port()
        self.url = f"spark://{LOOPBACK}:{self.port}"
        self.scratch = Path(tempfile.mkdtemp(prefix="kafkalab-spark-cluster-"))
        self._daemons: list[subprocess.Popen[bytes]] = []

    def start(self) -> StandaloneCluster:
        prepare_environment()
        env = dict(os.environ, SPARK_LOG_DIR=str(self.scratch), SPARK_WORKER_DIR=str(self.scratch / "work"),
                   SPARK_LOCAL_DIRS=str(self.scratch / "local"), SPARK_NO_DAEMONIZE="1")
        common = ["--host", LOOPBACK, "--webui-port", str(free_port())]
        self._launch("master", [MASTER_CLASS, *common, "--port", str(self.port)], env)
        self._wait_for_port()
        worker_log = self._launch("worker", [WORKER_CLASS, *common, "--cores", str(self.cores), "--memory",
                                             self.memory, "--work-dir", str(self.scratch / "work"), self.url], env)
        self._wait_for_line(worker_log, REGISTERED_LINE)
        return self

    def _launch(self, name: str, arguments: list[str], env: dict[str, str]) -> Path:
        log = self.scratch / f"{name}.log"
        with open(log, "wb") as out:
            self._daemons.append(subprocess.Popen([str(spark_class()), *arguments], stdout=out,
                                                  stderr=subprocess.STDOUT, env=env))
        return log

    def _wait_for_port(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            self._check_alive()
            try:
                socket.create_connection((LOOPBACK, self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.2)
        raise SparkClusterError(f"the Spark master did not listen on {self.url} within {START_TIMEOUT_S} s")

    def _wait_for_line(self, log: Path, line: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            self._check_alive()
            if line in log.read_text(errors="replace"):
                return
            time.sleep(0.2)
        raise SparkClusterError(f"the Spark worker did not register within {START_TIMEOUT_S} s; see {log}")

    def _check_alive(self) -> None:
        for daemon in self._daemons:
            if daemon.poll() is not None:
                logs = "\n".join(p.read_text(errors="replace")[-2000:] for p in self.scratch.glob("*.log"))
                raise SparkClusterError(f"a Spark daemon exited with {daemon.returncode}:\n{logs}")

    def stop(self) -> None:
        """Stop the worker, then the master (SIGTERM, then SIGKILL), and remove the scratch."""
        for daemon in reversed(self._daemons):
            daemon.terminate()
            try:
                daemon.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()
        self._daemons.clear()
        shutil.rmtree(self.scratch, ignore_errors=True)

    def __enter__(self) -> StandaloneCluster:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkalab.spark.standalone",
                                     description="Start a Spark standalone master and worker on 127.0.0.1.")
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--memory", default=WORKER_MEMORY_DEFAULT)
    parser.add_argument("--port", type=int, default=7077)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _stop_on_signal)  # `kill` stops both daemons too, as Ctrl-C does
    with StandaloneCluster(args.cores, args.memory, args.port) as cluster:
        print(f"Spark master at {cluster.url} with one worker of {args.cores} cores; Ctrl-C stops both.", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


def _stop_on_signal(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["SparkClusterError", "StandaloneCluster", "spark_class"]
