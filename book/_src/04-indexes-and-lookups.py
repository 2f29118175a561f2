# %% [markdown]
# # 04 Indexes and lookups
#
# A consumer asks for "offset 23", a `ListOffsets` request asks for "the first offset at or after
# 11:25:53.430". Neither question can be answered by reading a 1 GiB segment from the start. Each
# segment therefore carries two small **sparse indexes**: `.index` maps offsets to byte positions
# in the `.log` file, `.timeindex` maps timestamps to offsets. This chapter opens both files,
# follows a lookup step by step through the engine, and measures what a sparse index costs.

# %%
from kafkalab.book import check_version
check_version("0.1.0")

# %% [markdown]
# ## The chapter's log
# We build a log whose first segment holds five batches of 160, 160, 300, 600 and 100 bytes
# (10, 10, 1, 22 and 1 records), with `index.interval.bytes` = 300 so the index gets entries
# at all, then roll and write a few batches into a second segment. The builder lives in the
# widget module; here is what it writes:

# %%
import inspect

from kafkalab.book import remove_scratch_dirs, scratch_dir
from kafkalab.clock import ManualClock
from kafkalab.viz import index_search as viz

clock = ManualClock(1557554753000)
log = viz.build_worked_example_log(scratch_dir() / "orders-0", clock)
print(inspect.getsource(viz.build_worked_example_log))
segment0 = log.segments[0]
for entry in segment0.entries_from(0):
    print(f"batch offsets {entry.base_offset:>2}..{entry.last_offset:<2} at position {entry.position:>4}, "
          f"{entry.size_bytes:>3} bytes, max timestamp {entry.max_timestamp}")

# %% [markdown]
# ## The offset index, byte by byte
# Each `.index` entry is 8 bytes: a 4-byte offset **relative to the segment's base offset** and a
# 4-byte byte position in the `.log` file, both big-endian. The relative offset is why a segment
# can span at most 2^31 - 1 offsets (chapter 03's fourth roll reason). Segment 0 was rolled, so
# its index was trimmed to the entries written:

# %%
import struct

raw = segment0.offset_index.path.read_bytes()
print(f"{segment0.offset_index.path.name}: {len(raw)} bytes -> {len(raw) // 8} entries")
print(raw.hex(" ", 4))
for relative, position in struct.iter_unpack(">ii", raw):
    print(f"offset: {segment0.base_offset + relative} position: {position}")

# %% [markdown]
# The dump a source article prints for its segment reads `offset:0 position:0`, `offset:20
# position:320`, `offset:43 position:1220`. Our file holds the last two. The first line is not
# in the file: Kafka's `LogSegment.append` adds an entry only when *more than*
# `index.interval.bytes` were written since the previous one, so the first batch of a segment is
# never indexed. It does not need to be -- a lookup below the first entry starts at the front of
# the segment, which is exactly what `offset 0 position 0` would have said:

# %%
print(segment0.offset_index.lookup(5))

# %% [markdown]
# Why entries at 20 and 43? Before each batch the segment compares the bytes written since the
# last entry with `index.interval.bytes` = 300. Before the batch at 320 that count is 160 + 160
# = 320 > 300: index it (its **last** offset, 20, at its start position, 320) and reset. The
# 600-byte batch sees only 300 (not more than 300): no entry. The last batch sees 900: entry
# (43, 1220). The engine's code, run for every batch appended:

# %%
from kafkalab.storage.segment import LogSegment

print(inspect.getsource(LogSegment._index_batch))

# %% [markdown]
# ## Finding offset 23
# Three steps, in every Kafka broker since 0.8:
#
# 1. **Floor segment.** Kafka keeps a partition's segments in a `ConcurrentSkipListMap` keyed by
#    base offset and asks for the floor entry of 23. kafkalab keeps the base offsets in a sorted
#    list and uses `bisect` -- the same question, answered in O(log n).
# 2. **Index search.** Binary-search the segment's `.index` for the largest entry at or below 23:
#    `offset 20 position 320`.
# 3. **Scan.** Read batch headers from byte 320 until a batch's last offset reaches 23.
#
# With a subscriber attached, the log reports each step as a `LookupStep` event:

# %%
import bisect

base_offsets = [s.base_offset for s in log.segments]
print("base offsets", base_offsets, "-> floor of 23 is", base_offsets[bisect.bisect_right(base_offsets, 23) - 1])

steps = []
unsubscribe = log.subscribe(steps.append)
found_segment, found_batch = log.lookup(23)
unsubscribe()
for step in steps:
    print(step)
print("answer:", found_batch)

# %% [markdown]
# The search read slot 0 (offset 20, below 23) and slot 1 (offset 43, above), so the answer is
# slot 0. The scan read the 300-byte batch at 320 (offset 20 only) and the 600-byte batch at 620,
# which holds offsets 21..42 -- 900 bytes to find one record. A fetch returns that whole batch;
# the consumer skips offsets 21 and 22 itself.
#
# ## Widget: watch a lookup
# The widget draws the same lookup from the same events: the index entries (grey), each probe in
# reading order (orange in the warm section, blue in the cold one -- see below), the entry found
# (red star), and the scan over the segment's bytes. In JupyterLab, switch between offsets and
# timestamps and move the target.

# %%
trace = viz.trace_offset_lookup(log, 23)
assert (trace.start_offset, trace.start_position, trace.bytes_scanned) == (20, 320, 900)
widget = viz.show_index_search(log, "offset", 23)

# %% [markdown]
# ## The time index
# A `.timeindex` entry is 12 bytes: an 8-byte timestamp and a 4-byte relative offset. It says "by
# this offset, the largest timestamp seen in the segment had reached this value". Entries are
# written together with offset-index entries, but only when the largest timestamp has grown, so
# the timestamps in the file strictly increase and can be binary-searched -- even though
# producers' `CreateTime` timestamps need not be in order.

# %%
raw_time = segment0.time_index.path.read_bytes()
print(f"{segment0.time_index.path.name}: {len(raw_time)} bytes")
for timestamp, relative in struct.iter_unpack(">qi", raw_time):
    print(f"timestamp: {timestamp} offset: {segment0.base_offset + relative}")

# %% [markdown]
# To see the "only when it grows" rule, append single-record batches whose timestamps go 1000,
# 900, 1100, 1050, 1200 to a log that indexes every batch (`index.interval.bytes` = 0):

# %%
from kafkalab.storage.log import Log
from kafkalab.storage.log_config import LogConfig

jumbled = Log.open(scratch_dir() / "jumbled-0", LogConfig(index_interval_bytes=0), clock)
for timestamp in (1000, 900, 1100, 1050, 1200):
    jumbled.append_as_leader(viz.exact_batch(1, 80, timestamp), leader_epoch=0)
print("offset index:", jumbled.active_segment.offset_index.raw_entries())
print("time index:  ", jumbled.active_segment.time_index.raw_entries())

# %% [markdown]
# Offsets 1..4 are all in the offset index; the time index skipped offset 1 (900 < 1000) and
# offset 3 (1050 < 1100).
#
# ## Finding timestamp 1557554753430
# A timestamp lookup takes one more step than an offset lookup:
#
# 1. Compare the target with each segment's **largest timestamp**, oldest first; the first
#    segment whose largest timestamp is >= the target holds the answer.
# 2. Binary-search its `.timeindex` for the largest timestamp <= the target, which gives an offset.
# 3. Binary-search the `.index` for that offset, which gives a position.
# 4. Scan from there for the first record whose timestamp is >= the target.

# %%
ts_trace = viz.trace_timestamp_lookup(log, 1557554753430)
print("segments compared (base offset, largest timestamp):", ts_trace.segments_considered)
print("time index entry:  ", ts_trace.time_entry)
print("offset index entry:", (ts_trace.start_offset, ts_trace.start_position))
print("probes:", [(p.index, p.slot, p.key, p.section) for p in ts_trace.probes])
print(f"scanned {ts_trace.bytes_scanned} bytes; first record at or after the target: "
      f"offset {ts_trace.found_offset}, timestamp {ts_trace.found_timestamp}")

# %% [markdown]
# The source article tells the same story with the time-index entry `[1557554753420, 430]`
# followed by the offset-index entry `[20, 320]`. Those two cannot come from one segment: a
# time-index entry is written at the same moment as an offset-index entry for a batch ending at or
# after its offset, so the offset index of a segment holding `[..., 430]` has an entry at 430 or
# later, and the search for 430 would land there, not on 20. In a real segment the time-index entry
# that leads to `[20, 320]` carries offset 20, as ours does.
#
# One more detail: the answer is a **record**, not a batch. The scan stops at the batch holding
# offsets 21..42 (its largest timestamp, ...442, is the first to reach the target) and then walks
# its records to offset 30, the first stamped ...430 -- as Kafka's
# `LogSegment.findOffsetByTimestamp` does. `Log.offset_for_timestamp`, which answers `ListOffsets`
# requests, gives the same record:

# %%
engine_answer = log.offset_for_timestamp(1557554753430)
print(engine_answer)
assert (engine_answer.timestamp, engine_answer.offset) == (ts_trace.found_timestamp, ts_trace.found_offset)

# %%
widget = viz.show_index_search(log, "timestamp", 1557554753430)

# %% [markdown]
# ## Positions after cleaning
# An index entry maps an offset to a byte *position*, so it is only true for the file it was
# written for. The log cleaner (chapter 06) writes a new, shorter file for each segment it
# cleans, with a new index beside it: the offsets keep their values -- gaps and all -- but every
# position moves. Eight one-record batches with keys k0 k1 k2 k0 k1 k2 k0 k1 (every batch
# indexed), then one clean, which keeps the last record of each key:

# %%
from kafkalab.records.codec import iter_batches
from kafkalab.records.model import Record
from kafkalab.records.v2 import build_v2_batch
from kafkalab.storage.cleaner import LogCleaner

compacted = Log.open(scratch_dir() / "compacted-0", LogConfig(cleanup_policy="compact", index_interval_bytes=0), clock)
for key in (b"k0", b"k1", b"k2", b"k0", b"k1", b"k2", b"k0", b"k1"):
    compacted.append_as_leader(build_v2_batch([Record(0, clock.milliseconds(), key, b"v" * 40)]), leader_epoch=0)
compacted.roll("manual")  # the cleaner never touches the active segment

def layout(segment: LogSegment) -> str:
    data = segment.log_path.read_bytes()
    offsets = [batch.header.base_offset for batch in iter_batches(data)]
    return f"offsets {offsets}, {len(data)} bytes; index {segment.offset_index.raw_entries()}"

print("before:", layout(compacted.segments[0]))
LogCleaner(compacted.directory.parent, clock.milliseconds).force_clean(compacted)
print("after: ", layout(compacted.segments[0]))
for target in (2, 6):
    t = viz.trace_offset_lookup(compacted, target)
    print(f"lookup {target}: scan from position {t.start_position}, first batch at or after it at "
          f"position {t.found_position}")

# %% [markdown]
# Offset 5 now sits at position 0 (a segment's first batch is never indexed), 6 at 110 and 7 at
# 220, where they were 550, 660 and 770. A lookup of a cleaned-away offset, 2, finds no batch
# holding it and stops at the first batch after it: a consumer that asks for offset 2 is given
# the records from 5 on, the next offsets that still exist.

# %% [markdown]
# ## Kafka's cache-friendly binary search
# A textbook binary search starts in the middle of the file. Kafka's `AbstractIndex` does not,
# because of who asks: almost every lookup is for data near the **end** of the log -- consumers
# that keep up, followers replicating, the broker's own appends. Index files are memory-mapped, so
# each entry read touches a page of the page cache. A search that starts in the middle touches a
# different set of pages for every lookup, and pages not touched for a while are evicted; the next
# lookup then waits for the disk.
#
# Kafka splits the entries into a **warm section**, the last 8192 bytes of entries (1024 offset
# entries, 682 time entries), and a cold section before it. It reads the first warm slot; if that
# key is still below the target, it searches the warm section only. Tail lookups then touch the
# same two or three pages every time, and those pages stay hot. kafkalab's version:

# %%
from kafkalab.storage import index_search

print(inspect.getsource(index_search.floor_slot_loop))
print(inspect.getsource(index_search._loop))
print("WARM_SECTION_BYTES =", index_search.WARM_SECTION_BYTES)

# %% [markdown]
# To see the sections we need a long index: 3000 one-record batches with `index.interval.bytes` =
# 0, so every batch but the first is indexed (2999 entries; the warm section starts at slot
# 2999 - 1 - 1024 = 1974). A tail lookup stays in the warm section; a lookup near the start reads
# the first warm slot, finds it too big, and searches the cold section.

# %%
demo = viz.build_demo_log(scratch_dir() / "demo-0", viz.DemoParams(batches=3000), clock)
for target in (2990, 100):
    t = viz.trace_offset_lookup(demo, target)
    print(f"offset {target}: {len(t.probes)} probes", [(p.slot, p.section) for p in t.probes])

# %% [markdown]
# Now 100 lookups of the last 100 offsets, as tailing consumers would make them. Count the
# distinct 4 KiB index pages each search touches, Kafka's way and the textbook way:

# %%
keys = [k for k, _ in demo.active_segment.offset_index.raw_entries()]
warm_pages, plain_pages = set(), set()
for target in range(2900, 3000):
    t = viz.trace_offset_lookup(demo, target)
    slot, plain_slots = viz.plain_binary_search(keys, target)
    assert slot == t.index_slot  # same answer
    warm_pages |= viz.pages_touched([p.slot for p in t.probes], 8)
    plain_pages |= viz.pages_touched(plain_slots, 8)
print("warm-section search touched pages", sorted(warm_pages))
print("textbook search touched pages    ", sorted(plain_pages))

# %% [markdown]
# This index is only six pages long, so the difference is small. Kafka's indexes are preallocated
# to `segment.index.bytes` = 10 MiB: 1,310,720 offset entries, 2560 pages. Run the same 100 tail
# lookups over index keys that large (a `range` stands in for the file, so nothing is allocated):

# %%
big_keys = range(0, 10 * 1_310_720, 10)
warm_pages, plain_pages = set(), set()
for target in range(10 * 1_310_720 - 1000, 10 * 1_310_720, 10):
    read = []
    slot = index_search.floor_slot_loop(big_keys.__getitem__, len(big_keys), target, 8,
                                        lambda s, _key, _section: read.append(s))
    plain_slot, plain_slots = viz.plain_binary_search(big_keys, target)
    assert slot == plain_slot
    warm_pages |= viz.pages_touched(read, 8)
    plain_pages |= viz.pages_touched(plain_slots, 8)
print(f"warm-section search: {len(warm_pages)} distinct pages, textbook search: {len(plain_pages)}")

# %% [markdown]
# Every textbook search starts at the middle page and then at the three-quarter page and so on:
# many pages that the tail traffic would not otherwise keep in memory. Kafka's search reads only
# the last few pages, which the appends themselves keep warm. The figure shows a tail lookup on
# the 3000-entry index:

# %%
widget = viz.show_index_search(demo, "offset", 2990)

# %% [markdown]
# ## Exercises
# Each prediction starts blank. Write your answer in the cell tagged as yours, run it, then run
# the check below it: the check refuses a blank or wrong answer with a hint, and passes only on
# the engine's value.
#
# **Predict, then check 1.** In the chapter's log, how many bytes does the scan read to find
# offset 43?

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- your answer, in bytes
my_prediction = 100
### END SOLUTION

# %% tags=["check"]
from kafkalab.book import check_prediction

t = viz.trace_offset_lookup(log, 43)
check_prediction(my_prediction, t.bytes_scanned,
                 right=f"the scan starts at position {t.start_position} and reads {t.bytes_scanned} bytes.",
                 hint="look up 43 in the index dump above: the scan starts at the position of the "
                      "floor entry and reads batch after batch until it reaches the batch that "
                      "holds 43.")
### BEGIN HIDDEN TESTS
assert my_prediction == 100
### END HIDDEN TESTS

# %% [markdown]
# **Predict, then check 2.** A log of 2000 one-record batches, indexed as the demo log above
# (`index.interval.bytes` = 0). Which slot does *every* offset lookup read first?

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- a slot number
my_prediction = 974
### END SOLUTION

# %% tags=["check"]
small_demo = viz.build_demo_log(scratch_dir() / "small-demo-0", viz.DemoParams(batches=2000), clock)
firsts = {viz.trace_offset_lookup(small_demo, o).probes[0].slot for o in (5, 700, 1500, 1999)}
assert len(firsts) == 1, f"lookups start at different slots: {sorted(firsts)}"
check_prediction(my_prediction, firsts.pop(), right=f"slot {my_prediction}, the first warm slot.",
                 hint="count the index entries first (which batch is not indexed?), then find "
                      "the first slot of the warm section: 8192 bytes of 8-byte entries.")
### BEGIN HIDDEN TESTS
assert my_prediction == 974
### END HIDDEN TESTS

# %% [markdown]
# **Change the engine.** The index is sparse to stay small: one entry per `index.interval.bytes`
# (4096 by default). Find the sparsest index that makes lookups cheap: choose
# `index_interval_bytes` so that a 400-batch log's lookups, averaged over every offset, scan
# fewer than 600 bytes, with no more than 40 index entries.

# %% tags=["answer"]
index_interval_bytes = 4096
### BEGIN SOLUTION
### BLANK # your change here
index_interval_bytes = 1024
### END SOLUTION

# %% tags=["check"]
def index_trade(interval: int, name: str) -> tuple[int, float]:
    """Index entries and mean bytes scanned per lookup for a 400-batch log."""
    dense = viz.build_demo_log(scratch_dir() / f"{name}-0",
                               viz.DemoParams(batches=400, index_interval_bytes=interval), clock)
    entries = dense.active_segment.offset_index.entries
    mean = viz.mean_bytes_scanned(dense, range(400))
    dense.close()
    return entries, mean

entries, mean = index_trade(index_interval_bytes, "chosen")
print(f"index.interval.bytes={index_interval_bytes}: {entries} entries, {mean:.1f} bytes scanned per lookup")
assert mean < 600, "lookups still scan too much: make the index denser"
assert entries <= 40, "the index has more entries than it needs: make it sparser"
### BEGIN HIDDEN TESTS
hidden_entries, hidden_mean = index_trade(int(index_interval_bytes), "hidden")
assert hidden_mean < 600 and hidden_entries <= 40
### END HIDDEN TESTS

# %% [markdown]
# The whole trade, from Kafka's default to an entry per batch:

# %%
rows = [(interval, *index_trade(interval, f"dense{interval}")) for interval in (4096, 1024, 256, 0)]
for interval, entries, mean in rows:
    print(f"index.interval.bytes={interval:>5}: {entries:>3} entries ({entries * 8:>5} index bytes), "
          f"{mean:7.1f} bytes scanned per lookup")
assert [r[1] for r in rows] == sorted(r[1] for r in rows)  # denser: more entries ...
assert [r[2] for r in rows] == sorted((r[2] for r in rows), reverse=True)  # ... less scanning

# %% [markdown]
# The logs this chapter wrote live in scratch directories; this last cell removes them.

# %%
remove_scratch_dirs()
