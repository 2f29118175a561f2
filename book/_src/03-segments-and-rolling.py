# %% [markdown]
# # 03 Segments and rolling
#
# A partition's log is not one file. It is a **directory** of **segments**, and each segment
# is a `.log` file of record batches with two sparse indexes beside it, `.index` (offset →
# byte position) and `.timeindex` (timestamp → offset). Only the newest segment, the *active*
# one, is ever written; older segments are read-only until retention deletes them or the
# cleaner rewrites them. This chapter creates a log, watches it roll, and opens the files.

# %%
from kafkalab.book import check_version
check_version("0.1.0")

# %% [markdown]
# ## A log on disk
# We open a log for partition 0 of topic `orders` in a fresh temporary directory, with a small
# `segment.bytes` so it rolls quickly, and a `ManualClock` so timestamps are the same on every
# run. Each append is one batch of one 300-byte record.

# %%
import os

from kafkalab.book import remove_scratch_dirs, scratch_dir
from kafkalab.clock import ManualClock
from kafkalab.records.model import Record
from kafkalab.records.v2 import build_v2_batch
from kafkalab.storage.log import Log
from kafkalab.storage.log_config import LogConfig

clock = ManualClock(1557554753000)
data_dir = scratch_dir()
config = LogConfig(segment_bytes=4096, index_interval_bytes=1000)
log = Log.open(data_dir / "orders-0", config, clock)
events = []
log.subscribe(events.append)

def append(count: int, value_bytes: int = 300, gap_ms: int = 500) -> None:
    for _ in range(count):
        clock.advance_ms(gap_ms)
        record = Record(offset=0, timestamp=clock.milliseconds(), key=None, value=b"x" * value_bytes)
        log.append_as_leader(build_v2_batch([record]), leader_epoch=0)

append(40)
print(f"log end offset {log.log_end_offset}; segments (base offset, bytes):",
      [(s.base_offset, s.size_bytes) for s in log.segments])

# %%
for name in sorted(os.listdir(log.directory)):
    print(f"{name:<36}{(log.directory / name).stat().st_size:>10} bytes")

# %% [markdown]
# Beside each segment that rolled sits a 10-byte `.snapshot`: Kafka snapshots the idempotent
# producers' state (their last sequence numbers) at every roll, named after the new segment's
# base offset, so a restart need not reread the whole log. These batches carry no producer id, so
# each snapshot is empty -- a version, a CRC and a count of 0; chapter 12 fills one. The 8-byte
# `leader-epoch-checkpoint` is written as soon as a partition has a leader epoch: it records
# which epoch began at which offset (here only epoch 0 at offset 0), which chapter 08 uses to
# cut a follower's log after a leader change. One file a Kafka segment can have is missing: the
# `.txnindex`. Kafka creates it only when the segment holds the end of an *aborted* transaction;
# it lists each aborted transaction (producer id, first and last offset, the last stable offset
# then), so a `read_committed` consumer can skip their records without reading them twice.
# Transactions come in chapter 12.
#
# Read the names carefully: **a segment is named after its own base offset**, the first offset
# it holds, zero-padded to 20 digits. `00000000000000000011.log` starts at offset 11. (One of
# the source articles says a segment is named after the *previous* segment's last offset; the
# listing shows it is not -- the previous segment ends at 10.) Let us prove it by reading the
# first batch of each segment:

# %%
from kafkalab.records.header import read_header

for segment in log.segments:
    first = read_header(segment.log_path.read_bytes(), 0)
    print(f"{segment.log_path.name}: first batch has base offset {first.base_offset}")
    assert first.base_offset == segment.base_offset == int(segment.log_path.stem)

# %% [markdown]
# Each `.log` here holds 11 batches of 370 bytes (4070 bytes): a twelfth would make 4440 bytes,
# more than `segment.bytes` = 4096, so the log **rolled** first. The log told its subscribers
# why:

# %%
from kafkalab.storage.events import SegmentRolled

for event in events:
    if isinstance(event, SegmentRolled):
        print(f"rolled {event.previous_base_offset} ({event.previous_size_bytes} B) -> new active "
              f"segment {event.base_offset}: {event.reason}")

# %% [markdown]
# ## The four reasons a segment rolls
# Before every append Kafka's `LogSegment.shouldRoll` checks, in order:
#
# 1. **`segment.bytes`** (broker default `log.segment.bytes` = 1 GiB): the batch would not fit.
# 2. **`segment.ms`** (`log.roll.ms`, else `log.roll.hours` = 168 h; the `ms` setting wins):
#    the segment's first timestamp is more than that long ago, so a slow partition still gets
#    new segments -- and retention, which deletes whole segments, can make progress. The check
#    runs only when a batch arrives: a partition that receives nothing never rolls, however old
#    its active segment grows.
# 3. **a full index**: the offset index has no free slot left, or the time index has one
#    (it counts as full one slot early, keeping the last slot for the entry written when the
#    segment rolls) -- sized by `segment.index.bytes`, broker `log.index.size.max.bytes` = 10 MiB.
# 4. **relative offset overflow**: index entries store offsets as 4-byte offsets relative to
#    the base offset, so a segment cannot span more than 2^31 - 1 offsets.
#
# Here is kafkalab's version of that check, from the package:

# %%
import inspect
from kafkalab.storage.segment import LogSegment

print(inspect.getsource(LogSegment.should_roll))

# %% [markdown]
# ## Indexes are preallocated, then trimmed
# A new segment's index files are created at their **maximum** size (`segment.index.bytes`,
# rounded down to whole entries) so appends never grow them. When the segment rolls, they are
# trimmed to the entries actually written. The active segment's index is still 10 MiB on disk:

# %%
active = log.active_segment
for segment in log.segments:
    index_path = segment.offset_index.path
    print(f"{index_path.name}: {index_path.stat().st_size:>9} bytes on disk, "
          f"{segment.offset_index.entries} entries"
          + ("   <- active, preallocated" if segment is active else ""))

# %% [markdown]
# ## `kafkalab dump-log`, like `kafka-dump-log.sh`
# The same view Kafka's tool prints, on our second segment. Note `position`: batch *n* of the
# segment starts at byte 370 × *n*, and the sparse `.index` maps a few of those offsets to
# their positions (chapter 04 is about how lookups use it).

# %%
from kafkalab.tools.cli import main as kafkalab_cli

second = log.segments[1]
exit_status = kafkalab_cli(["dump-log", "--files", str(second.log_path)])

# %% [markdown]
# ## Widget: watch segments roll
# The widget below runs a real log in a temporary directory for each setting and draws its
# segments as a strip: one box per segment, width proportional to its bytes, coloured by the
# rule that closed it (grey: the active segment). Move the sliders: shrink `segment.ms` below
# the time 11 records take, or `segment.index.bytes` to a few entries, and watch the reason
# change. (In the stored notebook, and in CI, it is drawn as a static figure.)

# %%
from kafkalab.viz.segments import RollingParams, show_segment_rolling

widget = show_segment_rolling(RollingParams(segment_bytes=4096, segment_ms=60_000,
                                            record_bytes=300, records_per_s=2.0, appends=40))

# %% [markdown]
# ## Writes are sequential; flushing is left to the OS
# Appends only ever go to the end of the active segment, so the disk sees sequential writes and
# the operating system's page cache absorbs them. Kafka does not `fsync` per message by default:
# `log.flush.interval.messages` and `log.flush.interval.ms` default to "never", and durability
# comes from replication (chapter 08) rather than from forcing every write to disk.

# %%
print("flush.messages default:", LogConfig().flush_messages, "(Long.MAX_VALUE: never)")

# %% [markdown]
# ## Exercises
# Each prediction starts blank. Write your answer in the cell tagged as yours, run it, then run
# the check below it: the check refuses a blank or wrong answer with a hint, and passes only on
# the engine's value.
#
# **Predict, then check 1.** With `segment.bytes` = 4096 and 300-byte records (370 bytes per
# batch), how many segments does a log have after 100 appends?

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- a number of segments
my_prediction = 10
### END SOLUTION

# %% tags=["check"]
from kafkalab.book import check_prediction
from kafkalab.viz.segments import run_rolling

state = run_rolling(RollingParams(segment_bytes=4096, record_bytes=300, appends=100))
check_prediction(my_prediction, len(state.bars),
                 right=f"{len(state.bars)} segments, bases {[b.base_offset for b in state.bars]}",
                 hint="find how many 370-byte batches fit in 4096 bytes; a segment rolls when "
                      "the next batch would not fit. Count the active segment too.")
### BEGIN HIDDEN TESTS
assert my_prediction == 10
### END HIDDEN TESTS

# %% [markdown]
# **Predict, then check 2.** Records arrive every 500 ms, `segment.bytes` is huge and
# `segment.ms` = 5000. How many records does each closed segment hold?

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- records per closed segment
my_prediction = 11
### END SOLUTION

# %% tags=["check"]
state = run_rolling(RollingParams(segment_bytes=1 << 20, segment_ms=5000, records_per_s=2.0, appends=30))
closed = [b.record_count for b in state.bars if b.closed_by == "segment.ms"]
assert closed and len(set(closed)) == 1, f"closed segments differ: {closed}"
check_prediction(my_prediction, closed[0], right=f"every closed segment holds {closed[0]}: {closed}",
                 hint="the first record of a segment arrives at t. A record rolls the segment "
                      "only when more than 5000 ms have passed since t; list the arrival times.")
### BEGIN HIDDEN TESTS
assert my_prediction == 11
### END HIDDEN TESTS

# %% [markdown]
# **Change the engine.** Make the index the limit: give the log `segment.index.bytes` = 48
# (four 12-byte time-index entries) and `index.interval.bytes` = 0 (index every batch), with
# `dataclasses.replace(params, ...)`. The check passes once a full time index is what closes
# the segments. How many records does each hold, and why that many?

# %% tags=["answer"]
import dataclasses

params = RollingParams(segment_bytes=1 << 20, appends=20)
### BEGIN SOLUTION
### BLANK # your change here
params = dataclasses.replace(params, segment_index_bytes=48, index_interval_bytes=0)
### END SOLUTION

# %% tags=["check"]
state = run_rolling(params)
print(state.roll_counts, [b.record_count for b in state.bars])
assert set(state.roll_counts) == {"time index full"}, (
    f"segments rolled for {dict(state.roll_counts) or 'no reason'}, not because the time index "
    "filled up")
### BEGIN HIDDEN TESTS
assert params.segment_index_bytes == 48 and params.index_interval_bytes == 0
### END HIDDEN TESTS

# %% [markdown]
# The logs this chapter wrote live in scratch directories; this last cell removes them.

# %%
remove_scratch_dirs()
