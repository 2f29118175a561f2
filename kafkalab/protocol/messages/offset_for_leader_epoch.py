"""OffsetForLeaderEpoch (key 23): where did leader epoch N end in your log? (KIP-101, KIP-320)

A follower asks it to find where its log diverges from its leader's; a consumer asks it after a
leader change to check that the position it holds still exists in the new leader's history
(KIP-320), and truncates its position if not. v2 adds ``current_leader_epoch`` for fencing,
v3 ``replica_id`` (-1 for consumers), v4 is flexible. Worked example: asking about epoch 3 of a
log whose epochs are [(0, 0), (3, 120), (5, 300)] answers ``leader_epoch=3, end_offset=300``.
"""

from __future__ import annotations

from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.schema import f, message

OFFSET_FOR_LEADER_EPOCH_REQUEST = message(
    "OffsetForLeaderEpochRequest", api_key=ApiKey.OFFSET_FOR_LEADER_EPOCH, valid="2-4", flexible="4+", fields=[
        f("replica_id", "int32", "3+", default=-2),
        f("topics", "[]OffsetForLeaderTopic", fields=[
            f("topic", "string"),
            f("partitions", "[]OffsetForLeaderPartition", fields=[
                f("partition", "int32"),
                f("current_leader_epoch", "int32", "2+", default=-1),
                f("leader_epoch", "int32"),
            ]),
        ]),
    ])

OFFSET_FOR_LEADER_EPOCH_RESPONSE = message(
    "OffsetForLeaderEpochResponse", api_key=ApiKey.OFFSET_FOR_LEADER_EPOCH, valid="2-4", flexible="4+", fields=[
        f("throttle_time_ms", "int32", "2+"),
        f("topics", "[]OffsetForLeaderTopicResult", fields=[
            f("topic", "string"),
            f("partitions", "[]EpochEndOffset", fields=[
                f("error_code", "int16"),
                f("partition", "int32"),
                f("leader_epoch", "int32", "1+", default=-1),
                f("end_offset", "int64", default=-1),
            ]),
        ]),
    ])
