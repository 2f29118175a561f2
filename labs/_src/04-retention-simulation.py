# %% [markdown]
# # Lab 04 — Retention simulation
#
# A topic with `cleanup.policy=delete` forgets old data in **whole segments**. On every check
# (every `log.retention.check.interval.ms`, 5 minutes by default) the broker deletes, oldest
# first, the segments that break `retention.bytes` (the log is too big) and then those that break
# `retention.ms` (the segment's *newest* record is too old). It stops at the first segment that
# survives, and never deletes data the high watermark has not reached.
#
# In this lab Spark reads only batch headers, builds one row per segment (size, newest
# timestamp), and you predict what several retention settings would delete. Then kafkalab's
# real retention (`kafkalab/storage/retention.py`) runs on copies of the log and the two answers
# must agree exactly.

# %%
from kafkalab.book import check_version
check_version("0.1.0")

# %% [markdown]
# ## Scale
# `SCALE = "small"` runs in seconds (CI). `SCALE = "full"` writes 10 million records (~1.2 GB in
# 128 MiB segments); the same story over the same synthetic hour, with more data per minute.

# %%
SCALE = "small"
PARAMS = {
    "small": dict(records=40_000, segment_bytes=256 * 1024),
    "full": dict(records=10_000_000, segment_bytes=128 * 1024 * 1024),
}[SCALE]
SPAN_S = 4_000  # the records cover ~67 minutes of synthetic time at any scale
PARAMS

# %% [markdown]
# ## Generate the topic
# Two partitions, 100-byte values, timestamps on a synthetic clock that advances
# `SPAN_S / records` seconds per record.

# %%
from kafkalab.spark import labs
from kafkalab.tools.gen_log import GenSpec, generate

START_MS = 1_700_000_000_000
data_dir = labs.scratch_dir("lab04-")  # removed by the last cell
spec = GenSpec(
    data_dir=str(data_dir), topic="events", partitions=2, records=PARAMS["records"], keys=10_000,
    key_skew=0.0, value_bytes=100, compression="none", seed=4, start_ms=START_MS,
    rate=PARAMS["records"] // SPAN_S, config=(("segment.bytes", str(PARAMS["segment_bytes"])),))
written = generate(spec, show_progress=False)
written

# %% [markdown]
# ## One row per segment, from batch headers
# Retention needs three numbers per segment: its base offset, its size and its largest
# timestamp. All three come from the 61-byte batch headers, so the batch level is enough.

# %% tags=["nbval-ignore-output"]
import kafkalab.spark
from pyspark.sql import functions as F

spark = kafkalab.spark.session(app_name="lab04")  # the JVM's start-up notes go to stderr

# %%
batches = spark.read.format("kafkalog").option("level", "batches").load(str(data_dir))
segments = (
    batches.groupBy("partition", "segment")
    .agg(F.min("base_offset").alias("base_offset"), F.sum("size").alias("size_bytes"),
         F.max("max_timestamp").alias("max_timestamp"), F.count("*").alias("batches"))
    .orderBy("partition", "base_offset").toPandas()
)
now_ms = int(segments["max_timestamp"].max())  # the check runs just after the last append
segments["age_min"] = (now_ms - segments["max_timestamp"]) / 60_000
segments.groupby("partition").agg(segments=("segment", "count"), bytes=("size_bytes", "sum"),
                                  oldest_age_min=("age_min", "max"))

# %% [markdown]
# Ages grow towards the oldest segment, in steps: a segment's age is the age of its *newest*
# record, so a segment holding records from 60 to 55 minutes ago is "55 minutes old".

# %%
import matplotlib.pyplot as plt

RETENTION_MS_LINE = 30 * 60_000
fig, ax = plt.subplots(figsize=(8, 3))
for partition, group in segments.groupby("partition"):
    ax.step(range(len(group)), group["age_min"], where="mid", label=f"partition {partition}")
ax.axhline(RETENTION_MS_LINE / 60_000, color="grey", linestyle="--", label="retention.ms = 30 min")
ax.set_xlabel("segment (oldest first)")
ax.set_ylabel("age of newest record (min)")
ax.legend()
plt.show()

# %% [markdown]
# ## Predict
# `labs.predicted_retention` replays Kafka's two rules over the segment table (read it:
# `inspect.getsource(labs.predicted_retention)`). Four settings: time only, size only, both,
# and a size limit below one segment.

# %%
from kafkalab.spark import labs

partition_bytes = segments.groupby("partition")["size_bytes"].sum()
SETTINGS = {
    "retention.ms=30min": (30 * 60_000, -1),
    "retention.bytes=half": (-1, int(partition_bytes.min() // 2)),
    "both: 45min and 70%": (45 * 60_000, int(partition_bytes.min() * 0.7)),
    "retention.bytes=1 byte": (-1, 1),
}


def stats(partition):
    rows = segments[segments["partition"] == partition]
    return [labs.SegmentStat(int(r.base_offset), int(r.size_bytes), int(r.max_timestamp)) for r in rows.itertuples()]


predicted = {
    (name, p): labs.predicted_retention(stats(p), now_ms, ms, size)
    for name, (ms, size) in SETTINGS.items() for p in sorted(written)
}
predicted

# %% [markdown]
# ## Run the real retention on copies of the log
# Each setting gets its own copy of the data directory, opened as the broker would open it
# with those topic-level overrides, and one retention check at `now_ms`. Retention is
# destructive, hence the copies; `labs.linked_copy` hard-links the `.log` files instead of
# copying their bytes (retention renames and unlinks a segment, it never writes into one), so
# four copies of a 1.2 GB log at full scale cost no disk space and no time.

# %%
import shutil

from kafkalab.storage.retention import delete_old_segments

actual, start_offsets = {}, {}
for name, (ms, size) in SETTINGS.items():
    copy = labs.linked_copy(data_dir, labs.scratch_dir("lab04-copy-") / "data")
    for p in sorted(written):
        log = labs.open_partition_log(copy / f"events-{p}", {"retention.ms": str(ms), "retention.bytes": str(size),
                                                              "segment.bytes": str(PARAMS["segment_bytes"])}, now_ms)
        result = delete_old_segments(log, now_ms)
        actual[(name, p)] = {"size": result.size_breached, "time": result.time_breached}
        start_offsets[(name, p)] = log.log_start_offset
        log.close()
    shutil.rmtree(copy.parent)

import pandas as pd

comparison = pd.DataFrame([
    {"setting": name, "partition": p, "predicted size": predicted[(name, p)]["size"],
     "actual size": actual[(name, p)]["size"], "predicted time": predicted[(name, p)]["time"],
     "actual time": actual[(name, p)]["time"]}
    for name, p in predicted
])
assert predicted == actual, comparison
comparison

# %% [markdown]
# Notice the last setting: with `retention.bytes=1` every segment but the active one goes, and
# the active one survives only because deleting it would take the log below the limit — the
# size rule deletes a segment only if the log is still at least `retention.bytes` without it.

# %% [markdown]
# ## Exercises — predict, then check
# Each prediction starts blank: replace the `...` with your prediction (a number, or the Spark
# query that computes it), run the cell, then run the check below it. The check refuses a blank
# or wrong answer with a hint, and passes only on the engine's value.
#
# **1.** With `retention.ms` = 30 minutes, take the youngest segment retention deletes: how old
# (in whole minutes) is its newest record? At small scale segments are short, so reason it out;
# at full scale each segment spans many minutes, so read the `age_min` column of `segments`.

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK prediction = ...
prediction = int(segments.loc[segments["age_min"] > 30, "age_min"].min())  # strictly older than 30 min
### END SOLUTION

# %% tags=["check"]
deleted_ages = []
for p in sorted(written):
    n = predicted[("retention.ms=30min", p)]["time"]
    deleted_ages += segments[segments["partition"] == p]["age_min"].head(n).tolist()
labs.check("smallest age of a deleted segment (whole minutes)", prediction, int(min(deleted_ages)),
           hint="a segment goes when its *newest* record is older than retention.ms.")
### BEGIN HIDDEN TESTS
if SCALE == "small":
    assert prediction == 30
### END HIDDEN TESTS

# %% [markdown]
# **2.** Retention deletes whole segments, so some records older than 30 minutes stay on disk.
# Which *offset* does a consumer starting from `earliest` get on partition 0 after the 30-minute
# check? Read it from the `segments` table (or compute it); the check asks the real log.

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK prediction = ...
survivors = segments[segments["partition"] == 0].iloc[predicted[("retention.ms=30min", 0)]["time"]:]
prediction = int(survivors["base_offset"].iloc[0])
### END SOLUTION

# %% tags=["check"]
labs.check("log start offset after retention", prediction, start_offsets[("retention.ms=30min", 0)],
           hint="the new log start offset is the base offset of the oldest segment that "
                "survives: the first one whose newest record is young enough.")
### BEGIN HIDDEN TESTS
if SCALE == "small":
    assert prediction == 10806
### END HIDDEN TESTS

# %% [markdown]
# **Change the engine.** Kafka compares `now - largest timestamp > retention.ms` (strictly). Make
# it `>=` in `retention_time_predicate` (`kafkalab/storage/retention.py`) and restart the
# kernel. The check below fails before the edit and passes after it
# (`.venv/bin/python -m kafkalab.classroom check retention-time-ge` does the same from a shell).
# Then re-run the comparison cell: does any setting disagree with Spark's replay, and why is a
# 1 ms boundary so rarely hit on a real log? Going further: make the rule use the segment's
# *oldest* timestamp instead, and explain from the plot which setting disagrees first. Undo the
# edits afterwards.

# %% tags=["raises-exception"]
from kafkalab.classroom.engine_changes import check as engine_change_check

engine_change_check("retention-time-ge")  # raises EngineUnchanged until the engine is edited

# %%
spark.stop()
labs.remove_scratch_dirs()  # the generated logs leave the temp directory with the lab
