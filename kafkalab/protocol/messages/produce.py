"""Produce (key 0): append record batches to partitions, acknowledged per ``acks``.

From v3 every partition carries exactly one magic-2 record batch and the request names its
transactional id (null outside transactions). ``acks=0`` gets no response at all; ``acks=1`` and
``acks=-1`` (all) are answered once the batch is in the log (a single-replica broker has nothing
more to wait for). zstd batches are accepted only from v7 (KIP-110). Worked example: a v7 request
with one 3-record batch for ``orders-0`` on an empty log is answered ``base_offset=0,
log_start_offset=0, error_code=0``; the next batch gets base offset 3.
"""

from __future__ import annotations

from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.schema import f, message

PRODUCE_REQUEST = message("ProduceRequest", api_key=ApiKey.PRODUCE, valid="3-9", flexible="9+", fields=[
    f("transactional_id", "string", "3+", nullable="3+"),
    f("acks", "int16"),
    f("timeout_ms", "int32"),
    f("topic_data", "[]TopicProduceData", fields=[
        f("name", "string"),
        f("partition_data", "[]PartitionProduceData", fields=[
            f("index", "int32"),
            f("records", "records", nullable="0+"),
        ]),
    ]),
])

PRODUCE_RESPONSE = message("ProduceResponse", api_key=ApiKey.PRODUCE, valid="3-9", flexible="9+", fields=[
    f("responses", "[]TopicProduceResponse", fields=[
        f("name", "string"),
        f("partition_responses", "[]PartitionProduceResponse", fields=[
            f("index", "int32"),
            f("error_code", "int16"),
            f("base_offset", "int64"),
            f("log_append_time_ms", "int64", "2+", default=-1),
            f("log_start_offset", "int64", "5+", default=-1),
            f("record_errors", "[]BatchIndexAndErrorMessage", "8+", fields=[
                f("batch_index", "int32", "8+"),
                f("batch_index_error_message", "string", "8+", nullable="8+"),
            ]),
            f("error_message", "string", "8+", nullable="8+"),
        ]),
    ]),
    f("throttle_time_ms", "int32", "1+"),
])
