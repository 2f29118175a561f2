# %% [markdown]
# # Lab 02 — Partition skew
#
# A producer sends a keyed record to partition `(murmur2(key) & 0x7fffffff) % partitions`. Two
# consequences show up only at scale: a few hot keys make a few partitions much larger than the
# rest (and one consumer per partition caps how fast a hot partition is drained), and adding
# partitions moves most keys to a different partition, so the order of a key's records is only
# guaranteed within the records written before, or after, the change.
#
# Spark has a `hash()` function too — but it is Murmur3 with another seed. It does not say where
# Kafka put a key; this lab computes Kafka's murmur2 inside Spark and checks it against the log.

# %%
from kafkalab.book import check_version
check_version("0.1.0")

# %% [markdown]
# ## Scale
# `SCALE = "small"` runs in seconds; `SCALE = "full"` writes 10 million records (~1.3 GB).

# %%
SCALE = "small"
PARAMS = {
    "small": dict(records=40_000, keys=2_000),
    "full": dict(records=10_000_000, keys=100_000),
}[SCALE]
PARTITIONS = 6
PARAMS

# %% [markdown]
# ## A topic with hot keys
# Keys follow a Zipf distribution with exponent 1.1: key `user-0` is the hottest, `user-1` half
# as hot, and so on. The generator places each key with Kafka's murmur2 partitioner.

# %%
from kafkalab.spark import labs
from kafkalab.tools.gen_log import GenSpec, generate

data_dir = labs.scratch_dir("lab02-")  # removed by the last cell
spec = GenSpec(
    data_dir=str(data_dir), topic="clicks", partitions=PARTITIONS, records=PARAMS["records"],
    keys=PARAMS["keys"], key_skew=1.1, value_bytes=60, compression="lz4", seed=2,
    start_ms=1_700_000_000_000, rate=10_000, config=(("segment.bytes", str(8 * 1024 * 1024)),),
)
written = generate(spec, show_progress=False)
written

# %% tags=["nbval-ignore-output"]
import kafkalab.spark
from pyspark.sql import functions as F

spark = kafkalab.spark.session(app_name="lab02")  # the JVM's start-up notes go to stderr

# %%
records = spark.read.format("kafkalog").load(str(data_dir)).select("partition", "offset", "key")
per_key = records.groupBy("key", "partition").count().cache()
by_partition = per_key.groupBy("partition").agg(
    F.sum("count").alias("records"), F.count("*").alias("keys")).orderBy("partition").toPandas()
by_partition

# %%
skew = by_partition["records"].max() / by_partition["records"].mean()
print(f"largest partition / mean partition = {skew:.2f}")

# %%
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(6, 2.6))
ax.bar(by_partition["partition"], by_partition["records"], color="#dd8452")
ax.axhline(by_partition["records"].mean(), color="k", lw=1, ls="--", label="mean")
ax.set_xlabel("partition")
ax.set_ylabel("records")
ax.legend()
ax.set_title("Hot keys make hot partitions")
plt.show()

# %% [markdown]
# ## The hottest keys
# A key never spans partitions, so a partition is at least as big as its hottest key.

# %%
total = sum(written.values())
hot = per_key.orderBy(F.desc("count"), "key").limit(5).toPandas()
hot["key"] = hot["key"].map(bytes)
hot["share"] = (hot["count"] / total).round(3)
hot

# %% [markdown]
# ## Kafka's murmur2 vs Spark's hash()
# `labs.with_kafka_partition` runs `kafkalab.partitioner.partitions_for_keys` — murmur2 over a
# whole Arrow column of keys at once — inside the Spark workers. Every key sits in exactly the
# partition murmur2 names. Spark's `pmod(hash(key), 6)` agrees only by chance (about 1 in 6).

# %%
import inspect
from kafkalab import partitioner
from kafkalab.spark import labs

print(inspect.getsource(partitioner.murmur2))

# %%
keys = labs.with_kafka_partition(per_key, PARTITIONS).withColumn(
    "spark_hash_partition", F.expr(f"pmod(hash(key), {PARTITIONS})"))
agreement = keys.select(
    F.count("*").alias("keys"),
    F.sum((F.col("kafka_partition") == F.col("partition")).cast("int")).alias("murmur2_agrees"),
    F.sum((F.col("spark_hash_partition") == F.col("partition")).cast("int")).alias("spark_hash_agrees"),
).first()
assert agreement.murmur2_agrees == agreement.keys
{"keys": agreement.keys, "murmur2_agrees": agreement.murmur2_agrees}  # Spark's hash: exercise 3

# %% [markdown]
# ## What moves when partitions are added
# `kafka-topics --alter --partitions N` changes the modulus. A key keeps its partition only if
# `murmur2 % old == murmur2 % new`. We compute, for several new counts, the share of keys that
# land elsewhere.

# %%
import pandas as pd

key_counts = per_key.select("key", "count").toPandas()
key_list = [bytes(k) for k in key_counts["key"]]
rows = []
for new in (7, 8, 9, 12, 18, 24):
    moved = labs.moved_share(key_list, PARTITIONS, new)
    rows.append((new, round(moved, 3)))
moves = pd.DataFrame(rows, columns=["new partitions", "share of keys moved"])
moves

# %%
fig, ax = plt.subplots(figsize=(6, 2.6))
ax.plot(moves["new partitions"], moves["share of keys moved"], "o-")
ax.set_xlabel(f"partitions after the change (was {PARTITIONS})")
ax.set_ylabel("share of keys moved")
ax.set_ylim(0, 1)
ax.set_title("Doubling keeps half the keys in place; other counts move most")
plt.show()

# %% [markdown]
# Going from 6 to 12 partitions, a key stays exactly when `h % 12 < 6`: half the keys. Going to
# 7, a key stays only when `h % 6 == h % 7`, i.e. `h mod 42 < 6`: one key in seven.
#
# ## Exercises — predict, then check
# Each prediction starts blank: replace the `...` with your prediction, run the cell, then run
# the check below it. The check refuses a blank or wrong answer with a hint, and passes only on
# the engine's value.
#
# **1.** What share of keys *stays* in place when the topic grows from 6 to 10 partitions?
# Give a fraction between 0 and 1.

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK prediction = ...
prediction = 0.2
### END SOLUTION

# %% tags=["check"]
labs.check("share of keys staying, 6 -> 10", prediction, 1 - labs.moved_share(key_list, PARTITIONS, 10),
           rel_tol=0.1, hint="a key stays when h % 6 == h % 10; the pattern repeats every lcm(6, 10) "
                             "hash values, so count how many of those stay.")
### BEGIN HIDDEN TESTS
assert abs(prediction - 0.2) <= 0.02
### END HIDDEN TESTS

# %% [markdown]
# **2.** The murmur2 hash of key `user-0` is 637506763. In which partition of this 6-partition
# topic does it live? The check reads the partition from the log, through Spark.

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK prediction = ...
prediction = 1
### END SOLUTION

# %% tags=["check"]
actual = per_key.where(F.col("key") == F.lit(b"user-0")).first().partition
labs.check("partition of user-0", prediction, actual,
           hint="clear the sign bit (a positive hash keeps its value), then take the remainder "
                "modulo the partition count.")
### BEGIN HIDDEN TESTS
assert prediction == 1
### END HIDDEN TESTS

# %% [markdown]
# **3.** What share of keys would Spark's `pmod(hash(key), 6)` put in the right partition?
# (Within 25 %.)

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK prediction = ...
prediction = 1 / 6
### END SOLUTION

# %% tags=["check"]
labs.check("Spark hash() agreement", prediction, agreement.spark_hash_agrees / agreement.keys, rel_tol=0.25,
           hint="Spark's Murmur3 and Kafka's murmur2 are unrelated hashes: how often do two "
                "independent choices among 6 partitions agree?")
### BEGIN HIDDEN TESTS
assert abs(prediction - 1 / 6) <= 0.25 / 6
### END HIDDEN TESTS

# %% [markdown]
# **Change the engine.** Kafka clears the sign bit (`& 0x7fffffff`); a common bug is `abs()`.
# Change `to_positive` in `kafkalab/partitioner.py` to `return abs(value)` and restart the
# kernel. The check below fails before the edit and passes after it
# (`.venv/bin/python -m kafkalab.classroom check sign-bit-abs` does the same from a shell). Then
# rerun the agreement cell: which keys are now misplaced, and why only those with a negative
# hash? Undo the edit afterwards.

# %% tags=["raises-exception"]
from kafkalab.classroom.engine_changes import check as engine_change_check

engine_change_check("sign-bit-abs")  # raises EngineUnchanged until the engine is edited

# %%
per_key.unpersist()
spark.stop()
labs.remove_scratch_dirs()  # the generated logs leave the temp directory with the lab
