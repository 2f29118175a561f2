# %% [markdown]
# # 07 The producer
#
# A producer's `send` looks like a network call, but it is not one. It hands the record to a
# pipeline that runs on the application's thread -- interceptors, serializers, the partitioner --
# and drops it into a per-partition buffer, the **RecordAccumulator**. A second actor, the
# **Sender**, takes whole batches out of that buffer and turns them into one Produce request per
# broker. Almost every producer setting is a knob on one of those two stages.
#
#     send(record) -> interceptors.onSend -> key/value serializers -> partitioner
#                  -> RecordAccumulator: orders-0 [batch][batch]  orders-1 [batch]  ...
#     Sender: ready batches -> one Produce request per broker -> answers complete the futures
#                           -> interceptors.onAcknowledgement -> your callback
#
# Kafka's Java client runs the Sender on its own thread, so that `send` returns at once and new
# batches fill while earlier ones are on the wire. kafkalab's producer
# (`kafkalab/client/producer/`) has a sans-I/O core that does all of the above without touching a
# socket, and two thin adapters that drive it: one over TCP, one inside the simulated cluster of
# chapter 08. This chapter uses the simulation, so every number below is the same on every run.

# %%
from kafkalab.book import check_version
check_version("0.1.0")

# %% [markdown]
# ## The settings and their defaults
# The producer takes Kafka's keys with Kafka's defaults. Several older articles give outdated
# values: `acks` has defaulted to **all** (not 1) and `enable.idempotence` to **true** since
# Kafka 3.0; `retries` defaults to 2147483647 (not 0), with `delivery.timeout.ms` (2 minutes)
# as the real bound on how long a record is retried; and `compression.type` offers `gzip`,
# `snappy`, `lz4` and `zstd` (zstd since 2.1).

# %%
import dataclasses

from kafkalab.client.producer.config import ProducerConfig, producer_config

for field in dataclasses.fields(ProducerConfig):
    if field.name not in ("bootstrap_servers", "client_id"):
        value = getattr(producer_config({}), field.name)
        shown = value.name.lower() if field.name == "compression_type" else value
        print(f"{field.name.replace('_', '.'):40} {shown}")

# %% [markdown]
# Some settings only make sense together, and the producer checks them as Kafka's
# `ProducerConfig` does. Idempotence (below) needs `acks=all`, retries, and at most 5 requests
# in flight. Asked for explicitly, a conflict is an error; left at its default, idempotence
# quietly switches itself off:

# %%
from kafkalab.errors import ConfigError

print("acks=1 alone -> enable.idempotence =", producer_config({"acks": "1"}).enable_idempotence)
try:
    producer_config({"acks": "1", "enable.idempotence": "true"})
except ConfigError as error:
    print(f"acks=1 with enable.idempotence=true -> {error.error_code.name}: {error}")

# %% [markdown]
# ## From `send` to a partition
# This is the whole of `send` up to the accumulator. Interceptors see the record first
# (`onSend`) and see every outcome last (`onAcknowledgement`, before your callback); then the
# serializers turn key and value into bytes, and the partitioner picks a partition.

# %%
import inspect

from kafkalab.client.producer.producer import Producer

print(inspect.getsource(Producer.send))

# %% [markdown]
# The partitioner has three cases. An explicit partition is taken as given, once checked. A key
# is hashed with murmur2, exactly as the Java client does, so a key always lands in the same
# partition while the partition count stays the same. A record with neither goes to the topic's
# *sticky* partition.

# %%
import random

from kafkalab.client.producer.partitioner import BuiltInPartitioner
from kafkalab.errors import InvalidPartitionsError

partitioner = BuiltInPartitioner(16_384, random.Random(7))
for key in (b"user-1", b"user-2", b"user-3", b"user-4", b"user-1"):
    print(key, "->", partitioner.partition("orders", key, None, 3, [0, 1, 2]))
try:
    partitioner.partition("orders", None, 1, 1, [0])
except InvalidPartitionsError as error:
    print(error)

# %% [markdown]
# Older articles say keyless records go round robin, one partition after another. That was true
# before Kafka 2.4, and it made many tiny batches: each partition's batch got one record in
# three. KIP-480 made the partitioner *sticky*: keep one partition until its batch is sent.
# KIP-794 (Kafka 3.3, what runs today) refines when to move on: after `batch.size` bytes went to
# the sticky partition, at the next append that opens a new batch (or fills one), it draws the next
# partition at random among those with a leader.

# %%
from kafkalab.client.producer import partitioner as partitioner_module

print(inspect.getsource(partitioner_module.BuiltInPartitioner.on_append))

# %% [markdown]
# ## The RecordAccumulator: batches per partition
# The accumulator keeps a queue of batches per partition. A record is encoded and appended to
# the last batch of its partition if it fits under `batch.size` (16 KB), and opens a new batch
# otherwise. The Sender asks which brokers have something *ready*, and a partition's first batch
# is ready when it is full, when it has waited `linger.ms`, or when `flush()` was called (or
# `buffer.memory` ran out). Here with plain times in milliseconds, no network at all:

# %%
from kafkalab.client.producer.accumulator import RecordAccumulator
from kafkalab.client.producer.futures import FutureRecordMetadata

VALUE = bytes(1024)
accumulator = RecordAccumulator(producer_config({"linger.ms": 5}))
for now_ms in (0, 1, 2):
    accumulator.append(("orders", 0), now_ms, None, VALUE, (), now_ms, FutureRecordMetadata())
for now_ms in (4, 5):
    check = accumulator.ready(lambda tp: 1, now_ms, lambda tp: False)
    print(f"t = {now_ms} ms: ready brokers {sorted(check.nodes)}, next look at {check.next_check_ms}")
for _ in range(20):
    accumulator.append(("orders", 1), 5, None, VALUE, (), 5, FutureRecordMetadata())
for tp, queue in sorted(accumulator.batches.items()):
    print(tp, [batch.record_count for batch in queue], [batch.size_bytes for batch in queue])

# %% [markdown]
# A 1 KiB value costs 1,030 bytes as a v2 record (chapter 02), and a batch header 61, so 15
# records fill a 16 KB batch; the 16th opens a second one, and the first is ready at once,
# `linger.ms` or not. `linger.ms` trades latency for batching: the default 0 means "do not
# wait on purpose", yet records still pile up while the Sender is busy, because the Sender
# sends only when it gets to it, and at most `max.in.flight.requests.per.connection` (5)
# requests per broker wait for answers. (Kafka 4.0 raised the `linger.ms` default to 5, KIP-1030.)
#
# `max.request.size` (1 MB) caps one request, so one drain takes one batch per partition until
# it is full. `send.buffer.bytes` (128 KB) and `receive.buffer.bytes` (32 KB) size the TCP
# socket's kernel buffers (-1 keeps the operating system's own). `buffer.memory` (32 MB) caps everything waiting; a `send` that finds no memory
# blocks for up to `max.block.ms` (60 s) -- the one place where `send` may wait -- and then fails.

# %% [markdown]
# ## Widget: the accumulator over time
# The widget runs kafkalab's producer inside a simulated three-broker cluster with a topic of
# three partitions, sending 1 KiB records at a steady rate, and draws each batch's life: from the
# moment it opens until the Sender drains it. The darker the bar, the fuller the batch; outlined
# bars left because they were full, the others because `linger.ms` ran out. Below, one tick per
# Produce request. Move the sliders to change `linger.ms`, `batch.size`, the rate and keys. The
# stored notebook (and any run with `KAFKALAB_STATIC_WIDGETS=1`) shows `linger.ms` 20 at 2,000
# keyless records a second.

# %%
from kafkalab.book import remove_scratch_dirs, scratch_dir
from kafkalab.viz.accumulator import show_accumulator, simulate

widget = show_accumulator(scratch_dir())

# %% [markdown]
# Read the bars per partition (consecutive batches alternate between two lanes, so that a full
# batch waiting for the Sender and the next one filling behind it are both visible). At 2,000
# records a second, 15 records fill a batch in 7.5 ms, well inside 20 ms, so most batches leave
# full, outlined. The pale one-record bars are the KIP-794 switch at work: the 16th record opens
# a new batch on the sticky partition, which brings that partition past `batch.size` bytes, so
# the partitioner draws the next partition -- and the lone record waits out the whole
# `linger.ms` in its batch. Sometimes the draw picks the same partition again, and the next batch
# fills there. With `linger.ms` 0 the same records go out one or two per request:

# %%
for linger_ms in (0, 5, 20):
    line = simulate(scratch_dir(), linger_ms=linger_ms)
    print(f"linger.ms {linger_ms:2}: {len(line.requests):3} Produce requests, "
          f"{line.mean_records_per_batch():4.1f} records per batch")

# %% [markdown]
# ## Three ways to send
# `send` returns a future at once. Ignore it (*fire-and-forget*: fastest, and you never hear of
# a failure); call `.get()` on it (*synchronous*: wait for this record's answer, one record at a
# time); or pass a callback (*asynchronous*: called once with the metadata or the error). Very old
# articles set this with `producer.type=sync|async`: that was the Scala producer's setting,
# removed with that producer in Kafka 2.0; every Kafka producer since is asynchronous underneath,
# and "sync" is just `.get()`.
#
# We start a cluster, create `orders` with one partition and replication factor 3, and add an
# interceptor that tags values on the way in and counts answers on the way out.

# %%
from kafkalab.client.producer import ProducerRecord
from kafkalab.sim.cluster import START_MS, SimCluster
from kafkalab.sim.producer import SimProducer
from kafkalab.sim.producer_stories import partition_values


class Tagging:
    def __init__(self) -> None:
        self.acknowledged: list[int] = []

    def on_send(self, record: ProducerRecord) -> ProducerRecord:
        return record._replace(value=b"tagged:" + record.value)

    def on_acknowledgement(self, metadata, error) -> None:
        self.acknowledged.append(metadata.offset if metadata else -1)


sim = SimCluster(scratch_dir(), nodes=3, seed=7)
sim.create_topic("orders", 1, 3)
tagging = Tagging()
producer = SimProducer(sim, {"linger.ms": 5}, interceptors=[tagging])

producer.send(ProducerRecord("orders", b"fire-and-forget"))
print("sync:", producer.send(ProducerRecord("orders", b"sync")).get())
producer.send(ProducerRecord("orders", b"async"),
              callback=lambda metadata, error: print("callback:", metadata.offset, error))
producer.flush()
print("interceptor saw offsets", tagging.acknowledged)
print("the partition holds", partition_values(sim))

# %% [markdown]
# The simulated producer's first requests show what a Java producer does before its first
# record: a Metadata request (which brokers, which leaders), then InitProducerId, because
# idempotence is on by default.

# %%
from kafkalab.protocol.api_keys import ApiKey

for request, sent_ms in list(zip(producer.sent, producer.sent_ms))[:4]:
    target = f"broker {request.node_id}" if request.node_id >= 0 else "any broker"
    print(f"t = {sent_ms - START_MS:3} ms  {ApiKey(request.api_key).name:16} to {target}")

# %% [markdown]
# ## What each `acks` setting can lose
# `acks` says when the leader answers a Produce request: `0`, never (the producer counts the
# record as sent when it leaves); `1`, once the leader has appended it; `all`, once every replica
# in the ISR has it (the ISR as it is then, however small, with `min.insync.replicas` as the
# floor -- not "once `min.insync.replicas` replicas have it", as some articles say).
#
# The story: three records go through normally; then the leader is cut off from its followers,
# three more records are sent, and the leader dies. A follower becomes leader (chapter 08). What
# did the producer hear while the leader was cut off, and what is in the partition afterwards?

# %%
from kafkalab.sim.producer_stories import acks_story

for acks in ("0", "1", "all"):
    outcome = acks_story(scratch_dir(), acks)
    print(f"acks={acks:3}  told during the cut: {list(outcome.told_before_crash)}")
    print(f"          new leader {outcome.new_leader} holds {list(outcome.survived)}; "
          f"acknowledged and lost: {list(outcome.lost)}")

# %% [markdown]
# With `acks=0` the producer was told "sent" (offset -1: it never learns an offset) and all
# three are gone. With `acks=1` the cut-off leader appended them and answered offsets 3-5 --
# records the new leader never had: acknowledged, then lost. With `acks=all` there was no answer
# while the followers could not confirm; the requests timed out, the producer retried them to the
# new leader, and nothing that was acknowledged was lost. `acks=all` does not make a producer
# wait for one record before sending the next, either: requests are pipelined, up to five per
# broker; only each answer comes later.

# %% [markdown]
# ## Retries, in-flight requests and order
# A retriable error (a timeout, NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS) puts the batch back at
# the head of its partition's queue. With several requests in flight, the batches behind it may
# already have been written -- so the retry lands after them. In the story below, record A's
# request is lost on the network; B and C, sent just after, arrive. Without idempotence:

# %%
from kafkalab.sim.producer_stories import reordering_story

print("idempotence off, 5 in flight:", reordering_story(scratch_dir(), idempotence=False))

# %% [markdown]
# The classic cure was `max.in.flight.requests.per.connection=1`, at the price of one request
# per broker at a time. The modern one is idempotence: each batch carries the producer's id and
# epoch (from InitProducerId) and a *sequence number* per partition. The broker accepts only the
# next sequence: B and C arrive with a gap before them and are refused with
# OUT_OF_ORDER_SEQUENCE_NUMBER; the producer retries A first, then B and C, in order. A batch the
# broker already has (its answer was lost) comes back as DUPLICATE_SEQUENCE_NUMBER and counts as
# written -- no duplicate.

# %%
print("idempotence on, 5 in flight: ", reordering_story(scratch_dir(), idempotence=True))

from kafkalab.client.producer.sender import Sender

print(inspect.getsource(Sender._can_send))

# %% [markdown]
# Every batch this producer wrote carries those fields; here they are in the leader's log:

# %%
from kafkalab.records.codec import iter_batches

log = sim.nodes[sim.leader("orders", 0)].broker.topics.log("orders", 0)
data = b"".join(segment.log_path.read_bytes() for segment in log.segments)
for batch in iter_batches(data):
    header = batch.header
    print(f"offsets {header.base_offset}-{header.last_offset}: producer id {header.producer_id}, "
          f"epoch {header.producer_epoch}, base sequence {header.base_sequence}")

# %% [markdown]
# ## Exercises
# Each prediction starts blank. Write your answer, run the check cell: it tells you if you are
# right, and gives a hint if not.
#
# **Predict, then check 1.** With `batch.size` 4096 and 1 KiB values (1,030 bytes a record,
# 61 bytes of batch header), how many records does one full batch hold?

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- a whole number of records
my_prediction = 3
### END SOLUTION

# %% tags=["check"]
from kafkalab.book import check_prediction

small = RecordAccumulator(producer_config({"batch.size": 4096, "linger.ms": 1000}))
for _ in range(10):
    small.append(("orders", 0), 0, None, VALUE, (), 0, FutureRecordMetadata())
records_per_batch = small.batches[("orders", 0)][0].record_count
check_prediction(my_prediction, records_per_batch,
                 hint="A record joins a batch only if the batch stays at most batch.size bytes: "
                 "61 + n x 1030 <= 4096.")
### BEGIN HIDDEN TESTS
assert my_prediction == 3
### END HIDDEN TESTS

# %% [markdown]
# **Predict, then check 2.** Idempotence off, but `max.in.flight.requests.per.connection=1`:
# in the reordering story above (A's first request lost, then B and C sent), is the partition
# reordered (`True` or `False`)?

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- True or False
my_prediction = False
### END SOLUTION

# %% tags=["check"]
one_in_flight = reordering_story(scratch_dir(), idempotence=False, max_in_flight=1)
reordered = one_in_flight != ("warm-up", "A", "B", "C")
check_prediction(my_prediction, reordered,
                 hint="With one request in flight, can B's request leave before A's is answered "
                 "(or given up and retried)?")
### BEGIN HIDDEN TESTS
assert my_prediction is False
### END HIDDEN TESTS

# %% [markdown]
# **Predict, then check 3.** In the `acks` story, the leader was cut off at about 1 s and died
# at about 3 s. With `acks=1`, how many of the three records sent during the cut were
# acknowledged *and* lost?

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- a number from 0 to 3
my_prediction = 3
### END SOLUTION

# %% tags=["check"]
lost_with_acks_1 = len(acks_story(scratch_dir(), "1").lost)
check_prediction(my_prediction, lost_with_acks_1,
                 hint="Who answers an acks=1 produce, and did the new leader ever fetch those records?")
### BEGIN HIDDEN TESTS
assert my_prediction == 3
### END HIDDEN TESTS

# %% [markdown]
# **Change the engine.** Spread keyless records one by one, as producers before Kafka 2.4 did
# (they went round robin): in `kafkalab/client/producer/partitioner.py`, make
# `BuiltInPartitioner.partition` draw a new partition for every record with no key -- replace the
# test `if sticky is None or sticky.partition >= num_partitions:` by `if True:` -- and restart the
# kernel. The check below fails before the edit and passes after it
# (`.venv/bin/python -m kafkalab.classroom check keyless-round-robin` does the same from a shell).
# Then run the widget with `linger.ms` 20: how many records per batch now, and how many Produce
# requests? Why did KIP-480 call this a latency problem? Undo the edit afterwards.

# %% tags=["raises-exception"]
from kafkalab.classroom.engine_changes import check as engine_change_check

engine_change_check("keyless-round-robin")  # raises EngineUnchanged until the engine is edited

# %% [markdown]
# The brokers' logs live in scratch directories; this last cell removes them.

# %%
sim.close()
remove_scratch_dirs()
