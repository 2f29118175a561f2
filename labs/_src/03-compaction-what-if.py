# %% [markdown]
# # Lab 03 — Compaction what-if
#
# A topic with `cleanup.policy=compact` keeps, for every key, at least its **latest** record.
# The log cleaner rewrites old segments without the records a newer one with the same key
# supersedes. It never touches the **active** segment, it keeps tombstones (null values) for
# `delete.retention.ms` so consumers can see the deletion, and offsets survive: a compacted
# log has gaps.
#
# Here Spark predicts exactly which records the cleaner keeps — a window over each key ordered
# by offset — and which log the cleaner will pick for a given `min.cleanable.dirty.ratio`.
# Then kafkalab's real cleaner (`kafkalab/storage/cleaner/`) runs and the answers must agree.

# %%
from kafkalab.book import check_version
check_version("0.1.0")

# %% [markdown]
# ## Scale
# `SCALE = "small"` runs in seconds (CI). `SCALE = "full"` writes 10 million records over
# 100,000 keys in 128 MiB segments. The what-ifs below rewrite and clean the topic several times;
# at full scale they run on a sample, the first million records, with segments a tenth the size,
# so they keep the same proportions and finish in minutes rather than an hour.

# %%
SCALE = "small"
PARAMS = {
    "small": dict(records=30_000, keys=2_000, segment_bytes=256 * 1024,
                  what_if_records=30_000, what_if_segment_bytes=256 * 1024),
    "full": dict(records=10_000_000, keys=100_000, segment_bytes=128 * 1024 * 1024,
                 what_if_records=1_000_000, what_if_segment_bytes=128 * 1024 * 1024 // 10),
}[SCALE]
PARAMS

# %% [markdown]
# ## Generate a keyed topic with tombstones
# Keys follow a Zipf(1.0) law, so hot keys are rewritten often and most of their old versions
# are garbage; 5 % of records are tombstones.

# %%
from kafkalab.spark import labs
from kafkalab.tools.gen_log import GenSpec, generate

START_MS = 1_700_000_000_000
data_dir = labs.scratch_dir("lab03-")  # removed by the last cell
spec = GenSpec(
    data_dir=str(data_dir), topic="profiles", partitions=2, records=PARAMS["records"], keys=PARAMS["keys"],
    key_skew=1.0, value_bytes=100, compression="none", seed=3, start_ms=START_MS, rate=1_000,
    tombstones=0.05, config=(("segment.bytes", str(PARAMS["segment_bytes"])),))
written = generate(spec, show_progress=False)
written

# %% tags=["nbval-ignore-output"]
import kafkalab.spark
from pyspark.sql import Window
from pyspark.sql import functions as F

spark = kafkalab.spark.session(app_name="lab03")  # the JVM's start-up notes go to stderr

# %% [markdown]
# ## Predict what the first clean keeps
# The cleanable range ends at the active segment's base offset (the high watermark is the log
# end offset here: one replica). Below it, a record survives if it is the latest for its key in
# that range; at or above it everything stays. Naming the columns in a schema makes the source
# build only those.

# %%
COLUMNS = "partition int, offset bigint, key binary, value binary, segment string"
records = spark.read.format("kafkalog").schema(COLUMNS).load(str(data_dir))
active = records.groupBy("partition").agg(F.max("segment").alias("active_segment"))
records = (records.join(active, "partition")
           .withColumn("first_uncleanable", F.substring("active_segment", 1, 20).cast("bigint"))
           .withColumn("tombstone", F.col("value").isNull()))
latest_first = Window.partitionBy("partition", "key", F.col("offset") < F.col("first_uncleanable")).orderBy(F.desc("offset"))
predicted = records.withColumn(
    "kept", (F.col("offset") >= F.col("first_uncleanable")) | (F.row_number().over(latest_first) == 1)
).cache()
per_segment = (predicted.groupBy("partition", "segment")
               .agg(F.count("*").alias("records"), F.sum((~F.col("kept")).cast("int")).alias("removable"),
                    F.sum(F.col("tombstone").cast("int")).alias("tombstones"))
               .withColumn("garbage_share", F.round(F.col("removable") / F.col("records"), 3))
               .orderBy("partition", "segment").toPandas())
per_segment

# %% [markdown]
# The share of garbage is highest in the oldest segments: their records had the most time to be
# superseded. The active segment (last of each partition) shows 0: the cleaner never reads it.

# %%
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(8, 3))
for partition, group in per_segment.groupby("partition"):
    ax.plot(range(len(group)), group["garbage_share"], marker="o", label=f"partition {partition}")
ax.set_xlabel("segment (oldest first)")
ax.set_ylabel("share of records removable")
ax.legend()
plt.show()

# %% [markdown]
# ## Bytes saved for several `segment.bytes`
# The cleaner never reads the active segment, so what the first clean can save depends on how much
# of the log the active segment holds -- which `segment.bytes` decides. Below, the same records
# (at full scale, the sample) are written again with several segment sizes. For each copy Spark
# predicts the records the first clean removes (`labs.first_clean_prediction`, the window above);
# then the real cleaner cleans the copy, and the two record counts must agree. The bytes are the
# cleaner's own.


# %%
import shutil

import pandas as pd

from kafkalab.spark import labs
from kafkalab.storage.cleaner.manager import LogCleaner

now_ms = START_MS + PARAMS["records"]  # the clock just after the last append (rate 1,000/s)
OVERRIDES = {"cleanup.policy": "compact", "segment.bytes": str(PARAMS["segment_bytes"])}

SEGMENT_SIZES = [PARAMS["what_if_segment_bytes"] * k // 4 for k in (1, 4, 16, 32)]  # the largest exceeds a partition
sample = GenSpec(**{**{f: getattr(spec, f) for f in spec.__slots__}, "records": PARAMS["what_if_records"],
                    "config": (("segment.bytes", str(PARAMS["what_if_segment_bytes"])),)})
what_if = []
for size in SEGMENT_SIZES:
    copy_dir = labs.scratch_dir("lab03-size-")
    generate(GenSpec(**{**{f: getattr(sample, f) for f in sample.__slots__}, "data_dir": str(copy_dir),
                        "config": (("segment.bytes", str(size)),)}), show_progress=False)
    copy = spark.read.format("kafkalog").schema("partition int, offset bigint, key binary, segment string")
    guess = labs.first_clean_prediction(copy.load(str(copy_dir))).agg(
        F.count("*").alias("records"), F.sum((~F.col("kept")).cast("int")).alias("removable"),
        F.sum((F.col("offset") >= F.col("first_uncleanable")).cast("int")).alias("in_active")).first()
    before = sum(p.stat().st_size for p in copy_dir.rglob("*.log"))
    for p in sorted(written):
        log = labs.open_partition_log(copy_dir / f"profiles-{p}", {**OVERRIDES, "segment.bytes": str(size)}, now_ms)
        cleaner_for_copy = LogCleaner(copy_dir, lambda: now_ms)
        cleaner_for_copy.force_clean(log)
        log.close()
    after_records = spark.read.format("kafkalog").schema("offset bigint").load(str(copy_dir)).count()
    after = sum(p.stat().st_size for p in copy_dir.rglob("*.log"))
    assert guess["records"] - guess["removable"] == after_records, (size, guess, after_records)
    what_if.append({"segment.bytes": size, "share in active segment": round(guess["in_active"] / guess["records"], 3),
                    "records removed": guess["removable"], "bytes saved": before - after,
                    "share of bytes saved": round((before - after) / before, 3)})
    shutil.rmtree(copy_dir)
what_if = pd.DataFrame(what_if)
what_if

# %%
fig, ax = plt.subplots(figsize=(8, 3))
ax.plot(what_if["segment.bytes"] / 1024, what_if["share of bytes saved"], marker="o", label="bytes saved by the first clean")
ax.plot(what_if["segment.bytes"] / 1024, what_if["share in active segment"], marker="s", label="records in the active segment")
ax.set_xscale("log", base=2)
ax.set_xlabel("segment.bytes (KiB)")
ax.set_ylabel("share of the log")
ax.legend()
plt.show()

# %% [markdown]
# The active segment holds whatever arrived since the last roll: anything from nothing to
# `segment.bytes`. Small segments keep that tail small, so almost all the garbage is reachable;
# a segment as large as the partition never rolls, and a log that never rolls is never cleaned
# (last row: nothing saved). Small segments clean better but mean more files, more index
# memory and more frequent rolls: `segment.bytes` is a trade-off, not a knob to minimise.

# %% [markdown]
# ## Run the real cleaner
# `LogCleaner.force_clean` cleans one log now, whatever its dirty ratio; the cleaner's
# checkpoint file then records where the clean range ended.

# %%
bytes_before = sum(p.stat().st_size for p in data_dir.rglob("*.log"))
cleaner = LogCleaner(data_dir, lambda: now_ms)
outcomes = {}
for p in sorted(written):
    log = labs.open_partition_log(data_dir / f"profiles-{p}", OVERRIDES, now_ms)
    outcomes[p] = cleaner.force_clean(log)
    log.close()
bytes_after = sum(p.stat().st_size for p in data_dir.rglob("*.log"))
{p: o.result.end_offset for p, o in outcomes.items()}, bytes_before, bytes_after

# %% [markdown]
# ## Compare, record by record

# %%
kept_predicted = predicted.where("kept").select("partition", "offset").toPandas()
kept_actual = spark.read.format("kafkalog").schema("partition int, offset bigint").load(str(data_dir)).toPandas()
pred = sorted(map(tuple, kept_predicted.to_numpy().tolist()))
got = sorted(map(tuple, kept_actual.to_numpy().tolist()))
assert pred == got, (len(pred), len(got))
summary = {"records before": int(predicted.count()), "records kept (predicted)": len(pred),
           "records kept (cleaner)": len(got), "bytes saved": bytes_before - bytes_after}
summary

# %% [markdown]
# ## When would the cleaner run again? `min.cleanable.dirty.ratio`
# New writes arrive. The part of the log below the checkpoint is *clean*; from the checkpoint
# to the active segment it is *dirty*. A log is cleanable when dirty / (clean + dirty) is above
# `min.cleanable.dirty.ratio` (0.5 by default). Spark computes the ratio from batch headers.

# %%
more = GenSpec(**{**{f: getattr(spec, f) for f in spec.__slots__}, "records": PARAMS["records"] // 3,
                  "seed": 33, "start_ms": now_ms})
generate(more, show_progress=False)
checkpoint = {p: o.result.end_offset for p, o in outcomes.items()}
segment_rows = (spark.read.format("kafkalog").option("level", "batches").load(str(data_dir))
                .groupBy("partition", "segment").agg(F.min("base_offset").alias("base_offset"),
                                                     F.sum("size").alias("size_bytes"))
                .orderBy("partition", "base_offset").toPandas())


def dirty_ratio(p):
    rows = segment_rows[segment_rows["partition"] == p]
    active_base = int(rows["segment"].max()[:20])
    clean = rows[rows["base_offset"] < checkpoint[p]]["size_bytes"].sum()
    dirty = rows[(rows["base_offset"] >= checkpoint[p]) & (rows["base_offset"] < active_base)]["size_bytes"].sum()
    return dirty / (clean + dirty)


ratios = {p: round(float(dirty_ratio(p)), 4) for p in sorted(written)}
ratios

# %%
from kafkalab.storage.cleaner.manager import log_to_clean

now_ms = more.start_ms + more.records
rows = []
for threshold in (0.5, 0.8, 0.85, 0.9):
    for p in sorted(written):
        log = labs.open_partition_log(data_dir / f"profiles-{p}", {**OVERRIDES, "min.cleanable.dirty.ratio": str(threshold)}, now_ms)
        chosen = log_to_clean(log, cleaner.checkpoint.get("profiles", p), now_ms)
        rows.append({"min.cleanable.dirty.ratio": threshold, "partition": p, "Spark ratio": ratios[p],
                     "cleaner ratio": round(chosen.dirty_ratio, 4), "predicted cleanable": ratios[p] > threshold,
                     "cleanable": chosen.cleanable})
        log.close()

decisions = pd.DataFrame(rows)
assert (decisions["predicted cleanable"] == decisions["cleanable"]).all()
assert (decisions["Spark ratio"] == decisions["cleaner ratio"]).all()
decisions

# %% [markdown]
# ## Exercises — predict, then check
# Each prediction starts blank: replace the `...` with your prediction (a number, or the Spark
# query that computes it), run the cell, then run the check below it. The check refuses a blank
# or wrong answer with a hint, and passes only on the engine's value.
#
# **1.** How many tombstones are still in the log below the active segments after the first
# clean? Count them in Spark's prediction (`predicted`: columns `kept`, `tombstone`, `offset`,
# `first_uncleanable`), before the new writes. Why are they still there?

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK prediction = ...
prediction = int(predicted.where("kept AND tombstone AND offset < first_uncleanable").count())
### END SOLUTION

# %% tags=["check"]
first_clean = spark.read.format("kafkalog").schema("partition int, offset bigint, value binary").load(str(data_dir))
actual_tombstones = first_clean.where(F.col("value").isNull() & F.expr(
    f"offset < CASE partition {' '.join(f'WHEN {p} THEN {c}' for p, c in checkpoint.items())} END")).count()
labs.check("tombstones kept below the active segment", prediction, actual_tombstones,
           hint="count only kept tombstones below each partition's first uncleanable offset: "
                "the active segment is not cleaned at all.")
### BEGIN HIDDEN TESTS
if SCALE == "small":
    assert prediction == 89
### END HIDDEN TESTS

# %% [markdown]
# **2.** Offsets survive compaction. What is the largest gap between consecutive offsets in
# partition 0 after the first clean (below the checkpoint)? Compute it from Spark's prediction
# (`pred`: sorted `(partition, offset)` pairs of the kept records; `checkpoint[0]`).

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK prediction = ...
offsets0 = sorted(o for p, o in pred if p == 0 and o < checkpoint[0])
prediction = max(b - a for a, b in zip(offsets0, offsets0[1:]))
### END SOLUTION

# %% tags=["check"]
actual0 = sorted(r.offset for r in first_clean.where(f"partition = 0 AND offset < {checkpoint[0]}").select("offset").collect())
labs.check("largest offset gap in partition 0", prediction, max(b - a for a, b in zip(actual0, actual0[1:])),
           hint="take partition 0's kept offsets below the checkpoint, in order, and the largest "
                "difference between neighbours.")
### BEGIN HIDDEN TESTS
if SCALE == "small":
    assert prediction == 214
### END HIDDEN TESTS

# %% [markdown]
# **Change the engine.** Exercise 1's tombstones stay for `delete.retention.ms` (24 h by default)
# after the first clean that keeps them, so that a consumer that is behind still sees each delete.
# Change the topic's `delete.retention.ms` in `tombstone_overrides`: the check writes a fresh copy
# of the topic (at full scale, the sample), cleans each partition twice (the first clean stamps
# each kept tombstone's delete horizon, the second drops those whose horizon has passed), and
# passes when no tombstone is left below the active segments. Then explain: what does a consumer
# that was offline during those two cleans see for a deleted key?
#
# Going further: the cleaner keeps the latest record per key only *within the cleanable range*,
# and the active segment is never in it. Find every place in `kafkalab/storage/cleaner/` that
# keeps the active segment out, and why Kafka would never clean it on a live log.

# %% tags=["answer"]
tombstone_overrides = dict(OVERRIDES)
### BEGIN SOLUTION
### BLANK # your change here
tombstone_overrides["delete.retention.ms"] = "0"
### END SOLUTION

# %% tags=["check"]
fresh_dir = labs.scratch_dir("lab03-tombstones-")
generate(GenSpec(**{**{f: getattr(sample, f) for f in sample.__slots__}, "data_dir": str(fresh_dir)}), show_progress=False)
fresh_now_ms = START_MS + PARAMS["what_if_records"]  # the clock just after the last append
fresh_overrides = {**tombstone_overrides, "segment.bytes": str(PARAMS["what_if_segment_bytes"])}
fresh_cleaner = LogCleaner(fresh_dir, lambda: fresh_now_ms)
active_base = {}
for p in sorted(written):
    for _ in range(2):
        log = labs.open_partition_log(fresh_dir / f"profiles-{p}", fresh_overrides, fresh_now_ms)
        fresh_cleaner.force_clean(log)
        active_base[p] = log.active_segment.base_offset
        log.close()
tombstones_left = (spark.read.format("kafkalog").schema("partition int, offset bigint, value binary")
                   .load(str(fresh_dir)).where(F.col("value").isNull() & F.expr(
                       f"offset < CASE partition {' '.join(f'WHEN {p} THEN {b}' for p, b in active_base.items())} END"))
                   .count())
print(f"tombstones left below the active segments after two cleans: {tombstones_left}")
assert tombstones_left == 0, "tombstones are still kept: they stay for delete.retention.ms after the first clean"
### BEGIN HIDDEN TESTS
assert int(tombstone_overrides["delete.retention.ms"]) == 0
### END HIDDEN TESTS

# %%
spark.stop()
labs.remove_scratch_dirs()  # the generated logs leave the temp directory with the lab
