"""DeleteRecords (key 21): move a partition's log start offset forward.

Records below the new log start offset become invisible at once and their segments are deleted
later by retention. ``offset=-1`` means "up to the high watermark". The response returns the new
*low watermark* (the log start offset). Worked example: on a partition holding offsets 0-99,
deleting before 40 answers ``low_watermark=40``; a later fetch at offset 10 fails with
OFFSET_OUT_OF_RANGE; deleting before 500 answers OFFSET_OUT_OF_RANGE (1).
"""

from __future__ import annotations

from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.schema import f, message

DELETE_RECORDS_REQUEST = message("DeleteRecordsRequest", api_key=ApiKey.DELETE_RECORDS, valid="0-2", flexible="2+", fields=[
    f("topics", "[]DeleteRecordsTopic", fields=[
        f("name", "string"),
        f("partitions", "[]DeleteRecordsPartition", fields=[
            f("partition_index", "int32"),
            f("offset", "int64"),
        ]),
    ]),
    f("timeout_ms", "int32"),
])

DELETE_RECORDS_RESPONSE = message("DeleteRecordsResponse", api_key=ApiKey.DELETE_RECORDS, valid="0-2", flexible="2+", fields=[
    f("throttle_time_ms", "int32"),
    f("topics", "[]DeleteRecordsTopicResult", fields=[
        f("name", "string"),
        f("partitions", "[]DeleteRecordsPartitionResult", fields=[
            f("partition_index", "int32"),
            f("low_watermark", "int64"),
            f("error_code", "int16"),
        ]),
    ]),
])
