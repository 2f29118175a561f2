"""Counters of one clean, as Kafka's ``CleanerStats`` logs them."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class CleanerStats:
    """Filled in by one clean. Not thread-safe; owned by that clean."""

    bytes_read: int = 0
    bytes_written: int = 0
    map_bytes_read: int = 0
    map_records: int = 0
    records_read: int = 0
    records_kept: int = 0
    tombstones_removed: int = 0
    unkeyed_removed: int = 0
    batches_rewritten: int = 0
    empty_batches_kept: int = 0
    legacy_chunks: int = 0  # chunks with v0/v1 entries, cleaned by the reference path
    # The earliest delete horizon among the batches written: when it passes, a clean can drop
    # a tombstone (the manager uses it to pick a log with nothing else to do).
    earliest_delete_horizon_ms: int | None = None
    groups: list[list[int]] = field(default_factory=list)

    def saw_delete_horizon(self, horizon_ms: int) -> None:
        if self.earliest_delete_horizon_ms is None or horizon_ms < self.earliest_delete_horizon_ms:
            self.earliest_delete_horizon_ms = horizon_ms
