# %% [markdown]
# # 06 Log compaction
#
# Some topics are not a history but a table: the latest address of each customer, the latest
# committed offset of each consumer group (`__consumer_offsets` is compacted). For those,
# `cleanup.policy=compact` keeps **the last record of every key** and lets older ones go, however
# old the data is. This chapter compacts a real log, opens the files before and after, and walks
# through the settings that decide when the cleaner runs and what it may remove.

# %%
from kafkalab.book import check_version
check_version("0.1.0")

# %% [markdown]
# ## A keyed log
# 24 records over four keys, one second apart, a segment per six records (base offsets 0, 6,
# 12 and the active 18). Keys come from a seeded generator; each value names its own offset.

# %%
from kafkalab.book import remove_scratch_dirs, scratch_dir
from kafkalab.clock import ManualClock
from kafkalab.storage.log import Log
from kafkalab.storage.log_config import LogConfig
from kafkalab.tools.cli import main as kafkalab_cli
from kafkalab.viz.cleanup import START_MS, CleanupParams, fill_log, snapshot

clock = ManualClock(START_MS)
data_dir = scratch_dir()
config = LogConfig(cleanup_policy="compact", delete_retention_ms=10_000)
log = Log.open(data_dir / "customers-0", config, clock)
fill_log(log, clock, CleanupParams(records=24, keys=4, records_per_segment=6))
before = snapshot(log)
for segment in before.segments:
    print(f"segment {segment.base_offset:>2}{' (active)' if segment.active else '         '}:",
          " ".join(f"{r.key}@{r.offset}" for r in segment.records))

# %% [markdown]
# `kafkalab dump-log` shows the first segment as Kafka's `kafka-dump-log.sh` would:

# %%
exit_status = kafkalab_cli(["dump-log", "--print-data-log", "--files", str(log.segments[0].log_path)])

# %% [markdown]
# ## Which part of the log the cleaner may touch
# The cleaner splits a log in three. Below the **cleaner checkpoint** the log is already clean;
# from there to the **first uncleanable offset** it is *dirty*; the rest it must not touch. The
# first uncleanable offset is the smallest of the last stable offset (Kafka's bound: no record of
# an open transaction is cleaned; with no transaction open it equals the high watermark, which
# is what kafkalab's cleaner takes here), the active segment's base offset
# (**the active segment is never cleaned**) and the first segment younger than
# `min.compaction.lag.ms`. A log is cleaned when its *dirty ratio*, dirty bytes / (clean + dirty
# bytes), is above `min.cleanable.dirty.ratio` (0.5).

# %%
from kafkalab.storage.cleaner import LogCleaner, log_to_clean

cleaner = LogCleaner(data_dir, clock.milliseconds, dedupe_buffer_bytes=1024 * 1024)
candidate = log_to_clean(log, cleaner.checkpoint.get("customers", 0), clock.milliseconds())
print(f"first dirty offset {candidate.first_dirty_offset}, first uncleanable offset "
      f"{candidate.first_uncleanable_offset} (the active segment's base offset)")
print(f"clean bytes {candidate.clean_bytes}, dirty bytes {candidate.dirty_bytes}, "
      f"dirty ratio {candidate.dirty_ratio:.2f} > {config.min_cleanable_dirty_ratio}: cleanable = {candidate.cleanable}")

# %% [markdown]
# ## One clean, step by step
# 1. **Map**: read the dirty section and remember, for every key, its latest offset (a fixed-size
#    map of key digests: `log.cleaner.dedupe.buffer.size`).
# 2. **Group** segments so that each group fits one segment.
# 3. **Copy** each group into a new segment with the suffix `.cleaned`, keeping a record only if
#    no later offset of its key is in the map.
# 4. **Swap**: rename `.cleaned` to `.swap`, put the new segment into the log, rename the old ones
#    `.deleted` (they go after `file.delete.delay.ms`), drop the `.swap` suffix. A crash at any
#    point leaves either the old segments or the new one, never a mix.
#
# The cleaner accepts a hook called between steps; we use it to list the directory while the
# `.cleaned` files exist:

# %%
from kafkalab.storage.cleaner import Cleaner

def list_files(step: str) -> None:
    names = sorted(p.name for p in log.directory.iterdir() if p.name.startswith("00000000000000000000"))
    print(f"at {step!r}:", names)

cleaner.cleaner = Cleaner(1024 * 1024, fault=list_files)
outcome = cleaner.clean_log(candidate)
stats = outcome.result.stats
print(f"groups {stats.groups}; read {stats.records_read} records, kept {stats.records_kept}; "
      f"checkpoint now {cleaner.checkpoint.get('customers', 0)}")
cleaner.cleaner = Cleaner(1024 * 1024)  # no more listings
# %% [markdown]
# Segments 0, 6 and 12 were small enough to be merged into one new segment 0. Here is how the
# swap is done in the engine:

# %%
import inspect
print(inspect.getsource(Log.replace_segments))

# %% [markdown]
# ## After: the last value per key, offsets unchanged
# Compare with the listing above. In the cleaned part each key appears once, at its latest
# offset, and **offsets are kept**: 8 to 14 are simply gone. The active segment 18 is untouched,
# so `k3@7` stays even though `k3` is written again at offset 23 -- compaction guarantees the
# latest value is kept, not that older ones are already gone.

# %%
after = snapshot(log)
for segment in after.segments:
    print(f"segment {segment.base_offset:>2}{' (active)' if segment.active else '         '}:",
          " ".join(f"{r.key}@{r.offset}" for r in segment.records))
assert after.latest_per_key() == before.latest_per_key()
exit_status = kafkalab_cli(["dump-log", "--print-data-log", "--files", str(log.segments[0].log_path)])

# %% [markdown]
# A consumer that asks for offset 10 is not told "no such offset": the log answers with the
# next batch that exists, and the consumer simply sees offset 15 next.

# %%
print(log.lookup(10)[1])

# %% [markdown]
# ## Tombstones and `delete.retention.ms`
# To delete a key, a producer writes a **tombstone**: the key with a null value. The cleaner
# must keep it for a while, or a consumer that read the old value but has not yet reached the
# tombstone would never learn the key is gone. The first clean that keeps a tombstone stamps
# its batch with a *delete horizon*, now + `delete.retention.ms` (KIP-534); a clean after that
# time drops it.

# %%
from kafkalab.records.header import read_header
from kafkalab.records.model import Record
from kafkalab.records.v2 import build_v2_batch

clock.advance_ms(1000)
log.append_as_leader(build_v2_batch([Record(0, clock.milliseconds(), b"k1", None)]), leader_epoch=0)
tombstone_offset = log.log_end_offset - 1
log.roll("manual")

def tombstone_status() -> str:
    found = log.lookup(tombstone_offset) if tombstone_offset < log.log_end_offset else None
    segment, entry = found if found else (None, None)
    if entry is None or entry.base_offset != tombstone_offset:
        return "gone"
    header = read_header(segment.log_path.read_bytes(), entry.position)
    if header.records_count == 0:
        return "gone (its batch stays as an empty 61-byte header)"
    return f"on disk, delete horizon {header.delete_horizon_ms}"

for step in ("first clean", "second clean, 9 s later", "third clean, 10 s after the first"):
    cleaner.force_clean(log)
    print(f"{step:<34} now {clock.milliseconds() - START_MS:>6} ms: tombstone k1@{tombstone_offset} {tombstone_status()}")
    clock.advance_ms(9000 if step == "first clean" else 1000)

# %% [markdown]
# The old `k1@15` went in the first clean already (the tombstone is a later value of `k1`); the
# tombstone itself stayed until the horizon, start + 25 000 + 10 000 ms, had passed.
#
# The tombstone's *record* is gone after the third clean, but its batch is not: it was the last
# batch of that cleaning round, and Kafka's cleaner keeps such a batch as an empty header (no
# records, base and last offset unchanged) so that the offset it ended at is not lost. The same
# rule keeps the last batch of a still-active idempotent producer, whose sequence number the
# broker needs to check the producer's next batch.
#
# ## When does the cleaner run?
# Three settings decide, per topic:
#
# * `min.cleanable.dirty.ratio` (0.5): clean only when at least that share of the log is dirty;
# * `min.compaction.lag.ms` (0): never clean a record younger than this -- consumers get a window
#   in which they see every update;
# * `max.compaction.lag.ms` (infinite): clean once the oldest dirty record is older than this,
#   whatever the ratio.
#
# Our log is clean up to the checkpoint now. Three new records in a new segment make it dirty
# again, but not dirty enough:

# %%
import dataclasses

fill_log(log, clock, CleanupParams(records=3, keys=4, records_per_segment=3, seed=1))
log.roll("manual")
c = log_to_clean(log, cleaner.checkpoint.get("customers", 0), clock.milliseconds())
print(f"dirty ratio {c.dirty_ratio:.2f}: cleanable = {c.cleanable}")
log.config = dataclasses.replace(config, max_compaction_lag_ms=1000)
clock.advance_ms(5000)
c = log_to_clean(log, cleaner.checkpoint.get("customers", 0), clock.milliseconds())
print(f"with max.compaction.lag.ms=1000, 5 s later: dirty ratio {c.dirty_ratio:.2f}, "
      f"overdue by {c.compaction_delay_ms} ms: cleanable = {c.cleanable}")
log.config = dataclasses.replace(config, min_compaction_lag_ms=60_000)
c = log_to_clean(log, cleaner.checkpoint.get("customers", 0), clock.milliseconds())
print(f"with min.compaction.lag.ms=60000: first uncleanable offset {c.first_uncleanable_offset} "
      f"(= first dirty {c.first_dirty_offset}: nothing is old enough)")
log.config = config

# %% [markdown]
# On a broker, all of this runs only if `log.cleaner.enable` is true (the default since Kafka
# 0.9.0.1; `__consumer_offsets` depends on it).
#
# ## Widget: compaction before and after
# Top row before, bottom row after one or more cleaner passes. Colours are keys, crosses are
# tombstones, hatched records are removed. Every fifth record here is a tombstone and
# `delete.retention.ms` is 1 s with passes 2 s apart: the first pass keeps the tombstones that
# are the latest of their key, the second removes them.

# %%
from kafkalab.viz.cleanup import run_cleanup, show_cleanup

widget_params = CleanupParams(tombstone_every=5, delete_retention_ms=1000, age_ms=2000, cleaner_passes=2)
widget = show_cleanup(widget_params)

# %% [markdown]
# ## Exercises
# Each prediction starts blank. Write your answer in the cell tagged as yours, run it, then run
# the check below it: the check refuses a blank or wrong answer with a hint, and passes only on
# the engine's value.
#
# **Predict, then check 1.** Keys `a b a c b a` at offsets 0..5 in one closed segment, then one
# record in the active segment. Which offsets does one clean keep in the closed segment?

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- a list of offsets
my_prediction = [3, 4, 5]
### END SOLUTION

# %% tags=["check"]
from kafkalab.book import check_prediction

small = Log.open(scratch_dir() / "letters-0", config, clock)
for key in b"abacba":
    small.append_as_leader(build_v2_batch([Record(0, clock.milliseconds(), bytes([key]), b"v")]), leader_epoch=0)
small.roll("manual")
small.append_as_leader(build_v2_batch([Record(0, clock.milliseconds(), b"a", b"v")]), leader_epoch=0)
LogCleaner(small.directory.parent, clock.milliseconds).force_clean(small)
kept = [r.offset for r in snapshot(small).segments[0].records]
check_prediction(my_prediction, kept, right=f"{kept}",
                 hint="the cleaner keeps the last record of each key it maps, and it maps only "
                      "the closed segment; find each key's last offset there.")
### BEGIN HIDDEN TESTS
assert list(my_prediction) == [3, 4, 5]
### END HIDDEN TESTS

# %% [markdown]
# **Predict, then check 2.** A log whose clean section is 1000 bytes and dirty section 900
# bytes: is it cleanable with the default `min.cleanable.dirty.ratio` (`True` or `False`)? The
# check asks the cleaner's own rule, `LogToClean.cleanable`.

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- True or False
my_prediction = False
### END SOLUTION

# %% tags=["check"]
from kafkalab.storage.cleaner.manager import LogToClean

candidate = LogToClean(small, first_dirty_offset=0, first_uncleanable_offset=0, clean_bytes=1000,
                       dirty_bytes=900, compaction_delay_ms=0)
check_prediction(my_prediction, candidate.cleanable,
                 right=f"the dirty ratio is {candidate.dirty_ratio:.3f}; cleanable: {candidate.cleanable}",
                 hint="the dirty ratio is dirty / (clean + dirty), and the log is cleanable only "
                      "when it is strictly above the configured minimum (0.5 by default).")
### BEGIN HIDDEN TESTS
assert my_prediction is False
### END HIDDEN TESTS

# %% [markdown]
# **Change the engine.** The offset map's size (`log.cleaner.dedupe.buffer.size`) bounds how
# many keys one clean can dedupe; when the map fills, the clean stops there and the next one
# continues. Give the cleaner a map so small (`dedupe_buffer_bytes`; 24 bytes per entry, 90 %
# of them used) that a log with 10 keys needs at least 3 passes. The check passes when it does,
# and when the result is the same log as one big clean.

# %% tags=["answer"]
dedupe_buffer_bytes = 1024 * 1024
### BEGIN SOLUTION
### BLANK # your change here
dedupe_buffer_bytes = 24 * 3
### END SOLUTION

# %% tags=["check"]
def clean_in_passes(buffer_bytes: int, name: str) -> tuple[int, list[int]]:
    """Passes a cleaner with this map needs to clean a 10-key log, and the offsets it keeps."""
    params = CleanupParams(records=60, keys=10, records_per_segment=6, seed=3)
    work = Log.open(scratch_dir() / f"{name}-0", config, clock)
    fill_log(work, clock, params)
    cleaner = LogCleaner(work.directory.parent, clock.milliseconds, dedupe_buffer_bytes=buffer_bytes)
    passes = 0
    while (cleaner.checkpoint.get(name, 0) or 0) < work.active_segment.base_offset and passes < 100:
        cleaner.force_clean(work)
        passes += 1
    return passes, [r.offset for r in snapshot(work).records]

passes, kept_small = clean_in_passes(dedupe_buffer_bytes, "small-map")
one_pass, kept_big = clean_in_passes(1024 * 1024, "big-map")
print(f"dedupe buffer {dedupe_buffer_bytes} bytes ({int(dedupe_buffer_bytes // 24 * 0.9)} keys "
      f"per pass): {passes} passes; one big map: {one_pass} pass")
assert passes >= 3, "the cleaner still needs fewer than 3 passes: make the map smaller"
assert kept_small == kept_big, "passes with a small map must end in the same compacted log"
### BEGIN HIDDEN TESTS
assert clean_in_passes(int(dedupe_buffer_bytes), "hidden-map") == (passes, kept_big)
### END HIDDEN TESTS

# %% [markdown]
# The logs this chapter wrote live in scratch directories; this last cell removes them.

# %%
remove_scratch_dirs()
