"""``kafkalab cluster-start``: a KRaft cluster of real processes in one command, for a learner.

    kafkalab cluster-start --nodes 3 --data-dir /tmp/kl-cluster

does what a Kafka user does by hand, node by node:

1. writes ``<data-dir>/node-<id>/server.properties`` with Kafka's KRaft keys. ``--nodes 1`` is
   one combined node (``process.roles=broker,controller``), its own quorum. With more nodes,
   nodes 1 .. N are brokers (``process.roles=broker``) and node N+1 is a dedicated controller
   (``process.roles=controller``), the quorum's only voter
   (``controller.quorum.voters=4@127.0.0.1:<controller port>``); brokers reach it through
   ``controller.listener.names=CONTROLLER``, register there and fetch ``__cluster_metadata``
   from it, and forward admin requests (CreateTopics and the like) to it;
2. formats every node's directory with one cluster id (``storage random-uuid``, then
   ``storage format -t``), unless an earlier run did: a second ``cluster-start`` on the same
   directory restarts the same cluster, with its data;
3. starts one ``kafkalab server-start <server.properties>`` process per node -- the controller
   first -- waits until each listens, and prints the bootstrap servers::

       kafkalab cluster started: bootstrap servers 127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094
       node 1 (broker) 127.0.0.1:9092, log /tmp/kl-cluster/node-1/server.log
       ...
       node 4 (controller) 127.0.0.1:9095, log /tmp/kl-cluster/node-4/server.log

4. waits; a node that exits (a learner's ``kill -9``) is reported and the others keep running.
   Ctrl-C or SIGTERM stops the brokers with SIGTERM (a controlled shutdown each, which needs
   the controller), then the controller; SIGKILL after ``STOP_TIMEOUT_S``.

Ports: brokers listen on ``--base-port``, ``--base-port + 1`` ...; the controller on the port after
the last broker's. ``--base-port 0`` lets the operating system choose free ports (tests).
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
HOST = "127.0.0.1"
POLL_S = 0.2  # how often the supervisor looks for nodes that exited


@dataclass(frozen=True, slots=True)
class NodePlan:
    """One node's identity, roles and addresses. Immutable."""

    node_id: int
    roles: str  # process.roles: "broker,controller", "broker" or "controller"
    port: int  # where it listens: the broker listener, or a controller's controller listener
    controller: tuple[int, int]  # the quorum's single voter: (node id, controller port)
    directory: Path

    @property
    def config_path(self) -> Path:
        return self.directory / "server.properties"

    @property
    def log_dir(self) -> Path:
        return self.directory / "data"

    def properties(self) -> str:
        """The node's server.properties, in Kafka's keys."""
        controller_id, controller_port = self.controller
        lines = [f"# kafkalab cluster-start: node {self.node_id}", f"process.roles={self.roles}",
                 f"node.id={self.node_id}"]
        if self.roles == "controller":
            lines.append(f"listeners=CONTROLLER://{HOST}:{self.port}")
        else:
            combined = f",CONTROLLER://{HOST}:{controller_port}" if self.roles == "broker,controller" else ""
            lines += [f"listeners=PLAINTEXT://{HOST}:{self.port}{combined}",
                      f"advertised.listeners=PLAINTEXT://{HOST}:{self.port}",
                      "inter.broker.listener.name=PLAINTEXT"]
        return "\n".join([
            *lines,
            "controller.listener.names=CONTROLLER",
            f"controller.quorum.voters={controller_id}@{HOST}:{controller_port}",
            f"log.dirs={self.log_dir}",
            "",
        ])


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=int, default=1,
                        help=f"how many brokers (1..{NODES_MAX}); above 1, a controller node is added")
    parser.add_argument("--data-dir", required=True, help="one directory for every node's config, data and log")
    parser.add_argument("--base-port", type=int, default=9092,
                        help="the first broker's port; the others follow (0: free ports)")


def plan(nodes: int, data_dir: Path, base_port: int) -> list[NodePlan]:
    """Every node's plan, brokers first; ports fixed from ``base_port``, or free ones when it
    is 0. A directory an earlier run wrote keeps its ports, so clients' bootstrap servers stay
    valid."""
    earlier = _earlier_ports(data_dir, nodes)
    if earlier is not None:
        broker_ports, controller_port = earlier
    elif base_port == 0:
        broker_ports, controller_port = [unused_port(HOST) for _ in range(nodes)], unused_port(HOST)
    else:
        broker_ports, controller_port = [base_port + i for i in range(nodes)], base_port + nodes
    if nodes == 1:
        return [NodePlan(1, "broker,controller", broker_ports[0], (1, controller_port), data_dir / "node-1")]
    controller_id = nodes + 1
    brokers = [NodePlan(i + 1, "broker", broker_ports[i], (controller_id, controller_port), data_dir / f"node-{i + 1}")
               for i in range(nodes)]
    return [*brokers, NodePlan(controller_id, "controller", controller_port, (controller_id, controller_port),
                               data_dir / f"node-{controller_id}")]


def _earlier_ports(data_dir: Path, nodes: int) -> tuple[list[int], int] | None:
    paths = [data_dir / f"node-{i + 1}" / "server.properties" for i in range(nodes)]
    if nodes > 1:
        paths.append(data_dir / f"node-{nodes + 1}" / "server.properties")
    if not all(p.exists() for p in paths):
        return None
    configs = [kraft_config(read_properties(p)) for p in paths[:nodes]]
    [(_, (_, controller_port))] = configs[0].voters.items()
    return [c.broker_listeners[0].port for c in configs], controller_port


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
        self.controllers: set[int] = set()  # dedicated controller nodes: stopped last
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
        """Brokers first, each with a controlled shutdown the controller must answer; then the
        controller."""
        brokers = {n: s for n, s in self.nodes.items() if n not in self.controllers}
        for group in (brokers, {n: self.nodes[n] for n in self.controllers if n in self.nodes}):
            for server in group.values():
                if server.process.poll() is None:
                    server.process.send_signal(signal.SIGTERM)
            for server in group.values():
                server.stop()  # waits; SIGKILL after its timeout


def run(args: argparse.Namespace) -> int:
    if not 1 <= args.nodes <= NODES_MAX:
        print(f"kafkalab cluster-start: --nodes must be 1..{NODES_MAX}, got {args.nodes}", file=sys.stderr)
        return EXIT_FAILURE
    data_dir = Path(args.data_dir).resolve()
    try:
        earlier = earlier_nodes(data_dir)
    except KafkaError as error:
        print(f"kafkalab cluster-start: {error}", file=sys.stderr)
        return EXIT_FAILURE
    if earlier is not None and earlier != args.nodes:
        print(f"kafkalab cluster-start: {data_dir} holds a cluster of {earlier} broker(s); start it with "
              f"--nodes {earlier}, or use another --data-dir", file=sys.stderr)
        return EXIT_FAILURE
    supervisor = Supervisor()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, supervisor.on_signal)
    try:
        plans = plan(args.nodes, data_dir, args.base_port)
        prepare(plans, random.Random())  # ids must differ between clusters, as Kafka's do
        supervisor.controllers = {n.node_id for n in plans if n.roles == "controller"}
        for node in sorted(plans, key=lambda n: n.roles != "controller"):  # the controller first
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


def earlier_nodes(data_dir: Path) -> int | None:
    """How many brokers the cluster an earlier run wrote in ``data_dir`` has, if any."""
    first = data_dir / "node-1" / "server.properties"
    if not first.exists():
        return None
    config = kraft_config(read_properties(first))
    if config.is_controller:
        return 1
    [controller_id] = config.voters
    return controller_id - 1


def _announce(plans: list[NodePlan], supervisor: Supervisor) -> None:
    brokers = [n for n in plans if n.roles != "controller"]
    bootstrap = ",".join(supervisor.nodes[n.node_id].bootstrap for n in brokers)
    print(f"kafkalab cluster started: bootstrap servers {bootstrap}", flush=True)
    for node in plans:
        controller = f", controller {HOST}:{node.controller[1]}" if node.roles == "broker,controller" else ""
        print(f"node {node.node_id} ({node.roles}) {supervisor.nodes[node.node_id].bootstrap}{controller}, "
              f"log {node.directory / 'server.log'}", flush=True)
