"""One partition's log: a directory of segments with absolute offsets (Kafka's ``UnifiedLog``).

The log speaks the vocabulary of the partition -- log start offset, log end offset (LEO), high
watermark, recovery point -- and translates to segments, which speak positions and relative
offsets. Segments are kept sorted by base offset; finding the segment that holds an offset is
a floor search (Kafka uses a skip-list map, kafkalab ``bisect`` over the sorted base offsets)::

    orders-0/
      00000000000000000000.log  .index  .timeindex     offsets   0..41   (read-only)
      00000000000000000042.log  .index  .timeindex     offsets  42..97   (read-only)
      00000000000000000098.log  .index  .timeindex     offsets  98..     (active)
      leader-epoch-checkpoint   partition.metadata

    log start offset = 0 <= high watermark <= log end offset = 131
                              recovery point: everything below it is fsynced

Worked example -- finding offset 60: ``bisect`` over [0, 42, 98] picks segment 42; its
offset index gives the last entry at or below 60, say (57, 2048); the scan from byte 2048
reads batch headers until one ends at or after offset 60. With listeners attached, each of
those steps is reported as a :class:`~kafkalab.storage.events.LookupStep`.

Appends go to the active segment, which is rolled first when one of Kafka's four conditions
holds (see :meth:`LogSegment.should_roll`). ``flush.messages`` and ``flush.ms`` decide when
appended data is fsynced; the recovery point then moves up, and on the next unclean start
only the segments from the recovery point on are validated (:mod:`kafkalab.storage.recovery`).

Batches from idempotent producers (producer id >= 0) also pass the log's
:class:`~kafkalab.storage.producer_state_manager.ProducerStateManager`: a resent batch is
answered with its original offsets and not appended again, a sequence gap or a zombie epoch is
refused. Each roll writes ``<new base offset>.snapshot`` of that state, and ``close`` one at the
LEO, so that recovery replays only the batches after the newest snapshot.

Transactional batches open a transaction; the COMMIT or ABORT marker the transaction
coordinator appends (origin COORDINATOR) closes it, an ABORT adding an entry to the marker's
segment's ``.txnindex``. :attr:`Log.last_stable_offset` is where ``read_committed`` readers
stop; see :mod:`kafkalab.storage.transactions`.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Protocol

from kafkalab.clock import Clock
from kafkalab.errors import InvalidRecordError, OffsetOutOfRangeError, StorageError
from kafkalab.records.header import BatchHeader
from kafkalab.storage import events as ev
from kafkalab.storage import log_append
from kafkalab.storage.leader_epoch import LeaderEpochCache
from kafkalab.storage.log_append import LogAppendInfo
from kafkalab.storage.log_config import LogConfig
from kafkalab.storage.producer_state import AppendOrigin, duplicate_append_info, has_producer_ids
from kafkalab.storage.producer_state_manager import ProducerStateManager, rebuild_producer_state, with_markers
from kafkalab.storage.log_dir_failure import offline_on_io_error, raise_if_io_error
from kafkalab.storage.log_files import CLEANED_SUFFIX, DELETED_SUFFIX, SWAP_SUFFIX, parse_partition_dir
from kafkalab.storage.positions import EntryPosition, FetchDataInfo
from kafkalab.storage.segment import LogSegment
from kafkalab.storage.transactions import collect_aborted, index_completed, last_stable_offset
from kafkalab.storage.txn_index import AbortedTxn
from kafkalab.storage import timestamp_lookup
from kafkalab.storage.timestamp_lookup import TimestampAndOffset



class Scheduler(Protocol):
    """Runs ``callback`` once, ``delay_ms`` from now: the one scheduling seam of the storage
    layer and the broker's periodic tasks. :class:`kafkalab.timer.Scheduler` implements it on
    the timing wheel; tests pass doubles."""

    def schedule(self, delay_ms: int, callback: Callable[[], object], *, name: str = "") -> object: ...


def _stamp_target(records: bytes | bytearray | memoryview, in_place: bool) -> bytearray | memoryview:
    """Where a leader append writes offsets: ``records`` itself if allowed and writable, else a copy."""
    if in_place and (isinstance(records, bytearray) or (isinstance(records, memoryview) and not records.readonly)):
        return records
    return bytearray(records)


class Log:
    """A partition's log. Not thread-safe; owned by one partition (the broker serializes)."""

    def __init__(
        self, directory: Path, config: LogConfig, clock: Clock, segments: list[LogSegment], *,
        next_offset: int, log_start_offset: int, recovery_point: int,
        leader_epoch_cache: LeaderEpochCache, listeners: list[ev.Listener],
        scheduler: Scheduler | None, rng: random.Random, producer_state: ProducerStateManager | None = None,
    ) -> None:
        self.directory = Path(directory)
        self.topic, self.partition = parse_partition_dir(self.directory)
        self.config = config
        self.clock = clock
        self.scheduler = scheduler
        self.rng = rng
        self.leader_epoch_cache = leader_epoch_cache
        self.producer_state = producer_state or ProducerStateManager(self.directory)
        self._listeners = listeners
        self._segments = segments
        self._base_offsets = [s.base_offset for s in segments]
        self._next_offset = next_offset
        self.log_start_offset = log_start_offset
        self.recovery_point = recovery_point
        self.high_watermark = min(max(recovery_point, log_start_offset), next_offset)
        self.auto_advance_high_watermark = True  # a single replica: HW follows the LEO
        self._unflushed_messages = 0
        self._last_flush_ms = clock.milliseconds()
        self.closed = False

    @classmethod
    def open(
        cls, directory: Path, config: LogConfig, clock: Clock, *, recovery_point: int = 0,
        log_start_offset: int | None = None, scheduler: Scheduler | None = None,
        had_clean_shutdown: bool = False, rng: random.Random | None = None,
    ) -> Log:
        """Open (creating if needed) and recover the log in ``directory``."""
        from kafkalab.storage.recovery import load_log  # recovery builds on this module

        return load_log(
            Path(directory), config, clock, recovery_point=recovery_point,
            log_start_offset=log_start_offset, scheduler=scheduler,
            had_clean_shutdown=had_clean_shutdown, rng=rng or random.Random(0),
        )

    # -- properties ---------------------------------------------------------------------------

    @property
    def log_end_offset(self) -> int:
        return self._next_offset

    @property
    def segments(self) -> list[LogSegment]:
        return list(self._segments)

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    @property
    def size_bytes(self) -> int:
        return sum(s.size_bytes for s in self._segments)

    @property
    def listeners(self) -> list[ev.Listener]:
        return self._listeners

    def subscribe(self, listener: ev.Listener) -> Callable[[], None]:
        """Receive every event; returns a function that unsubscribes."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def new_segment(self, base_offset: int, suffix: str = "") -> LogSegment:
        """A fresh segment with this log's settings (the cleaner makes ``.cleaned`` ones)."""
        return LogSegment(
            self.directory, base_offset, index_interval_bytes=self.config.index_interval_bytes,
            max_index_bytes=self.config.segment_index_bytes, roll_jitter_ms=self.draw_jitter_ms(),
            created_ms=self.clock.milliseconds(), suffix=suffix, listeners=self._listeners,
        )

    def draw_jitter_ms(self) -> int:
        """A segment's roll jitter: uniform in [0, min(segment.jitter.ms, segment.ms))."""
        if self.config.segment_jitter_ms <= 0:
            return 0
        return self.rng.randrange(min(self.config.segment_jitter_ms, self.config.segment_ms))

    # -- appending ----------------------------------------------------------------------------

    def append_as_leader(
        self, records: bytes | bytearray | memoryview, leader_epoch: int, *, in_place: bool = False,
        origin: AppendOrigin = AppendOrigin.CLIENT,
    ) -> LogAppendInfo:
        """Validate a producer's batches, assign offsets from the LEO, stamp the epoch, append.

        The offsets and epoch are written into a copy of ``records``; with ``in_place`` (the
        caller owns a writable buffer, such as the broker's request frame) into ``records``
        itself, as Kafka's LogValidator does to the request buffer: a 1 MiB produce then costs
        no copy between the socket and the segment file. ``origin`` is COORDINATOR for the
        transaction markers the coordinator has the leader write: no duplicate or sequence
        checks, but the epoch and coordinator epoch checks of
        :mod:`kafkalab.storage.producer_state`.

        The common request -- one batch from a plain producer -- takes a fused path
        (:func:`log_append.assign_plain_batch`, :meth:`LogSegment.append_batch`) that applies
        the same rules in one pass; everything else goes through :meth:`_append_batches`. An
        I/O error takes the log directory offline (``KAFKA_STORAGE_ERROR``) on either path."""
        try:
            now_ms = self.clock.milliseconds()
            buf = _stamp_target(records, in_place)
            info = log_append.assign_plain_batch(
                buf, self._next_offset, leader_epoch, now_ms, self.config, self.log_start_offset,
            ) if origin is AppendOrigin.CLIENT else None
            if info is None:
                return self._append_batches(buf, leader_epoch, now_ms, origin)
            # As in Kafka, the epoch cache learns the epoch before the data is written.
            self.leader_epoch_cache.assign(leader_epoch, info.first_offset)
            segment = self._maybe_roll(info.valid_bytes, info, now_ms)
            segment.append_batch(info.last_offset, info.max_timestamp, buf)
            self._advance(info, now_ms)
            return info
        except (OSError, StorageError) as error:  # a plain try: no wrapper call per append
            raise_if_io_error(error, self, "Error while appending records")
            raise

    def _append_batches(
        self, buf: bytearray | memoryview, leader_epoch: int, now_ms: int, origin: AppendOrigin
    ) -> LogAppendInfo:
        """The general leader append: any number of batches, idempotent and transactional
        producers' checks and duplicates, LogAppendTime, compacted topics' keys, records'
        timestamps. ``buf`` is not stamped until every check has passed."""
        config = self.config
        headers = log_append.analyze_and_assign(
            buf, next_offset=self._next_offset, leader_epoch=leader_epoch,
            max_message_bytes=config.max_message_bytes,
        )
        append_time_ms = now_ms if config.log_append_time else None
        log_append.check_timestamp_types(headers, log_append_time=config.log_append_time)
        log_append.check_records(
            buf, headers, now_ms=now_ms, keys_required=config.compacted,
            timestamp_bounds_ms=None if append_time_ms is not None else
            (config.message_timestamp_before_max_ms, config.message_timestamp_after_max_ms),
        )
        log_append.check_segment_fit(len(buf), config.segment_bytes)
        producers = None
        if has_producer_ids(headers):  # idempotent producers: sequence checks, duplicates
            producers, duplicate = self.producer_state.analyze(headers, origin, append_time_ms, buf)
            if duplicate is not None:
                return duplicate_append_info(duplicate, self.log_start_offset)
        headers = log_append.stamp(buf, headers, append_time_ms)
        info = log_append.summarize(
            headers, append_time_ms if append_time_ms is not None else -1, self.log_start_offset
        )
        self.leader_epoch_cache.assign(leader_epoch, info.first_offset)
        self._append(buf, headers, info, now_ms)
        if producers:
            completed = self.producer_state.commit(producers)
            if completed:
                index_completed(self.producer_state.transactions, completed, self._segments[-1])
        return info

    @offline_on_io_error("Error while appending replicated records")
    def append_as_follower(self, records: bytes | bytearray) -> LogAppendInfo:
        """Append batches whose offsets the leader already assigned (replication)."""
        headers = log_append.analyze(records, max_message_bytes=2**31 - 1, as_leader=False)
        if headers[0].base_offset < self._next_offset:
            raise InvalidRecordError(
                f"follower append starts at offset {headers[0].base_offset}, below the log end "
                f"offset {self._next_offset} of {self.directory.name}"
            )
        info = log_append.summarize(headers, -1, self.log_start_offset)
        for header in headers:
            if header.magic >= 2:
                self.leader_epoch_cache.assign(header.partition_leader_epoch, header.base_offset)
        self._append(records, headers, info, self.clock.milliseconds())
        if has_producer_ids(headers):
            self.producer_state.append_replayed(with_markers(records, headers), self._segments[-1])
        return info

    def _append(
        self, data: bytes | bytearray | memoryview, headers: Sequence[BatchHeader], info: LogAppendInfo, now_ms: int
    ) -> None:
        segment = self._maybe_roll(len(data), info, now_ms)
        segment.append(info.last_offset, info.max_timestamp, data, headers)
        self._advance(info, now_ms)

    def _advance(self, info: LogAppendInfo, now_ms: int) -> None:
        """After an append: move the LEO (and HW when it follows the LEO), flush by
        ``flush.messages`` or ``flush.ms``."""
        self._next_offset = self.producer_state.map_end_offset = info.last_offset + 1
        if self.auto_advance_high_watermark:
            self.high_watermark = self._next_offset
        self._unflushed_messages += info.records_count
        if self._unflushed_messages >= self.config.flush_messages:
            self.flush()
        elif now_ms - self._last_flush_ms >= self.config.flush_ms:
            self.flush()  # flush.ms, as maybe_flush_by_time

    def _maybe_roll(self, size_bytes: int, info: LogAppendInfo, now_ms: int) -> LogSegment:
        segment = self._segments[-1]
        reason = segment.should_roll(
            segment_bytes=self.config.segment_bytes, segment_ms=self.config.segment_ms,
            messages_size_bytes=size_bytes, max_timestamp=info.max_timestamp,
            max_offset=info.last_offset, now_ms=now_ms,
        )
        if reason is None:
            return segment
        return self.roll(reason, expected_next_offset=info.first_offset)

    @offline_on_io_error("Error while rolling log segment")
    def roll(self, reason: str = "manual", expected_next_offset: int | None = None) -> LogSegment:
        """Close the active segment for writes and start a new one at the LEO (or later)."""
        new_offset = max(expected_next_offset or 0, self._next_offset)
        active = self._segments[-1]
        if active.base_offset == new_offset and active.size_bytes == 0:
            return active  # an empty active segment already starts here
        if new_offset <= active.base_offset:
            raise StorageError(
                f"cannot roll {self.directory.name} to offset {new_offset}: the active segment "
                f"already starts at {active.base_offset}"
            )
        active.on_become_inactive()
        segment = self.new_segment(new_offset)
        self._segments.append(segment)
        self._base_offsets.append(new_offset)
        # Named by the new base offset, the snapshot lets recovery start at this segment.
        self.producer_state.take_snapshot(new_offset, sync=False)
        if self._listeners:
            ev.emit(self._listeners, ev.SegmentRolled(reason, new_offset, active.base_offset, active.size_bytes))
        return segment

    # -- reading ------------------------------------------------------------------------------

    def floor_segment(self, offset: int) -> LogSegment | None:
        slot = bisect.bisect_right(self._base_offsets, offset) - 1
        return self._segments[slot] if slot >= 0 else None

    def _check_offset(self, offset: int) -> None:
        if offset < self.log_start_offset or offset > self._next_offset:
            raise OffsetOutOfRangeError(
                f"offset {offset} is outside [{self.log_start_offset}, {self._next_offset}] "
                f"(log start offset, log end offset) of {self.directory.name}"
            )

    def lookup(self, offset: int) -> tuple[LogSegment, EntryPosition] | None:
        """The segment and batch holding ``offset`` (or the first batch after it)."""
        if offset < self.log_start_offset or offset > self._next_offset:
            self._check_offset(offset)
        segments = self._segments
        slot = bisect.bisect_right(self._base_offsets, offset) - 1
        if slot < 0:
            slot = 0
        listeners = self._listeners
        for position in range(slot, len(segments)):  # usually one step: the floor segment
            segment = segments[position]
            if listeners:
                ev.emit(listeners, ev.LookupStep("segment", offset, segment.base_offset))
            entry = segment.translate_offset(offset)  # reports its steps when someone listens
            if entry is not None:
                return segment, entry
        return None

    @offline_on_io_error("Error while reading")
    def read(
        self, offset: int, max_bytes: int, max_offset: int | None = None, min_one_message: bool = True
    ) -> FetchDataInfo:
        """Batch-aligned slices from the batch holding ``offset``: at most ``max_bytes`` (or
        one whole batch when ``min_one_message``), excluding batches reaching ``max_offset``
        (pass the high watermark for consumers)."""
        self._check_offset(offset)
        found = self.lookup(offset)
        if found is None:
            return FetchDataInfo(offset)
        segment, entry = found
        file_slice = segment.read(offset, max_bytes, max_offset, min_one_message, start=entry)
        if file_slice is None or file_slice.size_bytes == 0:
            return FetchDataInfo(offset)
        return FetchDataInfo(offset, (file_slice,))

    @offline_on_io_error("Error while fetching offset by timestamp")
    def offset_for_timestamp(self, timestamp_ms: int) -> TimestampAndOffset | None:
        """ListOffsets by timestamp, with -2 (earliest), -1 (latest) and -3 (max timestamp);
        see :mod:`kafkalab.storage.timestamp_lookup`."""
        return timestamp_lookup.offset_for_timestamp(self, timestamp_ms)

    # -- high watermark and last stable offset -------------------------------------------------

    @property
    def last_stable_offset(self) -> int:
        """Where a ``read_committed`` reader stops: ``min(first unstable offset, HW)``; see
        :mod:`kafkalab.storage.transactions`."""
        return last_stable_offset(self.producer_state.transactions, self.high_watermark, self.log_start_offset)

    def collect_aborted_transactions(self, fetch_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """The aborted transactions overlapping [fetch_offset, upper_bound_offset), from the
        ``.txnindex`` files of the segments from the one holding ``fetch_offset`` on."""
        slot = max(bisect.bisect_right(self._base_offsets, fetch_offset) - 1, 0)
        return collect_aborted(self._segments[slot:], fetch_offset, upper_bound_offset)

    def aborted_transactions_in(self, info: FetchDataInfo) -> list[AbortedTxn]:
        """What a ``read_committed`` reader of ``info`` must know: the aborted transactions
        overlapping the fetched batches, up to the first batch the read left out (Kafka's
        ``LocalLog.addAbortedTransactions``)."""
        if not info.slices:
            return []
        last = info.slices[-1]
        slot = max(bisect.bisect_right(self._base_offsets, info.fetch_offset) - 1, 0)
        segment = next((s for s in self._segments[slot:] if s.log_path == last.path), None)
        if segment is None:  # replaced by the cleaner since the read: the read's bound will do
            return self.collect_aborted_transactions(info.fetch_offset, self._next_offset)
        after = segment.entry_at(last.position + last.size_bytes)
        following = self._next_base_after(segment)
        upper = after.base_offset if after is not None else following if following is not None else self._next_offset
        return self.collect_aborted_transactions(info.fetch_offset, upper)


    def update_high_watermark(self, offset: int) -> int:
        """Set the HW, clamped to [log start offset, LEO]; returns the value set."""
        self.high_watermark = min(max(offset, self.log_start_offset), self._next_offset)
        return self.high_watermark

    def assign_epoch_start_offset(self, leader_epoch: int, start_offset: int) -> None:
        """A new leader's epoch begins at its log end offset, before it writes anything in that
        epoch (Kafka's ``maybeAssignEpochStartOffset``), so followers asking where the epoch
        before it ended get an answer even if the new leader never appends."""
        self.leader_epoch_cache.assign(leader_epoch, start_offset)

    def maybe_increment_high_watermark(self, offset: int) -> bool:
        """Move the HW forward only (the leader's rule); returns whether it moved."""
        if offset <= self.high_watermark:
            return False
        self.update_high_watermark(offset)
        return True

    # -- durability ---------------------------------------------------------------------------

    @offline_on_io_error("Error while flushing log")
    def flush(self, up_to_offset: int | None = None) -> None:
        """fsync every segment holding offsets below ``up_to_offset`` (default: the LEO) and
        move the recovery point there."""
        target = self._next_offset if up_to_offset is None else min(up_to_offset, self._next_offset)
        if target <= self.recovery_point:
            return
        for segment in self._segments:
            following = self._next_base_after(segment)
            if following is not None and following <= self.recovery_point:
                continue  # wholly below the recovery point: already durable
            if segment.base_offset >= target:
                break
            segment.flush()
        self.recovery_point = target
        if target >= self._next_offset:
            self._unflushed_messages = 0
        self._last_flush_ms = self.clock.milliseconds()
        self.leader_epoch_cache.maybe_write()
        if self._listeners:
            ev.emit(self._listeners, ev.Flushed(target))

    def maybe_flush_by_time(self) -> None:
        """Apply ``flush.ms``: flush when that long has passed since the last flush."""
        if self.clock.milliseconds() - self._last_flush_ms >= self.config.flush_ms:
            self.flush()

    def _next_base_after(self, segment: LogSegment) -> int | None:
        slot = bisect.bisect_right(self._base_offsets, segment.base_offset)
        return self._base_offsets[slot] if slot < len(self._base_offsets) else None

    def close(self) -> None:
        """Flush nothing extra; write the final index entries, trim and release every file."""
        if self.closed:
            return
        self.leader_epoch_cache.maybe_write()
        self.producer_state.take_snapshot(self._next_offset)  # the next start need not replay
        for segment in self._segments:
            segment.close()
        self.closed = True

    def close_handlers(self) -> None:
        """Release every file and write nothing: the directory has failed (Kafka's
        ``closeHandlers`` for a log in an offline directory)."""
        for segment in self._segments:
            segment.close_handlers()
        self.closed = True

    # -- truncation and log start -------------------------------------------------------------

    def truncate_to(self, offset: int) -> bool:
        """Remove every offset >= ``offset`` (a follower diverged from its leader)."""
        if offset < 0:
            raise InvalidRecordError(f"cannot truncate {self.directory.name} to negative offset {offset}")
        if offset >= self._next_offset:
            return False
        old_end = self._next_offset
        if offset < self._segments[0].base_offset:
            self.truncate_fully_and_start_at(offset)
            return True
        # A batch that straddles ``offset`` goes as a whole: the new LEO is its base offset.
        straddling = self.floor_segment(offset).translate_offset(offset)  # type: ignore[union-attr]
        new_end = min(offset, straddling.base_offset) if straddling is not None else offset
        doomed = [s for s in self._segments if s.base_offset > new_end]
        if doomed:
            self._remove_segments(doomed, "truncation", asynchronous=True)
        self._segments[-1].truncate_to(new_end)
        self._segments[-1].resize_indexes(self.config.segment_index_bytes)
        self._after_truncation(new_end)
        rebuild_producer_state(
            self.producer_state, self._segments, log_start_offset=self.log_start_offset,
            last_offset=new_end, had_clean_shutdown=False, now_ms=self.clock.milliseconds(),
        )
        if self._listeners:
            ev.emit(self._listeners, ev.Truncated(old_end, new_end, fully=False))
        return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Delete every segment and start empty at ``offset`` (a replica far behind)."""
        old_end = self._next_offset
        self._remove_segments(list(self._segments), "truncation", asynchronous=True, keep_one=False)
        fresh = self.new_segment(offset)
        self._segments, self._base_offsets = [fresh], [offset]
        self.leader_epoch_cache.clear()
        self.producer_state.truncate_fully_and_start_at(offset)
        self._after_truncation(offset)
        self.log_start_offset = offset
        self.recovery_point = offset
        if self._listeners:
            ev.emit(self._listeners, ev.Truncated(old_end, offset, fully=True))

    def _after_truncation(self, offset: int) -> None:
        self._next_offset = offset
        self.leader_epoch_cache.truncate_from_end(offset)
        self.recovery_point = min(self.recovery_point, offset)
        self.high_watermark = min(self.high_watermark, offset)
        self.log_start_offset = min(self.log_start_offset, offset)

    def increment_log_start_offset(self, offset: int) -> bool:
        """DeleteRecords: move the log start offset up (never past the high watermark)."""
        if offset > self.high_watermark:
            raise OffsetOutOfRangeError(
                f"cannot move the log start offset of {self.directory.name} to {offset}, past "
                f"the high watermark {self.high_watermark}"
            )
        if offset <= self.log_start_offset:
            return False
        self.log_start_offset = offset
        self.leader_epoch_cache.truncate_from_start(offset)
        self.producer_state.on_log_start_offset_incremented(offset)
        return True

    # -- deleting and replacing segments ------------------------------------------------------

    @offline_on_io_error("Error while deleting segments")
    def delete_segments(self, segments: Iterable[LogSegment], reason: str) -> int:
        """Remove segments Kafka's way: out of the map, renamed ``.deleted``, files deleted
        after ``file.delete.delay.ms``. Deleting the active segment rolls a new one first.
        Returns how many were deleted."""
        active = self._segments[-1]
        doomed = [s for s in segments if s in self._segments and not (s is active and s.size_bytes == 0)]
        if not doomed:
            return 0
        if self._segments[-1] in doomed:
            self.roll(f"deleting the active segment ({reason})")
        self._remove_segments(doomed, reason, asynchronous=True)
        first_base = self._segments[0].base_offset
        if first_base > self.log_start_offset:
            self.log_start_offset = first_base
            self.leader_epoch_cache.truncate_from_start(first_base)
        return len(doomed)

    def _remove_segments(
        self, doomed: list[LogSegment], reason: str, *, asynchronous: bool, keep_one: bool = True
    ) -> None:
        ids = {id(s) for s in doomed}
        kept = [s for s in self._segments if id(s) not in ids]
        assert kept or not keep_one, "a log must keep at least one segment"
        self._segments = kept
        self._base_offsets = [s.base_offset for s in kept]
        for segment in doomed:
            segment.close_handlers()
            segment.change_file_suffixes("", DELETED_SUFFIX)
        self._delete_files_later(doomed)
        self.producer_state.delete_snapshots_of_segments(s.base_offset for s in doomed)
        if self._listeners:
            ev.emit(self._listeners, ev.SegmentsDeleted(reason, tuple(s.base_offset for s in doomed)))

    def _delete_files_later(self, segments: list[LogSegment]) -> None:
        def delete() -> None:
            for segment in segments:
                for path in segment.all_paths():
                    path.unlink(missing_ok=True)
        if self.scheduler is None:
            delete()
        else:
            self.scheduler.schedule(self.config.file_delete_delay_ms, delete)

    def replace_segments(self, new_segments: list[LogSegment], old_segments: list[LogSegment]) -> None:
        """Swap in cleaned segments (Kafka's ``replaceSegments``), crash-safe at every step.

        ``new_segments`` were written with the ``.cleaned`` suffix. They are renamed to
        ``.swap`` (from here a restart completes the swap), put into the segment map, the old
        segments are renamed ``.deleted`` and scheduled for deletion, and finally the ``.swap``
        suffix is dropped.
        """
        new_sorted = sorted(new_segments, key=lambda s: s.base_offset)
        for segment in reversed(new_sorted):
            segment.flush()
            segment.change_file_suffixes(CLEANED_SUFFIX, SWAP_SUFFIX)
        new_bases = {s.base_offset for s in new_sorted}
        old_ids = {id(s) for s in old_segments}
        kept = [s for s in self._segments if id(s) not in old_ids and s.base_offset not in new_bases]
        self._segments = sorted(kept + new_sorted, key=lambda s: s.base_offset)
        self._base_offsets = [s.base_offset for s in self._segments]
        for segment in old_segments:
            segment.close_handlers()
            segment.change_file_suffixes("", DELETED_SUFFIX)
        self._delete_files_later(list(old_segments))
        for segment in new_sorted:
            segment.listeners = self._listeners
            segment.change_file_suffixes(SWAP_SUFFIX, "")
        if self._listeners:
            ev.emit(self._listeners, ev.SegmentsDeleted("replaced", tuple(s.base_offset for s in old_segments)))
