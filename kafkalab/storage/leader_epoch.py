"""The leader epoch cache: which leader epoch started at which offset (KIP-101).

Mirrors Kafka's ``LeaderEpochFileCache``. Every batch a leader writes carries its partition
leader epoch; the cache keeps one ``(epoch, start_offset)`` pair per epoch, the first offset
written in it, and is saved as ``leader-epoch-checkpoint`` in the partition directory.
Followers use it to find where their log diverges from a new leader's.

Example: epoch 0 writes offsets 0..119, then a new leader (epoch 3) writes from 120::

    assign(0, 0); assign(0, 5); assign(3, 120)   ->  [(0, 0), (3, 120)]
    end_offset_for(0) == 120, end_offset_for(3) == log end offset
    truncate_from_end(100)                        ->  [(0, 0)]
"""

from __future__ import annotations

from pathlib import Path

from kafkalab.storage import checkpoints

UNDEFINED = (-1, -1)  # Kafka's (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)


class LeaderEpochCache:
    """Epoch start offsets of one partition. Not thread-safe; owned by one :class:`Log`."""

    def __init__(self, path: Path, entries: list[tuple[int, int]] | None = None) -> None:
        self.path = Path(path)
        self._entries: list[tuple[int, int]] = list(entries or [])
        # Written only after a change: the checkpoint costs two fsyncs (file and directory).
        self.dirty = not self.path.exists()

    @classmethod
    def load(cls, path: Path) -> LeaderEpochCache:
        return cls(path, checkpoints.read_leader_epochs(path))

    @property
    def entries(self) -> list[tuple[int, int]]:
        return list(self._entries)

    @property
    def latest_epoch(self) -> int | None:
        return self._entries[-1][0] if self._entries else None

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` begins at ``start_offset`` if it is newer than the last one,
        and write the checkpoint at once, as Kafka's ``LeaderEpochFileCache.assign`` does: a
        new epoch is rare (a leader change), and a follower truncating after a crash must find
        every epoch that reached its log. Truncations only mark the cache dirty; it is written
        with the next flush (Kafka flushes those in the background)."""
        if epoch < 0:
            return False
        if self._entries and epoch <= self._entries[-1][0]:
            return False
        # A newer epoch must not start before the previous one did; drop any that would.
        while self._entries and self._entries[-1][1] >= start_offset:
            self._entries.pop()
        self._entries.append((epoch, start_offset))
        if self.path.parent.is_dir():
            self.write()
        else:
            self.dirty = True  # the partition directory is not there (yet): written with it
        return True

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) as OffsetsForLeaderEpoch answers, mirroring Kafka's
        ``LeaderEpochFileCache.endOffsetFor``; ``(-1, -1)`` means undefined.

        * the latest epoch ends at the log end offset (it is still being written);
        * an older epoch ends where the next known epoch starts, and is reported as the largest
          known epoch at or below the one asked for (the asker may never have seen that one);
        * an epoch below every known one reports itself, ending at the first known start (its
          data is gone, and the asker should replicate from there);
        * an epoch above every known one, or -1, is undefined."""
        entries = self._entries
        if epoch < 0 or not entries:
            return UNDEFINED
        if epoch == entries[-1][0]:
            return epoch, log_end_offset
        floor = None
        for known, start in entries:
            if known > epoch:
                return (floor if floor is not None else epoch), start
            floor = known
        return UNDEFINED

    def truncate_from_end(self, end_offset: int) -> None:
        """Forget epochs that start at or after ``end_offset`` (the log was truncated there)."""
        kept = [(e, s) for e, s in self._entries if s < end_offset]
        self.dirty = self.dirty or kept != self._entries
        self._entries = kept

    def truncate_from_start(self, start_offset: int) -> None:
        """Move the first kept epoch's start up to ``start_offset`` (log start moved)."""
        kept = [(e, s) for e, s in self._entries if s >= start_offset]
        earlier = [(e, s) for e, s in self._entries if s < start_offset]
        if earlier:
            kept.insert(0, (earlier[-1][0], start_offset))
        self.dirty = self.dirty or kept != self._entries
        self._entries = kept

    def clear(self) -> None:
        self.dirty = self.dirty or bool(self._entries)
        self._entries = []

    def write(self) -> None:
        checkpoints.write_leader_epochs(self.path, self._entries)
        self.dirty = False

    def maybe_write(self) -> None:
        """Write the checkpoint if anything changed since the last write."""
        if self.dirty:
            self.write()
