"""A KRaft cluster of real processes that a program drives: the tests', benchmarks' and book's
``cluster-start``.

:class:`ProcessCluster` writes and formats the nodes' directories exactly as ``kafkalab
cluster-start --nodes N`` does (:func:`~kafkalab.tools.cluster_start.plan` and
:func:`~kafkalab.tools.cluster_start.prepare`), adds the caller's properties to every
``server.properties`` (what a learner would edit in), and then gives each node's process to the
caller: start one, SIGKILL one, restart it, stop them all -- brokers first, so that each
broker's controlled shutdown still has a controller to talk to.

Worked example::

    with ProcessCluster(tmp, brokers=3, properties={"min.insync.replicas": "2"}) as cluster:
        cluster.start_all()              # node 4, the controller, first; then brokers 1-3
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
        ...
        cluster.kill(2)                  # kill -9
        cluster.start(2)                 # recovery, registration, catch-up
"""

from __future__ import annotations

import random
import signal
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from kafkalab.client.connection import bootstrap
from kafkalab.client.launcher import STOP_TIMEOUT_S, ServerProcess, start_server
from kafkalab.errors import KafkaError
from kafkalab.tools.cluster_start import HOST, NodePlan, plan, prepare


REGISTERED_WAIT_S = 30.0  # Python start-ups and a heartbeat or two on a slow, shared machine
POLL_S = 0.1


class ProcessCluster:
    """Node processes of one cluster on this machine. Not thread-safe; owned by its caller."""

    def __init__(self, root: Path, *, brokers: int = 3, properties: Mapping[str, str] | None = None,
                 seed: int | None = None) -> None:
        self.plans = {n.node_id: n for n in plan(brokers, Path(root), 0)}
        prepare(list(self.plans.values()), random.Random(seed))
        if properties:
            for node in self.plans.values():
                with node.config_path.open("a", encoding="utf-8") as config:
                    config.writelines(f"{key}={value}\n" for key, value in properties.items())
        self.controller_id = next(n.node_id for n in self.plans.values() if "controller" in n.roles)
        self.processes: dict[int, ServerProcess] = {}

    @property
    def broker_ids(self) -> list[int]:
        return sorted(i for i, n in self.plans.items() if n.roles != "controller")

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{HOST}:{self.plans[i].port}" for i in self.broker_ids)

    def node(self, node_id: int) -> NodePlan:
        return self.plans[node_id]

    def start(self, node_id: int) -> ServerProcess:
        """Start one node's ``server-start`` and wait until it listens."""
        node = self.plans[node_id]
        process = start_server(node.log_dir, config=node.config_path, port=None,
                               log_path=node.directory / "server.log")
        self.processes[node_id] = process
        return process

    def start_all(self, wait_s: float = REGISTERED_WAIT_S) -> None:
        """The controller first, then every broker; returns once Metadata lists every broker
        (each registered and unfenced), so a topic created next can use them all."""
        for node_id in sorted(self.plans, key=lambda i: (self.plans[i].roles != "controller", i)):
            self.start(node_id)
        self.wait_for_brokers(self.broker_ids, wait_s)

    def wait_for_brokers(self, broker_ids: list[int], wait_s: float = REGISTERED_WAIT_S) -> None:
        """Until a Metadata answer lists exactly ``broker_ids``; raises TimeoutError."""
        deadline, listed = time.monotonic() + wait_s, None
        while time.monotonic() < deadline:
            try:
                with bootstrap(self.bootstrap) as conn:
                    listed = sorted(b.node_id for b in conn.metadata([]).brokers)
            except KafkaError:
                listed = None
            if listed == sorted(broker_ids):
                return
            time.sleep(POLL_S)
        raise TimeoutError(f"brokers {sorted(broker_ids)} not all registered after {wait_s} s; Metadata lists {listed}")

    def kill(self, node_id: int) -> None:
        """SIGKILL: nothing flushed, no controlled shutdown; the sockets close."""
        process = self.processes.pop(node_id).process
        process.send_signal(signal.SIGKILL)
        process.wait(STOP_TIMEOUT_S)

    def stop(self, node_id: int) -> int:
        """SIGTERM and wait: a clean (for a broker, controlled) shutdown. Returns the status."""
        return self.processes.pop(node_id).stop()

    def stop_all(self) -> None:
        for node_id in sorted(self.processes, key=lambda i: (i == self.controller_id, i)):
            self.processes.pop(node_id).stop()

    def __enter__(self) -> ProcessCluster:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.stop_all()


__all__ = ["ProcessCluster"]
