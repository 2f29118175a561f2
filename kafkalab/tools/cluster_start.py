"""``kafkalab cluster-start``: a KRaft cluster of real processes in one command, for a learner.

    kafkalab cluster-start --nodes 1 --data-dir /tmp/kl-cluster

does what a Kafka user does by hand, node by node:

1. writes ``<data-dir>/node-<id>/server.properties`` with Kafka's KRaft keys -- node 1 is a
   combined node (``process.roles=broker,controller``) and the only voter
   (``controller.quorum.voters=1@127.0.0.1:<controller port>``); nodes 2, 3 ... are brokers that
   reach it through ``controller.listener.names=CONTROLLER``;
2. formats every node's directory with one cluster id (``storage random-uuid``, then
   ``storage format -t``), unless an earlier run did: a second ``cluster-start`` on the same
   directory restarts the same cluster, with its data;
3. starts one ``kafkalab server-start <server.properties>`` process per node, waits until each
   listens, and prints the bootstrap servers::

       kafkalab cluster started: bootstrap servers 127.0.0.1:9092
       node 1 (broker,controller) 127.0.0.1:9092, controller 127.0.0.1:9093, log /tmp/kl-cluster/node-1/server.log

4. waits; a node that exits (a learner's ``kill -9``) is reported and the others keep running.
   Ctrl-C or SIGTERM stops every node with SIGTERM (a clean shutdown each), SIGKILL after
   ``STOP_TIMEOUT_S``.

Ports: brokers listen on ``--base-port``, ``--base-port + 1`` ...; the controller on the port after
the last broker's. ``--base-port 0`` lets the operating system choose free ports (tests).

Brokers already register, heartbeat, propose ISR changes and fetch ``__cluster_metadata`` over
TCP (:mod:`kafkalab.server.controller_server`, :mod:`kafkalab.server.peer_driver`). A broker in
a process of its own also needs the controller for what it still asks in process -- creating
topics, allocating producer ids -- and the controller a metadata log on disk; until then
``--nodes`` above 1 is refused rather than starting nodes that would each be a cluster of their
own.
"""

from __future__ import annotations

import argparse
import random
import signal
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from kafkalab.broker.storage_format import FormatOptions, format_storage
from kafkalab.client.launcher import ServerProcess, ServerStartError, start_server, unused_port
from kafkalab.clock import SystemClock
from kafkalab.config.kraft import kraft_config
from kafkalab.config.store import read_properties
from kafkalab.errors import KafkaError
from kafkalab.storage import meta_properties
from kafkalab.storage.partition_metadata import random_topic_id

EXIT_FAILURE = 1
NODES_MAX = 9  # a teaching cluster; each node is a Python process on the learner's machine
NODES_SUPPORTED = 1  # nodes a cluster of processes can have until brokers register over the wire
HOST = "127.0.0.1"
POLL_S = 0.2  # how often the supervisor looks for nodes that exited


@dataclass(frozen=True, slots=True)
class NodePlan:
    """One node's identity and addresses. Immutable."""

    node_id: int
    broker_port: int
    controller_port: int  # the quorum's single voter's port (node 1's)
    directory: Path

    @property
    def combined(self) -> bool:
        return self.node_id == 1

    @property
    def config_path(self) -> Path:
        return self.directory / "server.properties"

    @property
    def log_dir(self) -> Path:
        return self.directory / "data"

    def properties(self) -> str:
        """The node's server.properties, in Kafka's keys."""
        listeners = f"PLAINTEXT://{HOST}:{self.broker_port}"
        if self.combined:
            listeners += f",CONTROLLER://{HOST}:{self.controller_port}"
        return "\n".join([
            f"# kafkalab cluster-start: node {self.node_id}",
            f"process.roles={'broker,controller' if self.combined else 'broker'}",
            f"node.id={self.node_id}",
            f"listeners={listeners}",
            f"advertised.listeners=PLAINTEXT://{HOST}:{self.broker_port}",
            "controller.listener.names=CONTROLLER",
            "inter.broker.listener.name=PLAINTEXT",
            f"controller.quorum.voters=1@{HOST}:{self.controller_port}",
            f"log.dirs={self.log_dir}",
            "",
        ])


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=int, default=1, help=f"how many nodes (1..{NODES_MAX})")
    parser.add_argument("--data-dir", required=True, help="one directory for every node's config, data and log")
    parser.add_argument("--base-port", type=int, default=9092,
                        help="the first broker's port; the others follow (0: free ports)")


def plan(nodes: int, data_dir: Path, base_port: int) -> list[NodePlan]:
    """Every node's plan; ports fixed from ``base_port``, or free ones when it is 0. A directory
    an earlier run wrote keeps its ports, so clients' bootstrap servers stay valid."""
    earlier = _earlier_ports(data_dir, nodes)
    if earlier is not None:
        broker_ports, controller_port = earlier
    elif base_port == 0:
        broker_ports, controller_port = [unused_port(HOST) for _ in range(nodes)], unused_port(HOST)
    else:
        broker_ports, controller_port = [base_port + i for i in range(nodes)], base_port + nodes
    return [NodePlan(i + 1, broker_ports[i], controller_port, data_dir / f"node-{i + 1}") for i in range(nodes)]


def _earlier_ports(data_dir: Path, nodes: int) -> tuple[list[int], int] | None:
    paths = [data_dir / f"node-{i + 1}" / "server.properties" for i in range(nodes)]
    if not all(p.exists() for p in paths):
        return None
    configs = [kraft_config(read_properties(p)) for p in paths]
    return [c.broker_listeners[0].port for c in configs], configs[0].voters[1][1]


def prepare(plans: list[NodePlan], rng: random.Random) -> str:
    """Write each node's server.properties and format its directory (``storage random-uuid``
    and ``storage format -t``); a node an earlier run formatted is left as it is. Returns the
    cluster id."""
    first = meta_properties.read(plans[0].log_dir)
    cluster_id = first.cluster_id if first is not None and first.cluster_id else random_topic_id(rng)
    for node in plans:
        node.directory.mkdir(parents=True, exist_ok=True)
        node.config_path.write_text(node.properties(), encoding="utf-8")
        if meta_properties.read(node.log_dir) is None:
            config = kraft_config(read_properties(node.config_path))
            for line in format_storage(config, FormatOptions(cluster_id), rng, SystemClock().milliseconds()):
                print(line, flush=True)
    return cluster_id


class Supervisor:
    """The running nodes: reports the ones that exit, stops all on request. Owned by ``run``."""

    def __init__(self) -> None:
        self.nodes: dict[int, ServerProcess] = {}
        self.reported: set[int] = set()
        self.stop_requested = threading.Event()

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.stop_requested.set()

    def watch(self) -> None:
        while not self.stop_requested.wait(POLL_S):
            for node_id, server in self.nodes.items():
                status = server.process.poll()
                if status is not None and node_id not in self.reported:
                    self.reported.add(node_id)
                    print(f"node {node_id} exited with status {status}; see {server.log_path}", flush=True)
            if len(self.reported) == len(self.nodes):
                return

    def stop_all(self) -> None:
        for server in self.nodes.values():
            if server.process.poll() is None:
                server.process.send_signal(signal.SIGTERM)
        for server in self.nodes.values():
            server.stop()  # waits; SIGKILL after its timeout


def run(args: argparse.Namespace) -> int:
    if not 1 <= args.nodes <= NODES_MAX:
        print(f"kafkalab cluster-start: --nodes must be 1..{NODES_MAX}, got {args.nodes}", file=sys.stderr)
        return EXIT_FAILURE
    if args.nodes > NODES_SUPPORTED:
        print(f"kafkalab cluster-start: --nodes {args.nodes} needs brokers that forward admin requests and "
              "producer-id allocation to the controller over the network, which kafkalab's processes do not do "
              "yet; run --nodes 1, or the simulated cluster (kafkalab.sim.SimCluster) for replication",
              file=sys.stderr)
        return EXIT_FAILURE
    supervisor = Supervisor()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, supervisor.on_signal)
    try:
        plans = plan(args.nodes, Path(args.data_dir).resolve(), args.base_port)
        prepare(plans, random.Random())  # ids must differ between clusters, as Kafka's do
        for node in plans:
            supervisor.nodes[node.node_id] = start_server(node.log_dir, config=node.config_path, port=None,
                                                          log_path=node.directory / "server.log")
    except (KafkaError, ServerStartError, OSError) as error:
        print(f"kafkalab cluster-start: {error}", file=sys.stderr)
        supervisor.stop_all()
        return EXIT_FAILURE
    _announce(plans, supervisor)
    supervisor.watch()
    supervisor.stop_all()
    print("kafkalab cluster stopped", flush=True)
    return 0


def _announce(plans: list[NodePlan], supervisor: Supervisor) -> None:
    bootstrap = ",".join(supervisor.nodes[n.node_id].bootstrap for n in plans)
    print(f"kafkalab cluster started: bootstrap servers {bootstrap}", flush=True)
    for node in plans:
        roles = "broker,controller" if node.combined else "broker"
        controller = f", controller {HOST}:{node.controller_port}" if node.combined else ""
        print(f"node {node.node_id} ({roles}) {supervisor.nodes[node.node_id].bootstrap}{controller}, "
              f"log {node.directory / 'server.log'}", flush=True)
