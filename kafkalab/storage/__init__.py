"""kafkalab's storage engine: Kafka's on-disk log, byte for byte.

A partition is a directory of segments (``.log`` + ``.index`` + ``.timeindex`` +
``.txnindex``) plus checkpoint files; :class:`Log` appends, reads, rolls, truncates and recovers
it, and :class:`LogManager` looks after every partition under ``log.dirs``. Directories written
by kafkalab open in Apache Kafka and the other way round.
"""

from kafkalab.storage.checkpoints import CorruptCheckpointError
from kafkalab.storage.events import (
    Flushed,
    IndexEntryAppended,
    LookupStep,
    Recovered,
    SegmentRolled,
    SegmentsDeleted,
    Truncated,
)
from kafkalab.storage.leader_epoch import LeaderEpochCache
from kafkalab.storage.log import Log, TimestampAndOffset
from kafkalab.storage.log_append import LogAppendInfo
from kafkalab.storage.log_config import LogConfig
from kafkalab.storage.log_manager import LogManager
from kafkalab.storage.offset_index import OffsetIndex, OffsetPosition
from kafkalab.storage.producer_snapshot import ProducerSnapshotEntry, read_snapshot, write_snapshot
from kafkalab.storage.positions import EntryPosition, FetchDataInfo, FileSlice
from kafkalab.storage.segment import LogSegment
from kafkalab.storage.time_index import TimeIndex, TimestampOffset
from kafkalab.storage.txn_index import AbortedTxn, TransactionIndex

__all__ = [
    "AbortedTxn",
    "CorruptCheckpointError",
    "EntryPosition",
    "FetchDataInfo",
    "FileSlice",
    "Flushed",
    "IndexEntryAppended",
    "LeaderEpochCache",
    "Log",
    "LogAppendInfo",
    "LogConfig",
    "LogManager",
    "LogSegment",
    "LookupStep",
    "OffsetIndex",
    "OffsetPosition",
    "ProducerSnapshotEntry",
    "Recovered",
    "SegmentRolled",
    "SegmentsDeleted",
    "TimeIndex",
    "TimestampAndOffset",
    "TimestampOffset",
    "TransactionIndex",
    "Truncated",
    "read_snapshot",
    "write_snapshot",
]
