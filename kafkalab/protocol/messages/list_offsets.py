"""ListOffsets (key 2): turn a timestamp into an offset, or ask for the earliest or latest offset.

Special timestamps (Kafka's ``ListOffsetsRequest`` constants, defined here once for the whole
package): -2 asks for the log start offset (earliest); -1 for the latest offset the asker may
read -- for a consumer the high watermark (under read_committed, the last stable offset), for a
replica the log end offset; -3 (KIP-734, v7) for the offset of the record with the largest
timestamp. Any other value asks for the first offset whose batch max timestamp is >= that
timestamp, found through the time index. Worked example: a partition
holding offsets 0-9 with timestamps 1000, 1010, ..., 1090 answers timestamp 1045 with offset 5 and
timestamp 1050; timestamp 5000 with offset -1 (no such record).
"""

from __future__ import annotations

from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.schema import f, message

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3

LIST_OFFSETS_REQUEST = message("ListOffsetsRequest", api_key=ApiKey.LIST_OFFSETS, valid="1-7", flexible="6+", fields=[
    f("replica_id", "int32"),
    f("isolation_level", "int8", "2+"),
    f("topics", "[]ListOffsetsTopic", fields=[
        f("name", "string"),
        f("partitions", "[]ListOffsetsPartition", fields=[
            f("partition_index", "int32"),
            f("current_leader_epoch", "int32", "4+", default=-1),
            f("timestamp", "int64"),
        ]),
    ]),
])

LIST_OFFSETS_RESPONSE = message("ListOffsetsResponse", api_key=ApiKey.LIST_OFFSETS, valid="1-7", flexible="6+", fields=[
    f("throttle_time_ms", "int32", "2+"),
    f("topics", "[]ListOffsetsTopicResponse", fields=[
        f("name", "string"),
        f("partitions", "[]ListOffsetsPartitionResponse", fields=[
            f("partition_index", "int32"),
            f("error_code", "int16"),
            f("timestamp", "int64", "1+", default=-1),
            f("offset", "int64", "1+", default=-1),
            f("leader_epoch", "int32", "4+", default=-1),
        ]),
    ]),
])
