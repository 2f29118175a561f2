"""Log compaction: the offset maps, the retention rules, one clean (:mod:`.cleaner`, with a
compiled :mod:`.fast_path` over :mod:`.chunks` and a readable :mod:`.reference` path), and the choice of which
log to clean with its ``cleaner-offset-checkpoint`` (:mod:`.manager`)."""

from kafkalab.storage.cleaner.cleaner import Cleaner, CleanResult
from kafkalab.storage.cleaner.fast_map import FastOffsetMap
from kafkalab.storage.cleaner.manager import CleanerCheckpoint, LogCleaner, LogToClean, cleanable_offsets, log_to_clean
from kafkalab.storage.cleaner.offset_map import OffsetMap
from kafkalab.storage.cleaner.rules import LastRecord
from kafkalab.storage.cleaner.stats import CleanerStats

__all__ = [
    "CleanResult",
    "Cleaner",
    "CleanerCheckpoint",
    "CleanerStats",
    "FastOffsetMap",
    "LastRecord",
    "LogCleaner",
    "LogToClean",
    "OffsetMap",
    "cleanable_offsets",
    "log_to_clean",
]
