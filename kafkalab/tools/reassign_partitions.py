"""``kafkalab reassign-partitions``: move partitions between brokers, like ``kafka-reassign-partitions.sh``.

The usual session, as in Kafka's operations guide::

    $ kafkalab reassign-partitions --bootstrap-server localhost:9092 --generate \\
          --topics-to-move-json-file topics.json --broker-list 2,3
    Current partition replica assignment
    {"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[1],"log_dirs":["any"]}]}

    Proposed partition reassignment configuration
    {"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[3],"log_dirs":["any"]}]}
    $ kafkalab reassign-partitions --bootstrap-server localhost:9092 --execute \\
          --reassignment-json-file plan.json [--throttle 50000000]
    Current partition replica assignment
    ...
    Successfully started partition reassignment for orders-0
    $ kafkalab reassign-partitions --bootstrap-server localhost:9092 --verify --reassignment-json-file plan.json
    Status of partition reassignment:
    Reassignment of partition orders-0 is completed.

``--execute`` sends one AlterPartitionReassignments; the controller adds the new replicas, they
catch up, and the old ones are removed (:mod:`kafkalab.controller.reassignment`). ``--verify``
reads ListPartitionReassignments and Metadata, and once nothing is moving it clears the throttle
configs ``--throttle`` set (IncrementalAlterConfigs; see :mod:`.reassignment_plan` for which).
kafkalab's brokers accept and describe those configs but do not yet slow replication down for
them. ``--cancel`` and ``--list`` work as Kafka's; log directory moves are not supported (one log
directory per broker). Errors are printed as Kafka's tool prints them and exit with status 1.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from kafkalab.client import admin
from kafkalab.client.connection import BrokerConnection, bootstrap
from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.protocol import SCHEMAS
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.messages.configs import OP_DELETE, OP_SET, RESOURCE_BROKER, RESOURCE_TOPIC
from kafkalab.tools import reassignment_plan as plan
from kafkalab.tools.reassignment_plan import ReassignmentFileError, TopicPartition

JSON_FILE_BYTES_MAX = 16 * 1024 * 1024  # far beyond a plan naming every partition of a cluster
ADMIN_TIMEOUT_MS = 30_000
BROKER_THROTTLES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate",
                    "replica.alter.log.dirs.io.max.bytes.per.second")
TOPIC_THROTTLES = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")
CANNOT_EXECUTE = ("Cannot execute because there is an existing partition assignment.  Use --additional to "
                  "override this and create a new partition assignment in addition to the existing one. The "
                  "--additional flag can also be used to change the throttle by resubmitting the current "
                  "reassignment.")
RUN_VERIFY = "Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle is removed."
ACTIONS = ("generate", "execute", "verify", "cancel", "list")
# Options each action accepts beyond --bootstrap-server (Kafka's validateAndParseArgs).
PERMITTED = {
    "generate": {"topics_to_move_json_file", "broker_list", "disable_rack_aware"},
    "execute": {"reassignment_json_file", "additional", "throttle", "replica_alter_log_dirs_throttle", "timeout"},
    "verify": {"reassignment_json_file", "preserve_throttles"},
    "cancel": {"reassignment_json_file", "preserve_throttles", "timeout"},
    "list": set(),
}
NO_THROTTLE = -1  # the throttle options' default: set none
TIMEOUT_MS_DEFAULT = 10_000  # --timeout's default in Kafka's tool
_DEFAULTS = {"reassignment_json_file": None, "topics_to_move_json_file": None, "broker_list": None,
             "disable_rack_aware": False, "throttle": NO_THROTTLE, "replica_alter_log_dirs_throttle": NO_THROTTLE,
             "additional": False, "preserve_throttles": False, "timeout": TIMEOUT_MS_DEFAULT}
Ongoing = dict[TopicPartition, admin.Reassignment]


class CommandError(KafkaError):
    """What Kafka's tool reports tersely (a TerseException): printed alone, exit status 1."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    for action in ACTIONS:
        parser.add_argument(f"--{action}", action="store_true", help=f"{action.capitalize()} (see Kafka's tool).")
    parser.add_argument("--bootstrap-server", required=True, help="Broker(s) to connect to (host:port).")
    parser.add_argument("--reassignment-json-file", help="The JSON file with the partition reassignment.")
    parser.add_argument("--topics-to-move-json-file", help="For --generate: the topics to move.")
    parser.add_argument("--broker-list", help="For --generate: the brokers to move them to, e.g. 5,6.")
    parser.add_argument("--disable-rack-aware", action="store_true", help="Ignore racks in --generate.")
    parser.add_argument("--throttle", type=int, default=NO_THROTTLE, help="Replication throttle in bytes/s (--execute).")
    parser.add_argument("--replica-alter-log-dirs-throttle", type=int, default=NO_THROTTLE,
                        help="Log directory move throttle in bytes/s (--execute; kafkalab has one log directory).")
    parser.add_argument("--additional", action="store_true", help="Execute beside reassignments in progress.")
    parser.add_argument("--preserve-throttles", action="store_true", help="Leave throttles as they are.")
    parser.add_argument("--timeout", type=int, default=TIMEOUT_MS_DEFAULT, help="Kept for Kafka's flags; unused.")


def _read(path: str | None, flag: str) -> str:
    if path is None:
        raise CommandError(f"Missing required argument \"[{flag}]\"")
    file = Path(path)
    if file.stat().st_size > JSON_FILE_BYTES_MAX:
        raise CommandError(f"{file} is larger than {JSON_FILE_BYTES_MAX} bytes")
    return file.read_text()


# --- requests ------------------------------------------------------------------------------------


def list_reassignments(conn: BrokerConnection, parts: Sequence[TopicPartition] | None = None) -> Ongoing:
    return admin.list_partition_reassignments(conn, None if parts is None else list(parts))


def alter_reassignments(conn: BrokerConnection, targets: Mapping[TopicPartition, Sequence[int] | None]) -> dict[TopicPartition, str]:
    """Send the targets (None cancels); the partitions that failed, with Kafka's message."""
    request = SCHEMAS[ApiKey.ALTER_PARTITION_REASSIGNMENTS][0].cls
    by_topic: dict[str, list[Any]] = {}
    for (topic, partition), replicas in targets.items():
        by_topic.setdefault(topic, []).append(request.ReassignableTopic.ReassignablePartition(
            partition_index=partition, replicas=None if replicas is None else tuple(replicas)))
    response = conn.request(ApiKey.ALTER_PARTITION_REASSIGNMENTS, request(timeout_ms=ADMIN_TIMEOUT_MS, topics=tuple(
        request.ReassignableTopic(name=t, partitions=tuple(p)) for t, p in by_topic.items())))
    if response.error_code:
        return {part: response.error_message or ErrorCode(response.error_code).name for part in targets}
    return {(t.name, p.partition_index): p.error_message or ErrorCode(p.error_code).name
            for t in response.responses for p in t.partitions if p.error_code}


def cluster_brokers(conn: BrokerConnection) -> dict[int, str | None]:
    """DescribeCluster's brokers: id -> rack, in the order the broker lists them."""
    response = conn.request(ApiKey.DESCRIBE_CLUSTER, SCHEMAS[ApiKey.DESCRIBE_CLUSTER][0].cls())
    return {b.broker_id: b.rack for b in response.brokers}


def alter_configs(conn: BrokerConnection, changes: Mapping[tuple[int, str], Mapping[str, str | None]]) -> None:
    """IncrementalAlterConfigs: SET each value, DELETE each None, per (resource type, name)."""
    request = SCHEMAS[ApiKey.INCREMENTAL_ALTER_CONFIGS][0].cls
    resource = request.AlterConfigsResource
    resources = tuple(resource(resource_type=kind, resource_name=name, configs=tuple(
        resource.AlterableConfig(name=key, config_operation=OP_DELETE if value is None else OP_SET, value=value)
        for key, value in configs.items())) for (kind, name), configs in changes.items())
    response = conn.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, request(resources=resources, validate_only=False))
    for result in response.responses:
        if result.error_code:
            raise CommandError(f"Error: {ErrorCode(result.error_code).name}: {result.error_message} "
                               f"({result.resource_name})")


def current_replicas(conn: BrokerConnection, topics: Sequence[str]) -> dict[TopicPartition, list[int]]:
    try:
        described = admin.describe_topics(conn, sorted(set(topics)))
    except KafkaError as error:
        raise CommandError(f"Error: {error}", error_code=error.error_code) from None
    return {(t.name, p.partition): list(p.replicas) for t in described for p in t.partitions}


def _replicas_if_known(conn: BrokerConnection, topics: Sequence[str]) -> dict[TopicPartition, list[int]]:
    """As :func:`current_replicas`, but a topic that does not exist has no replicas (``--verify``)."""
    found: dict[TopicPartition, list[int]] = {}
    for topic in topics:
        try:
            found.update(current_replicas(conn, [topic]))
        except CommandError as error:
            if error.error_code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                raise
    return found


# --- actions -------------------------------------------------------------------------------------


def generate(conn: BrokerConnection, args: argparse.Namespace, out: TextIO, rng: random.Random) -> None:
    if args.broker_list is None:
        raise CommandError("Missing required argument \"[broker-list]\"")
    try:
        wanted = [int(b) for b in args.broker_list.split(",")]
    except ValueError:
        raise CommandError(f"Error: For input string: \"{args.broker_list}\"") from None
    duplicates = sorted({b for b in wanted if wanted.count(b) > 1})
    if duplicates:
        raise CommandError(f"Broker list contains duplicate entries: {duplicates}")
    topics = plan.parse_topics(_read(args.topics_to_move_json_file, "topics-to-move-json-file"))
    current = current_replicas(conn, topics)
    brokers = {b: (None if args.disable_rack_aware else rack)
               for b, rack in cluster_brokers(conn).items() if b in wanted}
    if 0 < sum(rack is None for rack in brokers.values()) < len(brokers):
        raise CommandError("Error: Not all brokers have rack information. Add --disable-rack-aware in command "
                           "line to make replica assignment without rack information.")
    proposed: dict[TopicPartition, list[int]] = {}
    for topic in sorted({t for t, _ in current}):
        count = sum(1 for t, _ in current if t == topic)
        placed = plan.assign_replicas_to_brokers(count, len(current[(topic, 0)]), brokers, rng)
        proposed.update({(topic, p): replicas for p, replicas in placed.items()})
    out.write(f"Current partition replica assignment\n{plan.format_reassignment(current)}\n\n")
    out.write(f"Proposed partition reassignment configuration\n{plan.format_reassignment(proposed)}\n")


def execute(conn: BrokerConnection, args: argparse.Namespace, out: TextIO) -> None:
    targets = plan.check_execute(plan.parse_reassignment(_read(args.reassignment_json_file, "reassignment-json-file")))
    ongoing = list_reassignments(conn)
    if ongoing and not args.additional:
        raise CommandError(CANNOT_EXECUTE)
    known = set(cluster_brokers(conn))
    unknown = next((b for replicas in targets.values() for b in replicas if b not in known), None)
    if unknown is not None:
        raise CommandError(f"Error: Unknown broker id {unknown}")
    current = current_replicas(conn, [t for t, _ in targets])
    missing = [f"{t}-{p}" for t, p in targets if (t, p) not in current]
    if missing:
        raise CommandError(f"Error: Unable to find partition: {', '.join(missing)}")
    current = {part: current[part] for part in targets}
    out.write(f"Current partition replica assignment\n\n{plan.format_reassignment(current)}\n\n"
              f"Save this to use as the --reassignment-json-file option during rollback\n")
    if args.throttle >= 0 or args.replica_alter_log_dirs_throttle >= 0:
        out.write(RUN_VERIFY + "\n")
    if args.throttle >= 0:
        set_throttles(conn, plan.move_map({p: (r, a) for p, (r, a, _) in ongoing.items()}, targets, current),
                      args.throttle)
        out.write(f"The inter-broker throttle limit was set to {args.throttle} B/s\n")
    if args.replica_alter_log_dirs_throttle >= 0:  # no replica changes log directory here: no broker to set
        out.write(f"The replica-alter-dir throttle limit was set to {args.replica_alter_log_dirs_throttle} B/s\n")
    errors = alter_reassignments(conn, targets)
    if errors:
        raise CommandError("Error reassigning partition(s):\n" + "\n".join(
            f"{t}-{p}: {message}" for (t, p), message in sorted(errors.items())))
    names = ",".join(f"{t}-{p}" for t, p in sorted(targets))
    out.write(f"Successfully started partition reassignment{'' if len(targets) == 1 else 's'} for {names}\n")


def set_throttles(conn: BrokerConnection, moves: Mapping[TopicPartition, plan.PartitionMove], rate: int) -> None:
    """Kafka's ``modifyReassignmentThrottle``: the topics' throttled replicas, then the rate on
    every broker that sends or receives."""
    changes: dict[tuple[int, str], dict[str, str | None]] = {
        (RESOURCE_TOPIC, topic): dict(zip(TOPIC_THROTTLES, values, strict=True))
        for topic, values in plan.throttled_replicas(moves).items()}
    alter_configs(conn, changes)
    brokers = sorted({b for move in moves.values() for b in move.sources | move.destinations})
    alter_configs(conn, {(RESOURCE_BROKER, str(b)): {key: str(rate) for key in BROKER_THROTTLES[:2]} for b in brokers})


def verify(conn: BrokerConnection, args: argparse.Namespace, out: TextIO) -> None:
    targets = plan.parse_reassignment(_read(args.reassignment_json_file, "reassignment-json-file"))
    ongoing = list_reassignments(conn)
    current = _replicas_if_known(conn, sorted({t for part, _ in targets if part not in ongoing for t in part[:1]}))
    states = {part: (ongoing[part][0], target, False) if part in ongoing else (current.get(part, []), target, True)
              for part, target in targets}
    out.write("\n".join(plan.verify_lines(states)) + "\n\n")  # then Kafka's (empty) log-dir moves
    if not ongoing and not args.preserve_throttles:
        clear_throttles(conn, targets, out)


def clear_throttles(conn: BrokerConnection, targets: Sequence[tuple[TopicPartition, list[int]]], out: TextIO) -> None:
    brokers = sorted(set(cluster_brokers(conn)) | {b for _, replicas in targets for b in replicas})
    out.write(f"Clearing broker-level throttles on broker{'' if len(brokers) == 1 else 's'} "
              f"{','.join(map(str, brokers))}\n")
    alter_configs(conn, {(RESOURCE_BROKER, str(b)): dict.fromkeys(BROKER_THROTTLES) for b in brokers})
    topics = sorted({t for (t, _), _ in targets})
    out.write(f"Clearing topic-level throttles on topic{'' if len(topics) == 1 else 's'} {','.join(topics)}\n")
    alter_configs(conn, {(RESOURCE_TOPIC, t): dict.fromkeys(TOPIC_THROTTLES) for t in topics})


def cancel(conn: BrokerConnection, args: argparse.Namespace, out: TextIO) -> None:
    targets = plan.parse_reassignment(_read(args.reassignment_json_file, "reassignment-json-file"))
    active = sorted(list_reassignments(conn, [part for part, _ in targets]))
    if active:
        errors = alter_reassignments(conn, dict.fromkeys(active))
        if errors:
            raise CommandError(f"Error cancelling partition reassignment{'' if len(errors) == 1 else 's'} for:\n"
                               + "\n".join(f"{t}-{p}: {m}" for (t, p), m in sorted(errors.items())))
        out.write(f"Successfully cancelled partition reassignment{'' if len(active) == 1 else 's'} for: "
                  f"{','.join(f'{t}-{p}' for t, p in active)}\n")
    else:
        out.write("None of the specified partition reassignments are active.\n")
    out.write("None of the specified partition moves are active.")
    if not args.preserve_throttles:
        clear_throttles(conn, targets, out)


def list_action(conn: BrokerConnection, args: argparse.Namespace, out: TextIO) -> None:
    lines = []
    for (topic, partition), (replicas, adding, removing) in sorted(list_reassignments(conn).items()):
        line = f"{topic}-{partition}: replicas: {','.join(map(str, replicas))}."
        line += f" adding: {','.join(map(str, adding))}." if adding else ""
        line += f" removing: {','.join(map(str, removing))}." if removing else ""
        lines.append(line)
    out.write("Current partition reassignments:\n" + "\n".join(lines) + "\n" if lines
              else "No partition reassignments found.\n")


def run(args: argparse.Namespace, out: TextIO | None = None, rng: random.Random | None = None) -> int:
    out = out or sys.stdout
    chosen = [a for a in ACTIONS if getattr(args, a)]
    if len(chosen) != 1:
        out.write(f"Command must include exactly one action: {', '.join('--' + a for a in ACTIONS)}\n")
        return 1
    misplaced = [k for k, default in _DEFAULTS.items() if getattr(args, k) != default and k not in PERMITTED[chosen[0]]]
    if misplaced:
        out.write(f"Option \"[{misplaced[0].replace('_', '-')}]\" can't be used with action \"[{chosen[0]}]\"\n")
        return 1
    try:
        with bootstrap(args.bootstrap_server, client_id="reassign-partitions-tool") as conn:
            if chosen[0] == "generate":
                generate(conn, args, out, rng or random.Random())
            else:
                {"execute": execute, "verify": verify, "cancel": cancel, "list": list_action}[chosen[0]](conn, args, out)
    except ReassignmentFileError as error:
        out.write(f"Error: {error}\n")
        return 1
    except (KafkaError, OSError) as error:
        out.write(f"{error}\n")
        return 1
    return 0


__all__ = ["add_arguments", "run"]
