"""``kafkalab topics``: create, list, describe, alter and delete topics (kafka-topics.sh).

The flags and the output are Kafka's own (``TopicCommand``), so commands from Kafka's quick start
work unchanged::

    $ kafkalab topics --bootstrap-server 127.0.0.1:9092 --create --topic orders --partitions 3 \\
          --config retention.ms=3600000
    Created topic orders.
    $ kafkalab topics --bootstrap-server 127.0.0.1:9092 --describe --topic orders
    Topic: orders	TopicId: 3sRQ0xUMQm-eHT7dZ0cCpw	PartitionCount: 3	ReplicationFactor: 1	Configs: retention.ms=3600000
    	Topic: orders	Partition: 0	Leader: 0	Replicas: 0	Isr: 0	Elr: N/A	LastKnownElr: N/A
    ...

``Configs:`` lists only values that are not defaults, the topic id is printed in Kafka's
base64url form, and Elr/LastKnownElr (KIP-966's eligible leader replicas) print ``N/A``
because kafkalab reads partitions through Metadata, as Kafka's tool does against brokers that
lack DescribeTopicPartitions. A partition being reassigned also shows ``Adding Replicas:`` and
``Removing Replicas:`` (ListPartitionReassignments), and the replicas being added do not count
in ``ReplicationFactor``. ``--alter --partitions N`` grows a topic (CreatePartitions);
``--alter --config k=v`` sets topic configs with IncrementalAlterConfigs, as old kafka-topics
did before that moved to kafka-configs. Errors print ``Error while executing topic command :
...`` and exit with status 1, as Kafka's does.
"""

from __future__ import annotations

import argparse
import base64
import sys
from collections.abc import Sequence

from kafkalab.client import admin
from kafkalab.client.connection import BrokerConnection, bootstrap
from kafkalab.errors import KafkaError

ACTIONS = ("create", "list", "describe", "alter", "delete")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT")
    group = parser.add_mutually_exclusive_group(required=True)
    for action in ACTIONS:
        group.add_argument(f"--{action}", action="store_true", help=f"{action} topics")
    parser.add_argument("--topic", help="the topic to create, alter, describe or delete")
    parser.add_argument("--partitions", type=int, help="number of partitions (create, alter)")
    parser.add_argument("--replication-factor", type=int, help="replicas per partition (create)")
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                        help="a topic config override; repeat for several")
    parser.add_argument("--if-exists", action="store_true", help="alter/delete/describe only if the topic exists")
    parser.add_argument("--if-not-exists", action="store_true", help="create only if the topic does not exist")
    parser.add_argument("--exclude-internal", action="store_true", help="leave internal topics out of list/describe")
    parser.add_argument("--request-timeout-ms", type=int, default=30_000)


def run(args: argparse.Namespace) -> int:
    try:
        action = next(a for a in ACTIONS if getattr(args, a))
        configs = parse_configs(args.config)
        with bootstrap(args.bootstrap_server, request_timeout_ms=args.request_timeout_ms) as conn:
            HANDLERS[action](conn, args, configs)
        return 0
    except (KafkaError, ValueError) as error:
        print(f"Error while executing topic command : {error}")
        return 1


def parse_configs(pairs: list[str]) -> dict[str, str]:
    """``["a=1", "b = 2"]`` -> ``{"a": "1", "b": "2"}``, as ``TopicCommand`` splits them."""
    configs = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip() or "=" in value:
            raise ValueError('requirement failed: Invalid topic config: all configs to be added '
                             f'must be in the format "key=val", got {pair!r}.')
        configs[key.strip()] = value.strip()
    return configs


def handle_create(conn: BrokerConnection, args: argparse.Namespace, configs: dict[str, str]) -> None:
    topic = _required_topic(args)
    if args.replication_factor is not None and not 1 <= args.replication_factor <= 32767:
        raise ValueError("The replication factor must be between 1 and 32767 inclusive")
    if args.partitions is not None and args.partitions < 1:
        raise ValueError("The partitions must be greater than 0")
    if "." in topic or "_" in topic:
        print("WARNING: Due to limitations in metric names, topics with a period ('.') or underscore "
              "('_') could collide. To avoid issues it is best to use either, but not both.")
    if args.if_not_exists and topic in _topic_names(conn, args):
        return
    # -1 asks the broker for its num.partitions / default.replication.factor (KIP-464).
    admin.create_topic(conn, topic, partitions=args.partitions or -1,
                       replication_factor=args.replication_factor or -1, configs=configs)
    print(f"Created topic {topic}.")


def handle_list(conn: BrokerConnection, args: argparse.Namespace, configs: dict[str, str]) -> None:
    print("\n".join(_selected(conn, args, require=False)))  # Kafka prints one (empty) line for none


def handle_describe(conn: BrokerConnection, args: argparse.Namespace, configs: dict[str, str]) -> None:
    names = _selected(conn, args, require=not args.if_exists)
    if not names:
        return
    topics = admin.describe_topics(conn, names)
    moving = admin.list_partition_reassignments(
        conn, [(t.name, p.partition) for t in topics for p in t.partitions]) if topics else {}
    for topic in topics:
        overrides = [f"{k}={v}" for k, v, is_default in admin.describe_topic_configs(conn, topic.name)
                     if not is_default]
        first = moving.get((topic.name, topic.partitions[0].partition)) if topic.partitions else None
        print(describe_topic_line(topic, overrides, first[1] if first else ()))
        for partition in topic.partitions:
            print(describe_partition_line(topic.name, partition, moving.get((topic.name, partition.partition))))


def handle_alter(conn: BrokerConnection, args: argparse.Namespace, configs: dict[str, str]) -> None:
    topic = _required_topic(args)
    if not _selected(conn, args, require=not args.if_exists):
        return
    if args.partitions is None and not configs:
        raise ValueError("--alter needs --partitions or --config")
    if args.partitions is not None:
        admin.create_partitions(conn, topic, args.partitions)
    if configs:
        admin.set_topic_configs(conn, topic, configs)


def handle_delete(conn: BrokerConnection, args: argparse.Namespace, configs: dict[str, str]) -> None:
    _required_topic(args)
    names = _selected(conn, args, require=not args.if_exists)
    if names:
        admin.delete_topics(conn, names)


HANDLERS = {
    "create": handle_create, "list": handle_list, "describe": handle_describe,
    "alter": handle_alter, "delete": handle_delete,
}


def describe_topic_line(topic: admin.TopicInfo, overrides: list[str], adding: Sequence[int] = ()) -> str:
    """The topic's line; while its first partition is being reassigned, the replicas it is
    adding do not count towards the replication factor (Kafka's ``getReplicationFactor``)."""
    replicas = topic.partitions[0].replicas if topic.partitions else ()
    replication_factor = len([r for r in replicas if r not in adding])
    topic_id = f"\tTopicId: {kafka_uuid(topic.topic_id)}" if topic.topic_id else ""
    return (f"Topic: {topic.name}{topic_id}\tPartitionCount: {len(topic.partitions)}"
            f"\tReplicationFactor: {replication_factor}\tConfigs: {','.join(overrides)}")


def describe_partition_line(topic: str, p: admin.PartitionInfo, reassignment: admin.Reassignment | None = None) -> str:
    """A partition's line; one being reassigned also names the replicas it adds and removes."""
    leader = "none" if p.leader < 0 else str(p.leader)
    moving = "" if reassignment is None else (
        f"\tAdding Replicas: {','.join(map(str, reassignment[1]))}"
        f"\tRemoving Replicas: {','.join(map(str, reassignment[2]))}")
    return (f"\tTopic: {topic}\tPartition: {p.partition}\tLeader: {leader}"
            f"\tReplicas: {','.join(map(str, p.replicas))}\tIsr: {','.join(map(str, p.isr))}{moving}"
            f"\tElr: N/A\tLastKnownElr: N/A")


def kafka_uuid(raw: bytes) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 of the 16 bytes without padding (22 chars)."""
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _required_topic(args: argparse.Namespace) -> str:
    if not args.topic:
        raise ValueError("--topic is required for this action")
    return str(args.topic)


def _topic_names(conn: BrokerConnection, args: argparse.Namespace) -> list[str]:
    return [t.name for t in admin.describe_topics(conn)
            if not (args.exclude_internal and t.is_internal)]


def _selected(conn: BrokerConnection, args: argparse.Namespace, *, require: bool) -> list[str]:
    """All topics, or just ``--topic`` when given; a missing named topic raises when required."""
    names = _topic_names(conn, args)
    if args.topic:
        names = [n for n in names if n == args.topic]
        if require and not names:
            raise ValueError(f"Topic '{args.topic}' does not exist as expected")
    return names


if __name__ == "__main__":  # pragma: no cover
    parser = argparse.ArgumentParser(prog="kafkalab topics")
    add_arguments(parser)
    sys.exit(run(parser.parse_args()))
