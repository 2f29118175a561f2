"""One partition's idempotent producers: appends, snapshots, recovery, expiration.

Mirrors Kafka's ``ProducerStateManager`` and the producer-state parts of ``UnifiedLog`` and
``LogLoader``. The rules for a single batch live in :mod:`kafkalab.storage.producer_state`;
this module keeps the map ``producer id -> ProducerStateEntry`` and its files.

Theory of operation
-------------------
*Appending.* :meth:`ProducerStateManager.analyze` looks at the batches of one append, after
the leader gave them offsets and before anything is written. A client batch that repeats one
of its producer's last five batches is a *duplicate*: the append stops there and the producer
is answered with the original offsets. Otherwise each producer's batches are checked, and the
new state is applied with :meth:`~ProducerStateManager.commit` only once the bytes are in the
segment, so a rejected append leaves the state untouched.

*Snapshots.* ``<offset>.snapshot`` holds every producer's epoch and *last* batch as of that
offset (:mod:`~kafkalab.storage.producer_snapshot`). One is written when a segment rolls,
named by the new segment's base offset, and one at the log end offset on close::

    orders-0/
      00000000000000000000.log  ...
      00000000000000000042.log  ...  00000000000000000042.snapshot   state before offset 42
      00000000000000000098.log  ...  00000000000000000098.snapshot   state before offset 98
                                     00000000000000000131.snapshot   clean shutdown at LEO 131

A snapshot goes when the segment it is named after is deleted (by retention, which also removes
the segments below a DeleteRecords log start offset). On load, snapshots that no segment starts
at are removed, except the newest one if it is at or past the last segment's base (Kafka's
``removeStraySnapshots``).

*Recovery* (:func:`rebuild_producer_state`): drop snapshots above the log end offset or at or
below the log start offset, load the newest one that passes its CRC, and replay every batch
from its offset to the log end offset. Worked example for the directory above after a crash
that left the LEO at 120 (the 131 snapshot was never written): load ``98.snapshot``, replay
the batches at offsets 98..119, then write ``120.snapshot``. After a *clean* shutdown with no
snapshot at all (a directory written before kafkalab kept producer state) nothing is replayed:
empty snapshots are written at the last two segment bases and the LEO, as Kafka does.

*Transactions.* The open transactions (the first offset of each producer's open transaction),
the last stable offset and the ``.txnindex`` entries live in :mod:`kafkalab.storage.transactions`;
:meth:`~ProducerStateManager.commit` returns the transactions an append completed for the log
to index. Recovery rebuilds both: a snapshot's ``currentTxnFirstOffset`` reopens a transaction,
and a replayed ABORT marker whose entry is missing from its segment's ``.txnindex`` adds it.

*Expiration.* A producer whose last batch is older than ``producer.id.expiration.ms``
(default one day) and that has no open transaction is forgotten, by a periodic check
(``producer.id.expiration.check.interval.ms``, ten minutes) and when a snapshot is loaded. Its
next batch is then accepted with any sequence, as a new producer's.
"""

from __future__ import annotations

import mmap
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from kafkalab.errors import CorruptRecordError
from kafkalab.records import decode_batch
from kafkalab.records.control import ControlRecord, parse_control_record
from kafkalab.records.header import MAGIC_OFFSET, BatchHeader, read_header
from kafkalab.storage.producer_snapshot import (
    ProducerSnapshotEntry,
    read_snapshot,
    snapshot_file_name,
    write_snapshot,
)
from kafkalab.storage.producer_state import (
    AppendOrigin,
    BatchMetadata,
    CompletedTxn,
    ProducerAppendInfo,
    ProducerStateEntry,
)
from kafkalab.storage.segment import LogSegment
from kafkalab.storage.transactions import Transactions, index_completed

PRODUCER_ID_EXPIRATION_MS = 86_400_000  # producer.id.expiration.ms default (KIP-854)
_SNAPSHOT_FILE = re.compile(r"^(?P<offset>\d{20})\.snapshot$")


class ProducerStateManager:
    """The producers of one partition and their snapshot files. Not thread-safe; owned by one
    :class:`~kafkalab.storage.log.Log`."""

    def __init__(self, directory: Path, *, producer_id_expiration_ms: int = PRODUCER_ID_EXPIRATION_MS) -> None:
        self.directory = Path(directory)
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self.producers: dict[int, ProducerStateEntry] = {}
        self.transactions = Transactions()
        self.map_end_offset = 0  # the state describes the log below this offset
        self.last_snapshot_offset = 0
        self._snapshots = list_snapshot_files(self.directory)

    # -- appends ------------------------------------------------------------------------------

    def prepare_update(self, producer_id: int, origin: AppendOrigin) -> ProducerAppendInfo:
        current = self.producers.get(producer_id) or ProducerStateEntry(producer_id)
        return ProducerAppendInfo(producer_id, current, origin)

    def analyze(
        self, headers: Sequence[BatchHeader], origin: AppendOrigin, append_time_ms: int | None = None,
        records: bytes | bytearray | memoryview | None = None,
    ) -> tuple[dict[int, ProducerAppendInfo], BatchMetadata | None]:
        """Check every producer batch of one append (offsets already assigned). Returns the
        pending updates, or -- for a client's retried batch -- the remembered duplicate, in which
        case nothing must be appended. Raises the sequence and epoch errors. ``records`` (the
        append's bytes) is needed when the append holds control batches: a marker's
        coordinator epoch is inside its record.

        ``append_time_ms`` is the broker's time for a ``LogAppendTime`` topic: the batch's
        timestamp as it will be written. Mirrors ``UnifiedLog.analyzeAndValidateProducerState``."""
        updates: dict[int, ProducerAppendInfo] = {}
        pairs = with_markers(records, headers) if records is not None else ((h, None) for h in headers)
        for header, control in pairs:
            producer_id = header.producer_id
            if producer_id < 0:
                continue
            if origin is AppendOrigin.CLIENT:
                known = self.producers.get(producer_id)
                duplicate = known.find_duplicate(header) if known is not None else None
                if duplicate is not None:
                    return {}, duplicate
            info = updates.get(producer_id)
            if info is None:
                info = updates[producer_id] = self.prepare_update(producer_id, origin)
            info.append(header, header.max_timestamp if append_time_ms is None else append_time_ms, control)
        return updates, None

    def commit(self, updates: dict[int, ProducerAppendInfo]) -> list[CompletedTxn]:
        """Apply what :meth:`analyze` prepared, once the batches are written. Returns the
        transactions the append completed, in offset order, for the log to pass to
        :func:`~kafkalab.storage.transactions.index_completed`."""
        completed: list[CompletedTxn] = []
        for producer_id, info in updates.items():
            current = self.producers.get(producer_id)
            if current is None:
                self.producers[producer_id] = info.updated
            else:
                current.update(info.updated)
            for first_offset in info.started_txn_first_offsets:
                self.transactions.start(producer_id, first_offset)
            completed.extend(info.completed_txns)
        completed.sort(key=lambda txn: txn.last_offset)
        return completed

    def append_replayed(
        self, batches: Iterable[tuple[BatchHeader, ControlRecord | None]], segment: LogSegment | None = None,
    ) -> None:
        """Rebuild state from batches already in the log (recovery, follower appends), each
        with its decoded control record when it is a control batch (:func:`with_markers`);
        aborted transactions go to ``segment``'s ``.txnindex`` (the segment holding them)."""
        for header, control in batches:
            if header.producer_id >= 0:
                info = self.prepare_update(header.producer_id, AppendOrigin.REPLICATION)
                info.append(header, header.max_timestamp, control)
                completed = self.commit({header.producer_id: info})
                if completed and segment is not None:
                    index_completed(self.transactions, completed, segment)
                elif completed:
                    for txn in completed:
                        self.transactions.complete(txn)
            self.map_end_offset = header.last_offset + 1

    # -- expiration ---------------------------------------------------------------------------

    def is_expired(self, entry: ProducerStateEntry, now_ms: int, expiration_ms: int) -> bool:
        return entry.current_txn_first_offset is None and now_ms - entry.last_timestamp_ms >= expiration_ms

    def remove_expired_producers(self, now_ms: int, expiration_ms: int | None = None) -> int:
        """Forget idle producers (``producer.id.expiration.ms``); returns how many went."""
        if expiration_ms is not None:
            self.producer_id_expiration_ms = expiration_ms
        limit = self.producer_id_expiration_ms
        expired = [pid for pid, entry in self.producers.items() if self.is_expired(entry, now_ms, limit)]
        for producer_id in expired:
            del self.producers[producer_id]
        return len(expired)

    # -- snapshots ----------------------------------------------------------------------------

    @property
    def snapshot_offsets(self) -> list[int]:
        return sorted(self._snapshots)

    @property
    def latest_snapshot_offset(self) -> int | None:
        return max(self._snapshots, default=None)

    def take_snapshot(self, offset: int | None = None, *, sync: bool = True) -> Path | None:
        """Write ``<offset>.snapshot`` (default: :attr:`map_end_offset`) unless the state has
        not moved since the last one."""
        if offset is not None:
            self.map_end_offset = offset
        if self.map_end_offset <= self.last_snapshot_offset:
            return None
        path = snapshot_file_name(self.directory, self.map_end_offset)
        write_snapshot(path, [to_snapshot_entry(e) for e in self.producers.values()], sync=sync)
        self._snapshots[self.map_end_offset] = path
        self.last_snapshot_offset = self.map_end_offset
        return path

    def delete_snapshot(self, offset: int) -> None:
        path = self._snapshots.pop(offset, None)
        if path is not None:
            path.unlink(missing_ok=True)

    def delete_snapshots_of_segments(self, base_offsets: Iterable[int]) -> None:
        """A deleted segment takes the snapshot named after its base offset with it."""
        for base in base_offsets:
            self.delete_snapshot(base)

    def remove_stray_snapshots(self, segment_base_offsets: Iterable[int]) -> None:
        """Keep the snapshots at segment bases, and the newest other one only if it is at or
        past the last segment's base (Kafka's ``removeStraySnapshots``)."""
        bases = set(segment_base_offsets)
        self._snapshots = list_snapshot_files(self.directory)
        strays = [offset for offset in sorted(self._snapshots) if offset not in bases]
        for offset in strays[:-1]:
            self.delete_snapshot(offset)
        if strays and bases and strays[-1] < max(bases):
            self.delete_snapshot(strays[-1])

    def on_log_start_offset_incremented(self, log_start_offset: int) -> None:
        self.transactions.on_log_start_offset_incremented(log_start_offset)
        self.map_end_offset = max(self.map_end_offset, log_start_offset)
        self.last_snapshot_offset = self.latest_snapshot_offset or log_start_offset

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self.producers.clear()
        self.transactions.clear()
        for snapshot in list(self._snapshots):
            self.delete_snapshot(snapshot)
        self.last_snapshot_offset = 0
        self.map_end_offset = offset

    def truncate_and_reload(self, log_start_offset: int, log_end_offset: int, now_ms: int) -> None:
        """Drop snapshots outside (log start, log end] and, unless the state already ends at
        ``log_end_offset``, restart from the newest snapshot left."""
        for offset in list(self._snapshots):
            if offset > log_end_offset or offset <= log_start_offset:
                self.delete_snapshot(offset)
        if log_end_offset != self.map_end_offset:
            self.producers.clear()
            self.transactions.clear()
            self._load_from_snapshot(log_start_offset, now_ms)
        else:
            self.on_log_start_offset_incremented(log_start_offset)

    def _load_from_snapshot(self, log_start_offset: int, now_ms: int) -> None:
        while self._snapshots:  # each pass removes a corrupt snapshot, so it ends
            offset = max(self._snapshots)
            try:
                entries = read_snapshot(self._snapshots[offset])
            except (CorruptRecordError, OSError):
                self.delete_snapshot(offset)  # Kafka logs it and falls back to an older one
                continue
            for entry in entries:
                loaded = from_snapshot_entry(entry)
                if not self.is_expired(loaded, now_ms, self.producer_id_expiration_ms):
                    self.producers[loaded.producer_id] = loaded
            self.transactions.load((e.current_txn_first_offset, e.producer_id)
                                   for e in self.producers.values() if e.current_txn_first_offset is not None)
            self.map_end_offset = self.last_snapshot_offset = offset
            return
        self.map_end_offset = self.last_snapshot_offset = log_start_offset


def list_snapshot_files(directory: Path) -> dict[int, Path]:
    if not directory.is_dir():
        return {}
    found = {}
    for path in directory.iterdir():
        match = _SNAPSHOT_FILE.match(path.name)
        if match and path.is_file():
            found[int(match["offset"])] = path
    return found


def to_snapshot_entry(entry: ProducerStateEntry) -> ProducerSnapshotEntry:
    """Only the last batch is kept in a snapshot, as in Kafka's ``writeSnapshot``."""
    txn_first = entry.current_txn_first_offset
    return ProducerSnapshotEntry(
        entry.producer_id, entry.producer_epoch, entry.last_seq, entry.last_data_offset,
        entry.last_offset_delta, entry.last_timestamp_ms, entry.coordinator_epoch,
        -1 if txn_first is None else txn_first,
    )


def from_snapshot_entry(entry: ProducerSnapshotEntry) -> ProducerStateEntry:
    batches: tuple[BatchMetadata, ...] = ()
    if entry.last_offset >= 0:
        batches = (BatchMetadata(entry.last_sequence, entry.last_offset, entry.offset_delta, entry.timestamp_ms),)
    return ProducerStateEntry(
        entry.producer_id, entry.producer_epoch, coordinator_epoch=entry.coordinator_epoch,
        last_timestamp_ms=entry.timestamp_ms, batches=batches,
        current_txn_first_offset=entry.current_txn_first_offset if entry.current_txn_first_offset >= 0 else None,
    )


# -- recovery ----------------------------------------------------------------------------------


def rebuild_producer_state(
    manager: ProducerStateManager, segments: Sequence[LogSegment], *, log_start_offset: int,
    last_offset: int, had_clean_shutdown: bool, now_ms: int,
) -> None:
    """Bring ``manager`` to the state of the log below ``last_offset`` (Kafka's
    ``UnifiedLog.rebuildProducerState``): newest usable snapshot, then replay."""
    snapshot_points = [s.base_offset for s in segments[-2:]] + [last_offset]
    if manager.latest_snapshot_offset is None and had_clean_shutdown:
        # No snapshot after a clean shutdown: the log predates producer state. Scanning it all
        # would be slow, so start empty here, as Kafka does after an upgrade.
        for offset in snapshot_points:
            manager.take_snapshot(offset)
        return
    was_empty = not manager.producers and manager.map_end_offset >= last_offset
    manager.truncate_and_reload(log_start_offset, last_offset, now_ms)
    if last_offset > manager.map_end_offset and not was_empty:
        _replay(manager, segments, log_start_offset, last_offset, snapshot_points)
    manager.take_snapshot(last_offset)


def _replay(
    manager: ProducerStateManager, segments: Sequence[LogSegment], log_start_offset: int,
    last_offset: int, snapshot_points: list[int],
) -> None:
    """Replay the batches in [map end offset, last_offset), segment by segment."""
    start = max(manager.map_end_offset, log_start_offset)
    for slot, segment in enumerate(segments):
        if slot + 1 < len(segments) and segments[slot + 1].base_offset <= start:
            continue  # wholly below where the state already reaches
        if segment.base_offset >= last_offset:
            break
        manager.map_end_offset = max(segment.base_offset, manager.map_end_offset, log_start_offset)
        if segment.base_offset in snapshot_points:
            manager.take_snapshot()
        manager.append_replayed(segment_batches(segment, manager.map_end_offset, last_offset), segment)


def with_markers(
    buf: bytes | bytearray | memoryview | mmap.mmap, headers: Iterable[BatchHeader]
) -> Iterator[tuple[BatchHeader, ControlRecord | None]]:
    """Pair each header with its control record when it is a control batch of a producer (the
    marker's coordinator epoch is inside the record; a control batch holds one record)."""
    for header in headers:
        control = None
        if header.is_control and header.producer_id >= 0:
            records = decode_batch(buf, header).records
            control = parse_control_record(records[0]) if records else None
        yield header, control


def segment_batches(
    segment: LogSegment, start_offset: int, end_offset: int
) -> Iterator[tuple[BatchHeader, ControlRecord | None]]:
    """Headers of the v2 batches of ``segment`` that end at or after ``start_offset`` and
    begin before ``end_offset``, read from a map of the file (only the headers are touched)."""
    first = segment.translate_offset(start_offset)
    if first is None or segment.size_bytes == 0:
        return
    with mmap.mmap(segment.fd, segment.size_bytes, access=mmap.ACCESS_READ) as view:
        for entry in segment.entries_from(first.position):
            if entry.base_offset >= end_offset:
                return
            if view[entry.position + MAGIC_OFFSET] == 2:  # only v2 batches carry producer ids
                yield from with_markers(view, (read_header(view, entry.position),))
