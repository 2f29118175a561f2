# %% [markdown]
# # Lab 08 — Key skew and partition count
#
# A keyed record goes to partition `(murmur2(key) & 0x7fffffff) % P`. murmur2 spreads *distinct
# keys* almost uniformly, but every record of a key lands in the same partition: that is what
# keeps a key's records in order. So how evenly the partitions fill depends on the keys more
# than on the hash, and "add partitions" is not always a fix.
#
# This lab draws keys from four distributions that real topics have, hashes every record with
# Kafka's murmur2 in the Spark workers, and measures how the largest partition compares with
# the mean for 3 to 96 partitions:
#
# | distribution | keys | example |
# |---|---|---|
# | `uuid` | a random version-4 UUID per record | `3f2a…-4…` |
# | `sequential` | `order-0`, `order-1`, … | order ids |
# | `zipf` | 100,000 customers, the one of rank `k` with weight `1/k^1.1` | a few customers do most of the business |
# | `regions` | 8 region names | `eu-west`, `us-east`, … |

# %%
from kafkalab.book import check_version
check_version("0.1.0")

# %% [markdown]
# ## Scale
# `SCALE = "small"` draws 200,000 records per distribution (CI runs it). `SCALE = "full"` draws
# 10 million per distribution, 40 million in all, which takes a few minutes on two cores.

# %%
SCALE = "small"
RECORDS = {"small": 200_000, "full": 10_000_000}[SCALE]
PARTITION_COUNTS = [3, 6, 12, 24, 48, 96]
RECORDS

# %% [markdown]
# ## Predict first
# Each prediction starts blank; the lab checks it once Spark has the answer (a blank or wrong
# answer stops the run there, with a hint). Answer from the
# partitioner and the numbers above, before the plots give the answers away.
#
# **Predict, then check 1.** The 8 region keys (`key_skew.REGIONS`) go to a topic with 12
# partitions. How many partitions receive no records at all?
# (`kafkalab.partitioner.partition_for_key(key, 12)` is Kafka's choice for one key.)

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction_1 = None  # <- a number of partitions
my_prediction_1 = 5
### END SOLUTION

# %% [markdown]
# **Predict, then check 2.** The hottest Zipf customer, `customer-0`, has about 13.5% of the
# records (`key_skew.zipf_top_share()`). With 48 partitions, about how many times the mean
# partition is the largest one? (Within 15%. Hint: what else is in the hot key's partition?)

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction_2 = None  # <- a ratio, e.g. 1.5
my_prediction_2 = 48 * 0.135 + (1 - 0.135)
### END SOLUTION

# %% [markdown]
# **Predict, then check 3.** For Zipf keys, what is the smallest of the partition counts
# 3, 6, 12, 24, 48, 96 at which the largest partition holds at least twice the mean?

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction_3 = None  # <- one of the partition counts
my_prediction_3 = 12
### END SOLUTION

# %% tags=["nbval-ignore-output"]
import kafkalab.spark
from pyspark.sql import functions as F

spark = kafkalab.spark.session(app_name="lab08")  # the JVM's start-up notes go to stderr

# %% [markdown]
# ## Keys, and Kafka's hash of each
# `key_skew.keys_frame` draws the keys inside the Spark workers (seeded, so every run is the
# same); `key_skew.with_murmur2` adds `murmur2_positive`, murmur2 with the sign bit cleared.
# The partition for any count `P` is then the plain Spark expression `murmur2_positive % P`.

# %%
from kafkalab.spark import key_skew

hashed = {d: key_skew.with_murmur2(key_skew.keys_frame(spark, d, RECORDS)).cache() for d in key_skew.DISTRIBUTIONS}
import numpy as np

examples = {d: [k.decode() for k in key_skew.make_keys(d, np.arange(3), np.random.default_rng(0)).to_pylist()]
            for d in key_skew.DISTRIBUTIONS}
examples

# %% [markdown]
# kafkalab's murmur2 is checked here against kafka-python's, an implementation nobody here
# wrote, on a sample of every distribution.

# %%
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

sample = [(bytes(r.key), r.murmur2_positive) for df in hashed.values()
          for r in df.where(F.col("murmur2_positive") % 997 == 0).collect()]
assert all(kafka_python_murmur2(key) & 0x7FFFFFFF == h for key, h in sample)
f"{len(sample)} sampled keys agree with kafka-python's murmur2"

# %% [markdown]
# ## Records per partition, for every partition count
# One pass per distribution: each row is counted once for every partition count.

# %%
import pandas as pd

sizes = pd.concat([key_skew.partition_sizes(df, PARTITION_COUNTS).assign(distribution=d)
                   for d, df in hashed.items()], ignore_index=True)
spread = pd.concat([key_skew.imbalance(sizes[sizes["distribution"] == d]).assign(distribution=d)
                    for d in key_skew.DISTRIBUTIONS], ignore_index=True)

# %% [markdown]
# **Check 1.**

# %% tags=["check"]
from kafkalab.book import check_prediction

empty_at_12 = int(spread[(spread["distribution"] == "regions") & (spread["partitions"] == 12)]["empty"].iloc[0])
check_prediction(my_prediction_1, empty_at_12, right=f"{empty_at_12} empty partitions",
                 hint="8 keys can fill at most 8 of 12 partitions; compute partition_for_key for each "
                      "region and count the partitions nobody picked (two regions may share one).")
### BEGIN HIDDEN TESTS
assert my_prediction_1 == 5
### END HIDDEN TESTS

# %% [markdown]
# ## The largest partition against the mean

# %%
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(7.5, 3.6))
for d in key_skew.DISTRIBUTIONS:
    rows = spread[spread["distribution"] == d]
    ax.plot(rows["partitions"], rows["max_over_mean"], "o-", label=d)
top = key_skew.zipf_top_share()
ax.plot(PARTITION_COUNTS, [max(1, p * top) for p in PARTITION_COUNTS], "k:", label="zipf floor: P x hottest share")
ax.set_xscale("log", base=2)
ax.set_yscale("log", base=2)
ax.set_xticks(PARTITION_COUNTS, [str(p) for p in PARTITION_COUNTS])
ax.set_yticks([1, 2, 4, 8, 16], ["1", "2", "4", "8", "16"])
ax.set_xlabel("partitions")
ax.set_ylabel("largest / mean partition")
ax.legend(fontsize=8)
ax.set_title("Many similar keys spread evenly; a hot key or few keys do not")
plt.show()

# %% [markdown]
# What the plot shows, in words:
#
# * `uuid` and `sequential` keys stay within a few percent of the mean at every count: the gap
#   is the random spread of record counts, and it grows slowly as each partition gets fewer
#   records. Sequential ids are not a problem for murmur2: it does not place `order-1` next to
#   `order-0`.
# * `zipf` gets *worse* with every partition added. The hottest customer's share never splits,
#   so the largest partition stays near 13.5% of all records while the mean shrinks as `1/P`.
#   The dotted line is that floor.
# * `regions` has 8 keys: beyond 8 partitions some must stay empty (at 96, nearly all are), and
#   two regions that hash to one partition double it.
#
# A consumer group cannot read one partition with two members, so the largest partition sets
# how fast the group can go, whatever the partition count.

# %%
print(spread.pivot(index="partitions", columns="distribution", values="max_over_mean").round(3).to_string())

# %% [markdown]
# ## Twelve partitions, drawn

# %%
fig, axes = plt.subplots(1, 4, figsize=(12, 2.6), sharey=True)
for ax, d in zip(axes, key_skew.DISTRIBUTIONS):
    rows = sizes[(sizes["distribution"] == d) & (sizes["partitions"] == 12)]
    ax.bar(rows["partition"], rows["records"] / RECORDS, color="#4c72b0")
    ax.axhline(1 / 12, color="k", lw=1, ls="--")
    ax.set_title(d)
    ax.set_xlabel("partition")
axes[0].set_ylabel("share of records")
plt.show()

# %% [markdown]
# The dashed line is a fair share (1/12). Text summary: `uuid` and `sequential` bars all sit on
# it; one `zipf` bar (the hot customer's partition) stands far above the rest; `regions` leaves
# several partitions empty and puts two regions' worth in some others.

# %% [markdown]
# **Check 2 and 3.**

# %%
zipf = spread[spread["distribution"] == "zipf"].set_index("partitions")["max_over_mean"]
at_least_twice = int(zipf[zipf >= 2].index.min())

# %% tags=["check"]
check_prediction(my_prediction_2, float(zipf[48]), tolerance=0.15 * float(zipf[48]), right=f"{zipf[48]:.2f}",
                 hint="the hot key's partition holds its 13.5% plus about 1/48 of everything else; "
                      "divide by the mean share, 1/48.")
### BEGIN HIDDEN TESTS
assert abs(my_prediction_2 - 7.3) < 0.8
### END HIDDEN TESTS

# %% tags=["check"]
check_prediction(my_prediction_3, at_least_twice, right=f"{at_least_twice} partitions",
                 hint="the largest partition is about P x 0.135 + (1 - 0.135) times the mean; find the "
                      "first P in the list where that reaches 2.")
### BEGIN HIDDEN TESTS
assert my_prediction_3 == 12
### END HIDDEN TESTS

# %% [markdown]
# ## Going further
# * Kafka's answer to a hot key is not more partitions: it is a better key (add a suffix and
#   give up per-customer ordering, or key by order id and keep the customer in the value).
#   Replace `customer-N` keys with `customer-N-{order % 4}` for the top 10 customers in
#   `key_skew.make_keys` and rerun: how far does the Zipf curve come down?
# * Keyless records use the sticky partitioner (KIP-794), which fills one batch per partition
#   in turn; lab 02 and chapter 01 show where keyed records go when partitions are added.

# %%
for df in hashed.values():
    df.unpersist()
spark.stop()
from kafkalab.spark import labs

labs.remove_scratch_dirs()  # the Spark JVM's temporary files leave the temp directory with the lab
