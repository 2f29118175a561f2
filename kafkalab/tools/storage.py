"""``kafkalab storage``: prepare a KRaft node's directories before its first start (kafka-storage.sh).

    kafkalab storage random-uuid
    kafkalab storage format -t MkU3OEVBNTcwNTJENDM2Qk -c config/server.properties
    kafkalab storage info -c config/server.properties

``random-uuid`` prints a new cluster id (Kafka's ``Uuid.randomUuid``: 22 characters of URL-safe
base64, never starting with ``-``). ``format`` writes ``meta.properties`` and
``bootstrap.checkpoint`` into every directory of ``log.dirs`` and ``metadata.log.dir`` and, with
``--standalone`` or ``--initial-controllers``, the first voters of a dynamic quorum; see
:mod:`kafkalab.broker.storage_format`. Kafka 4's quickstart works as printed::

    kafkalab storage format --standalone -t "$(kafkalab storage random-uuid)" -c server.properties Errors go to stderr with exit status 1, as Kafka's tool.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

from kafkalab.broker.storage_format import FormatOptions, format_storage, storage_info
from kafkalab.clock import SystemClock
from kafkalab.config.kraft import kraft_config
from kafkalab.config.store import read_properties
from kafkalab.errors import KafkaError
from kafkalab.storage.partition_metadata import random_topic_id

EXIT_FAILURE = 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="storage_command", metavar="COMMAND", required=True)
    commands.add_parser("random-uuid", help="Print a random UUID.")
    info = commands.add_parser("info", help="Get information about the Kafka log directories on this node.")
    info.add_argument("--config", "-c", required=True, help="The Kafka configuration file to use.")
    fmt = commands.add_parser("format", help="Format the Kafka log directories on this node.")
    fmt.add_argument("--config", "-c", required=True, help="The Kafka configuration file to use.")
    fmt.add_argument("--cluster-id", "-t", required=True, help="The cluster ID to use.")
    fmt.add_argument("--ignore-formatted", "-g", action="store_true",
                     help="Skip directories already formatted instead of failing.")
    quorum = fmt.add_mutually_exclusive_group()
    quorum.add_argument("--standalone", "-s", action="store_true",
                        help="Initialize a controller as a single-node dynamic quorum (KIP-853).")
    quorum.add_argument("--no-initial-controllers", "-N", action="store_true",
                        help="Initialize a server without a dynamic quorum topology.")
    quorum.add_argument("--initial-controllers", "-I",
                        help="id@host:port:directory,... : the first voters of a dynamic quorum (KIP-853).")


def run(args: argparse.Namespace) -> int:
    rng = random.Random()  # cluster and directory ids must differ between runs, as Kafka's do
    if args.storage_command == "random-uuid":
        print(random_topic_id(rng))
        return 0
    if args.storage_command == "info":
        return _info(Path(args.config))
    options = FormatOptions(args.cluster_id, args.ignore_formatted, args.standalone,
                            args.initial_controllers, args.no_initial_controllers)
    try:
        config = kraft_config(read_properties(Path(args.config)))
        lines = format_storage(config, options, rng, SystemClock().milliseconds())
    except (KafkaError, OSError) as error:
        print(error, file=sys.stderr)
        return EXIT_FAILURE
    for line in lines:
        print(line)
    return 0


def _info(config_path: Path) -> int:
    try:
        lines, status = storage_info(kraft_config(read_properties(config_path)))
    except (KafkaError, OSError) as error:
        print(error, file=sys.stderr)
        return EXIT_FAILURE
    for line in lines:
        print(line)
    return status
