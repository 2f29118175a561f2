"""``kafkalab transactions``: list, describe and abort transactions (kafka-transactions.sh).

The subcommands, flags and columns are Kafka's own (``TransactionsCommand``, KIP-664)::

    $ kafkalab transactions --bootstrap-server 127.0.0.1:9092 list
    TransactionalId	Coordinator	ProducerId	TransactionState
    app-1          	1          	4000      	Ongoing
    $ kafkalab transactions --bootstrap-server 127.0.0.1:9092 describe --transactional-id app-1
    CoordinatorId	TransactionalId	ProducerId	ProducerEpoch	TransactionState	TransactionTimeoutMs	...
    $ kafkalab transactions --bootstrap-server 127.0.0.1:9092 describe-producers --topic orders --partition 0
    ProducerId	ProducerEpoch	LatestCoordinatorEpoch	LastSequence	LastTimestamp	CurrentTransactionStartOffset
    4000      	0            	-1                    	2           	1700000000000	3
    $ kafkalab transactions --bootstrap-server 127.0.0.1:9092 abort --topic orders --partition 0 --start-offset 3

Each column is padded to its widest cell and followed by a tab (Kafka's
``ToolsUtils.prettyPrintTable``). ``list`` asks every broker of the cluster (ListTransactions);
``describe`` asks the transaction's coordinator (FindCoordinator key_type 1, then
DescribeTransactions), and the duration column is now minus the start time; ``describe-producers``
asks the partition's leader (DescribeProducers). ``abort`` ends a *hanging* transaction -- one
its coordinator forgot -- by having the partition leader write an ABORT marker itself
(WriteTxnMarkers, as Kafka's ``Admin.abortTransaction``): with ``--start-offset`` the producer
is found among the partition's open transactions, otherwise ``--producer-id``,
``--producer-epoch`` and ``--coordinator-epoch`` name it. Errors go to stderr with exit status 1.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from kafkalab.client.connection import BrokerConnection, bootstrap, check_error
from kafkalab.errors import KafkaError
from kafkalab.protocol import SCHEMAS
from kafkalab.protocol.api_keys import ApiKey

TRANSACTION_KEY_TYPE = 1  # FindCoordinator key_type for transactional ids
NO_VALUE = "None"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT")
    parser.add_argument("--request-timeout-ms", type=int, default=30_000)
    commands = parser.add_subparsers(dest="subcommand", required=True, metavar="COMMAND")
    listing = commands.add_parser("list", help="list transactions")
    listing.add_argument("--duration-filter", type=int, help="only transactions running longer than this (ms)")
    describe = commands.add_parser("describe", help="describe the state of an active transactional-id")
    describe.add_argument("--transactional-id", required=True)
    producers = commands.add_parser("describe-producers",
                                    help="describe the states of active producers for a topic partition")
    producers.add_argument("--broker-id", type=int, help="ignored: a lone broker is every partition's leader")
    producers.add_argument("--topic", required=True)
    producers.add_argument("--partition", type=int, required=True)
    abort = commands.add_parser("abort", help="abort a hanging transaction (requires administrative privileges)")
    abort.add_argument("--topic", required=True)
    abort.add_argument("--partition", type=int, required=True)
    abort.add_argument("--start-offset", type=int)
    abort.add_argument("--producer-id", type=int)
    abort.add_argument("--producer-epoch", type=int)
    abort.add_argument("--coordinator-epoch", type=int)


def run(args: argparse.Namespace) -> int:
    try:
        with bootstrap(args.bootstrap_server, request_timeout_ms=args.request_timeout_ms) as conn:
            for line in COMMANDS[args.subcommand](conn, args):
                print(line)
        return 0
    except (KafkaError, ValueError) as error:
        print(f"{FAILURES[args.subcommand](args)}: {error}.", file=sys.stderr)
        return 1


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Kafka's ``prettyPrintTable``: each cell padded to its column's width, then a tab."""
    widths = [max([len(h), *(len(row[i]) for row in rows)]) for i, h in enumerate(headers)]
    return ["".join(cell.ljust(width) + "\t" for cell, width in zip(row, widths)) for row in [headers, *rows]]


def _cls(api_key: int) -> Any:
    return SCHEMAS[api_key][0].cls


def _brokers(conn: BrokerConnection) -> list[tuple[int, str, int]]:
    return sorted((b.node_id, b.host, b.port) for b in conn.metadata([]).brokers)


def _on_node(conn: BrokerConnection, host: str, port: int, call: Callable[[BrokerConnection], Any]) -> Any:
    """``call`` on the broker at host:port, reusing ``conn`` when that is where it points."""
    if (host, port) == (conn.host, conn.port):
        return call(conn)
    with BrokerConnection(host, port, request_timeout_ms=conn.request_timeout_ms) as other:
        return call(other)


def list_transactions(conn: BrokerConnection, args: argparse.Namespace) -> list[str]:
    duration = -1 if args.duration_filter is None else args.duration_filter
    request = _cls(ApiKey.LIST_TRANSACTIONS)(state_filters=(), producer_id_filters=(), duration_filter=duration)
    rows: list[list[str]] = []
    for node_id, host, port in _brokers(conn):
        response = _on_node(conn, host, port, lambda c: c.request(ApiKey.LIST_TRANSACTIONS, request))
        check_error(response.error_code, f"list transactions on broker {node_id}")
        rows.extend([t.transactional_id, str(node_id), str(t.producer_id), t.transaction_state]
                    for t in response.transaction_states)
    return table(["TransactionalId", "Coordinator", "ProducerId", "TransactionState"], rows)


def describe_transaction(conn: BrokerConnection, args: argparse.Namespace) -> list[str]:
    transactional_id = args.transactional_id
    found = conn.request(ApiKey.FIND_COORDINATOR, _cls(ApiKey.FIND_COORDINATOR)(
        key=transactional_id, key_type=TRANSACTION_KEY_TYPE, coordinator_keys=(transactional_id,)))
    coordinator = found.coordinators[0] if found.coordinators else found
    check_error(coordinator.error_code, f"find the coordinator of {transactional_id!r}", coordinator.error_message)
    request = _cls(ApiKey.DESCRIBE_TRANSACTIONS)(transactional_ids=(transactional_id,))
    response = _on_node(conn, coordinator.host, coordinator.port,
                        lambda c: c.request(ApiKey.DESCRIBE_TRANSACTIONS, request))
    (state,) = response.transaction_states
    check_error(state.error_code, f"describe {transactional_id!r}")
    started = state.transaction_start_time_ms
    now_ms = time.time_ns() // 1_000_000  # the tool's clock, as Kafka's uses Time.SYSTEM
    partitions = ",".join(f"{t.topic}-{p}" for t in state.topics for p in t.partitions)
    row = [str(coordinator.node_id), transactional_id, str(state.producer_id), str(state.producer_epoch),
           state.transaction_state, str(state.transaction_timeout_ms),
           str(started) if started >= 0 else NO_VALUE, str(now_ms - started) if started >= 0 else NO_VALUE,
           partitions]
    return table(["CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                  "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
                  "TopicPartitions"], [row])


def _producers(conn: BrokerConnection, topic: str, partition: int) -> list[Any]:
    request = _cls(ApiKey.DESCRIBE_PRODUCERS)
    body = request(topics=(request.TopicRequest(name=topic, partition_indexes=(partition,)),))
    (topic_response,) = conn.request(ApiKey.DESCRIBE_PRODUCERS, body).topics
    (result,) = topic_response.partitions
    check_error(result.error_code, f"describe producers of {topic}-{partition}", result.error_message)
    return list(result.active_producers)


def describe_producers(conn: BrokerConnection, args: argparse.Namespace) -> list[str]:
    rows = [[str(p.producer_id), str(p.producer_epoch), str(p.coordinator_epoch), str(p.last_sequence),
             str(p.last_timestamp), str(p.current_txn_start_offset) if p.current_txn_start_offset >= 0 else NO_VALUE]
            for p in _producers(conn, args.topic, args.partition)]
    return table(["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
                  "CurrentTransactionStartOffset"], rows)


def abort_transaction(conn: BrokerConnection, args: argparse.Namespace) -> list[str]:
    if args.start_offset is not None:
        found = [p for p in _producers(conn, args.topic, args.partition)
                 if p.current_txn_start_offset == args.start_offset]
        if not found:
            raise ValueError(f"Could not find any open transactions starting at offset {args.start_offset} "
                             f"on partition {args.topic}-{args.partition}")
        producer_id, epoch, coordinator_epoch = found[0].producer_id, found[0].producer_epoch, found[0].coordinator_epoch
    elif args.producer_id is None:
        raise ValueError("The transaction to abort must be identified either with --start-offset (for brokers "
                         "on 3.0 or above) or with --producer-id, --producer-epoch, and --coordinator-epoch "
                         "(for older brokers)")
    elif args.producer_epoch is None or args.coordinator_epoch is None:
        missing = "--producer-epoch" if args.producer_epoch is None else "--coordinator-epoch"
        raise ValueError(f"Missing required argument {missing}")
    else:
        producer_id, epoch, coordinator_epoch = args.producer_id, args.producer_epoch, args.coordinator_epoch
    request = _cls(ApiKey.WRITE_TXN_MARKERS)
    marker = request.WritableTxnMarker(
        producer_id=producer_id, producer_epoch=epoch, transaction_result=False,
        coordinator_epoch=max(coordinator_epoch, 0),  # -1 (never decided) is written as 0, as Kafka's tool
        topics=(request.WritableTxnMarker.WritableTxnMarkerTopic(name=args.topic, partition_indexes=(args.partition,)),))
    response = conn.request(ApiKey.WRITE_TXN_MARKERS, request(markers=(marker,)))
    for result in response.markers:
        for topic in result.topics:
            for partition in topic.partitions:
                check_error(partition.error_code, f"abort the transaction of producer {producer_id}")
    return []


COMMANDS: dict[str, Callable[[BrokerConnection, argparse.Namespace], list[str]]] = {
    "list": list_transactions,
    "describe": describe_transaction,
    "describe-producers": describe_producers,
    "abort": abort_transaction,
}
FAILURES: dict[str, Callable[[argparse.Namespace], str]] = {
    "list": lambda a: "Failed to list transactions",
    "describe": lambda a: f"Failed to describe transaction state of transactional-id `{a.transactional_id}`",
    "describe-producers": lambda a: f"Failed to describe producers for partition {a.topic}-{a.partition} on leader",
    "abort": lambda a: f"Failed to abort transaction on {a.topic}-{a.partition}",
}
