"""``kafkalab server-start``: run a broker that real Kafka clients can use (kafka-server-start.sh).

    kafkalab server-start --data-dir /tmp/kl --port 0
    kafkalab server-start config/server.properties --override num.partitions=3

The listener is 127.0.0.1:9092 by default. Any non-loopback address -- from ``--host`` or from
``listeners`` in the properties -- is refused unless ``--allow-remote`` is given: the broker has
no authentication, so exposing it must be a deliberate choice. Once listening, one line is
printed on stdout and flushed, for scripts and test fixtures to parse::

    kafkalab server started on 127.0.0.1:40123

The data directory is ``--data-dir``, else the first entry of ``log.dirs`` (or ``log.dir``),
else ``./kafkalab-data``.

A KRaft ``server.properties`` (one that sets ``process.roles``) is read as Kafka reads it; see
:mod:`kafkalab.config.kraft`. Its directories must have been formatted first (``kafkalab
storage format``); the node takes its cluster id from ``meta.properties`` and refuses
directories that are unformatted or formatted for another node, with Kafka's message. The
quorum has one voter (``controller.quorum.voters``, or the voter ``storage format
--standalone`` wrote). By ``process.roles``, the node is:

* ``broker,controller`` -- a combined node, the quorum's voter and its cluster's only broker. It
  binds every listener in ``listeners`` and advertises the one named by
  ``inter.broker.listener.name``;
* ``controller`` -- a dedicated controller (:mod:`kafkalab.server.controller_process`): it
  listens on its controller listener only and keeps ``__cluster_metadata`` in
  ``metadata.log.dir``;
* ``broker`` -- one broker of a cluster: it registers with the voter, fetches the metadata log
  from it, forwards admin requests to it, and replicates from and to the other brokers, which
  it finds where they registered.

A listener without a host (``PLAINTEXT://:9092``) binds 127.0.0.1 here, where Kafka binds every
address. A broker keeps its partitions (and a combined node ``__cluster_metadata-0``) in the first
of ``log.dirs``; ``--data-dir`` belongs to the single-node form only. SIGTERM and SIGINT shut down
cleanly: a cluster's broker first lets the controller move its leaderships away (a controlled
shutdown), then logs are flushed and checkpoints written, so a restart serves everything
acknowledged.

The process always ends. A shutdown that has not finished ``SHUTDOWN_TIMEOUT_S`` after it began
(a disk that stopped answering), or a second SIGTERM/SIGINT, ends it at once with status 1. If
every log directory fails (deleted or unwritable under the running server) the server stops
itself; the exit status is then 1 and the last line on stderr names the directories::

    kafkalab server-start: Shutdown broker because all log dirs in /tmp/kl have failed (...)
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import random
import signal
import sys
import threading
from types import FrameType
from pathlib import Path

from kafkalab.broker.settings import parse_listener
from kafkalab.broker.storage_format import initialize_log_dirs
from kafkalab.clock import SystemClock
from kafkalab.config.kraft import KRaftConfig, kraft_config
from kafkalab.controller.describe_quorum import QuorumNode
from kafkalab.config.store import read_properties
from kafkalab.errors import ConfigError, KafkaError
from kafkalab.metadata.dynamic_voters import read_bootstrap_voters
from kafkalab.server import KafkaServer
from kafkalab.server.controller_process import ControllerProcess

DEFAULT_DATA_DIR = "kafkalab-data"
STARTED_LINE = "kafkalab server started on {host}:{port}"
# A clean shutdown fsyncs what is unflushed and writes three small checkpoint files: well under a
# second on a working disk. Ten seconds is generous for a slow one yet ends a stuck shutdown
# before an operator's patience (and systemd's 90 s TimeoutStopSec) runs out.
SHUTDOWN_TIMEOUT_S = 10.0
EXIT_FAILURE = 1
# The id under which a broker addresses the controller it found through
# controller.quorum.bootstrap.servers, whose node id it does not know (Kafka uses negative ids
# for bootstrap connections too).
BOOTSTRAP_CONTROLLER_ID = -2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", nargs="?", help="a server.properties file")
    parser.add_argument("--data-dir", help="the log directory (default: log.dirs, else ./kafkalab-data)")
    parser.add_argument("--host", help="address to listen on (default: from listeners, else 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port to listen on; 0 picks a free one (default 9092)")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="a property that overrides server.properties (repeatable)")
    parser.add_argument("--allow-remote", action="store_true",
                        help="allow listening on a non-loopback address (no authentication!)")
    parser.add_argument("--log-level", default="WARNING", help="Python logging level for stderr")


def _properties(args: argparse.Namespace) -> dict[str, str]:
    properties = read_properties(Path(args.config)) if args.config else {}
    for item in args.override:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SystemExit(f"--override expects KEY=VALUE, got {item!r}")
        properties[key.strip()] = value.strip()
    return properties


def _listen_address(args: argparse.Namespace, properties: dict[str, str]) -> tuple[str, int]:
    host, port = "127.0.0.1", 9092
    if properties.get("listeners"):
        host, port = parse_listener(properties["listeners"].split(",")[0])
        host = host or "127.0.0.1"
    return (args.host or host), (args.port if args.port is not None else port)


def _data_dir(args: argparse.Namespace, properties: dict[str, str]) -> Path:
    if args.data_dir:
        return Path(args.data_dir)
    configured = properties.get("log.dirs") or properties.get("log.dir")
    return Path(configured.split(",")[0].strip()) if configured else Path(DEFAULT_DATA_DIR)


def _kraft_server(args: argparse.Namespace, properties: dict[str, str]) -> KafkaServer | ControllerProcess:
    """A KRaft node from its server.properties, over directories ``storage format`` wrote."""
    config = kraft_config(properties)
    if args.data_dir:
        raise ConfigError("--data-dir is for the single-node form; a KRaft server.properties names its "
                          "directories in log.dirs")
    voters = _voters(config)
    if config.process_roles == {"controller"}:
        return _controller_process(args, config, properties, voters)
    if config.metadata_log_dir != config.log_dirs[0]:
        raise ConfigError(f"kafkalab keeps __cluster_metadata-0 in the first of log.dirs ({config.log_dirs[0]}); "
                          f"metadata.log.dir={config.metadata_log_dir} must be unset or equal to it")
    if config.process_roles == {"broker", "controller"} and set(voters) != {config.node_id}:
        raise ConfigError("kafkalab runs a combined node (process.roles=broker,controller) as a cluster of its "
                          f"own, the only voter of its quorum; got voters {sorted(voters)}. For several brokers, "
                          "run a controller node (process.roles=controller) and broker nodes (process.roles=broker)")
    identity = initialize_log_dirs(config, random.Random(), SystemClock().milliseconds())
    main = next((e for e in config.broker_listeners if e.listener_name == config.inter_broker_listener_name),
                config.broker_listeners[0])
    advertised = config.inter_broker_endpoint or config.advertised_broker_listeners[0]
    host = args.host or main.host or "127.0.0.1"
    port = args.port if args.port is not None else main.port
    # --port moves the broker listener, so the advertised port follows it (0: the bound port).
    advertised_port = 0 if args.port is not None else advertised.port
    if config.process_roles == {"broker"}:
        [(controller_id, controller_address)] = voters.items()
        return KafkaServer(Path(config.log_dirs[0]), properties, host=host, port=port,
                           allow_remote=args.allow_remote, cluster_id=identity.cluster_id,
                           advertised=(advertised.host, advertised_port),
                           controller_address=(controller_id, controller_address))
    extra = [(e.host or "127.0.0.1", e.port) for e in config.listeners if e != main]
    return KafkaServer(Path(config.log_dirs[0]), properties, host=host, port=port, allow_remote=args.allow_remote,
                       cluster_id=identity.cluster_id, advertised=(advertised.host, advertised_port),
                       extra_listeners=extra)


def _voters(config: KRaftConfig) -> dict[int, tuple[str, int]]:
    """The controller quorum: ``controller.quorum.voters``, else the voters ``storage format``
    wrote into the bootstrap snapshot (KIP-853). kafkalab's processes run a one-voter quorum."""
    voters = dict(config.voters)
    if not voters:
        initial = read_bootstrap_voters(Path(config.metadata_log_dir)) if config.is_controller else None
        if initial is not None:
            voters = {node: _controller_endpoint(config) for node in initial}
        elif len(config.bootstrap_servers) == 1 and not config.is_controller:
            voters = {BOOTSTRAP_CONTROLLER_ID: config.bootstrap_servers[0]}
    if len(voters) != 1 or (config.is_controller and set(voters) != {config.node_id}):
        raise ConfigError("kafkalab's process runtime runs a single-voter controller quorum: the voters "
                          "(controller.quorum.voters, controller.quorum.bootstrap.servers, or storage format's "
                          "--standalone/--initial-controllers) must name one controller"
                          + (f", this node {config.node_id}" if config.is_controller else "")
                          + f"; got {sorted(voters) or 'none'}")
    return voters


def _controller_endpoint(config: KRaftConfig) -> tuple[str, int]:
    endpoint = config.advertised_controller_listeners[0]
    return (endpoint.host or "127.0.0.1", endpoint.port)


def _controller_process(args: argparse.Namespace, config: KRaftConfig, properties: dict[str, str],
                        voters: dict[int, tuple[str, int]]) -> ControllerProcess:
    identity = initialize_log_dirs(config, random.Random(), SystemClock().milliseconds())
    listener = config.controller_listeners[0]
    host = args.host or listener.host or "127.0.0.1"
    port = args.port if args.port is not None else listener.port
    advertised_host, advertised_port = _controller_endpoint(config)
    return ControllerProcess(Path(config.metadata_log_dir), identity.cluster_id, properties, host=host, port=port,
                             allow_remote=args.allow_remote,
                             node=QuorumNode(config.node_id, advertised_host, advertised_port))


def _halt(reason: str) -> None:
    """End the process now, without the rest of the shutdown (Kafka's ``Exit.halt``)."""
    print(f"kafkalab server-start: {reason}; exiting without a clean shutdown", file=sys.stderr, flush=True)
    os._exit(EXIT_FAILURE)


class _ShutdownGuard:
    """Makes every shutdown end: a watchdog thread halts the process ``SHUTDOWN_TIMEOUT_S``
    after the shutdown began, and a second signal halts it at once. Owned by ``_serve``."""

    def __init__(self, server: KafkaServer | ControllerProcess, loop: asyncio.AbstractEventLoop) -> None:
        self._server = server
        self._loop = loop
        self._signals: list[int] = []
        self._watchdog: threading.Timer | None = None
        self._stop_tasks: list[asyncio.Future[None]] = []

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        # A plain signal handler, not loop.add_signal_handler: it runs even while the event
        # loop is stuck in a system call, so the watchdog starts whatever the loop is doing.
        if self._signals:
            _halt(f"a second signal ({signal.Signals(signum).name}) during shutdown")
        self._signals.append(signum)
        self.arm()
        self._loop.call_soon_threadsafe(self._start_stop)

    def _start_stop(self) -> None:
        self._stop_tasks.append(asyncio.ensure_future(self._server.stop()))

    def arm(self) -> None:
        if self._watchdog is None:
            self._watchdog = threading.Timer(SHUTDOWN_TIMEOUT_S, _halt, args=(
                f"the shutdown did not finish within SHUTDOWN_TIMEOUT_S={SHUTDOWN_TIMEOUT_S:g} s",))
            self._watchdog.daemon = True
            self._watchdog.start()

    def disarm(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()


async def _serve(server: KafkaServer | ControllerProcess) -> None:
    host, port = await server.start()
    print(STARTED_LINE.format(host=host, port=port), flush=True)
    guard = _ShutdownGuard(server, asyncio.get_running_loop())
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, guard.on_signal)
    await server.stopping.wait()  # a signal, or the server stopping itself (failed log dirs)
    guard.arm()
    try:
        await server.serve_until_stopped()
    finally:
        guard.disarm()


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    properties = _properties(args)
    try:
        if properties.get("process.roles"):
            server: KafkaServer | ControllerProcess = _kraft_server(args, properties)
        else:
            host, port = _listen_address(args, properties)
            server = KafkaServer(_data_dir(args, properties), properties, host=host, port=port,
                                 allow_remote=args.allow_remote)
        asyncio.run(_serve(server))
    except (KafkaError, OSError) as error:
        print(f"kafkalab server-start: {error}", file=sys.stderr)
        return EXIT_FAILURE
    if server.failure is not None:
        print(f"kafkalab server-start: {server.failure}", file=sys.stderr, flush=True)
        return EXIT_FAILURE
    return 0
