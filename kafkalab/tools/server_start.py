"""``kafkalab server-start``: run a broker that real Kafka clients can use (kafka-server-start.sh).

    kafkalab server-start --data-dir /tmp/kl --port 0
    kafkalab server-start config/server.properties --override num.partitions=3

The listener is 127.0.0.1:9092 by default. Any non-loopback address -- from ``--host`` or from
``listeners`` in the properties -- is refused unless ``--allow-remote`` is given: the broker has
no authentication, so exposing it must be a deliberate choice. Once listening, one line is
printed on stdout and flushed, for scripts and test fixtures to parse::

    kafkalab server started on 127.0.0.1:40123

The data directory is ``--data-dir``, else the first entry of ``log.dirs`` (or ``log.dir``),
else ``./kafkalab-data``. SIGTERM and SIGINT shut down cleanly: logs are flushed and checkpoints
written, so a restart serves everything acknowledged.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from pathlib import Path

from kafkalab.broker.settings import parse_listener
from kafkalab.config.store import read_properties
from kafkalab.errors import KafkaError
from kafkalab.server import KafkaServer

DEFAULT_DATA_DIR = "kafkalab-data"
STARTED_LINE = "kafkalab server started on {host}:{port}"


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


async def _serve(server: KafkaServer) -> None:
    host, port = await server.start()
    print(STARTED_LINE.format(host=host, port=port), flush=True)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, lambda: asyncio.ensure_future(server.stop()))
    await server.serve_until_stopped()


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    properties = _properties(args)
    host, port = _listen_address(args, properties)
    try:
        server = KafkaServer(_data_dir(args, properties), properties, host=host, port=port,
                             allow_remote=args.allow_remote)
        asyncio.run(_serve(server))
    except (KafkaError, OSError) as error:
        print(f"kafkalab server-start: {error}", file=sys.stderr)
        return 1
    return 0
