"""The names of a partition's files and of its directory, as Kafka names them.

A partition directory is ``<topic>-<partition>``. Every file of a segment is named by the
segment's base offset, zero-padded to 20 digits, with one suffix per kind of file, so that the
names sort in offset order::

    orders-3/
      00000000000000004242.log        the batches
      00000000000000004242.index      offset -> position
      00000000000000004242.timeindex  timestamp -> offset
      00000000000000004242.txnindex   aborted transactions
      00000000000000004242.snapshot   producer state at offset 4242

A second suffix marks a file in the middle of a change, which recovery finishes or undoes after
a crash: ``.deleted`` (waiting for ``file.delete.delay.ms``), ``.cleaned`` (the cleaner's output
being written) and ``.swap`` (the cleaner's output about to replace the old segments).

Worked example: ``file_name(4242, INDEX_SUFFIX)`` is ``"00000000000000004242.index"`` and
``parse_partition_dir(Path("orders-3"))`` is ``("orders", 3)``; a topic name may itself hold
dashes, so only the last ``-<digits>`` is the partition.
"""

from __future__ import annotations

import re
from pathlib import Path

from kafkalab.errors import StorageError

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
PRODUCER_SNAPSHOT_SUFFIX = ".snapshot"
SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)

DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"

_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")


def file_name(base_offset: int, suffix: str) -> str:
    """A segment file's name: the base offset in 20 digits, then the suffix."""
    return f"{base_offset:020d}{suffix}"


def parse_partition_dir(directory: Path) -> tuple[str, int]:
    """``orders-3`` -> ("orders", 3), as Kafka names partition directories."""
    match = _PARTITION_DIR.match(Path(directory).name)
    if match is None:
        raise StorageError(f"{directory} is not named <topic>-<partition>")
    return match["topic"], int(match["partition"])
