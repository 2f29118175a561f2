# %% [markdown]
# # 01 Topics, partitions and partitioners
#
# A **topic** is a name for a stream of records. Kafka stores a topic as one or more
# **partitions**, and a partition is the real unit of everything that follows in this book: an
# ordered, append-only log on one broker's disk (with copies on other brokers). Each record in a
# partition gets an **offset**, a 64-bit number that is unique *within that partition* and grows
# by one per record. Two records in different partitions have no order relative to each other;
# if you need one total order, you need a topic with one partition.
#
# On disk each partition is a directory named `<topic>-<partition>` under one of the broker's
# `log.dirs` -- chapter 03 opens one. This chapter is about the step before that: **which
# partition does a record go to?** It is decided by the producer, not the broker, and it is the
# part of Kafka that needs no cluster to study.

# %%
from kafkalab.book import check_version
check_version("0.1.0")

# %% [markdown]
# ## Three ways a producer picks a partition
#
# 1. **Explicit partition.** The application names it. The producer checks it against the
#    partition count it learnt from metadata; a number outside `[0, n)` is rejected before
#    anything is sent -- the Java client says *"Invalid partition given with record: 1 is not in
#    the range [0...1)."* for partition 1 of a one-partition topic.
# 2. **A key.** The producer hashes the key bytes with **murmur2** and takes the result modulo
#    the partition count. Same key, same partition -- which is how Kafka keeps the records of
#    one key (one user, one order, one sensor) in order.
# 3. **No key.** Any partition will do, so the producer picks one to make batches big (see
#    *sticky partitioning* below).
#
# kafkalab's keyed partitioner is the one the Java client uses. Here is its code, straight from
# the package:

# %%
import inspect
from kafkalab import partitioner

print(inspect.getsource(partitioner.murmur2))
print(inspect.getsource(partitioner.partition_for_key))

# %% [markdown]
# Two details matter. Java's `int` arithmetic wraps at 32 bits, so the Python code masks with
# `0xFFFFFFFF` after each multiplication and returns a *signed* result, like Java. And the sign
# bit is cleared with `& 0x7fffffff` (Kafka's `Utils.toPositive`), not with `abs()`: `abs()` of
# the smallest 32-bit integer is still negative in Java, and would produce a negative partition.
#
# ### Checking against Kafka's own test vectors
# Kafka's unit tests pin murmur2 to a few known inputs. We compare kafkalab with those numbers
# *and* with an independent implementation: the pure-Python murmur2 inside kafka-python (which
# returns the same 32 bits as an unsigned number).

# %%
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

KAFKA_TEST_VECTORS = {  # from Kafka's UtilsTest: key -> signed 32-bit murmur2
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}

print(f"{'key':<52}{'Kafka':>13}{'kafkalab':>13}{'kafka-python':>14}")
for key, expected in KAFKA_TEST_VECTORS.items():
    ours = partitioner.murmur2(key)
    theirs = partitioner.to_int32(kafka_python_murmur2(key))  # unsigned -> Java's int
    assert ours == expected == theirs, key
    print(f"{key.decode():<52}{expected:>13}{ours:>13}{theirs:>14}")

# %% [markdown]
# ### Where keys land
# With three partitions, the key `foobar` hashes to -790332482; clearing the sign bit gives
# 1357151166, and `1357151166 % 3 == 0`:

# %%
for key in [b"foobar", b"21", b"user-1", b"user-2", b"user-3"]:
    positive = partitioner.to_positive(partitioner.murmur2(key))
    print(f"{key.decode():>8}: murmur2 & 0x7fffffff = {positive:>10}  ->  partition "
          f"{partitioner.partition_for_key(key, 3)} of 3")

# %% [markdown]
# A partition count of zero is not a topic; kafkalab refuses it with a typed error that carries
# Kafka's error code `INVALID_PARTITIONS` (37):

# %%
from kafkalab.errors import InvalidPartitionsError

try:
    partitioner.partition_for_key(b"foobar", 0)
except InvalidPartitionsError as error:
    print(f"{type(error).__name__} (Kafka error code {int(error.error_code)}): {error}")

# %% [markdown]
# ## Keys without a key: sticky partitioning
#
# Records with a null key need no particular partition. The Java producer before Kafka 2.4 sent
# them round-robin over the available partitions (it was the old Scala producer that kept one
# random partition until the next metadata refresh), which spread the records of one burst across
# every partition: many small batches, many small requests. **KIP-480** (Kafka 2.4) made the
# producer *sticky*: it keeps sending null-key records to one partition until the batch for that
# partition is full or sent, then switches. **KIP-794** (Kafka 3.3) refined it: the producer
# switches after about `batch.size` bytes have gone to the current partition, and prefers
# partitions whose brokers have short queues, so a slow broker gets less new data.
#
# The result is the same spread over time with far fewer, fuller batches -- one of the reasons
# Kafka's producer is fast (chapter 15 measures batching). Note that Kafka's *non-Java* clients
# differ: librdkafka (used by confluent-kafka, kcat) defaults to `consistent_random`, which
# hashes keys with CRC32, not murmur2. The "change the engine" exercise below measures what that
# means when two producers in different languages share a topic.

# %% [markdown]
# ## Adding partitions moves keys
#
# `kafka-topics.sh --alter --partitions` can only *add* partitions. Because the keyed partition
# is `hash % n`, changing `n` changes where most keys go. Records a key wrote before the change
# stay in the old partition; new ones go to the new partition, and a consumer can read them out
# of order. Let us measure it over 100,000 keys, hashed in one vectorised pass.

# %%
import math
import numpy as np

KEY_COUNT = 100_000
keys = [f"user-{i}".encode() for i in range(KEY_COUNT)]
key_bytes = np.frombuffer(b"".join(keys), dtype=np.uint8)
key_offsets = np.concatenate([[0], np.cumsum([len(k) for k in keys])])

def share_moved(before: int, after: int) -> float:
    old = partitioner.partitions_for_keys(key_bytes, key_offsets, before)
    new = partitioner.partitions_for_keys(key_bytes, key_offsets, after)
    return float(np.mean(old != new))

print(f"{'partitions':>12}{'keys moved':>12}{'theory':>9}")
for before, after in [(3, 4), (4, 8), (6, 12), (10, 11), (12, 18)]:
    # A key stays iff hash % before == hash % after, which holds for `min` of every `lcm` hashes.
    theory = 1 - min(before, after) / math.lcm(before, after)
    print(f"{before:>5} -> {after:<5}{share_moved(before, after):>11.1%}{theory:>9.1%}")

# %% [markdown]
# Going from 3 to 4 partitions moves three keys in four; going from 10 to 11 moves more than
# nine in ten. Even *doubling* (4 -> 8), the friendliest case, moves half of them. The measured
# shares match the arithmetic within a fraction of a percent because murmur2 spreads the keys
# evenly. This is why teams that rely on per-key order create keyed topics with enough
# partitions up front.
#
# ## How many partitions?
#
# More partitions give more parallelism (one consumer per partition in a group) but cost
# elsewhere. With ZooKeeper-era numbers from the source articles: if a broker that leads 500
# partitions fails, electing a new leader takes about 10 ms per partition, so some partitions
# are unavailable for about 500 × 10 ms = 5 s. If the *controller* fails, the new one reads the
# metadata of every partition: 10,000 partitions × 3-5 ms ≈ 30-50 s. Producers also keep a
# batch buffer per partition, so memory grows with the count, and throughput first rises with
# partitions, then falls as batches get smaller and replication fetches more partitions.

# %% [markdown]
# ## How many partitions a topic gets, and where they live
# A topic created with `kafka-topics --create --partitions N --replication-factor R` gets what it
# asks for. A topic that a producer or consumer creates by naming it (when the broker allows
# `auto.create.topics.enable`, true by default) gets the broker's **`num.partitions`**, 1 by
# default, and `default.replication.factor`, also 1: one partition means no parallelism at all,
# which is why production clusters set both or turn auto-creation off.
#
# The controller then places each partition's R replicas on R different brokers; the first
# replica of the list is the partition's *preferred leader*. kafkalab's controller walks the
# live brokers round-robin from a random start, so leaders and replicas spread evenly. Kafka's
# KRaft controller (`StripedReplicaPlacer`) has the same goals and more: it spreads replicas over
# racks first, avoids giving every partition the same set of brokers, and prefers unfenced ones.
# A simulated three-broker cluster, six partitions, three replicas each:

# %%
from kafkalab.book import remove_scratch_dirs, scratch_dir
from kafkalab.config.definitions import broker_default
from kafkalab.sim.cluster import SimCluster

print("num.partitions default:", broker_default("num.partitions"),
      "| default.replication.factor default:", broker_default("default.replication.factor"))
placement = SimCluster(scratch_dir(), nodes=3, seed=7)
placement.create_topic("orders", 6, 3)
for p in range(6):
    registration = placement.controller.image.partition("orders", p)
    print(f"orders-{p}: replicas {list(registration.replicas)}, leader {registration.leader}")
placement.close()
remove_scratch_dirs()

# %% [markdown]
# ## Exercises
# Each prediction starts blank. Write your answer in the cell tagged as yours, run it, then run
# the check below it: the check refuses a blank or wrong answer with a hint, and passes only on
# the engine's value.
#
# **Predict, then check 1.** With 3 partitions, which partition does the key `abc` go to?
# (murmur2 of `abc` is 479470107, already positive.)

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- a partition number
my_prediction = 0
### END SOLUTION

# %% tags=["check"]
from kafkalab.book import check_prediction

actual = partitioner.partition_for_key(b"abc", 3)
check_prediction(my_prediction, actual, right=f"`abc` goes to partition {actual} of 3.",
                 hint="clear the sign bit (nothing to clear here), then take the remainder "
                      "of 479470107 divided by 3.")
### BEGIN HIDDEN TESTS
assert my_prediction == 0
### END HIDDEN TESTS

# %% [markdown]
# **Predict, then check 2.** A topic grows from 5 to 8 partitions. What share of keys move?
# Give a fraction between 0 and 1 (within 2 percentage points).

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- a fraction between 0 and 1
my_prediction = 0.875
### END SOLUTION

# %% tags=["check"]
measured = share_moved(5, 8)
check_prediction(my_prediction, measured, tolerance=0.02, right=f"{measured:.1%} of the keys moved.",
                 hint="a key stays when hash % 5 == hash % 8. That pattern repeats every "
                      "lcm(5, 8) hash values: count how many of them stay.")
### BEGIN HIDDEN TESTS
assert abs(my_prediction - 0.875) <= 0.02
### END HIDDEN TESTS

# %% [markdown]
# **Change the engine.** A Java producer (murmur2) and a second producer write the same keys to
# one 6-partition topic. `second_producer` starts as Java's partitioner, so the two always
# agree. Make it a librdkafka producer with its default `consistent_random` setting, which
# hashes keys with CRC32 (`partitioner.crc32_partition`); the check measures how often the two
# producers now disagree, and passes when they disagree as two independent hashes do. Then
# explain why librdkafka's `murmur2_random` setting fixes it.

# %% tags=["answer"]
second_producer = partitioner.partition_for_key
### BEGIN SOLUTION
### BLANK # your change here
second_producer = partitioner.crc32_partition
### END SOLUTION

# %% tags=["check"]
sample = keys[:20_000]
disagree = float(np.mean([second_producer(k, 6) != partitioner.partition_for_key(k, 6) for k in sample]))
print(f"the two producers put {disagree:.0%} of keys in different partitions")
assert 0.75 < disagree < 0.92, (
    "two independent hashes over 6 partitions agree about 1 time in 6; these agree far more "
    "often. Is second_producer still Java's partitioner?")
### BEGIN HIDDEN TESTS
assert second_producer is partitioner.crc32_partition
### END HIDDEN TESTS
