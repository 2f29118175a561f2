# %% [markdown]
# # Lab 07 — Transactions in the log
#
# A Kafka transaction is not a separate structure on disk. Its records go into each partition's
# log like any others, flagged *transactional* and stamped with the producer's id; when the
# transaction ends, the coordinator has a **control batch** (a COMMIT or ABORT *marker*)
# written into every partition it touched, taking an offset of its own. Aborted records are
# never deleted at abort time: they stay in the log, and a `read_committed` consumer skips them
# with the help of the segment's `.txnindex`. And while any transaction is open in a partition,
# `read_committed` consumers may read only up to the **last stable offset** (LSO): the first
# offset of the oldest open transaction.
#
# In this lab kafkalab's broker writes a topic through the same requests a Java transactional
# producer sends (`kafkalab/spark/txn_story.py`): three transactional producers (`billing`
# aborts 10 % of its transactions, `refunds` half, `audit` none) and one plain producer, all
# into `payments` (3 partitions). `audit` leaves its last transaction open. Spark then reads the
# segments and works out, from markers alone, which records each kind of consumer sees; the
# answers are checked against the broker's `.txnindex` files and its own LSO.

# %%
from kafkalab.book import check_version
check_version("0.1.0")

# %% [markdown]
# ## Scale
# `SCALE = "small"` runs 100 transactions (about 2,500 records; CI runs it). `SCALE = "full"` runs
# 20 times as many transactions of up to 10 times as many records (about 500,000 records).

# %%
SCALE = "small"
from kafkalab.spark.txn_story import TxnProducerSpec, TxnStory

TIMES, RECORDS = {"small": (1, 1), "full": (20, 10)}[SCALE]
story = TxnStory(
    producers=(TxnProducerSpec("billing", 40 * TIMES, 0.1), TxnProducerSpec("refunds", 40 * TIMES, 0.5),
               TxnProducerSpec("audit", 20 * TIMES, 0.0)),
    records_per_partition=(1, 20 * RECORDS), plain_records_per_step=5 * RECORDS)

# %% [markdown]
# ## Predict first
# Each prediction starts blank; the lab checks it where Spark has the answer (a blank or wrong
# answer stops the run there, with a hint).
#
# **Predict, then check 1.** `refunds` aborts each transaction with probability 0.5. About what
# share of its records are aborted (a number between 0 and 1; within 0.15)?

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction_1 = None  # <- a share, e.g. 0.3
my_prediction_1 = 0.5
### END SOLUTION

# %% [markdown]
# **Predict, then check 2.** `audit`'s last transaction is still open in partition 1 when the
# story ends, and other producers keep writing there after it began. What does ListOffsets with
# `isolation_level=read_committed` ("latest") answer for partition 1? `"a"`: the high watermark;
# `"b"`: the first offset of `audit`'s open transaction; `"c"`: one past the newest COMMIT marker.

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction_2 = None  # <- "a", "b" or "c"
my_prediction_2 = "b"
### END SOLUTION

# %% [markdown]
# ## Write the topic
# Each step, one transactional producer runs a whole transaction (AddPartitionsToTxn, a
# transactional batch per partition, EndTxn) and the plain producer writes a batch.
# `write_txn_story` returns every transaction's outcome, and the broker's own LSO and high
# watermark per partition at the end.

# %%
import pandas as pd
from tqdm.auto import tqdm

from kafkalab.spark import labs
from kafkalab.spark.txn_story import write_txn_story

data_dir = labs.scratch_dir("lab07-") / "data"  # removed by the last cell
with tqdm(unit="records", disable=SCALE == "small") as bar:
    result = write_txn_story(data_dir, story, progress=bar.update)
transactions = pd.DataFrame([t.__dict__ for t in result.transactions])
transactions.groupby(["transactional_id", "outcome"]).size().unstack(fill_value=0)

# %% [markdown]
# **Predict, then check 3.** Every aborted transaction that touched a partition becomes one
# entry in that partition's `.txnindex`. From the `transactions` table (a pandas DataFrame with
# columns `transactional_id`, `producer_id`, `partitions`, `records`, `outcome`), compute how
# many entries partition 0's `.txnindex` holds.

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction_3 = None  # <- a count, computed from `transactions`
my_prediction_3 = int(sum(1 for row in transactions.itertuples() if row.outcome == "abort" and 0 in row.partitions))
### END SOLUTION

# %% tags=["nbval-ignore-output"]
import kafkalab.spark
from pyspark.sql import Window
from pyspark.sql import functions as F

spark = kafkalab.spark.session(app_name="lab07")  # the JVM's start-up notes go to stderr

# %% [markdown]
# ## Markers, read from the log
# A control record's key is two int16s: a version and the marker type (0 ABORT, 1 COMMIT). The
# record-level source gives every record with `is_control` and `key`; `.schema(...)` names only
# the columns needed.

# %%
records = (spark.read.format("kafkalog")
           .schema("partition int, offset bigint, producer_id bigint, is_transactional boolean, is_control boolean, key binary")
           .load(str(data_dir / story.topic)))
marker_type = F.conv(F.hex(F.substring("key", 3, 2)), 16, 10).cast("int")
marked = records.withColumn("marker", F.when(F.col("is_control"), F.when(marker_type == 1, "commit").otherwise("abort")))
marked.filter("is_control").groupBy("partition", "marker").count().orderBy("partition", "marker").toPandas()

# %% [markdown]
# ## Which marker closes each record
# A transactional record belongs to the transaction its producer closes with the *next* marker
# in the same partition. So, per (partition, producer), walk the offsets from the end and carry
# the newest marker seen so far down to each record: `last(..., ignorenulls=True)` over a window
# ordered by descending offset. A record no marker follows belongs to an open transaction.

# %%
later = Window.partitionBy("partition", "producer_id").orderBy(F.desc("offset")).rowsBetween(
    Window.unboundedPreceding, Window.currentRow)
labelled = (
    marked.withColumn("closed_by", F.last("marker", ignorenulls=True).over(later))
    .withColumn("marker_offset", F.last(F.when(F.col("is_control"), F.col("offset")), ignorenulls=True).over(later))
    .withColumn("label", F.when(F.col("is_control"), "marker").when(~F.col("is_transactional"), "plain")
                .otherwise(F.coalesce("closed_by", F.lit("open"))))
    .cache()
)
per_partition = labelled.groupBy("partition", "label").count().toPandas().pivot(
    index="partition", columns="label", values="count").fillna(0).astype(int)
per_partition

# %%
import matplotlib.pyplot as plt

colours = {"commit": "#55a868", "plain": "#4c72b0", "abort": "#c44e52", "open": "#dd8452", "marker": "#8c8c8c"}
fig, ax = plt.subplots(figsize=(7, 3))
bottom = pd.Series(0, index=per_partition.index)
for label in [c for c in colours if c in per_partition.columns]:
    ax.bar(per_partition.index, per_partition[label], bottom=bottom, label=label, color=colours[label])
    bottom += per_partition[label]
ax.set_xticks(per_partition.index)
ax.set_xlabel("partition")
ax.set_ylabel("offsets")
ax.legend(fontsize=8, ncol=5, loc="upper center", bbox_to_anchor=(0.5, -0.25))
ax.set_title("What each offset of the log holds")
plt.show()

# %% [markdown]
# In words: every partition holds committed records, plain records, aborted records (still on
# disk, taking offsets) and markers (one offset per transaction that touched the partition);
# partition 1 also holds the three records of `audit`'s open transaction.

# %% [markdown]
# ## The aborted share, per producer

# %%
names = transactions.drop_duplicates("producer_id").set_index("producer_id")["transactional_id"]
by_producer = (labelled.filter(F.col("is_transactional") & ~F.col("is_control"))
               .groupBy("producer_id").agg(F.count("*").alias("records"),
                                           F.sum((F.col("label") == "abort").cast("int")).alias("aborted"))
               .toPandas())
by_producer["producer"] = by_producer["producer_id"].map(names)
by_producer["aborted share"] = (by_producer["aborted"] / by_producer["records"]).round(3)
by_producer.set_index("producer")[["records", "aborted", "aborted share"]]

# %% [markdown]
# **Check 1.** Your prediction of the share of `refunds`' records that are aborted.

# %% tags=["check"]
from kafkalab.book import check_prediction

refunds_share = float(by_producer.set_index("producer").loc["refunds", "aborted share"])
check_prediction(my_prediction_1, refunds_share, tolerance=0.15, right=f"{refunds_share:.3f}",
                 hint="each transaction aborts with probability 0.5, and transactions are of similar size.")
### BEGIN HIDDEN TESTS
assert abs(my_prediction_1 - 0.5) <= 0.15
### END HIDDEN TESTS

# %% [markdown]
# ## The aborted ranges against the broker's `.txnindex`
# Spark worked out each aborted transaction's range from the markers: its first record and the
# offset of the ABORT marker that closed it. The broker wrote the same facts when it appended
# each ABORT marker (`kafkalab/storage/txn_index.py`, Kafka's 34-byte `AbortedTxn` entries).
# They must agree exactly.

# %%
from kafkalab.storage.txn_index import TransactionIndex

aborted = (labelled.filter(F.col("label") == "abort")
           .groupBy("partition", "producer_id", "marker_offset").agg(F.min("offset").alias("first_offset"))
           .toPandas())
from_spark = {(int(r.partition), int(r.producer_id), int(r.first_offset), int(r.marker_offset))
              for r in aborted.itertuples()}
from_files = {(p, e.producer_id, e.first_offset, e.last_offset)
              for p in range(story.partitions)
              for path in sorted((data_dir / f"{story.topic}-{p}").glob("*.txnindex"))
              for e in TransactionIndex(path, int(path.stem)).entries}
assert from_spark == from_files, (from_spark ^ from_files)
txnindex_entries = {p: sum(1 for entry in from_files if entry[0] == p) for p in range(story.partitions)}
txnindex_entries

# %% [markdown]
# ## The last stable offset, and what each consumer sees
# The LSO is the first offset of the oldest open transaction, or the high watermark when none is
# open. A `read_uncommitted` consumer reads everything below the high watermark (markers are never
# handed to the application); a `read_committed` one stops at the LSO and drops aborted records.

# %%
bounds = labelled.groupBy("partition").agg(
    F.min(F.when(F.col("label") == "open", F.col("offset"))).alias("open_from"),
    (F.max("offset") + 1).alias("high_watermark"),
    (F.max(F.when(F.col("marker") == "commit", F.col("offset"))) + 1).alias("after_last_commit"),
).toPandas().set_index("partition").sort_index()
bounds["lso"] = bounds["open_from"].fillna(bounds["high_watermark"]).astype(int)
bounds["broker's lso"] = pd.Series(result.last_stable_offset)
assert (bounds["lso"] == bounds["broker's lso"]).all(), bounds
bounds[["high_watermark", "lso", "broker's lso"]]

# %% [markdown]
# **Check 2.** Your choice for partition 1's read_committed answer.

# %% tags=["check"]
choices = {"a": int(bounds.loc[1, "high_watermark"]), "b": int(bounds.loc[1, "open_from"]),
           "c": int(bounds.loc[1, "after_last_commit"])}
engine_choice = next(letter for letter, offset in choices.items() if offset == result.last_stable_offset[1])
check_prediction(my_prediction_2, engine_choice, right=f'"{engine_choice}": offset {result.last_stable_offset[1]}',
                 hint="a read_committed consumer must not see any record whose transaction might still "
                      "abort, nor anything after it, in offset order.")
### BEGIN HIDDEN TESTS
assert my_prediction_2 == "b"
### END HIDDEN TESTS

# %% [markdown]
# **Check 3.** Your count of partition 0's `.txnindex` entries.

# %% tags=["check"]
check_prediction(my_prediction_3, txnindex_entries[0], right=f"{txnindex_entries[0]} entries",
                 hint="count the transactions whose outcome is 'abort' and whose partitions include 0.")
### BEGIN HIDDEN TESTS
assert my_prediction_3 == sum(1 for t in result.transactions if t.outcome == "abort" and 0 in t.partitions)
### END HIDDEN TESTS

# %%
data = labelled.filter(~F.col("is_control")).join(
    spark.createDataFrame(bounds.reset_index()[["partition", "lso"]]), "partition")
visible = data.groupBy("partition").agg(
    F.count("*").alias("read_uncommitted"),
    F.sum(((F.col("offset") < F.col("lso")) & F.col("label").isin("commit", "plain")).cast("int")).alias("read_committed"),
).toPandas().set_index("partition").sort_index()
fig, ax = plt.subplots(figsize=(6, 2.8))
visible.plot.bar(ax=ax, color=["#8172b2", "#55a868"], rot=0)
ax.set_ylabel("records a consumer gets")
ax.set_title("read_uncommitted against read_committed")
plt.show()
visible

# %% [markdown]
# In words: on partitions 0 and 2 the read_committed count is the read_uncommitted count minus
# the aborted records. On partition 1 it is far lower still: everything after the open
# transaction's first offset waits, committed or not, plain records included, until `audit`
# commits, aborts, or its `transaction.timeout.ms` runs out and the coordinator aborts it. That is
# why a hanging transaction (the problem KIP-890 attacks) stalls every read_committed consumer of
# the partition, and why the coordinator's timeout matters.

# %% [markdown]
# ## Going further
# * Give `audit` an abort rate of 0.3 and `hanging_producer=""` (nothing left open): what happens
#   to partition 1's LSO?
# * The cleaner removes aborted records and, after `delete.retention.ms`, the markers: compact a
#   copy of this topic with kafkalab's cleaner (see lab 03) and rerun the counts.

# %%
labelled.unpersist()
spark.stop()
labs.remove_scratch_dirs()  # the generated logs leave the temp directory with the lab
