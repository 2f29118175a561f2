"""WriteTxnMarkers (key 27): the transaction coordinator asks partition leaders to end a transaction.

When a transactional producer commits or aborts (EndTxn), its coordinator writes the decision
to ``__transaction_state`` and then sends each leader of a partition the transaction touched a
*marker* to append: a one-record control batch, COMMIT or ABORT, carrying the producer id, the
producer epoch and the coordinator epoch (see :mod:`kafkalab.records.control`). Brokers send it
to brokers; clients never do. One request may carry markers for several producers.

Kafka 4.0 removed v0 (KIP-896); v1 is the flexible baseline kafkalab implements. Worked example:
``markers=[{producer_id=4000, producer_epoch=2, transaction_result=true (COMMIT),
topics=[{name="orders", partition_indexes=[0, 3]}], coordinator_epoch=7}]`` is answered
``markers=[{producer_id=4000, topics=[{name="orders", partitions=[{0, error 0}, {3, error 0}]}]}]``.
"""

from __future__ import annotations

from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.schema import f, message

WRITE_TXN_MARKERS_REQUEST = message(
    "WriteTxnMarkersRequest", api_key=ApiKey.WRITE_TXN_MARKERS, valid="1-1", flexible="1+", fields=[
        f("markers", "[]WritableTxnMarker", fields=[
            f("producer_id", "int64"),
            f("producer_epoch", "int16"),
            f("transaction_result", "bool"),  # false = ABORT, true = COMMIT
            f("topics", "[]WritableTxnMarkerTopic", fields=[
                f("name", "string"),
                f("partition_indexes", "[]int32"),
            ]),
            f("coordinator_epoch", "int32"),
        ]),
    ])

WRITE_TXN_MARKERS_RESPONSE = message(
    "WriteTxnMarkersResponse", api_key=ApiKey.WRITE_TXN_MARKERS, valid="1-1", flexible="1+", fields=[
        f("markers", "[]WritableTxnMarkerResult", fields=[
            f("producer_id", "int64"),
            f("topics", "[]WritableTxnMarkerTopicResult", fields=[
                f("name", "string"),
                f("partitions", "[]WritableTxnMarkerPartitionResult", fields=[
                    f("partition_index", "int32"),
                    f("error_code", "int16"),
                ]),
            ]),
        ]),
    ])
