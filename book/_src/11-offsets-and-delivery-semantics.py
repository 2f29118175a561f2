# %% [markdown]
# # 11 Offsets and delivery semantics
#
# A consumer group remembers how far it has read with **committed offsets**: for each partition,
# one number the group's coordinator stores in the internal topic `__consumer_offsets`. When a
# consumer restarts, or a partition moves to another member after a rebalance, reading resumes
# from that number. *When* the application commits, against when it processes, decides what a
# crash costs: records lost, or records processed twice. This chapter runs both on the
# simulated three-broker cluster of chapter 08, with the group coordinator of chapter 10 now
# living where Kafka puts it -- on the leader of the group's `__consumer_offsets` partition.

# %%
from kafkalab.book import check_version
check_version("0.1.0")

# %% [markdown]
# ## A committed offset is the next offset to read
# We start three brokers, create `payments` (one partition, three replicas) and write ten
# records, offsets 0 to 9. A consumer of group `billing` processes records 0 to 3 and commits.
# What it commits is **4**: not the last record it processed but the first one it has not, so
# the committed offset is exactly where the next reader starts. (The Java consumer's
# `commitSync()` commits its *position*, which is last returned offset + 1; committing a record's
# own offset by hand is a classic off-by-one that re-reads one record after every restart.)

# %%
from kafkalab.book import remove_scratch_dirs, scratch_dir
from kafkalab.records import Record, build_batch
from kafkalab.sim.cluster import START_MS, SimCluster
from kafkalab.sim.offsets_story import ProcessingConsumer, commit, committed, find_coordinator

sim = SimCluster(scratch_dir(), nodes=3, seed=7)
sim.create_topic("payments", 1, 3)
sim.run_for(100)
ten = build_batch([Record(i, START_MS, None, f"payment-{i}".encode()) for i in range(10)], base_offset=0)
print("produce:", sim.produce("payments", 0, ten).error_code)
print("commit 4:", commit(sim, "billing", "payments", {0: 4}))
print("committed:", committed(sim, "billing", "payments", [0]))
print("a never-committed group:", committed(sim, "audit", "payments", [0]))

# %% [markdown]
# A group that never committed gets -1: there is no position, and the consumer falls back on
# `auto.offset.reset` (`latest` by default in the Java consumer; `earliest` in the examples
# below).
#
# ## Where the offsets live
# The commit went to the group's **coordinator**: the broker leading partition
# `abs(hash("billing")) % 50` of `__consumer_offsets`, with Java's `String.hashCode` and Kafka's
# `Utils.abs`. (One source article writes `Math.abs`: that differs for the one hash whose
# absolute value does not fit, `-2**31`, where `Math.abs` stays negative and `Utils.abs` gives 0.)
# The first FindCoordinator created the topic: 50 partitions, compacted, and -- against another
# source article, which gives 1 -- **three replicas**, Kafka's default for
# `offsets.topic.replication.factor` since 0.11.

# %%
from kafkalab.config.definitions import BROKER_KEYS
from kafkalab.group.partitioner import OFFSETS_TOPIC, partition_for

partition = partition_for("billing")
registration = sim.controller.image.partition(OFFSETS_TOPIC, partition)
print(f"billing -> {OFFSETS_TOPIC}-{partition}, leader {registration.leader}, replicas {list(registration.replicas)}")
print("coordinator named by FindCoordinator:", find_coordinator(sim, "billing"))
print("offsets.topic.replication.factor default:", BROKER_KEYS["offsets.topic.replication.factor"].default)
print("partitions:", len(sim.controller.image.topics[OFFSETS_TOPIC].partitions))

# %% [markdown]
# With fewer live brokers than that factor Kafka does not quietly make a smaller topic: the
# topic is not created and FindCoordinator answers COORDINATOR_NOT_AVAILABLE until enough
# brokers have registered. (Kafka's single-node example `server.properties` sets the factor to 1
# for exactly this reason; our one-broker simulations do the same.)

# %%
from kafkalab.errors import ErrorCode
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.sim.offsets_story import call

small = SimCluster(scratch_dir(), nodes=2, seed=1, properties={"offsets.topic.replication.factor": "3"})
answer = call(small, 1, ApiKey.FIND_COORDINATOR, 3, {"key": "billing", "key_type": 0})
print("two brokers, factor 3:", ErrorCode(answer.error_code).name,
      "| topic exists:", OFFSETS_TOPIC in small.controller.image.topics)
small.close()

# %% [markdown]
# A commit is acknowledged only once every replica in the partition's ISR has it: the
# coordinator appends with `acks=all` and answers when the high watermark passes the record. So
# by the time `commit` returned above, all three brokers held the record. (The followers' high
# watermarks still say 0: a follower learns the leader's high watermark from its next fetch.)

# %%
for node_id, node in sorted(sim.nodes.items()):
    log = node.broker.topics.log(OFFSETS_TOPIC, partition)
    print(f"broker {node_id}: log end offset {log.log_end_offset}, high watermark {log.high_watermark}")

# %% [markdown]
# ## Commit before or after processing
# A consumer that commits **before** processing a batch, and crashes halfway through it, never
# processes the rest: its restart begins after the batch. That is **at-most-once**. A consumer
# that commits **after** processing, and crashes before the commit, processes the same records
# again on restart: **at-least-once**. Here both read ten records in batches of four and crash
# after processing six. `ProcessingConsumer` (in `kafkalab.sim.offsets_story`) is the loop:

# %%
import inspect

print(inspect.getsource(ProcessingConsumer.run))

# %%
def crash_and_restart(mode: str, group: str, **options: int) -> list[int]:
    consumer = ProcessingConsumer(sim, group, "payments", mode, **options)
    consumer.run(lambda offset: None, until_offset=10, crash_after=6)
    crashed_at = len(consumer.processed)
    consumer.run(lambda offset: None, until_offset=10)
    print(f"{mode:6} processed {consumer.processed[:crashed_at]} | crash | restart from "
          f"{consumer.processed[crashed_at] if len(consumer.processed) > crashed_at else '-'}: "
          f"{consumer.processed[crashed_at:]}")
    return consumer.processed


before = crash_and_restart("before", "g-before")
after = crash_and_restart("after", "g-after")
print("lost with commit-before:", sorted(set(range(10)) - set(before)))
print("twice with commit-after:", sorted(o for o in set(after) if after.count(o) > 1))

# %% [markdown]
# Neither is exactly-once. At-least-once is the usual choice, made safe by processing that
# tolerates repeats: a **dedup table** keyed by a record id, an **idempotent** write downstream
# (an upsert, a "set to", not an "add"), or storing the offset **with the results** in one
# database transaction -- then the consumer seeks to the stored offset on start and Kafka's
# committed offset is only a hint. (Kafka's own exactly-once, for results written back to Kafka,
# commits the offsets inside the producer's transaction: chapter 12.)
#
# ## Auto commit
# The Java consumer's defaults are `enable.auto.commit=true` and `auto.commit.interval.ms=5000`.
# Auto commit runs *inside* `poll()`: when the interval has passed, the next poll first commits
# the position -- everything earlier polls returned. So it is at-least-once, and a crash repeats
# up to one interval of work: here one record per one-second poll, and a crash after six.

# %%
auto = crash_and_restart("auto", "g-auto", batch_size=1)
print("twice with auto commit:", sorted(o for o in set(auto) if auto.count(o) > 1))

# %% [markdown]
# A shorter interval narrows the window and costs a commit -- an `__consumer_offsets` write
# replicated to three brokers -- per interval per consumer; it never closes the window. Auto
# commit loses records only if the application hands records to another thread and lets `poll()`
# run on before they are done: the next auto commit then covers records nobody finished.
# `commitSync()` waits for the answer (and retries); `commitAsync()` does not wait and does not
# retry, since a retried old commit could overwrite a newer one.
#
# ## What the coordinator writes
# Each commit is one record in the group's `__consumer_offsets` partition: the key is (group,
# topic, partition), the value the offset, its leader epoch, metadata and commit time. Kafka's
# `kafka-dump-log --offsets-decoder` prints them; so does `kafkalab dump-log`, on the
# coordinator's segment file:

# %%
import argparse
import io

from kafkalab.tools import dump_log

coordinator = find_coordinator(sim, "billing")
segment = sim.nodes[coordinator].broker.topics.log(OFFSETS_TOPIC, partition).directory / "00000000000000000000.log"
parser = argparse.ArgumentParser()
dump_log.add_arguments(parser)
out = io.StringIO()
dump_log.run(parser.parse_args(["--files", str(segment), "--offsets-decoder"]), out)
for line in out.getvalue().splitlines():
    print(line.replace(str(segment.parent.parent), "<data-dir>"))

# %% [markdown]
# The topic is **compacted**: the cleaner keeps only the latest record per key, so one group's
# history of commits shrinks to its current offsets, and a tombstone (a null value) deletes a
# group's offset for good.
#
# ## The coordinator dies; the commits do not
# We kill the coordinator's broker. The controller fences it after `broker.session.timeout.ms`
# and makes another replica leader of the partition; that broker, on becoming leader, **loads**
# the partition: it replays the log it replicated into memory (Kafka's `onElection`). Kafka's
# broker answers COORDINATOR_LOAD_IN_PROGRESS while it loads (kafkalab's load finishes inside the
# leadership change, so no request sees that here); any other broker answers NOT_COORDINATOR,
# and clients ask FindCoordinator again.

# %%
print("coordinator before:", coordinator)
sim.crash(coordinator)
sim.run_for(15_000)
print("coordinator after: ", find_coordinator(sim, "billing"))
print("committed after failover:", committed(sim, "billing", "payments", [0]))

# %% [markdown]
# ## Committed offsets expire
# Offsets do not live forever. Once a group is empty, Kafka keeps its offsets for
# `offsets.retention.minutes` -- **7 days** since Kafka 2.0 (KIP-211; it was one day) -- counted
# from the moment the group became empty (for a group that never had members, from the commit),
# and checks every `offsets.retention.check.interval.ms` (10 minutes). An expired offset gets a
# tombstone, and a consumer returning after a long holiday starts at `auto.offset.reset`. Here
# retention is one minute and the check every ten seconds:

# %%
print("default offsets.retention.minutes:", BROKER_KEYS["offsets.retention.minutes"].default)
short = SimCluster(scratch_dir(), nodes=3, seed=2, properties={
    "offsets.retention.minutes": "1", "offsets.retention.check.interval.ms": "10000"})
short.create_topic("payments", 1, 3)
print("commit 7:", commit(short, "holiday", "payments", {0: 7}))
start_ms = short.clock.milliseconds()
for _ in range(4):
    short.run_for(20_000)
    print(f"{(short.clock.milliseconds() - start_ms) / 1000:5.1f} s later: committed "
          f"{committed(short, 'holiday', 'payments', [0])}")

# %% [markdown]
# ## Lag
# A group's **lag** on a partition is the high watermark minus its committed offset: the records
# that are readable and not yet consumed (for `read_committed` consumers, the last stable offset
# minus the committed offset; always LSO <= HW <= LEO). `billing` committed 4 of 10:

# %%
leader = sim.leader("payments", 0)
hw = sim.nodes[leader].broker.topics.log("payments", 0).high_watermark
print(f"high watermark {hw} - committed 4 = lag {hw - 4}")

# %% [markdown]
# One more rule: a `KafkaConsumer` is **not thread-safe**. The usual multi-threaded designs are
# one consumer per thread (a group of them), or one consumer that hands records to workers and
# commits only offsets every worker has finished -- which is the "store offsets with results"
# discipline again.
#
# ## Exercises
# Each prediction starts blank. Write your answer, run the check cell: it tells you if you are
# right, and gives a hint if not.
#
# **Predict, then check 1.** A consumer of `payments` reads records 0 to 9 in one batch,
# processes them and then commits. What offset is committed?

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- e.g. 19
my_prediction = 10
### END SOLUTION

# %% tags=["check"]
from kafkalab.book import check_prediction

ProcessingConsumer(sim, "exercise-1", "payments", "after", batch_size=10).run(lambda offset: None, until_offset=10)
stored = committed(sim, "exercise-1", "payments", [0])[0]
check_prediction(my_prediction, stored, hint="the committed offset is where the next read starts.")
### BEGIN HIDDEN TESTS
assert my_prediction == 10
### END HIDDEN TESTS

# %% [markdown]
# **Predict, then check 2.** Commit *after* processing, batches of 3, ten records (0 to 9), a
# crash after processing 7 records. Which offsets are processed twice? Answer as a list.

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- e.g. [1, 2]
my_prediction = [6]
### END SOLUTION

# %% tags=["check"]
twice = ProcessingConsumer(sim, "exercise-2", "payments", "after", batch_size=3)
twice.run(lambda offset: None, until_offset=10, crash_after=7)
twice.run(lambda offset: None, until_offset=10)
repeated = sorted(o for o in set(twice.processed) if twice.processed.count(o) > 1)
check_prediction(my_prediction, repeated,
                 hint="Two batches (0-2, 3-5) were committed; which records of the third batch were "
                 "processed before the crash?")
### BEGIN HIDDEN TESTS
assert my_prediction == [6]
### END HIDDEN TESTS

# %% [markdown]
# **Predict, then check 3.** Same crash, but commit *before* processing. Which offsets are never
# processed? Answer as a list.

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- e.g. [8]
my_prediction = [7, 8]
### END SOLUTION

# %% tags=["check"]
lost = ProcessingConsumer(sim, "exercise-3", "payments", "before", batch_size=3)
lost.run(lambda offset: None, until_offset=10, crash_after=7)
lost.run(lambda offset: None, until_offset=10)
never = sorted(set(range(10)) - set(lost.processed))
check_prediction(my_prediction, never,
                 hint="The third batch (6-8) was committed as a whole before any of it was processed.")
### BEGIN HIDDEN TESTS
assert my_prediction == [7, 8]
### END HIDDEN TESTS

# %% [markdown]
# **Change the engine.** In `kafkalab/broker/group_log.py`, make `when_committed` call back at
# once instead of waiting for the high watermark (acks=1 for commits): replace its test
# `if hosted is not None and hosted.log.high_watermark > offset:` by `if hosted is not None:`,
# and restart the kernel. The check below cuts the coordinator off from its followers
# (`sim.network.isolate(coordinator, others)`), commits, crashes the coordinator and reads the
# committed offset on the new one: it fails before the edit and passes after it. Which promise of
# this chapter broke, and which test in `tests/sim/test_group_coordinator_cluster.py` catches it?
# Undo the edit afterwards.

# %% tags=["raises-exception"]
from kafkalab.classroom.engine_changes import check as engine_change_check

engine_change_check("commit-acks-1")  # raises EngineUnchanged until the engine is edited

# %% [markdown]
# The brokers' logs live in scratch directories; this last cell removes them.

# %%
for cluster in (sim, short):
    cluster.close()
remove_scratch_dirs()
