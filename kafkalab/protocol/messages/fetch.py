"""Fetch (key 1): read record batches from partitions, possibly waiting for enough data.

The broker answers at once when it has at least ``min_bytes`` for the request, or when
``max_wait_ms`` passes (the request waits in the fetch purgatory meanwhile). ``max_bytes`` (v3+)
bounds the whole response and ``partition_max_bytes`` each partition, except that the first batch
of the first partition with data is always returned whole so a consumer can make progress
(KIP-74). Record data are whole batches copied straight from the segment file. Worked example: a v4
fetch at offset 0 with ``min_bytes=1, max_wait_ms=500`` on an empty partition is parked; a produce
of one 80-byte batch completes it at once with ``high_watermark=1`` and those 80 bytes.
"""

from __future__ import annotations

from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.schema import f, message

FETCH_REQUEST = message("FetchRequest", api_key=ApiKey.FETCH, valid="4-12", flexible="12+", fields=[
    f("cluster_id", "string", "12+", nullable="12+", tag=0),
    f("replica_id", "int32", "0-14", default=-1),
    f("max_wait_ms", "int32"),
    f("min_bytes", "int32"),
    f("max_bytes", "int32", "3+", default=0x7FFFFFFF),
    f("isolation_level", "int8", "4+"),
    f("session_id", "int32", "7+"),
    f("session_epoch", "int32", "7+", default=-1),
    f("topics", "[]FetchTopic", fields=[
        f("topic", "string", "0-12"),
        f("partitions", "[]FetchPartition", fields=[
            f("partition", "int32"),
            f("current_leader_epoch", "int32", "9+", default=-1),
            f("fetch_offset", "int64"),
            f("last_fetched_epoch", "int32", "12+", default=-1),
            f("log_start_offset", "int64", "5+", default=-1),
            f("partition_max_bytes", "int32"),
        ]),
    ]),
    f("forgotten_topics_data", "[]ForgottenTopic", "7+", fields=[
        f("topic", "string", "7-12"),
        f("partitions", "[]int32", "7+"),
    ]),
    f("rack_id", "string", "11+"),
])

FETCH_RESPONSE = message("FetchResponse", api_key=ApiKey.FETCH, valid="4-12", flexible="12+", fields=[
    f("throttle_time_ms", "int32", "1+"),
    f("error_code", "int16", "7+"),
    f("session_id", "int32", "7+"),
    f("responses", "[]FetchableTopicResponse", fields=[
        f("topic", "string", "0-12"),
        f("partitions", "[]PartitionData", fields=[
            f("partition_index", "int32"),
            f("error_code", "int16"),
            f("high_watermark", "int64"),
            f("last_stable_offset", "int64", "4+", default=-1),
            f("log_start_offset", "int64", "5+", default=-1),
            f("aborted_transactions", "[]AbortedTransaction", "4+", nullable="4+", default=None,
              fields=[
                f("producer_id", "int64", "4+"),
                f("first_offset", "int64", "4+"),
            ]),
            f("diverging_epoch", "EpochEndOffset", "12+", tag=0, default=None, fields=[
                f("epoch", "int32", "12+", default=-1),
                f("end_offset", "int64", "12+", default=-1),
            ]),
            f("preferred_read_replica", "int32", "11+", default=-1),
            f("records", "records", nullable="0+"),
        ]),
    ]),
])
