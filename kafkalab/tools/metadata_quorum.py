"""``kafkalab metadata-quorum``: the KRaft quorum of the metadata log, as ``kafka-metadata-quorum.sh``.

Two views of one DescribeQuorum answer (Kafka's ``MetadataQuorumCommand``)::

    $ kafkalab metadata-quorum --bootstrap-server localhost:9092 describe --status
    ClusterId:              kafkalab-cluster
    LeaderId:               0
    LeaderEpoch:            1
    HighWatermark:          7
    MaxFollowerLag:         0
    MaxFollowerLagTimeMs:   0
    CurrentVoters:          [{"id": 0, "directoryId": null, "endpoints": ["PLAINTEXT://localhost:9092"]}]
    CurrentObservers:       []

    $ kafkalab metadata-quorum --bootstrap-server localhost:9092 describe --replication
    NodeId	DirectoryId           	LogEndOffset	Lag	LastFetchTimestamp	LastCaughtUpTimestamp	Status
    0     	AAAAAAAAAAAAAAAAAAAAAA	7           	0  	1732459200000     	1732459200000        	Leader

The table is Kafka's ``ToolsUtils.prettyPrintTable``: each cell padded to its column's widest
value and followed by a tab. Lag is the leader's log end offset minus the replica's;
MaxFollowerLag is the largest over the voters, and MaxFollowerLagTimeMs the difference of the
leader's and that voter's last caught-up times (0 when the leader is the one furthest behind,
-1 when a time is unknown). ``--human-readable`` prints the times as "N ms ago".
"""

from __future__ import annotations

import argparse
import base64
import sys
import uuid
from typing import Any, TextIO

from kafkalab.client.connection import bootstrap
from kafkalab.controller.raft.metadata_log import METADATA_PARTITION, METADATA_TOPIC
from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.protocol.api_keys import ApiKey

HEADERS = ("NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp", "LastCaughtUpTimestamp", "Status")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", required=True, help="A broker to connect to (host:port).")
    commands = parser.add_subparsers(dest="subcommand", required=True)
    describe = commands.add_parser("describe", help="Describe the metadata quorum info")
    describe.add_argument("--status", action="store_true", help="A short summary of the quorum status.")
    describe.add_argument("--replication", action="store_true", help="Detailed information about the replication.")
    describe.add_argument("--human-readable", action="store_true",
                          help="Human-readable output (with --replication only).")


def java_uuid(value: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def pretty_table(headers: tuple[str, ...], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(headers)]
    return "".join("".join(cell.ljust(widths[i]) + "\t" for i, cell in enumerate(row)) + "\n"
                   for row in [list(headers), *rows])


def describe_quorum(bootstrap_server: str) -> tuple[str, Any]:
    """(cluster id, the DescribeQuorum partition answer); raises KafkaError on an error."""
    with bootstrap(bootstrap_server) as connection:
        cluster = connection.request(ApiKey.DESCRIBE_CLUSTER, {})
        response = connection.request(ApiKey.DESCRIBE_QUORUM, {"topics": [
            {"topic_name": METADATA_TOPIC, "partitions": [{"partition_index": METADATA_PARTITION}]}]})
    if response.error_code:
        raise KafkaError(response.error_message or ErrorCode(response.error_code).name, error_code=response.error_code)
    partition = response.topics[0].partitions[0]
    if partition.error_code:
        raise KafkaError(partition.error_message or ErrorCode(partition.error_code).name,
                         error_code=partition.error_code)
    return cluster.cluster_id, (partition, getattr(response, "nodes", ()) or ())


def _time(value: int, human: bool, now_ms: int) -> str:
    if value < 0:
        return "-1"
    return f"{now_ms - value} ms ago" if human else str(value)


def replication_rows(partition: Any, human: bool = False, now_ms: int = 0) -> list[list[str]]:
    voters = list(partition.current_voters)
    leader = next(v for v in voters if v.replica_id == partition.leader_id)
    ordered = [(leader, "Leader"), *((v, "Follower") for v in voters if v.replica_id != partition.leader_id),
               *((o, "Observer") for o in partition.observers)]
    return [[str(r.replica_id), java_uuid(getattr(r, "replica_directory_id", uuid.UUID(int=0))),
             str(r.log_end_offset), str(leader.log_end_offset - r.log_end_offset),
             _time(r.last_fetch_timestamp, human, now_ms), _time(r.last_caught_up_timestamp, human, now_ms), status]
            for r, status in ordered]


def _replicas_text(replicas: Any, nodes: Any) -> str:
    endpoints = {n.node_id: [f"{lst.name}://{lst.host}:{lst.port}" for lst in n.listeners] for n in nodes}
    parts = []
    for replica in replicas:
        directory = getattr(replica, "replica_directory_id", uuid.UUID(int=0))
        text = f'{{"id": {replica.replica_id}, "directoryId": ' + (
            "null" if directory.int == 0 else f'"{java_uuid(directory)}"')
        if endpoints.get(replica.replica_id):
            text += ", \"endpoints\": [" + ", ".join(f'"{e}"' for e in endpoints[replica.replica_id]) + "]"
        parts.append(text + "}")
    return "[" + ", ".join(parts) + "]"


def status_text(cluster_id: str, partition: Any, nodes: Any) -> str:
    voters = list(partition.current_voters)
    leader = next(v for v in voters if v.replica_id == partition.leader_id)
    laggard = min(voters, key=lambda v: v.log_end_offset)  # the first of the furthest behind
    if laggard is leader:
        lag_time_ms = 0
    elif leader.last_caught_up_timestamp >= 0 and laggard.last_caught_up_timestamp >= 0:
        lag_time_ms = leader.last_caught_up_timestamp - laggard.last_caught_up_timestamp
    else:
        lag_time_ms = -1
    return (f"ClusterId:              {cluster_id}\n"
            f"LeaderId:               {partition.leader_id}\n"
            f"LeaderEpoch:            {partition.leader_epoch}\n"
            f"HighWatermark:          {partition.high_watermark}\n"
            f"MaxFollowerLag:         {leader.log_end_offset - laggard.log_end_offset}\n"
            f"MaxFollowerLagTimeMs:   {lag_time_ms}\n"
            f"CurrentVoters:          {_replicas_text(voters, nodes)}\n"
            f"CurrentObservers:       {_replicas_text(partition.observers, nodes)}\n")


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    if args.status == args.replication:
        err.write("One of --status or --replication must be specified with describe sub-command\n"
                  if not args.status else "Only one of --status or --replication should be specified with describe sub-command\n")
        return 1
    if args.human_readable and args.status:
        err.write("The option --human-readable is only supported along with --replication\n")
        return 1
    try:
        cluster_id, (partition, nodes) = describe_quorum(args.bootstrap_server)
    except (KafkaError, OSError) as error:
        err.write(f"{error}\n")
        return 1
    if args.status:
        out.write(status_text(cluster_id, partition, nodes))
    else:
        import time  # an adapter: "N ms ago" is relative to this machine's wall clock, as Kafka's
        out.write(pretty_table(HEADERS, replication_rows(partition, args.human_readable, int(time.time() * 1000))))
    return 0


__all__ = ["HEADERS", "add_arguments", "describe_quorum", "java_uuid", "pretty_table", "replication_rows",
           "run", "status_text"]
