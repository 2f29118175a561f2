"""One lookup path: the same answer whether anyone listens, and the steps reported when they do."""

from __future__ import annotations

from pathlib import Path

from storage_helpers import batch_of_size

from kafkalab.clock import ManualClock
from kafkalab.storage import Log, LogConfig
from kafkalab.storage.events import LookupStep

CONFIG = LogConfig(segment_bytes=3000, index_interval_bytes=300)


def _log(log_dir: Path) -> Log:
    log = Log.open(log_dir, CONFIG, ManualClock(0))
    for i in range(40):  # 40 one-record batches of 150 bytes, timestamps 1000, 1010, ...
        log.append_as_leader(batch_of_size(150, timestamp_ms=1000 + 10 * i), leader_epoch=0)
    return log


def _listened(log: Log, call):  # type: ignore[no-untyped-def]
    events: list[object] = []
    unsubscribe = log.subscribe(events.append)
    try:
        return call(), [e for e in events if isinstance(e, LookupStep)]
    finally:
        unsubscribe()


def test_offset_lookup_answers_alike_and_reports_its_steps(log_dir: Path) -> None:
    log = _log(log_dir)
    assert len(log.segments) > 1
    for offset in (0, 7, 19, 25, 39):
        quiet = log.lookup(offset)
        loud, steps = _listened(log, lambda: log.lookup(offset))
        assert quiet == loud
        kinds = [s.kind for s in steps]
        assert kinds[0] == "segment" and kinds[-1] == "scan" and "index_result" in kinds
        assert steps[-1].offset == quiet[1].last_offset and steps[-1].position == quiet[1].position
    log.close()


def test_timestamp_lookup_answers_alike_and_reports_both_indexes(log_dir: Path) -> None:
    log = _log(log_dir)
    for timestamp in (1000, 1095, 1250, 1390):
        quiet = log.offset_for_timestamp(timestamp)
        loud, steps = _listened(log, lambda: log.offset_for_timestamp(timestamp))
        assert quiet == loud and quiet is not None
        assert quiet.offset == (timestamp - 1000 + 9) // 10  # the first record at or after it
        segments = [s for s in steps if s.kind == "segment"]
        assert all(s.target_timestamp == timestamp for s in steps)
        assert segments[-1].timestamp >= timestamp > max((s.timestamp for s in segments[:-1]), default=-1)
        results = {s.index: s for s in steps if s.kind == "index_result"}
        assert set(results) == {"time", "offset"} and results["time"].timestamp <= timestamp
        assert steps[-1].kind == "scan" and steps[-1].offset >= quiet.offset
    log.close()
