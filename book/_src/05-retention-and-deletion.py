# %% [markdown]
# # 05 Retention and deletion
#
# A Kafka log does not grow forever. With `cleanup.policy=delete` (the default) a periodic task
# deletes **whole segments** from the front of each log, by three rules: too old, too big, or
# below the log start offset. This chapter runs those rules on real logs, watches the files
# change on disk, and checks the configuration behind them.

# %%
from kafkalab.book import check_version
check_version("0.1.0")

# %% [markdown]
# ## `cleanup.policy`
# The broker key is `log.cleanup.policy`; a topic overrides it with `cleanup.policy`. The value
# is `delete`, `compact` (chapter 06) or both. kafkalab's configuration model resolves a topic's
# value the way `kafka-configs --describe` reports it:

# %%
from kafkalab.config import BROKER_KEYS, ConfigLayers, describe_topic_config
from kafkalab.storage.log_config import CLEANUP_POLICIES

print(describe_topic_config(ConfigLayers(), "orders", "cleanup.policy").describe_line())
layers = ConfigLayers(topics={"users": {"cleanup.policy": "compact"}})
print(describe_topic_config(layers, "users", "cleanup.policy").describe_line())
print("allowed:", CLEANUP_POLICIES)

# %% [markdown]
# ## Which retention setting wins
# Time retention has three broker keys. `log.retention.ms` beats `log.retention.minutes`, which
# beats `log.retention.hours` (default 168, seven days); a topic's `retention.ms` beats them all.
# Watch the effective `retention.ms` change as keys are added to `server.properties`:

# %%
static = {}
for key, value in (("log.retention.hours", "24"), ("log.retention.minutes", "90"), ("log.retention.ms", "1000")):
    static[key] = value
    entry = describe_topic_config(ConfigLayers(static=dict(static)), "orders", "retention.ms")
    print(f"after setting {key}={value}: retention.ms = {entry.value} (from {entry.source.value})")
print(describe_topic_config(ConfigLayers(), "orders", "retention.ms").describe_line())

# %% [markdown]
# **A correction.** One of the source articles lists `log.retention.bytes` twice in its table of
# defaults: once as -1 and once as 1073741824 (1 GiB). The second row is `log.segment.bytes`, the
# size at which a segment rolls. Size-based retention is **off** by default:

# %%
for key in ("log.retention.bytes", "log.segment.bytes", "log.retention.hours", "log.retention.check.interval.ms",
            "file.delete.delay.ms"):
    if key in BROKER_KEYS:
        print(f"{key:<34} default {BROKER_KEYS[key].default}")
from kafkalab.storage.log_config import LogConfig
print(f"{'file.delete.delay.ms (topic)':<34} default {LogConfig().file_delete_delay_ms}")
assert BROKER_KEYS["log.retention.bytes"].default == -1
assert BROKER_KEYS["log.segment.bytes"].default == 1073741824

# %% [markdown]
# ## Time retention looks at timestamps, not at files
# A segment is expired when `now - (its largest record timestamp) > retention.ms`. We build a log
# of 24 records one second apart, rolled every 6 records, on a `ManualClock`, with a real
# scheduler (kafkalab's timing wheel) for the delayed file deletes:

# %%
import os

from kafkalab.book import remove_scratch_dirs, scratch_dir
from kafkalab.clock import ManualClock
from kafkalab.storage.log import Log
from kafkalab.storage.retention import delete_old_segments, largest_timestamp_ms
from kafkalab.timer.scheduler import Scheduler
from kafkalab.timer.timer import Timer
from kafkalab.viz.cleanup import START_MS, CleanupParams, fill_log

clock = ManualClock(START_MS)
scheduler = Scheduler(Timer(clock))
params = CleanupParams(policy="delete", records=24, records_per_segment=6, gap_ms=1000)
config = LogConfig(retention_ms=10_000)
log = Log.open(scratch_dir() / "orders-0", config, clock, scheduler=scheduler)
fill_log(log, clock, params)
clock.advance_ms(3000)

def show_ages() -> None:
    for segment in log.segments:
        age_ms = clock.milliseconds() - largest_timestamp_ms(segment)
        print(f"segment {segment.base_offset:>2}: newest record {age_ms:>6} ms old -> "
              + ("expired" if age_ms > config.retention_ms else "kept"))

show_ages()

# %% [markdown]
# Some articles (and Kafka itself, for records without timestamps) fall back to the file's
# modification time. It is a poor witness: `touch`, a backup restore, or copying a replica to a
# new broker during a reassignment all reset it. Here we make every file look brand new, then
# ancient -- and the retention decision does not move, because it never reads mtime:

# %%
import inspect
from kafkalab.storage import retention

def plan() -> list[int]:
    predicate = retention.retention_time_predicate(clock.milliseconds(), config.retention_ms)
    return [s.base_offset for s in retention.deletable_segments(log, predicate)]

print("would delete", plan())
for stamp_s in (clock.milliseconds() // 1000, 0):  # "touch" now, then 1 January 1970
    for path in log.directory.iterdir():
        os.utime(path, (stamp_s, stamp_s))
    print(f"after setting every mtime to {stamp_s}: would delete", plan())
print(inspect.getsource(largest_timestamp_ms))

# %% [markdown]
# ## Deleting: out of the map, `.deleted`, then gone
# Deleting a segment happens in three steps, so that no reader trips over a vanishing file:
#
# 1. remove it from the log's segment map -- new reads can no longer find it;
# 2. rename its files with a `.deleted` suffix -- a restart would finish the job;
# 3. after `file.delete.delay.ms` (60 s), delete the files, from a task on the scheduler --
#    reads already in progress have had time to finish.

# %%
def listing() -> None:
    print(sorted(p.name for p in log.directory.iterdir() if p.suffix != ".snapshot"))

listing()
result = delete_old_segments(log, clock.milliseconds())
print(result, "-> log start offset", log.log_start_offset)
listing()

# %%
clock.advance_ms(59_999)
scheduler.timer.advance_clock()
print("after 59 999 ms:"); listing()
clock.advance_ms(1)
scheduler.timer.advance_clock()
print("after 60 000 ms:"); listing()

# %% [markdown]
# ## Size retention: whole segments only
# With `retention.bytes` set, the oldest segments go while the log is larger than the limit --
# but only whole segments, and only if the log stays at or above the limit without them. The log
# may therefore stay up to one segment larger than `retention.bytes`. The widget below runs the
# same kind of log and draws it before (top) and after (bottom) one check: colours are keys,
# hatched records are gone, red dashed boxes are deleted segments.

# %%
from kafkalab.viz.cleanup import run_cleanup, show_cleanup

state = run_cleanup(CleanupParams(policy="delete", retention_bytes=1000))
print("segment sizes before:", [s.size_bytes for s in state.before.segments], "total", state.before.size_bytes)
print("deleted segments", state.deleted_segments, "-> log size", state.after.size_bytes, ">= retention.bytes 1000")
widget = show_cleanup(CleanupParams(policy="delete", retention_bytes=1000))

# %% [markdown]
# ## The log start offset rule
# `DeleteRecords` (the `kafka-delete-records` tool) moves a partition's **log start offset**
# forward. Reads below it fail at once, but the bytes are still on disk; the retention check
# then deletes every segment whose *next* segment starts at or below the log start offset.
#
# The source article's example: segments starting at 0, 11, 23 and 30, log start offset 25.
# Segment 0's next base offset is 11 <= 25: delete. Segment 11's next is 23 <= 25: delete.
# Segment 23's next is 30 > 25: keep -- it still holds offsets 25..29.

# %%
from kafkalab.errors import OffsetOutOfRangeError
from kafkalab.records.model import Record
from kafkalab.records.v2 import build_v2_batch

lso_log = Log.open(scratch_dir() / "events-0", LogConfig(), clock)
for offset in range(35):
    if offset in (11, 23, 30):
        lso_log.roll("manual")
    lso_log.append_as_leader(build_v2_batch([Record(0, clock.milliseconds(), None, b"x")]), leader_epoch=0)
print("segments", [s.base_offset for s in lso_log.segments])
lso_log.increment_log_start_offset(25)  # what DeleteRecords(offset=25) does
try:
    lso_log.read(24, 1000)
except OffsetOutOfRangeError as exc:
    print("read(24):", exc)
print(delete_old_segments(lso_log, clock.milliseconds()))
print("segments", [s.base_offset for s in lso_log.segments], "log start offset", lso_log.log_start_offset)

# %% [markdown]
# ## When every segment has expired, roll first
# If even the active segment is expired, deleting everything would leave the log with no
# segment to append to. Kafka rolls a new, empty active segment at the log end offset first,
# then deletes all the old ones -- so the log's offsets continue where they were:

# %%
clock.advance_ms(1_000_000)
print("before:", [s.base_offset for s in log.segments], "log end offset", log.log_end_offset)
print(delete_old_segments(log, clock.milliseconds()))
print("after: ", [(s.base_offset, s.size_bytes) for s in log.segments], "log end offset", log.log_end_offset)

# %% [markdown]
# The check itself runs every `log.retention.check.interval.ms` (5 minutes) on every log of the
# broker (its `kafka-log-retention` task, in `kafkalab.broker.housekeeping`), so data lives up
# to that much longer than `retention.ms` -- and, because whole segments go, up to a segment's
# worth of time more: a segment expires only when its **newest** record does.
#
# ## Exercises
# Each prediction starts blank. Write your answer in the cell tagged as yours, run it, then run
# the check below it: the check refuses a blank or wrong answer with a hint, and passes only on
# the engine's value.
#
# **Predict, then check 1.** Same 0/11/23/30 log, but `DeleteRecords` moves the log start
# offset to 23. Which segments does the next check delete?

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- a list of base offsets, e.g. [0]
my_prediction = [0, 11]
### END SOLUTION

# %% tags=["check"]
from kafkalab.book import check_prediction

check_log = Log.open(scratch_dir() / "check-0", LogConfig(), clock)
for offset in range(35):
    if offset in (11, 23, 30):
        check_log.roll("manual")
    check_log.append_as_leader(build_v2_batch([Record(0, clock.milliseconds(), None, b"x")]), leader_epoch=0)
before = [s.base_offset for s in check_log.segments]
check_log.increment_log_start_offset(23)
delete_old_segments(check_log, clock.milliseconds())
deleted = [b for b in before if b not in {s.base_offset for s in check_log.segments}]
check_prediction(my_prediction, deleted, right=f"{deleted} deleted, segment 23 now starts the log.",
                 hint="a segment goes when its *next* segment's base offset is at or below the "
                      "log start offset; apply the rule to each segment in turn.")
### BEGIN HIDDEN TESTS
assert list(my_prediction) == [0, 11]
### END HIDDEN TESTS


# %% [markdown]
# **Predict, then check 2.** The 24-record log from the widget (the four segment sizes are
# printed above it) with `retention.bytes` = 800: how many segments are deleted?

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- a number of segments
my_prediction = 2
### END SOLUTION

# %% tags=["check"]
state = run_cleanup(CleanupParams(policy="delete", retention_bytes=800))
check_prediction(my_prediction, len(state.deleted_segments),
                 right=f"{state.deleted_segments}; the log keeps {state.after.size_bytes} bytes.",
                 hint="remove the oldest segment while what remains stays at or above 800 "
                      "bytes; stop at the first one whose removal would go below.")
### BEGIN HIDDEN TESTS
assert my_prediction == 2
### END HIDDEN TESTS

# %% [markdown]
# **Change the engine.** Size retention overshoots by up to one segment. Under the same
# `retention.bytes` = 1000, choose how many records a segment holds (`records_per_segment`, 6
# in the widget) so that the log stays less than 100 bytes above the limit -- with as few
# segments as that allows (at most 8).

# %% tags=["answer"]
records_per_segment = 6
### BEGIN SOLUTION
### BLANK # your change here
records_per_segment = 3
### END SOLUTION

# %% tags=["check"]
state = run_cleanup(CleanupParams(policy="delete", retention_bytes=1000, records_per_segment=records_per_segment))
overshoot = state.after.size_bytes - 1000
print(f"{records_per_segment} records per segment: {len(state.before.segments)} segments, "
      f"log keeps {state.after.size_bytes} bytes ({overshoot} over retention.bytes)")
assert overshoot < 100, "the log stays 100 bytes or more above retention.bytes: smaller segments"
assert len(state.before.segments) <= 8, "more segments than needed: make them larger"
### BEGIN HIDDEN TESTS
assert records_per_segment == 3
### END HIDDEN TESTS

# %% [markdown]
# The whole trade: smaller segments follow the limit more closely, at the price of more files.

# %%
overshoots = []
for per_segment in (12, 6, 3, 1):
    state = run_cleanup(CleanupParams(policy="delete", retention_bytes=1000, records_per_segment=per_segment))
    overshoots.append(state.after.size_bytes - 1000)
    print(f"{per_segment:>2} records per segment: {len(state.before.segments):>2} segments, "
          f"log keeps {state.after.size_bytes} bytes ({overshoots[-1]} over retention.bytes)")
assert overshoots == sorted(overshoots, reverse=True) and all(o >= 0 for o in overshoots)

# %% [markdown]
# The logs this chapter wrote live in scratch directories; this last cell removes them.

# %%
remove_scratch_dirs()
