"""The ``kafkalab`` console script: one entry point, one subcommand per Kafka script.

Each subcommand lives in its own module under ``kafkalab.tools`` and exposes two functions:

* ``add_arguments(parser: argparse.ArgumentParser) -> None`` -- declares the flags, spelled as
  Kafka's script spells them (``--files``, ``--print-data-log``, ``--bootstrap-server``);
* ``run(args: argparse.Namespace) -> int`` -- does the work and returns the exit status.

Modules are imported only when their subcommand runs, so ``kafkalab --help`` stays fast and a
tool that needs a heavy dependency does not slow the others down.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType

# subcommand -> (module under kafkalab.tools, one-line help, the Kafka script it mirrors)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "dump-log": ("dump_log", "Print the contents of log segment and index files (kafka-dump-log.sh)."),
    "gen-log": ("gen_log", "Write a large, reproducible topic through the storage engine (for the Spark labs)."),
    "configs": ("configs", "Describe and alter dynamic configs of topics, brokers, users, clients (kafka-configs.sh)."),
    "delete-records": ("delete_records", "Move partitions' log start offsets from a JSON file (kafka-delete-records.sh)."),
    "server-start": ("server_start", "Run a broker that real Kafka clients can use (kafka-server-start.sh)."),
    "storage": ("storage", "Make a cluster id; format a KRaft node's log directories (kafka-storage.sh)."),
    "cluster-start": ("cluster_start", "Format and start a KRaft cluster of kafkalab processes; Ctrl-C stops it."),
    "topics": ("topics", "Create, list, describe, alter and delete topics (kafka-topics.sh)."),
    "consumer-groups": ("consumer_groups", "List, describe, reset and delete consumer groups (kafka-consumer-groups.sh)."),
    "transactions": ("transactions", "List, describe and abort transactions (kafka-transactions.sh)."),
    "leader-election": ("leader_election", "Elect preferred or unclean partition leaders (kafka-leader-election.sh)."),
    "reassign-partitions": ("reassign_partitions", "Move partitions between brokers (kafka-reassign-partitions.sh)."),
    "metadata-quorum": ("metadata_quorum", "Describe the KRaft quorum of the metadata log (kafka-metadata-quorum.sh)."),
    "console-producer": ("console_producer", "Send lines from stdin as records (kafka-console-producer.sh)."),
    "console-consumer": ("console_consumer", "Print records of a partition to stdout (kafka-console-consumer.sh)."),
    "producer-perf-test": ("producer_perf_test", "Measure produce throughput and latency (kafka-producer-perf-test.sh)."),
    "consumer-perf-test": ("consumer_perf_test", "Measure fetch throughput of a topic (kafka-consumer-perf-test.sh)."),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kafkalab",
        description="kafkalab's tools. Each subcommand mirrors one of Kafka's scripts.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        subparsers.add_parser(name, help=help_text, description=help_text, add_help=False)
    return parser


def _load(module_name: str) -> ModuleType:
    return importlib.import_module(f"kafkalab.tools.{module_name}")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in SUBCOMMANDS:
        parser = build_parser()
        if not argv or argv[0] in ("-h", "--help"):
            parser.print_help()
            return 0
        parser.error(f"unknown command {argv[0]!r}; choose from {', '.join(SUBCOMMANDS)}")
    name = argv[0]
    module_name, help_text = SUBCOMMANDS[name]
    module = _load(module_name)
    parser = argparse.ArgumentParser(prog=f"kafkalab {name}", description=help_text)
    module.add_arguments(parser)
    args = parser.parse_args(argv[1:])
    try:
        return int(module.run(args))
    except BrokenPipeError:  # e.g. `kafkalab dump-log ... | head`
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
