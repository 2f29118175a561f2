# %% [markdown]
# # Lab 06 — Replication history from an event log
#
# Operators learn what replication did from its traces: ISR shrink and expand events, high
# watermark progress, and the answers producers got. In this lab a simulated three-broker
# cluster (`kafkalab/sim`, real brokers over a seeded network) lives through six minutes of
# trouble, and its event recorder exports every replication event as Parquet: the kind of log
# you would collect from real brokers. Spark reads it and answers an operator's questions: when
# did each partition's ISR shrink and grow back, how long was a partition below
# `min.insync.replicas`, when did its high watermark stall, and what did producers see then?
#
# The script (`kafkalab/spark/replication_story.py`): a producer writes one acks=all batch per
# partition per second to `orders` (3 partitions, replication factor 3, `min.insync.replicas=2`).
# At 20 s a follower of partition 0 loses its network link to that partition's leader (links
# between two brokers carry every partition, so other partitions notice too); the link heals at
# 110 s. At 150 s the leader of partition 1 crashes; it restarts at 210 s. At 270 s the leader of
# partition 2 loses its links to both its followers, until 330 s.

# %%
from kafkalab.book import check_version
check_version("0.1.0")

# %% [markdown]
# ## Scale
# `SCALE = "small"` runs the six-minute story once (CI runs it). `SCALE = "full"` repeats the same
# script over 20 seeds, 20 clusters, into one event log, to compare how long the episodes last
# when the network's timing differs.

# %%
SCALE = "small"
SEEDS = {"small": [6], "full": list(range(6, 26))}[SCALE]

# %% [markdown]
# ## Predict first
# Each prediction starts blank; the lab checks it where Spark has the answer (a blank or wrong
# answer stops the run there, with a hint).
#
# **Predict, then check 1.** A leader checks its followers every
# `replica.lag.time.max.ms / 2` = 15 s from the start, and removes one that has not caught up for
# more than `replica.lag.time.max.ms` (30 s). The follower of partition 0 was caught up until its
# link broke at 20 s. At which second does partition 0's ISR shrink?

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction_1 = None  # <- a whole second
my_prediction_1 = 60
### END SOLUTION

# %% [markdown]
# **Predict, then check 2.** While partition 2's ISR is its leader alone, what error code do
# acks=all produces to it get? (Kafka's error codes: 7 REQUEST_TIMED_OUT, 19 NOT_ENOUGH_REPLICAS,
# 20 NOT_ENOUGH_REPLICAS_AFTER_APPEND.)

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction_2 = None  # <- an error code
my_prediction_2 = 19
### END SOLUTION

# %% [markdown]
# ## Run the story, export the events

# %%
from tqdm.auto import tqdm

from kafkalab.spark import labs
from kafkalab.spark.replication_story import ReplicationStory, write_replication_story

work = labs.scratch_dir("lab06-")  # removed by the last cell
story = ReplicationStory()
marks = {}
with tqdm(total=story.seconds * len(SEEDS), unit="s", disable=SCALE == "small") as bar:
    for seed in SEEDS:
        marks[seed] = write_replication_story(work / f"cluster-{seed}", work / "events" / f"seed={seed}" / "events.parquet",
                                              ReplicationStory(seed=seed), progress=bar.update)
marks[SEEDS[0]]

# %% tags=["nbval-ignore-output"]
import kafkalab.spark
from pyspark.sql import Window
from pyspark.sql import functions as F

spark = kafkalab.spark.session(app_name="lab06")  # the JVM's start-up notes go to stderr

# %%
START_MS = 1_700_000_000_000
events = (spark.read.parquet(str(work / "events"))
          .withColumn("t_s", (F.col("time_ms") - START_MS) / 1000))
events.groupBy("kind").count().orderBy("kind").toPandas()

# %% [markdown]
# ## ISR changes, as episodes
# Each `isr-changed` row is the leader applying the controller's new ISR. Ordering a partition's
# rows by time and pairing each with the next (`lead` over a window) turns them into intervals
# with a known ISR size: an *episode* is an interval with fewer than 3 replicas in sync.

# %%
changes = (events.filter(F.col("kind") == "isr-changed")
           .select("seed", "partition", "t_s", F.size("new_isr").alias("isr_size")))
by_time = Window.partitionBy("seed", "partition").orderBy("t_s")
intervals = (changes.withColumn("until_s", F.coalesce(F.lead("t_s").over(by_time), F.lit(float(story.seconds))))
             .withColumn("duration_s", F.col("until_s") - F.col("t_s")))
episodes = intervals.filter(F.col("isr_size") < 3).orderBy("seed", "partition", "t_s").toPandas()
episodes[episodes["seed"] == SEEDS[0]].round(3)

# %% [markdown]
# **Check 1.** Your prediction of when partition 0's ISR first shrank.

# %% tags=["check"]
from kafkalab.book import check_prediction

first_shrink = int(episodes[(episodes["seed"] == SEEDS[0]) & (episodes["partition"] == 0)]["t_s"].min())
check_prediction(my_prediction_1, first_shrink, right=f"{first_shrink} s",
                 hint="list the checks (15 s, 30 s, 45 s, ...) and find the first at which 20 s is more "
                      "than 30 s ago.")
### BEGIN HIDDEN TESTS
assert my_prediction_1 == 60
### END HIDDEN TESTS

# %% [markdown]
# ## Time under `min.insync.replicas`
# Below 2 replicas in sync, a partition refuses acks=all writes: for a producer that needs
# durability the partition is down, even though it has a leader.

# %%
under = (intervals.filter(F.col("isr_size") < story.min_insync_replicas)
         .groupBy("seed", "partition").agg(F.round(F.sum("duration_s"), 1).alias("seconds_under_min_insync"))
         .orderBy("seed", "partition").toPandas())
under

# %% [markdown]
# ## High watermark stalls
# The leader's `hw-moved` rows show the high watermark advancing as followers fetch. A producer
# writes every second, so a gap of more than 3 s between two moves of a partition's high
# watermark is a stall: nothing became committed, so consumers saw nothing new.

# %%
moves = (events.filter(F.col("kind") == "hw-moved").select("seed", "partition", "t_s")
         .withColumn("previous_s", F.lag("t_s").over(by_time))
         .withColumn("gap_s", F.col("t_s") - F.col("previous_s")))
stalls = moves.filter(F.col("gap_s") > 3).orderBy("seed", "partition", "previous_s").toPandas()
stalls[stalls["seed"] == SEEDS[0]][["partition", "previous_s", "t_s", "gap_s"]].round(1)

# %% [markdown]
# ## What producers saw

# %%
answers = (events.filter(F.col("kind") == "produce-answer")
           .withColumn("bucket_s", (F.floor(F.col("t_s") / 10) * 10).cast("int"))
           .groupBy("seed", "partition", "bucket_s", "error_code").count().toPandas())
answers.groupby("error_code")["count"].sum()

# %%
import matplotlib.pyplot as plt

one = SEEDS[0]
fig, axes = plt.subplots(story.partitions + 1, 1, figsize=(10, 7), sharex=True)
for partition, ax in enumerate(axes[:-1]):
    rows = intervals.filter((F.col("seed") == one) & (F.col("partition") == partition)).orderBy("t_s").toPandas()
    times = [0.0, *rows["t_s"]]
    sizes = [3, *rows["isr_size"]]
    ax.step(times + [story.seconds], sizes + [sizes[-1]], where="post", color="#4c72b0")
    ax.axhline(story.min_insync_replicas - 0.5, color="#c44e52", ls=":", lw=1)
    for r in stalls[(stalls["seed"] == one) & (stalls["partition"] == partition)].itertuples():
        ax.axvspan(r.previous_s, r.t_s, color="#dd8452", alpha=0.25)
    ax.set_ylim(0.5, 3.5)
    ax.set_ylabel(f"p{partition} ISR")
counts = answers[answers["seed"] == one].pivot_table(index="bucket_s", columns="error_code", values="count",
                                                     aggfunc="sum").fillna(0)
counts.plot.bar(ax=axes[-1], stacked=True, width=1.0, legend=True, color=["#55a868", "#8172b2", "#c44e52"][:len(counts.columns)])
axes[-1].set_ylabel("answers / 10 s")
axes[-1].set_xticks(range(0, len(counts), 6), [str(b) for b in counts.index[::6]])
axes[-1].set_xlabel("time (s)")
fig.suptitle("ISR size per partition (orange: high watermark stalled), and produce answers by error code")
fig.tight_layout()
plt.show()

# %% [markdown]
# What the figure shows, in words:
#
# * Partition 0's ISR drops to 2 at 60 s, and is whole again about 30 s after the link heals: the
#   follower's fetch lost in the cut must time out first. The same link carried partition 1's
#   traffic, so its ISR shrinks too.
# * Between the cut and the shrink, the high watermark of both stands still (the orange spans):
#   an acks=all write waits for *every* ISR member, a silent one included, until the leader
#   drops it. A slow follower costs latency for `replica.lag.time.max.ms`; that is the price
#   of the ISR model.
# * The crash at 150 s is noticed about 7 s later: the controller fences a broker
#   `broker.session.timeout.ms` (9 s) after its *last heartbeat*, and the broker had sent that
#   one about 2 s before it died (heartbeats go every 2 s). Partition 1 gets a new leader, and
#   the partitions it followed lose a replica until it restarts and catches up.
# * From 270 s the partitions led by the cut-off broker fall to one replica after the next
#   check; their high watermarks stop and acks=all answers turn to errors: first timeouts for the
#   requests already waiting, then refusals.

# %% [markdown]
# **Check 2.** Your prediction of the error acks=all produces get while partition 2's ISR is its
# leader alone.

# %% tags=["check"]
alone = intervals.filter((F.col("seed") == one) & (F.col("partition") == 2) & (F.col("isr_size") == 1)).first()
during = events.filter((F.col("seed") == one) & (F.col("kind") == "produce-answer") & (F.col("partition") == 2)
                       & (F.col("time_ms") >= alone.t_s * 1000 + START_MS + 1_000)
                       & (F.col("time_ms") < alone.until_s * 1000 + START_MS))
most_common = int(during.groupBy("error_code").count().orderBy(F.desc("count")).first().error_code)
check_prediction(my_prediction_2, most_common, right=f"error {most_common}",
                 hint="the leader refuses an acks=all write before appending it when the ISR is smaller "
                      "than min.insync.replicas.")
### BEGIN HIDDEN TESTS
assert my_prediction_2 == 19
### END HIDDEN TESTS

# %% [markdown]
# ## Going further
# * Run with `SCALE = "full"` and compare the episodes' durations across seeds: which vary with
#   the network's timing, and which are fixed by the broker's timers?
# * Change `ReplicationStory(min_insync_replicas=1)`: how many errors do producers see now, and
#   what can an acks=all record lose in exchange?

# %%
spark.stop()
labs.remove_scratch_dirs()  # the clusters' logs and the event log leave the temp directory
