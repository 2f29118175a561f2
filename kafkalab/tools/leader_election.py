"""``kafkalab leader-election``: elect preferred or unclean leaders, like ``kafka-leader-election.sh``.

One ElectLeaders request goes to a running broker, which hands it to the controller; the answer
is printed in the lines Kafka's ``LeaderElectionCommand`` prints::

    $ kafkalab leader-election --bootstrap-server localhost:9092 --election-type PREFERRED --all-topic-partitions
    Successfully completed leader election (PREFERRED) for partitions orders-0, orders-2
    Valid replica already elected for partitions orders-1

(``--all-topic-partitions`` leaves already-led partitions out of the broker's answer, so the
second line appears only when partitions are named.) A partition that could not be elected
prints ``Error completing leader election (PREFERRED) for partition: orders-0:
org.apache.kafka.common.errors.PreferredLeaderNotAvailableException: The preferred leader was
not available.``, then ``1 replica(s) could not be elected`` on stderr, and the exit status is 1.
Partitions come from ``--topic`` with ``--partition``, ``--all-topic-partitions``, or
``--path-to-json-file`` in Kafka's format ``{"partitions": [{"topic": "t", "partition": 0}]}``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, TextIO

from kafkalab.client.connection import bootstrap
from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.messages.elect_leaders import PREFERRED, UNCLEAN

ELECTION_TYPES = {"PREFERRED": PREFERRED, "UNCLEAN": UNCLEAN}
ELECTION_TIMEOUT_MS = 30_000  # the admin client's default.api.timeout.ms would be 60 s; a lab wants less
JSON_FILE_BYTES_MAX = 16 * 1024 * 1024  # far beyond a file naming every partition of a cluster

# Kafka's exception class and default text for the errors an election result carries (Errors.java).
_EXCEPTIONS: dict[int, tuple[str, str]] = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ("UnknownTopicOrPartitionException",
                                           "This server does not host this topic-partition."),
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE: ("PreferredLeaderNotAvailableException",
                                               "The preferred leader was not available."),
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE: ("EligibleLeadersNotAvailableException",
                                               "Eligible topic partition leaders are not available."),
    ErrorCode.NOT_CONTROLLER: ("NotControllerException", "This is not the correct controller for this cluster."),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", required=True, help="Broker to connect to (host:port).")
    parser.add_argument("--election-type", required=True, type=str.upper, choices=sorted(ELECTION_TYPES),
                        help="Type of election to attempt: PREFERRED or UNCLEAN.")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--topic", help="Name of the topic whose partition leader is elected.")
    which.add_argument("--all-topic-partitions", action="store_true", help="Elect for every partition.")
    which.add_argument("--path-to-json-file", help="JSON file naming the partitions.")
    parser.add_argument("--partition", type=int, help="Partition of --topic (required with --topic).")


def _partitions(args: argparse.Namespace) -> list[tuple[str, int]] | None:
    if args.all_topic_partitions:
        return None
    if args.topic is not None:
        if args.partition is None:
            raise KafkaError("Missing required option(s): partition", error_code=ErrorCode.INVALID_REQUEST)
        return [(args.topic, args.partition)]
    path = Path(args.path_to_json_file)
    if path.stat().st_size > JSON_FILE_BYTES_MAX:
        raise KafkaError(f"{path} is larger than {JSON_FILE_BYTES_MAX} bytes", error_code=ErrorCode.INVALID_REQUEST)
    try:
        entries = json.loads(path.read_text())["partitions"]
        return [(str(e["topic"]), int(e["partition"])) for e in entries]
    except (ValueError, KeyError, TypeError) as error:
        raise KafkaError(f"Replica election data is not in the expected format: {error}",
                         error_code=ErrorCode.INVALID_REQUEST) from None


def _exception_text(code: int, message: str | None) -> str:
    name, default = _EXCEPTIONS.get(code, ("UnknownServerException", f"error code {code}"))
    return f"org.apache.kafka.common.errors.{name}: {message or default}"


def report(election_type: str, response: Any, out: TextIO, err: TextIO) -> int:
    """Print the outcome as LeaderElectionCommand does; the exit status."""
    if response.error_code:
        err.write(f"Error while making request: {_exception_text(response.error_code, None)}\n")
        return 1
    succeeded, noop, failed = [], [], []
    for topic in response.replica_election_results:
        for result in topic.partition_result:
            name = f"{topic.topic}-{result.partition_id}"
            if result.error_code == ErrorCode.NONE:
                succeeded.append(name)
            elif result.error_code == ErrorCode.ELECTION_NOT_NEEDED:
                noop.append(name)
            else:
                failed.append((name, _exception_text(result.error_code, result.error_message)))
    if succeeded:
        out.write(f"Successfully completed leader election ({election_type}) for partitions {', '.join(succeeded)}\n")
    if noop:
        out.write(f"Valid replica already elected for partitions {', '.join(noop)}\n")
    for name, text in failed:
        out.write(f"Error completing leader election ({election_type}) for partition: {name}: {text}\n")
    if failed:
        err.write(f"{len(failed)} replica(s) could not be elected\n")
        return 1
    return 0


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        partitions = _partitions(args)
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions or ():
            by_topic.setdefault(topic, []).append(partition)
        body = {"election_type": ELECTION_TYPES[args.election_type], "timeout_ms": ELECTION_TIMEOUT_MS,
                "topic_partitions": None if partitions is None else [
                    {"topic": t, "partitions": p} for t, p in by_topic.items()]}
        with bootstrap(args.bootstrap_server) as connection:
            response = connection.request(ApiKey.ELECT_LEADERS, body)
    except (KafkaError, OSError) as error:
        err.write(f"{error}\n")
        return 1
    return report(args.election_type, response, out, err)


__all__ = ["add_arguments", "report", "run"]
