"""The transactional producer's APIs and the transaction admin APIs (KIP-98, KIP-664).

A transactional producer talks to its *transaction coordinator* (FindCoordinator key_type 1)::

    InitProducerId(transactional_id="app-1")       -> producer id 4000, epoch 0
    AddPartitionsToTxn(app-1, 4000, 0, orders-[0])  -> orders-0: NONE      (then Produce to orders-0)
    AddOffsetsToTxn(app-1, 4000, 0, group "g")      -> NONE  (adds g's __consumer_offsets partition)
    TxnOffsetCommit(app-1, g, 4000, 0, orders-0@42) -> sent to the *group* coordinator
    EndTxn(app-1, 4000, 0, committed=true)          -> NONE  (markers follow, WriteTxnMarkers)

AddPartitionsToTxn v4+ is the batched form brokers send each other (KIP-890): several
transactions per request, each with ``verify_only``; clients use v0-v3, whose fields carry
Kafka's ``V3AndBelow`` prefix. DescribeTransactions, ListTransactions and DescribeProducers
serve ``kafka-transactions.sh`` (KIP-664); they are flexible from v0.

Advertised ranges: the highest version Kafka's Java client 3.9.1 sends is used, so each range
stops where a version would change semantics kafkalab does not implement: EndTxn v5 and
TxnOffsetCommit v5 belong to transaction version 2 (KIP-890 part 2: a new epoch per
transaction), and InitProducerId v5 to KIP-890's TRANSACTION_ABORTABLE. Worked example:
kafka-python 3.0 speaks AddPartitionsToTxn 0-3 and sends v3; librdkafka and aiokafka send v0.
"""

from __future__ import annotations

from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.schema import Field, f, message


def _topics() -> list[Field]:  # AddPartitionsToTxnTopic, a common struct in Kafka's spec
    return [f("name", "string"), f("partitions", "[]int32")]


def _partition_results() -> list[Field]:  # AddPartitionsToTxnTopicResult
    return [
        f("name", "string"),
        f("results_by_partition", "[]AddPartitionsToTxnPartitionResult", fields=[
            f("partition_index", "int32"),
            f("partition_error_code", "int16"),
        ]),
    ]


ADD_PARTITIONS_TO_TXN_REQUEST = message(
    "AddPartitionsToTxnRequest", api_key=ApiKey.ADD_PARTITIONS_TO_TXN, valid="0-5", flexible="3+", fields=[
        f("transactions", "[]AddPartitionsToTxnTransaction", "4+", fields=[
            f("transactional_id", "string", "4+"),
            f("producer_id", "int64", "4+"),
            f("producer_epoch", "int16", "4+"),
            f("verify_only", "bool", "4+"),
            f("topics", "[]AddPartitionsToTxnTopic", "4+", fields=_topics()),
        ]),
        f("v3_and_below_transactional_id", "string", "0-3"),
        f("v3_and_below_producer_id", "int64", "0-3"),
        f("v3_and_below_producer_epoch", "int16", "0-3"),
        f("v3_and_below_topics", "[]AddPartitionsToTxnTopic", "0-3", fields=_topics()),
    ])

ADD_PARTITIONS_TO_TXN_RESPONSE = message(
    "AddPartitionsToTxnResponse", api_key=ApiKey.ADD_PARTITIONS_TO_TXN, valid="0-5", flexible="3+", fields=[
        f("throttle_time_ms", "int32"),
        f("error_code", "int16", "4+"),
        f("results_by_transaction", "[]AddPartitionsToTxnResult", "4+", fields=[
            f("transactional_id", "string", "4+"),
            f("topic_results", "[]AddPartitionsToTxnTopicResult", "4+", fields=_partition_results()),
        ]),
        f("results_by_topic_v3_and_below", "[]AddPartitionsToTxnTopicResult", "0-3", fields=_partition_results()),
    ])

ADD_OFFSETS_TO_TXN_REQUEST = message(
    "AddOffsetsToTxnRequest", api_key=ApiKey.ADD_OFFSETS_TO_TXN, valid="0-4", flexible="3+", fields=[
        f("transactional_id", "string"),
        f("producer_id", "int64"),
        f("producer_epoch", "int16"),
        f("group_id", "string"),
    ])

ADD_OFFSETS_TO_TXN_RESPONSE = message(
    "AddOffsetsToTxnResponse", api_key=ApiKey.ADD_OFFSETS_TO_TXN, valid="0-4", flexible="3+", fields=[
        f("throttle_time_ms", "int32"),
        f("error_code", "int16"),
    ])

END_TXN_REQUEST = message(
    "EndTxnRequest", api_key=ApiKey.END_TXN, valid="0-4", flexible="3+", fields=[
        f("transactional_id", "string"),
        f("producer_id", "int64"),
        f("producer_epoch", "int16"),
        f("committed", "bool"),
    ])

END_TXN_RESPONSE = message(
    "EndTxnResponse", api_key=ApiKey.END_TXN, valid="0-4", flexible="3+", fields=[
        f("throttle_time_ms", "int32"),
        f("error_code", "int16"),
    ])

TXN_OFFSET_COMMIT_REQUEST = message(
    "TxnOffsetCommitRequest", api_key=ApiKey.TXN_OFFSET_COMMIT, valid="0-4", flexible="3+", fields=[
        f("transactional_id", "string"),
        f("group_id", "string"),
        f("producer_id", "int64"),
        f("producer_epoch", "int16"),
        f("generation_id", "int32", "3+", default=-1),
        f("member_id", "string", "3+"),
        f("group_instance_id", "string", "3+", nullable="3+"),
        f("topics", "[]TxnOffsetCommitRequestTopic", fields=[
            f("name", "string"),
            f("partitions", "[]TxnOffsetCommitRequestPartition", fields=[
                f("partition_index", "int32"),
                f("committed_offset", "int64"),
                f("committed_leader_epoch", "int32", "2+", default=-1),
                f("committed_metadata", "string", nullable="0+"),
            ]),
        ]),
    ])

TXN_OFFSET_COMMIT_RESPONSE = message(
    "TxnOffsetCommitResponse", api_key=ApiKey.TXN_OFFSET_COMMIT, valid="0-4", flexible="3+", fields=[
        f("throttle_time_ms", "int32"),
        f("topics", "[]TxnOffsetCommitResponseTopic", fields=[
            f("name", "string"),
            f("partitions", "[]TxnOffsetCommitResponsePartition", fields=[
                f("partition_index", "int32"),
                f("error_code", "int16"),
            ]),
        ]),
    ])

DESCRIBE_TRANSACTIONS_REQUEST = message(
    "DescribeTransactionsRequest", api_key=ApiKey.DESCRIBE_TRANSACTIONS, valid="0", flexible="0+", fields=[
        f("transactional_ids", "[]string"),
    ])

DESCRIBE_TRANSACTIONS_RESPONSE = message(
    "DescribeTransactionsResponse", api_key=ApiKey.DESCRIBE_TRANSACTIONS, valid="0", flexible="0+", fields=[
        f("throttle_time_ms", "int32"),
        f("transaction_states", "[]TransactionState", fields=[
            f("error_code", "int16"),
            f("transactional_id", "string"),
            f("transaction_state", "string"),
            f("transaction_timeout_ms", "int32"),
            f("transaction_start_time_ms", "int64"),
            f("producer_id", "int64"),
            f("producer_epoch", "int16"),
            f("topics", "[]TopicData", fields=[
                f("topic", "string"),
                f("partitions", "[]int32"),
            ]),
        ]),
    ])

LIST_TRANSACTIONS_REQUEST = message(
    "ListTransactionsRequest", api_key=ApiKey.LIST_TRANSACTIONS, valid="0-1", flexible="0+", fields=[
        f("state_filters", "[]string"),
        f("producer_id_filters", "[]int64"),
        f("duration_filter", "int64", "1+", default=-1),
    ])

LIST_TRANSACTIONS_RESPONSE = message(
    "ListTransactionsResponse", api_key=ApiKey.LIST_TRANSACTIONS, valid="0-1", flexible="0+", fields=[
        f("throttle_time_ms", "int32"),
        f("error_code", "int16"),
        f("unknown_state_filters", "[]string"),
        f("transaction_states", "[]TransactionState", fields=[
            f("transactional_id", "string"),
            f("producer_id", "int64"),
            f("transaction_state", "string"),
        ]),
    ])

DESCRIBE_PRODUCERS_REQUEST = message(
    "DescribeProducersRequest", api_key=ApiKey.DESCRIBE_PRODUCERS, valid="0", flexible="0+", fields=[
        f("topics", "[]TopicRequest", fields=[
            f("name", "string"),
            f("partition_indexes", "[]int32"),
        ]),
    ])

DESCRIBE_PRODUCERS_RESPONSE = message(
    "DescribeProducersResponse", api_key=ApiKey.DESCRIBE_PRODUCERS, valid="0", flexible="0+", fields=[
        f("throttle_time_ms", "int32"),
        f("topics", "[]TopicResponse", fields=[
            f("name", "string"),
            f("partitions", "[]PartitionResponse", fields=[
                f("partition_index", "int32"),
                f("error_code", "int16"),
                f("error_message", "string", nullable="0+", default=None),
                f("active_producers", "[]ProducerState", fields=[
                    f("producer_id", "int64"),
                    f("producer_epoch", "int32"),
                    f("last_sequence", "int32", default=-1),
                    f("last_timestamp", "int64", default=-1),
                    f("coordinator_epoch", "int32"),
                    f("current_txn_start_offset", "int64", default=-1),
                ]),
            ]),
        ]),
    ])
