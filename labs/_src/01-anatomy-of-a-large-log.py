# %% [markdown]
# # Lab 01 — Anatomy of a large log
#
# A Kafka partition is a directory of segments, each segment a file of record batches with a
# sparse offset index beside it. In the book you met these on logs of a few hundred records; here
# you generate a topic large enough to look like production, write it through kafkalab's real
# storage engine, and let Spark answer the questions an operator asks about it: how big is each
# partition, how many batches and records does a segment hold, how dense is the index?
#
# The data source `kafkalog` reads segment files directly — one Spark task per segment — at two
# levels: `batches` (one row per batch header, no record is decoded) and `records`.

# %%
from kafkalab.book import check_version
check_version("0.1.0")

# %% [markdown]
# ## Scale
# `SCALE = "small"` runs in seconds (CI runs it). Set `SCALE = "full"` for a production-sized
# topic: 10 million records, about 1.3 GB on disk in 128 MiB segments. Generating it
# takes a few minutes on two cores (`kafkalab gen-log` does the same from a shell).

# %%
SCALE = "small"
PARAMS = {
    "small": dict(records=30_000, segment_bytes=512 * 1024),
    "full": dict(records=10_000_000, segment_bytes=128 * 1024 * 1024),
}[SCALE]
PARAMS

# %% [markdown]
# ## Generate the topic
# Three partitions, 5,000 keys with a mild Zipf skew, 100-byte values, batches filled up to the
# producer's default `batch.size` (16 KiB). Every byte depends only on the arguments and the seed.

# %%
from kafkalab.spark import labs
from kafkalab.tools.gen_log import GenSpec, generate

data_dir = labs.scratch_dir("lab01-")  # removed by the last cell
spec = GenSpec(
    data_dir=str(data_dir), topic="orders", partitions=3, records=PARAMS["records"], keys=5_000,
    key_skew=0.8, value_bytes=100, compression="none", seed=1, start_ms=1_700_000_000_000,
    rate=5_000, config=(("segment.bytes", str(PARAMS["segment_bytes"])),),
)
written = generate(spec, show_progress=False)
written

# %%
sorted(p.name for p in (data_dir / "orders-0").iterdir())[:6]

# %% [markdown]
# ## Batches, segments and bytes per partition
# The batch level reads only the 61-byte headers, so this scan touches a sliver of the data.

# %% tags=["nbval-ignore-output"]
import kafkalab.spark

spark = kafkalab.spark.session(app_name="lab01")  # the JVM's start-up notes go to stderr

# %%
batches = spark.read.format("kafkalog").option("level", "batches").load(str(data_dir))
batches.printSchema()

# %%
from pyspark.sql import functions as F

per_partition = (
    batches.groupBy("partition")
    .agg(F.countDistinct("segment").alias("segments"), F.count("*").alias("batches"),
         F.sum("records_count").alias("records"), F.sum("size").alias("bytes"))
    .orderBy("partition").toPandas()
)
per_partition

# %% [markdown]
# The records Spark counts from batch headers are exactly the records the generator wrote:

# %%
assert per_partition["records"].tolist() == [written[p] for p in range(3)]
on_disk = [sum(f.stat().st_size for f in (data_dir / f"orders-{p}").glob("*.log")) for p in range(3)]
assert per_partition["bytes"].tolist() == on_disk
"batch sizes add up to the .log files, byte for byte"

# %% [markdown]
# ## Records per batch
# A producer closes a batch when the next record would not fit in `batch.size`. With 100-byte
# values and ~10-byte keys a record takes ~120 bytes inside the batch, so batches hold ~135
# records; the last batch of each produce round is smaller.

# %%
batch_rows = batches.select("partition", "segment", "position", "records_count", "size").toPandas()
per_batch = batch_rows[["records_count", "size"]]
per_batch.describe().loc[["count", "mean", "min", "max"]].round(1)

# %%
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(6, 2.8))
ax.hist(per_batch["records_count"], bins=40, color="#4c72b0")
ax.set_xlabel("records per batch")
ax.set_ylabel("batches")
ax.set_title("Most batches are full; a few are flushed early")
plt.show()

# %% [markdown]
# ## What one record costs on disk
# The record level decodes every record. The bytes that are neither key nor value are overhead:
# the batch header (61 bytes, shared by the batch) and each record's varint framing.

# %%
records = spark.read.format("kafkalog").load(str(data_dir))
sizes = records.select(
    F.count("*").alias("records"),
    F.sum(F.length("key")).alias("key_bytes"),
    F.sum(F.length("value")).alias("value_bytes"),
).first()
total_bytes = sum(on_disk)
overhead = (total_bytes - sizes.key_bytes - sizes.value_bytes) / sizes.records
print(f"{sizes.records} records, overhead {overhead:.1f} bytes per record")

# %% [markdown]
# ## Index density
# Kafka adds an offset-index entry before a batch when more than `index.interval.bytes` (4096 by
# default) were appended since the last entry, and never for the first batch of a segment. We
# replay that rule over the batch sizes Spark read and compare with the entries in the real
# `.index` files kafkalab wrote.

# %%
import inspect
from kafkalab.spark import labs

print(inspect.getsource(labs.predicted_index_entries))

# %%
import pandas as pd

def index_table(batch_rows, partition_dir, interval):
    rows = []
    actual = labs.actual_index_entries(partition_dir)
    for segment, group in batch_rows.groupby("segment"):
        sizes = group.sort_values("position")["size"].tolist()
        rows.append((segment, len(sizes), labs.predicted_index_entries(sizes, interval), actual[segment]))
    return pd.DataFrame(rows, columns=["segment", "batches", "predicted entries", "actual entries"])

rows0 = batch_rows[batch_rows["partition"] == 0]
table = index_table(rows0, data_dir / "orders-0", 4096)
assert (table["predicted entries"] == table["actual entries"]).all()
table

# %% [markdown]
# With 16 KiB batches every batch but the first of a segment is indexed: the default interval
# is smaller than one batch. Raise `index.interval.bytes` to 64 KiB and write partition 0 again:

# %%
sparse_dir = labs.scratch_dir("lab01-sparse-")
sparse = GenSpec(**{**{f: getattr(spec, f) for f in spec.__slots__}, "data_dir": str(sparse_dir),
                    "config": spec.config + (("index.interval.bytes", "65536"),)})
generate(sparse, show_progress=False)
sparse_rows = (spark.read.format("kafkalog").option("level", "batches").load(str(sparse_dir / "orders-0"))
               .select("segment", "position", "size").toPandas())
sparse_table = index_table(sparse_rows, sparse_dir / "orders-0", 65536)
assert (sparse_table["predicted entries"] == sparse_table["actual entries"]).all()
sparse_table

# %% [markdown]
# Fewer entries make the index smaller, and each lookup scans more of the log after the binary
# search: at most `index.interval.bytes` plus one batch. How many batches lie between two
# consecutive entries of the sparse index?

# %%
import numpy as np
from kafkalab.spark.planning import read_offset_index

gaps = []
for segment, group in sparse_rows.groupby("segment"):
    log_path = sparse_dir / "orders-0" / segment
    entry_positions = read_offset_index(log_path.with_suffix(".index"), 0, log_path.stat().st_size)[:, 1]
    batch_index = np.searchsorted(np.sort(group["position"].to_numpy()), entry_positions)
    gaps += np.diff(batch_index).tolist()
batches_per_entry = int(np.median(gaps))  # the exercises below ask for it

# %% [markdown]
# ## Exercises — predict, then check
# Each prediction starts blank: replace the `...` with your prediction, run the cell, then run
# the check below it. The check refuses a blank or wrong answer with a hint, and passes only on
# the engine's value.
#
# **1.** With the default `index.interval.bytes` and 16 KiB batches, how many more batches than
# index entries does each segment have?

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK prediction = ...
prediction = 1
### END SOLUTION

# %% tags=["check"]
diff = set((table["batches"] - table["actual entries"]).tolist())
labs.check("batches minus index entries per segment", prediction, diff.pop() if len(diff) == 1 else diff,
           hint="which batch of a segment never gets an index entry, and is the default interval "
                "smaller or larger than one batch?")
### BEGIN HIDDEN TESTS
assert prediction == 1
### END HIDDEN TESTS

# %% [markdown]
# **2.** With `index.interval.bytes=65536` and ~16 KiB batches, how many batches lie between two
# consecutive index entries?

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK prediction = ...
prediction = 5
### END SOLUTION

# %% tags=["check"]
labs.check("batches per index entry at 64 KiB", prediction, batches_per_entry,
           hint="an entry is added before a batch once *more than* 65536 bytes were appended "
                "since the last one; count how many ~16 KiB batches that takes.")
### BEGIN HIDDEN TESTS
assert prediction == 5
### END HIDDEN TESTS

# %% [markdown]
# **3.** Which segment file of partition 0 is the *active* segment (the one being written)?
# Give its file name, e.g. `"00000000000000000000.log"`.

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK prediction = ...
prediction = "00000000000000004416.log"
### END SOLUTION

# %% tags=["check"]
active_segment = sorted(p.name for p in (data_dir / "orders-0").glob("*.log"))[-1]
labs.check("active segment", prediction, active_segment,
           hint="a segment's file is named by its base offset, and the log appends at its end.")
### BEGIN HIDDEN TESTS
assert prediction == "00000000000000004416.log"
### END HIDDEN TESTS

# %% [markdown]
# **Change the engine.** Kafka's rule is "more than" `index.interval.bytes` (a strict `>`). Find
# the comparison in `LogSegment.append` (`kafkalab/storage/segment.py`, the first of its two
# `>` comparisons with `index_interval_bytes`), make it `>=`, and restart the kernel. The check
# below fails before the edit and passes after it:
# `.venv/bin/python -m kafkalab.classroom check index-interval-ge` does the same from a shell.
# Then run this lab again with `index.interval.bytes` equal to an exact multiple of your batch
# size: which table disagrees first, and why does `labs.predicted_index_entries` no longer
# match? Undo the edit afterwards.

# %% tags=["raises-exception"]
from kafkalab.classroom.engine_changes import check as engine_change_check

engine_change_check("index-interval-ge")  # raises EngineUnchanged until the engine is edited

# %%
spark.stop()
labs.remove_scratch_dirs()  # the generated logs leave the temp directory with the lab
