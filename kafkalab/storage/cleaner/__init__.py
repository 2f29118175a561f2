"""Log compaction: the offset map, one clean (:mod:`.cleaner`), and the choice of which log to
clean with its ``cleaner-offset-checkpoint`` (:mod:`.manager`)."""

from kafkalab.storage.cleaner.cleaner import Cleaner, CleanerStats, CleanResult
from kafkalab.storage.cleaner.manager import CleanerCheckpoint, LogCleaner, LogToClean, cleanable_offsets, log_to_clean
from kafkalab.storage.cleaner.offset_map import OffsetMap

__all__ = [
    "CleanResult",
    "Cleaner",
    "CleanerCheckpoint",
    "CleanerStats",
    "LogCleaner",
    "LogToClean",
    "OffsetMap",
    "cleanable_offsets",
    "log_to_clean",
]
