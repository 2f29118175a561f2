"""Shared sample records, topic creation and comparison for the interop tests.

Every client test produces the same twelve records to partition 0 of a fresh topic and checks
that what comes back is exactly what went in: keys, values (including null values, i.e.
tombstones), headers, timestamps and consecutive offsets from 0. Timestamps are one second
apart, so a lookup for ``base + 5 s - 0.5 s`` must answer offset 5 (the first record whose
timestamp is at or after the target, as Kafka's ListOffsets does).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from kafka.admin import KafkaAdminClient, NewTopic

RECORD_COUNT = 12
LOOKUP_INDEX = 5
STEP_MS = 1_000
CLIENT_TIMEOUT_MS = 10_000  # every client call that waits on the broker gives up after this
DEADLINE_S = 20.0  # a consume loop stops after this even if records are missing


@dataclass(frozen=True, slots=True)
class Rec:
    """One record as every client reports it, normalised for comparison."""

    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp_ms: int
    offset: int = -1


def sample_records(base_ms: int | None = None) -> list[Rec]:
    """Twelve records covering null keys, null values, several headers, a compressible value."""
    base_ms = base_ms if base_ms is not None else time.time_ns() // 1_000_000 - 60_000
    records = []
    for i in range(RECORD_COUNT):
        key = None if i % 4 == 3 else f"key-{i}".encode()
        value: bytes | None = f"value-{i} ".encode() * (1 + 50 * (i % 3))
        if i % 5 == 4:
            value = None  # a tombstone
        headers: tuple[tuple[str, bytes | None], ...] = ()
        if i % 2 == 0:
            headers = (("trace", f"t{i}".encode()), ("lang", "ÿé".encode()))
        records.append(Rec(key, value, headers, base_ms + i * STEP_MS, i))
    return records


def lookup_target_ms(records: list[Rec]) -> int:
    """A timestamp between record LOOKUP_INDEX - 1 and LOOKUP_INDEX."""
    return records[LOOKUP_INDEX].timestamp_ms - STEP_MS // 2


def create_topic(bootstrap: str, name: str, partitions: int = 1) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=CLIENT_TIMEOUT_MS)
    try:
        admin.create_topics([NewTopic(name, partitions, 1)], timeout_ms=CLIENT_TIMEOUT_MS)
    finally:
        admin.close()


def assert_records_equal(expected: list[Rec], actual: list[Rec], *, check_headers: bool = True) -> None:
    assert len(actual) == len(expected), f"expected {len(expected)} records, got {len(actual)}"
    for want, got in zip(expected, actual):
        if not check_headers:
            want = Rec(want.key, want.value, (), want.timestamp_ms, want.offset)
            got = Rec(got.key, got.value, (), got.timestamp_ms, got.offset)
        assert got == want, f"record {want.offset}: expected {want}, got {got}"
