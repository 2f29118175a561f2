"""Choosing what to clean: dirty ratio, compaction lags, the cleaner-offset-checkpoint."""

from __future__ import annotations

from kafkalab.storage.cleaner import CleanerCheckpoint, LogCleaner, cleanable_offsets, log_to_clean

from .conftest import LogFixture, records_on_disk


def fill(fx: LogFixture, count: int, keys: int = 3) -> None:
    for i in range(count):
        fx.append([(b"k%d" % (i % keys), b"v%d" % i)])


def test_first_dirty_falls_back_to_log_start(make_log) -> None:  # type: ignore[no-untyped-def]
    fx = make_log(**{"segment.bytes": "100"})
    fill(fx, 5)
    now = fx.clock.milliseconds()
    assert cleanable_offsets(fx.log, None, now) == (0, 4)  # active segment starts at 4
    assert cleanable_offsets(fx.log, 2, now) == (2, 4)
    assert cleanable_offsets(fx.log, 99, now) == (0, 4)  # past the log end: reset
    fx.log.increment_log_start_offset(3)
    assert cleanable_offsets(fx.log, 2, now) == (3, 4)  # below the log start: reset


def test_first_uncleanable_is_capped_by_high_watermark(make_log) -> None:  # type: ignore[no-untyped-def]
    fx = make_log(**{"segment.bytes": "100"})
    fill(fx, 5)
    fx.log.auto_advance_high_watermark = False
    fx.log.high_watermark = 2
    assert cleanable_offsets(fx.log, None, fx.clock.milliseconds()) == (0, 2)


def test_dirty_ratio_and_strict_threshold(make_log) -> None:  # type: ignore[no-untyped-def]
    fx = make_log(**{"segment.bytes": "100"})
    fill(fx, 5)  # four one-batch segments of equal size plus the active one
    now = fx.clock.milliseconds()
    half = log_to_clean(fx.log, 2, now)
    assert half.clean_bytes == half.dirty_bytes and half.dirty_ratio == 0.5
    assert not half.cleanable  # Kafka: strictly greater than min.cleanable.dirty.ratio
    assert log_to_clean(fx.log, 1, now).cleanable  # 3 of 4 segments dirty


def test_max_compaction_lag_forces_a_clean(make_log) -> None:  # type: ignore[no-untyped-def]
    fx = make_log(**{"segment.bytes": "100", "max.compaction.lag.ms": "5000"})
    fill(fx, 5)
    assert not log_to_clean(fx.log, 3, fx.clock.milliseconds()).cleanable  # ratio 1/4
    fx.clock.advance_ms(5001)
    entry = log_to_clean(fx.log, 3, fx.clock.milliseconds())
    assert entry.compaction_delay_ms == 1 and entry.cleanable


def test_clean_once_picks_filthiest_and_checkpoints(tmp_path) -> None:  # type: ignore[no-untyped-def]
    a = LogFixture(tmp_path, **{"segment.bytes": "100"})
    fill(a, 6)
    b = LogFixture(tmp_path, **{"segment.bytes": "100"})
    b.directory = tmp_path / "u-0"
    b.reopen()
    fill(b, 6)
    deletes = LogFixture(tmp_path, **{"segment.bytes": "100", "cleanup.policy": "delete"})
    deletes.directory = tmp_path / "d-0"
    deletes.reopen()
    fill(deletes, 6)
    cleaner = LogCleaner(tmp_path, a.clock.milliseconds)
    cleaner.checkpoint.update("u", 0, 2)  # u is partly clean already: ratio 0.6
    outcome = cleaner.clean_once([b.log, a.log, deletes.log])
    assert outcome is not None and (outcome.topic, outcome.dirty_ratio) == ("t", 1.0)
    assert CleanerCheckpoint(tmp_path).get("t", 0) == 5
    assert (tmp_path / "cleaner-offset-checkpoint").read_text() == "0\n2\nt 0 5\nu 0 2\n"
    outcome = cleaner.clean_once([b.log, a.log, deletes.log])
    assert outcome is not None and outcome.topic == "u"
    assert cleaner.clean_once([b.log, a.log, deletes.log]) is None  # nothing dirty is left
    assert len(records_on_disk(deletes.log)) == 6  # delete-only logs are never compacted


def test_truncation_moves_the_checkpoint_down_to_the_active_segment(make_log) -> None:  # type: ignore[no-untyped-def]
    fx = make_log(**{"segment.bytes": "100"})
    fill(fx, 8)
    cleaner = LogCleaner(fx.root, fx.clock.milliseconds)
    cleaner.force_clean(fx.log)
    assert cleaner.checkpoint.get("t", 0) == 7
    assert not cleaner.after_truncation(fx.log)  # nothing truncated: the checkpoint stays
    fx.log.truncate_to(3)
    assert cleaner.after_truncation(fx.log)
    assert CleanerCheckpoint(fx.root).get("t", 0) == fx.log.segments[-1].base_offset <= 3
    assert not cleaner.maybe_truncate_checkpoint(fx.log, 5)  # never moves up


def test_watched_log_truncation_moves_the_checkpoint_without_a_call(make_log) -> None:  # type: ignore[no-untyped-def]
    fx = make_log(**{"segment.bytes": "100"})
    fill(fx, 8)
    cleaner = LogCleaner(fx.root, fx.clock.milliseconds)
    stop = cleaner.watch(fx.log)
    cleaner.force_clean(fx.log)
    assert cleaner.checkpoint.get("t", 0) == 7
    fx.log.truncate_to(3)  # a follower diverged: the log announces it, the cleaner follows
    assert CleanerCheckpoint(fx.root).get("t", 0) == fx.log.segments[-1].base_offset <= 3
    fx.log.truncate_fully_and_start_at(50)
    assert cleaner.checkpoint.get("t", 0) <= 3  # 50 is above: a checkpoint never moves up
    stop()
    cleaner.checkpoint.update("t", 0, 50)
    fx.log.truncate_fully_and_start_at(10)
    assert cleaner.checkpoint.get("t", 0) == 50  # no longer watched


def test_filthiest_resets_a_checkpoint_outside_the_log(make_log) -> None:  # type: ignore[no-untyped-def]
    fx = make_log(**{"segment.bytes": "100"})
    fill(fx, 5)
    cleaner = LogCleaner(fx.root, fx.clock.milliseconds)
    cleaner.checkpoint.update("t", 0, 99)  # past the log end (Kafka: forceUpdateCheckpoint)
    chosen = cleaner.filthiest([fx.log])
    assert chosen is not None and chosen.first_dirty_offset == 0
    assert CleanerCheckpoint(fx.root).get("t", 0) == 0


def test_filthiest_waits_for_min_compaction_lag(make_log) -> None:  # type: ignore[no-untyped-def]
    fx = make_log(**{"segment.bytes": "100", "min.compaction.lag.ms": "1000"})
    fill(fx, 5)
    cleaner = LogCleaner(fx.root, fx.clock.milliseconds)
    young = log_to_clean(fx.log, None, fx.clock.milliseconds())
    assert young.first_uncleanable_offset == 0 and young.dirty_bytes == 0
    assert cleaner.filthiest([fx.log]) is None  # every record is younger than the lag
    fx.clock.advance_ms(1001)
    chosen = cleaner.filthiest([fx.log])
    assert chosen is not None and (chosen.first_dirty_offset, chosen.first_uncleanable_offset) == (0, 4)


def test_filthiest_skips_empty_logs_and_prefers_the_higher_ratio(tmp_path) -> None:  # type: ignore[no-untyped-def]
    empty = LogFixture(tmp_path, **{"segment.bytes": "100"})
    half = LogFixture(tmp_path, **{"segment.bytes": "100", "min.cleanable.dirty.ratio": "0.1"})
    half.directory = tmp_path / "h-0"
    half.reopen()
    fill(half, 5)
    most = LogFixture(tmp_path, **{"segment.bytes": "100", "min.cleanable.dirty.ratio": "0.1"})
    most.directory = tmp_path / "m-0"
    most.reopen()
    fill(most, 5)
    cleaner = LogCleaner(tmp_path, half.clock.milliseconds)
    cleaner.checkpoint.update("h", 0, 2)  # ratio 0.5
    cleaner.checkpoint.update("m", 0, 1)  # ratio 0.75
    chosen = cleaner.filthiest([empty.log, half.log, most.log])
    assert chosen is not None and chosen.log is most.log and chosen.dirty_ratio == 0.75
