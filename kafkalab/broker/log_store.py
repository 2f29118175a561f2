"""The broker's view of storage: the few operations request handling needs from a log.

The broker speaks topic-partitions and requests (STYLE rule 4); the storage layer speaks
segments and offsets. These two protocols are the seam between them. The storage engine's
``Log`` satisfies :class:`PartitionLog` as is; :class:`LogStore` is a thin directory of logs that
:mod:`kafkalab.broker.storage_adapter` implements over ``kafkalab.storage``, and tests implement
with small doubles.

Invariant the broker relies on: ``log_start_offset <= high_watermark <= log_end_offset``, and a
read never returns a batch at or past ``max_offset`` (the high watermark for consumers).
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from kafkalab.metadata.image import MetadataImage
    from kafkalab.storage.positions import FileSlice


class AppendInfo(Protocol):
    @property
    def first_offset(self) -> int: ...
    @property
    def log_append_time_ms(self) -> int: ...
    @property
    def log_start_offset(self) -> int: ...


class ReadInfo(Protocol):
    @property
    def slices(self) -> Sequence[FileSlice]: ...


class TimestampOffset(Protocol):
    @property
    def timestamp(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def leader_epoch(self) -> int | None: ...


class PartitionLog(Protocol):
    """One partition's log, as the broker uses it. Owned by the log store."""

    log_start_offset: int
    high_watermark: int
    directory: Path  # inside one of the log store's log_dirs

    @property
    def log_end_offset(self) -> int: ...

    @property
    def last_stable_offset(self) -> int: ...  # where read_committed readers stop

    def append_as_leader(
        self, records: bytes | bytearray | memoryview, leader_epoch: int, *, in_place: bool = False
    ) -> AppendInfo: ...

    def read(
        self, offset: int, max_bytes: int, max_offset: int | None = None,
        min_one_message: bool = True,
    ) -> ReadInfo: ...

    def offset_for_timestamp(self, timestamp_ms: int) -> TimestampOffset | None: ...


class LogStore(Protocol):
    """Every partition log of one broker. Not thread-safe; owned by the broker.

    An I/O error in one of ``log_dirs`` raises ``LogDirFailureError`` naming it."""

    @property
    def log_dirs(self) -> Sequence[Path]: ...

    def partitions(self) -> Iterable[tuple[str, int]]: ...

    def open_metadata_log(self) -> Any: ...

    def get_log(self, topic: str, partition: int) -> PartitionLog | None: ...

    def create_log(
        self, topic: str, partition: int, topic_id: uuid.UUID, properties: Mapping[str, str]
    ) -> PartitionLog: ...

    def open_or_create_log(self, topic: str, partition: int, image: MetadataImage) -> Any: ...

    def delete_log(self, topic: str, partition: int) -> None: ...

    def topic_id(self, topic: str, partition: int) -> uuid.UUID | None: ...

    def delete_records(self, topic: str, partition: int, offset: int) -> int:
        """Move the log start offset up to ``offset``; returns the new log start offset."""
        ...

    def flush(self) -> None: ...

    def close(self, offline_dirs: Collection[str] = ()) -> None: ...
