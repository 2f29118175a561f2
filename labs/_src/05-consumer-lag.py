# %% [markdown]
# # Lab 05 — Consumer lag over time
#
# Kafka stores no "lag". A consumer group's lag on a partition is a difference between two
# numbers the broker keeps in two different logs:
#
# * the partition's **log end offset** (the next offset to be written), which grows as producers
#   append record batches to the topic's log;
# * the group's **committed offset** (the next offset the group will read), which the group
#   coordinator stores as a record in the compacted topic `__consumer_offsets`.
#
# `lag = log end offset − committed offset`, counted in records, at a moment in time. Tools such
# as `kafka-consumer-groups --describe` print it for *now*. A lag monitor computes it *over time*,
# from the same two logs. In this lab Spark does that from the segment files alone, and you check
# the curves against what the consumers really did.
#
# The story (numbers at small scale): a topic `orders` with three partitions receives 40
# records/s on partition 0, 20/s on partition 1 and 60/s on partition 2, all tripled during a
# burst from 120 s to 240 s. Two groups read it: `billing` reads up to 400 records/s per partition, `analytics` up
# to 50/s, and `analytics` is down from 600 s to 720 s. Both commit every 5 s, as
# `auto.commit.interval.ms` does. kafkalab's broker writes both logs, in this process, on a
# synthetic clock (`kafkalab/spark/lag_story.py`).

# %%
from kafkalab.book import check_version
check_version("0.1.0")

# %% [markdown]
# ## Scale
# `SCALE = "small"` writes about 190,000 records in a few seconds (CI runs it). `SCALE = "full"`
# keeps the same 20-minute story at 60 times the rates: about 11 million records (~1.3 GB),
# which takes a minute or two to write. The lag curves have the same shapes, 60 times taller.

# %%
SCALE = "small"
from kafkalab.spark.lag_story import Burst, GroupSpec, LagStory

RATE = {"small": 1, "full": 60}[SCALE]
story = LagStory(
    records_per_s=40 * RATE, burst=Burst(120, 240, 3),
    groups=(GroupSpec("billing", 400 * RATE), GroupSpec("analytics", 50 * RATE, outages=((600, 720),))),
)
story.total_records()

# %% [markdown]
# ## Predict first
# Three questions about this story, answered from its numbers alone (the plots below would give
# them away). Each prediction starts blank; the lab checks each one where Spark has the answer.
#
# **Predict, then check 1.** A group's commits all go to one partition of `__consumer_offsets`:
# `abs(groupId.hashCode()) % 50`, where `hashCode` is Java's `String.hashCode` (and 50 is
# `offsets.topic.num.partitions`). The broker leading that partition is the group's coordinator.
# Which partition holds the commits of `analytics`? (`kafkalab.partitioner.java_string_hash`
# computes Java's `String.hashCode`.)

# %%
my_prediction_1 = None  # <- a partition number, 0-49

# %% [markdown]
# **Predict, then check 2.** What lag does `analytics` commit on partition 0 at t = 240 s, the
# end of the burst? Give a number of records.

# %%
my_prediction_2 = None  # <- records

# %% [markdown]
# **Predict, then check 3.** What lag does `analytics` commit on partition 2 at the last commit
# (t = 1200 s)?

# %%
my_prediction_3 = None  # <- records

# %% [markdown]
# ## Write the two logs
# Each second the producer sends each partition its records; each group reads what it can; every
# 5 s each group that is up sends an OffsetCommit. `write_lag_story` also returns what it knew
# at every commit (the consumer's position and the log end offset): the truth to check Spark
# against, later.

# %%
from tqdm.auto import tqdm

from kafkalab.spark import labs
from kafkalab.spark.lag_story import write_lag_story

data_dir = labs.scratch_dir("lab05-") / "data"  # removed by the last cell
with tqdm(total=story.total_records(), unit="records", disable=SCALE == "small") as bar:
    truth = write_lag_story(data_dir, story, progress=bar.update)
len(truth)

# %% [markdown]
# The data directory now holds the topic's three partitions and the 50 partitions of
# `__consumer_offsets` that a broker creates.

# %% tags=["nbval-ignore-output"]
import kafkalab.spark
from pyspark.sql import functions as F

spark = kafkalab.spark.session(app_name="lab05")  # the JVM's start-up notes go to stderr

# %% [markdown]
# ## Committed offsets, decoded from `__consumer_offsets`
# The `kafkalog` source reads `__consumer_offsets` like any topic: binary keys and values.
# `committed_offsets` decodes them in the Spark workers with the group coordinator's own record
# schemas (`kafkalab/group/records.py`, Kafka's `OffsetCommitKey` and `OffsetCommitValue`).

# %%
from kafkalab.spark.offsets_topic import committed_offsets

offsets_records = spark.read.format("kafkalog").load(str(data_dir / "__consumer_offsets"))
commits = committed_offsets(offsets_records).cache()
per_group = commits.groupBy("group", "offsets_partition").agg(F.count("*").alias("commit records")).toPandas()
offsets_partition = dict(zip(per_group["group"], per_group["offsets_partition"]))
if my_prediction_1 is None:
    print("not answered yet: set my_prediction_1 above and run the cells again")
else:
    assert my_prediction_1 == offsets_partition["analytics"], (
        "Not quite. Compute abs(java_string_hash('analytics')) % 50; Python's own hash() is not "
        "Java's, and Python's % of a negative number is not Java's.")
    print("Right:", offsets_partition["analytics"])

# %%
per_group

# %% [markdown]
# One record per partition per commit: a commit of three partitions writes three records, all
# with the same `commit_timestamp`. The topic is compacted on the key (group, topic, partition),
# so after cleaning only the newest commit per key would remain: the *history* this lab plots
# exists only until the cleaner runs.

# %% [markdown]
# ## Log end offsets over time, from batch headers
# Every batch header records its last offset and its largest timestamp. So the log end offset at
# time `t` is one past the last offset of the newest batch whose `max_timestamp <= t`. The
# batch level of the source reads only the 61-byte headers.

# %%
batches = (spark.read.format("kafkalog").option("level", "batches").load(str(data_dir / story.topic))
           .select("partition", F.col("max_timestamp").alias("ts"), (F.col("last_offset") + 1).alias("log_end_offset")))
batches.count()

# %% [markdown]
# ## Lag at every commit: an as-of join
# For each commit we need the log end offset *as of* the commit's timestamp. Put batches and
# commits in one table per partition, sort by time (a batch before a commit at the same
# millisecond), and carry the largest log end offset seen so far down to each commit row: a
# running `max` over a window. This is the standard as-of join, and it scales: one sort per
# partition, no join of every commit with every batch.

# %%
from pyspark.sql import Window

events = (
    batches.select("partition", "ts", "log_end_offset",
                   F.lit(None).cast("string").alias("group"), F.lit(None).cast("long").alias("committed_offset"),
                   F.lit(0).alias("order"))
    .unionByName(commits.filter(F.col("topic") == story.topic).select(
        "partition", F.col("commit_timestamp").alias("ts"), F.lit(None).cast("long").alias("log_end_offset"),
        "group", "committed_offset", F.lit(1).alias("order")))
)
so_far = Window.partitionBy("partition").orderBy("ts", "order").rowsBetween(Window.unboundedPreceding, Window.currentRow)
lag = (
    events.withColumn("log_end_offset", F.max("log_end_offset").over(so_far))
    .filter(F.col("order") == 1)
    .withColumn("lag", F.col("log_end_offset") - F.col("committed_offset"))
    .withColumn("t_s", (F.col("ts") - story.start_ms) / 1000)
    .select("group", "partition", "t_s", "ts", "committed_offset", "log_end_offset", "lag")
    .orderBy("group", "partition", "ts")
    .toPandas()
)
lag.tail()

# %% [markdown]
# ## The curves

# %%
import matplotlib.pyplot as plt

import numpy as np

commit_times = np.arange(story.commit_interval_s, story.seconds + 1, story.commit_interval_s)


def on_commit_grid(rows, column):
    """The column at every commit time, NaN where the group did not commit: gaps stay gaps."""
    return rows.set_index("t_s")[column].reindex(commit_times)


fig, axes = plt.subplots(1, 2, figsize=(11, 3.4), sharey=True)
for ax, group in zip(axes, ["billing", "analytics"]):
    for partition, rows in lag[lag["group"] == group].groupby("partition"):
        ax.plot(commit_times, on_commit_grid(rows, "lag"), label=f"partition {partition}")
    ax.axvspan(story.burst.start_s, story.burst.end_s, color="orange", alpha=0.15, label="burst")
    for start, end in dict((g.name, g.outages) for g in story.groups)[group]:
        ax.axvspan(start, end, color="grey", alpha=0.2, label="group down")
    ax.set_title(f"group {group}")
    ax.set_xlabel("time (s)")
axes[0].set_ylabel("lag at each commit (records)")
axes[1].legend(loc="upper left", fontsize=8)
plt.show()

# %% [markdown]
# What the plot shows, and a text summary of it:
#
# * `billing` reads faster than any partition fills, so every commit shows lag 0. Even the
#   burst leaves no trace at a 5-second resolution.
# * On partition 0, `analytics` keeps up until the burst, then falls behind by 70 records each
#   second and catches up by only 10 a second once it ends: a consumer with little headroom
#   takes far longer to recover than the burst lasted. Partition 1 (20/s, 60/s in the burst)
#   has 30 records/s of headroom and recovers in 40 s.
# * Partition 2 receives 60/s, more than the 50/s `analytics` can read. Its lag never stops
#   growing. Adding consumers would not help: one partition is read by at most one member of a
#   group, so a partition hotter than one consumer can read is a partitioning problem.
# * While `analytics` is down the curves have a gap: nobody commits. A lag monitor that reads
#   commits sees the last lag before the outage until the group returns; this is why tools such
#   as Burrow also watch whether commits keep coming.

# %% [markdown]
# ## Check Spark against the truth
# The generator knew every consumer's position and the log end offset at each commit. Spark knew
# only the files. They must agree at every commit.

# %%
import pandas as pd

truth_frame = pd.DataFrame([{"group": c.group, "partition": c.partition, "ts": c.commit_timestamp_ms,
                             "true_lag": c.lag} for c in truth])
compared = lag.merge(truth_frame, on=["group", "partition", "ts"], how="outer", indicator=True)
assert (compared["_merge"] == "both").all(), compared[compared["_merge"] != "both"]
assert (compared["lag"] == compared["true_lag"]).all(), compared[compared["lag"] != compared["true_lag"]]
f"{len(compared)} commits, all equal"

# %% [markdown]
# **Check 2 and 3.** Your predictions of the lag of `analytics` at t = 240 s on partition 0 and
# at t = 1200 s on partition 2.

# %%
def lag_at(group: str, partition: int, t_s: int) -> int:
    rows = lag[(lag["group"] == group) & (lag["partition"] == partition) & (lag["t_s"] == t_s)]
    return int(rows["lag"].iloc[0])


if my_prediction_2 is None:
    print("2: not answered yet: set my_prediction_2 above and run the cells again")
else:
    assert my_prediction_2 == lag_at("analytics", 0, 240), (
        "2: not quite. During the burst 3 x 40 records arrive each second and the group reads at "
        "most 50; before the burst it kept up exactly.")
    print("2 right:", lag_at("analytics", 0, 240))
if my_prediction_3 is None:
    print("3: not answered yet: set my_prediction_3 above and run the cells again")
else:
    assert my_prediction_3 == lag_at("analytics", 2, 1200), (
        "3: not quite. Count the seconds in four phases: before the burst (60 in, 50 out), the "
        "burst (180 in), after it (60 in), and the outage (60 in, nothing out).")
    print("3 right:", lag_at("analytics", 2, 1200))

# %% [markdown]
# ## Lag in time
# Records are a poor unit for an alert: 5,000 records is nothing on a busy topic and hours on a
# quiet one. The lag in *time* is the age of the oldest record the group has not read: at each
# commit, the commit time minus the timestamp of the record at the committed offset (0 when
# the group has read everything). Spark gets it with a join on (partition, offset) against the
# record-level source; `.schema(...)` names the three columns needed, so nothing else is built.

# %%
record_times = (spark.read.format("kafkalog").schema("partition int, offset bigint, timestamp bigint")
                .load(str(data_dir / story.topic))
                .withColumnRenamed("partition", "p").withColumnRenamed("offset", "committed_offset"))
commit_rows = spark.createDataFrame(lag[["group", "partition", "t_s", "ts", "committed_offset", "lag"]])
time_lag = (
    commit_rows.join(record_times, (commit_rows["partition"] == record_times["p"])
                     & (commit_rows["committed_offset"] == record_times["committed_offset"]), "left")
    .select("group", "partition", "t_s",
            F.when(F.col("lag") == 0, 0.0).otherwise((F.col("ts") - F.col("timestamp")) / 1000).alias("time_lag_s"))
    .orderBy("group", "partition", "t_s")
    .toPandas()
)

fig, ax = plt.subplots(figsize=(8, 3.2))
for partition, rows in time_lag[time_lag["group"] == "analytics"].groupby("partition"):
    ax.plot(commit_times, on_commit_grid(rows, "time_lag_s"), label=f"partition {partition}")
ax.set_title("group analytics: age of the oldest unread record at each commit")
ax.set_xlabel("time (s)")
ax.set_ylabel("lag (s)")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# At the end, partition 2 is 32,400 records behind and partition 0 4,800: almost seven times as
# many records, but only 4.5 times as many seconds (540 s against 120 s), because partition 2
# receives more records per second. The same record lag is a different delay on every
# partition. Alert on time, explain with records.

# %% [markdown]
# ## One more exercise
# **Predict, then check 4.** With a commit every 5 s, `billing` wrote 240 commits of three
# partitions. If it committed every second instead, how many records would `__consumer_offsets`
# hold for `billing` before the cleaner runs, and how many after a full clean (the cleaner keeps
# the newest record per key)? Answer as a tuple `(before, after)`.

# %%
my_prediction_4 = None  # <- (before, after)

# %%
billing_records = int(per_group[per_group["group"] == "billing"]["commit records"].iloc[0])
every_second = (billing_records * story.commit_interval_s, story.partitions)
if my_prediction_4 is None:
    print("not answered yet: set my_prediction_4 above and run both cells again")
else:
    assert tuple(my_prediction_4) == every_second, (
        "Not quite. One record per partition per commit; the key is (group, topic, partition).")
    print("Right:", every_second)

# %% [markdown]
# **Going further.** Rebuild the story with `commit_interval_s=60` and re-run the lab: the
# curves become staircases and the outage hides inside one step. Then give `analytics` a
# capacity of 60 (`GroupSpec("analytics", 60, ...)`): which partition's lag now stops growing?

# %%
spark.stop()
labs.remove_scratch_dirs()  # the generated logs leave the temp directory with the lab
