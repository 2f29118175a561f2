"""Binary search over a sparse index, with Kafka's warm section.

An index file is an array of fixed-size entries whose keys (offsets, or timestamps) strictly
increase. A lookup wants the *largest lower bound*: the last slot whose key is <= the target.

Almost every lookup is for data near the end of the log (consumers that keep up, followers,
the producer's own appends). Kafka's ``AbstractIndex.indexSlotRangeFor`` therefore splits the
entries into a *warm section* -- the last ``8192 / entry_size`` entries, which cover the last
8 KiB of the file and so stay in the page cache -- and a *cold section* before it. It checks
the first warm entry and binary-searches only the section that can hold the answer, so the
common case touches the same few pages every time::

    slot:    0   1   2  ...  first_hot ............ count-1
            [ cold section   |   warm section (8 KiB)    ]
                              ^ key[first_hot] < target -> search the warm part only

Worked example with 8-byte offset-index entries (1024 warm entries) and 5000 entries whose
relative offsets are ``0, 10, 20, ...``: ``first_hot = max(0, 5000 - 1 - 1024) = 3975``;
target 49_995 > key[3975] = 39_750, so the search runs over slots [3975, 4999] and lands on
slot 4999 (key 49_990).

:func:`floor_slot_loop` is Kafka's loop, step by step, with an optional ``on_probe`` callback
so the book can show each slot it reads. It runs only when someone listens. Otherwise
:func:`floor_slot` answers with ``bisect`` over the index's in-memory copy of its keys (see
:mod:`kafkalab.storage.index_file`): the warm section exists to keep Kafka's probes on pages
the page cache already holds, and a Python ``array`` is memory-resident as a whole, so a
plain binary search in C is the faster way to the same answer. Keys strictly increase, so
the last slot with key <= target is unique and both searches must return it; the tests check
that they do on random indexes and targets.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence

# Kafka keeps the last 8 KiB of every index "warm" (AbstractIndex: warmEntries = 8192 / entrySize).
WARM_SECTION_BYTES = 8192


def warm_entries(entry_size: int) -> int:
    """How many trailing entries form the warm section for entries of ``entry_size`` bytes."""
    return WARM_SECTION_BYTES // entry_size


def first_hot_slot(count: int, entry_size: int) -> int:
    """The first slot of the warm section (Kafka's ``firstHotEntry``)."""
    return max(0, count - 1 - warm_entries(entry_size))


def floor_slot_loop(
    key_at: Callable[[int], int],
    count: int,
    target: int,
    entry_size: int,
    on_probe: Callable[[int, int, str], None] | None = None,
) -> int:
    """Kafka's warm-section binary search, in pure Python.

    Returns the last slot whose key is <= ``target``, or -1 when every key is larger (or the
    index is empty). ``on_probe(slot, key, section)`` is called for every entry read.
    """
    if count == 0:
        return -1

    def probe(slot: int, section: str) -> int:
        key = key_at(slot)
        if on_probe is not None:
            on_probe(slot, key, section)
        return key

    first_hot = first_hot_slot(count, entry_size)
    if probe(first_hot, "warm") < target:
        return _loop(probe, first_hot, count - 1, target, "warm")
    if probe(0, "cold") > target:
        return -1
    return _loop(probe, 0, first_hot, target, "cold")


def _loop(probe: Callable[[int, str], int], lo: int, hi: int, target: int, section: str) -> int:
    # Invariant: key[lo] <= target, and the answer lies in [lo, hi]. The "+ 1" rounds mid up
    # so that ``lo = mid`` always makes progress.
    while lo < hi:
        mid = (lo + hi + 1) >> 1
        key = probe(mid, section)
        if key > target:
            hi = mid - 1
        elif key < target:
            lo = mid
        else:
            return mid
    return lo


def floor_slot(keys: Sequence[int], count: int, target: int) -> int:
    """Same answer as :func:`floor_slot_loop`: the last slot among the first ``count`` of the
    sorted ``keys`` whose key is <= ``target``, or -1. One C-level ``bisect``."""
    return bisect_right(keys, target, 0, count) - 1


ProbeCallback = Callable[[int, int, str], None]
