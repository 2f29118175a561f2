# %% [markdown]
# # 08 Replication
#
# A partition is stored on several brokers. One of them, the **leader**, takes every write and
# serves every consumer read; the others, the **followers**, copy the leader's log by fetching
# from it exactly as a consumer would. Kafka's durability promises -- "acknowledged means it
# survives a broker failure" -- live in the rules that decide which followers count, and when a
# record counts as written. This chapter runs those rules on kafkalab's deterministic cluster:
# three real brokers in one process, every message between them an encoded Kafka request on a
# simulated network, and a simulated clock that makes every run (and every number below) the same.

# %%
from kafkalab.book import check_version
check_version("0.1.0")

# %% [markdown]
# ## Replicas: AR, ISR and OSR
# We start three brokers and create `orders` with one partition and replication factor 3. The
# controller places the replicas and picks the leader. Three sets describe a partition:
#
# * **AR** (assigned replicas): every broker that should hold a copy;
# * **ISR** (in-sync replicas): the leader and the followers that are keeping up;
# * **OSR** (out-of-sync replicas): AR minus ISR.
#
# The leader serves both writes and reads. In the classic design a consumer reads only from the
# leader, so it never sees a record that a follower has not yet confirmed, and so one broker
# answers with one consistent view. (Since Kafka 2.4, KIP-392 lets a consumer fetch from a
# nearby follower to save cross-datacenter traffic; the follower then serves only what it knows
# to be committed.)

# %%
from kafkalab.book import remove_scratch_dirs, scratch_dir
from kafkalab.records.model import Record
from kafkalab.records.v2 import build_v2_batch
from kafkalab.sim.cluster import START_MS, SimCluster
from kafkalab.sim.events import EventRecorder
from kafkalab.viz.isr import take_sample


def batch(*values: bytes) -> bytes:
    return build_v2_batch([Record(offset=i, timestamp=START_MS, key=None, value=v) for i, v in enumerate(values)])


def seconds(sim: SimCluster) -> float:
    return (sim.clock.milliseconds() - START_MS) / 1000


def replicas_table(sim: SimCluster) -> None:
    sample = take_sample(sim)
    for replica in sample.replicas:
        role = "leader  " if replica.node_id == sample.leader else "follower"
        print(f"  broker {replica.node_id} {role} LEO {replica.log_end_offset!s:>4}  HW {replica.high_watermark!s:>4}")


sim = SimCluster(scratch_dir(), nodes=3, seed=7, properties={"min.insync.replicas": "2"})
recorder = EventRecorder(sim)
sim.create_topic("orders", 1, 3)
registration = sim.controller.image.partition("orders", 0)
print("AR ", list(registration.replicas))
print("ISR", list(registration.isr))
print("OSR", sorted(set(registration.replicas) - set(registration.isr)))
print("leader", registration.leader, "in leader epoch", registration.leader_epoch)

# %% [markdown]
# ## LEO and HW, replica by replica
# Every replica has a **log end offset** (LEO): the offset its next record will get. The leader
# also keeps the **high watermark** (HW): the offset below which every ISR member has the
# records. Records below the HW are *committed*. The HW is the smallest LEO in the ISR, and the
# followers learn it from the leader's fetch answers, one fetch later.
#
# We send one batch of three records with `acks=1` (the leader answers once it has appended) and
# watch the replicas millisecond by millisecond. Links take 1 ms each way.

# %%
sim.send_produce("orders", 0, batch(b"apple", b"banana", b"cherry"), lambda answer: None, acks=1)
for _ in range(4):
    sim.run_for(1)
    print(f"t = {seconds(sim):.3f} s")
    replicas_table(sim)

# %% [markdown]
# The leader appended at once (LEO 3) but its HW stayed 0 until both followers had fetched the
# records *and* fetched again: a follower's next fetch offset is the only way the leader learns
# the follower's LEO. Then the followers' own HWs lag until their next fetch returns the new one.
# A follower whose fetch finds no new data is parked on the leader for up to
# `replica.fetch.wait.max.ms` (500 ms), so after a while everything settles:

# %%
sim.run_for(1_000)
replicas_table(sim)

# %% [markdown]
# ## Consumers read below the HW
# A consumer's fetch is answered from the leader's log, stopping at the HW: anything above it
# could still vanish if the leader failed now. Here the engine's fetch path decides where a
# reader stops -- a consumer (replica id -1) at the HW, a follower at the LEO:

# %%
import inspect

from kafkalab.broker.handlers import fetch as fetch_handler

print(inspect.getsource(fetch_handler._check_reader))

# %% [markdown]
# To see it, we slow both followers' links to two seconds, produce with `acks=1`, and fetch as a
# consumer straight away, then again once the followers have caught up.

# %%
from kafkalab.records.codec import iter_batches
from kafkalab.sim.network import LinkFaults

leader = sim.leader("orders", 0)
followers = [n for n in sim.nodes if n != leader]
slow = LinkFaults(delay_min_ms=2_000, delay_max_ms=2_000)
for follower in followers:
    sim.network.set_link(leader, follower, slow)
    sim.network.set_link(follower, leader, slow)
sim.produce("orders", 0, batch(b"date", b"elderberry"), acks=1)


def consume_from(offset: int) -> None:
    answer = sim.consume("orders", 0, offset)
    values = [r.value.decode() for b in iter_batches(bytes(answer.records or b"")) for r in b.records]
    print(f"t = {seconds(sim):.3f} s: HW {answer.high_watermark}, the consumer gets {values}")


replicas_table(sim)
consume_from(0)
sim.run_for(12_000)
consume_from(0)
for follower in followers:
    sim.network.set_link(leader, follower, LinkFaults())
    sim.network.set_link(follower, leader, LinkFaults())

# %% [markdown]
# Two more watermarks complete the picture. The **log start offset** is the first offset a
# replica still holds (retention and DeleteRecords move it), and the **low watermark** is the
# smallest log start offset among the replicas -- what DeleteRecords reports once every replica
# has deleted below it.

# %% [markdown]
# ## The follower's fetch offset is its LEO
# A leader never asks a follower how far it got. A follower that fetches from offset 5 has every
# offset below 5, so the leader records 5 as that follower's LEO. The leader keeps one
# `ReplicaState` per follower:

# %%
partition = sim.nodes[leader].broker.replica_manager.partition("orders", 0).partition
for replica_id, state in sorted(partition.followers.items()):
    print(f"follower {replica_id}: LEO {state.log_end_offset}, last fetch at "
          f"{(state.last_fetch_time_ms - START_MS) / 1000:.3f} s, last caught up at "
          f"{(state.last_caught_up_time_ms - START_MS) / 1000:.3f} s")

# %% [markdown]
# ## lastCaughtUpTimeMs: fetching is not the same as caught up
# Whether a follower stays in the ISR is decided by *time*, not by how many offsets it lags
# (the offset rule, `replica.lag.max.messages`, was removed by KIP-16 because a burst of
# writes threw healthy followers out). Each fetch updates `lastCaughtUpTimeMs`, the latest time
# at which the follower had everything the leader had then:

# %%
from kafkalab.replication.replica import ReplicaState

print(inspect.getsource(ReplicaState.after_fetch))

# %% [markdown]
# The module's worked example, run on the engine (the leader's LEO at each fetch in brackets):
#
#     t=1000  fetch(o=100) [LEO 100]
#     t=1500  leader appends to 130
#     t=1600  fetch(o=100) [LEO 130]
#     t=1700  fetch(o=130) [LEO 160]

# %%
state = ReplicaState()
for now_ms, fetch_offset, leader_leo in [(1000, 100, 100), (1600, 100, 130), (1700, 130, 160)]:
    state = state.after_fetch(fetch_offset, 0, now_ms, leader_leo, broker_epoch=1)
    print(f"t={now_ms}: fetch({fetch_offset}) with the leader at {leader_leo} -> last caught up at "
          f"{state.last_caught_up_time_ms}")

# %% [markdown]
# The fetch at 1600 proves nothing new: it asked for 100 while the leader had 130. The fetch at
# 1700 asks for 130 -- exactly what the leader had at the *previous* fetch (1600) -- so the
# follower was caught up as of 1600, even though it is still behind now. A follower that keeps
# fetching but never catches up sees its `lastCaughtUpTimeMs` freeze, and is dropped just like
# one that stopped fetching.

# %% [markdown]
# ## The ISR shrinks after `replica.lag.time.max.ms`, and expands again
# A follower is out of sync when its `lastCaughtUpTimeMs` is more than `replica.lag.time.max.ms`
# old. The default is **30 s** since Kafka 2.5 (KIP-537; it was 10 s before, as older articles
# say). The leader checks every half of that, 15 s, and asks the controller to remove the
# laggards with an AlterPartition request; it applies the new ISR only once the controller
# accepts it.

# %%
from kafkalab.replication.partition import Partition, ReplicationSettings

print("replica.lag.time.max.ms =", ReplicationSettings().replica_lag_time_max_ms)
print(inspect.getsource(Partition.out_of_sync_replicas))

# %% [markdown]
# We cut one follower off at t = 5 s in a fresh cluster, while a producer appends one
# batch a second with `acks=1`, and heal the network at 55 s. The recorder lists what the
# brokers reported.

# %%
def isr_story(cut_at_ms: int, heal_at_ms: int, end_ms: int, produce: bool = True,
              properties: dict[str, str] | None = None) -> tuple[SimCluster, EventRecorder, int]:
    story = SimCluster(scratch_dir(), nodes=3, seed=7, properties=properties)
    events = EventRecorder(story)
    story.create_topic("orders", 1, 3)
    cut = [n for n in story.nodes if n != story.leader("orders", 0)][0]
    for second in range(end_ms // 1000):
        if second * 1000 == cut_at_ms:
            story.network.isolate(cut, list(story.nodes))
        if second * 1000 == heal_at_ms:
            story.network.heal()
        if produce:
            story.send_produce("orders", 0, batch(b"tick"), lambda answer: None, acks=1)
        story.run_for(1_000)
    return story, events, cut


story, events, cut = isr_story(cut_at_ms=5_000, heal_at_ms=55_000, end_ms=100_000)
print("cut off: broker", cut)
for row in events.rows:
    if row.kind in ("isr-proposed", "isr-changed"):
        print(f"t = {(row.time_ms - START_MS) / 1000:7.3f} s  broker {row.node_id}  {row.kind:13} "
              f"{list(row.isr)} -> {list(row.new_isr)}")

# %% [markdown]
# The shrink comes at the first check at which the follower's last catch-up (just before 5 s)
# is more than 30 s old: the check at 30 s finds it 25 s old, the check at 45 s 40 s old. After
# the heal the follower's fetch that was lost in the cut must first time out (30 s, the
# fetcher's request timeout); its next fetch brings it up to the leader's HW, and a follower
# whose LEO reaches the HW is proposed back into the ISR. A new replica joins the same way: it
# is out of sync until it has copied the log up to the HW.

# %% [markdown]
# ## acks=all and min.insync.replicas
# With `acks=all` (`-1`) the leader answers a produce only when the HW has passed the batch, that
# is when every ISR member has it. Until then the produce waits in the *purgatory* (chapter 13)
# for the HW to move, or for its timeout. But "every ISR member" could be the leader alone, so
# `min.insync.replicas` sets a floor: while the ISR is smaller, the leader refuses `acks=all`
# produces with **NOT_ENOUGH_REPLICAS** before writing anything.

# %%
print(inspect.getsource(Partition.check_leader_for_append))

# %% [markdown]
# We kill both followers of our first cluster (which has `min.insync.replicas=2`). A dead broker
# stops heartbeating; the controller fences it after `broker.session.timeout.ms` (9 s) and takes
# it out of every ISR at once, without waiting for the leader's 30 s rule.

# %%
from kafkalab.errors import ErrorCode

for follower in followers:
    sim.crash(follower)
sim.run_for(10_000)
print("ISR", list(sim.controller.image.partition("orders", 0).isr), "at", seconds(sim), "s")
refused = sim.produce("orders", 0, batch(b"fig"), acks=-1)
print("acks=all:", ErrorCode(refused.error_code).name)
accepted = sim.produce("orders", 0, batch(b"grape", b"kiwi"), acks=1)
print("acks=1:  ", ErrorCode(accepted.error_code).name, "at offset", accepted.base_offset)
replicas_table(sim)

# %% [markdown]
# `acks=1` is still accepted -- the leader's LEO moved -- but the HW stands still. That is
# deliberate: below `min.insync.replicas`, a record is held by fewer replicas than the topic
# promises, so the leader does not call it committed, and consumers do not see it, until enough
# replicas hold it again:

# %%
print(inspect.getsource(Partition.maybe_increment_high_watermark))

# %% [markdown]
# For durable writes Kafka's documentation recommends replication factor 3, `acks=all` and
# `min.insync.replicas=2` -- one broker may fail without stopping writes -- and leaving
# `unclean.leader.election.enable` off. Its default is **false** since Kafka 0.11 (older articles
# say true): an out-of-sync replica elected leader would silently drop the records only the old
# ISR had.

# %%
from kafkalab.storage.log_config import LogConfig

print("unclean.leader.election.enable =", LogConfig().unclean_leader_election_enable)

# %% [markdown]
# ## Failover, leader epochs and truncation (KIP-101)
# Every leader change starts a new **leader epoch**; the leader stamps it into each batch it
# writes, and each replica remembers where each epoch began (its *leader-epoch cache*, saved as
# `leader-epoch-checkpoint`). We cut the leader off from its followers, write two batches with
# `acks=1` that only the leader receives, and kill it.

# %%
def log_batches(cluster: SimCluster, node: int) -> list[tuple[int, int, int, list[str]]]:
    log = cluster.nodes[node].broker.topics.log("orders", 0)
    data = b"".join(segment.log_path.read_bytes() for segment in log.segments)
    return [(b.base_offset, b.last_offset, b.header.partition_leader_epoch, [r.value.decode() for r in b.records])
            for b in iter_batches(data)]


fo = SimCluster(scratch_dir(), nodes=3, seed=7, properties={"min.insync.replicas": "2"})
fo_events = EventRecorder(fo)
fo.create_topic("orders", 1, 3)
old_leader = fo.leader("orders", 0)
fo.produce("orders", 0, batch(b"a", b"b", b"c"))
fo.run_for(1_000)
fo.network.isolate(old_leader, list(fo.nodes))
fo.produce("orders", 0, batch(b"only-on-the-old-leader-1"), acks=1)
fo.produce("orders", 0, batch(b"only-on-the-old-leader-2"), acks=1)
print(f"broker {old_leader} (leader) batches (base, last, epoch, values):", log_batches(fo, old_leader))
fo.crash(old_leader)
fo.run_for(10_000)
new_leader = fo.leader("orders", 0)
print("new leader", new_leader, "in epoch", fo.controller.image.partition("orders", 0).leader_epoch)
fo.produce("orders", 0, batch(b"d", b"e"))
print(f"broker {new_leader} (leader) batches:", log_batches(fo, new_leader))
print("its leader-epoch cache (epoch, start offset):",
      fo.nodes[new_leader].broker.topics.log("orders", 0).leader_epoch_cache.entries)

# %% [markdown]
# Offsets 3 and 4 now mean different records on the two brokers. The old leader's were never
# committed (the HW was 3), so they may go -- but the old leader must find out where its log
# and the new leader's part ways. Truncating to its own HW is not safe (KIP-101 shows it can
# lose committed records or leave replicas that differ at the same offset). Instead the
# follower sends the epoch of its last batch with its fetch; the leader answers where that epoch
# ends in *its* log:

# %%
from kafkalab.replication import truncation

print(inspect.getsource(truncation.diverging_epoch))

# %% [markdown]
# We heal the network and restart the old leader. It rejoins as a follower, asks with last
# fetched epoch 0, hears "epoch 0 ends at 3", truncates to 3, and fetches the new leader's batch.

# %%
fo.network.heal()
fo.restart(old_leader)
fo.run_for(2_000)
print(f"broker {old_leader} batches:", log_batches(fo, old_leader))
print("ISR", list(fo.controller.image.partition("orders", 0).isr))
seen = set()
for row in fo_events.rows:
    if row.kind in ("crash", "restart") or (row.kind.startswith("became") and row.leader_epoch != 0
                                             and (row.node_id, row.leader_epoch) not in seen):
        seen.add((row.node_id, row.leader_epoch))
        print(f"t = {(row.time_ms - START_MS) / 1000:6.3f} s  broker {row.node_id}  {row.kind:15} "
              + ("" if row.leader_epoch is None else f"epoch {row.leader_epoch}"))

# %% [markdown]
# ## Power loss: what `fsync` is for
# A crash kills the process, but the operating system still holds every write the log made: a
# `write` returns once the bytes are in the page cache, and the kernel writes them to the disk
# later. A **power loss** takes the page cache with it. Only what was `fsync`ed survives, plus
# whatever the kernel happened to write back -- possibly half a batch.
#
# Kafka does not `fsync` each append: `flush.messages` and `flush.ms` default to "never", and
# durability comes from replication instead. A broker that loses power comes back with a
# shorter, perhaps torn log; recovery checks every batch after the recovery point (a torn batch
# fails its CRC and is cut off, indexes are rebuilt), and the broker fetches what it lost from
# the leader. Acknowledged records survive because the other ISR members still have them. Here
# the leader of a fresh cluster loses power after ten `acks=all` writes that were never fsynced.

# %%
def batches_on_disk(cluster: SimCluster, node: int) -> int:
    """Whole batches in the node's orders-0 segment files, read from the disk (a torn tail
    ends the walk): what recovery will keep."""
    directory = cluster.data_dir / f"node-{node}" / "orders-0"
    data = b"".join(path.read_bytes() for path in sorted(directory.glob("*.log")))
    return len(list(iter_batches(data)))


dark = SimCluster(scratch_dir(), nodes=3, seed=11, properties={"min.insync.replicas": "2"})
dark.create_topic("orders", 1, 3)
for i in range(10):
    dark.produce("orders", 0, batch(f"write-{i}".encode()))
dark_leader = dark.leader("orders", 0)
for tail in dark.crash(dark_leader, power_loss=True):
    print(f"broker {dark_leader} lost {tail.lost_bytes} of {tail.kept_bytes + tail.lost_bytes} bytes "
          f"of {tail.log_path.name}: {batches_on_disk(dark, dark_leader)} whole batches are left")
dark.run_for(15_000)
print("new leader", dark.leader("orders", 0), "holds", batches_on_disk(dark, dark.leader("orders", 0)), "batches")
dark.restart(dark_leader)
dark.run_for(5_000)
print(f"broker {dark_leader} recovered, fetched from the leader and holds", batches_on_disk(dark, dark_leader),
      "batches; ISR", list(dark.controller.image.partition("orders", 0).isr))

# %% [markdown]
# The same loss on *every* replica at once -- a data centre going dark -- would lose the
# acknowledged records too: that is the trade Kafka makes by default. Setting `flush.messages=1`
# makes each append durable on its own, at the cost of an `fsync` per batch (chapter 15 measures
# what that costs). The replication campaign (`python -m kafkalab.sim.campaign`) takes power
# from one broker at a time, and only while every replica is in the ISR -- the condition under
# which Kafka's promise holds.
#
# ## Fetching from the closest replica (KIP-392)
# When brokers sit in different racks or availability zones, a consumer in zone *b* reading from
# a leader in zone *a* pays for every byte crossing zones. With `broker.rack` set on each broker,
# `client.rack` on the consumer and `replica.selector.class` set to Kafka's
# `org.apache.kafka.common.replica.RackAwareReplicaSelector`, the leader answers such a consumer's
# fetch with no records and a `preferred_read_replica`: the in-sync follower in the consumer's
# own rack. The consumer then fetches from that follower, which serves records up to **its own**
# HW -- one fetch behind the leader's, never beyond what is committed.

# %%
from kafkalab.client.consumer import ConsumerConfig, ConsumerCore
from kafkalab.replication.replica_selector import RACK_AWARE_REPLICA_SELECTOR

near = SimCluster(scratch_dir(), nodes=3, seed=3, racks={1: "zone-a", 2: "zone-b", 3: "zone-c"},
                  properties={"replica.selector.class": RACK_AWARE_REPLICA_SELECTOR})
near.create_topic("orders", 1, 3)
near.produce("orders", 0, batch(b"x", b"y", b"z"))
near_leader = near.leader("orders", 0)
zone = next(z for n, z in near.racks.items() if n != near_leader)
reader = near.add_consumer("reader", ConsumerCore(ConsumerConfig(
    client_rack=zone, auto_offset_reset="earliest", enable_auto_commit=False)))
reader.assign([("orders", 0)], near.clock.milliseconds())
got: list[bytes] = []
while len(got) < 3:
    near.run_for(50)
    got += [r.value for r in reader.take_records(near.clock.milliseconds())]
print(f"leader: broker {near_leader} in {near.racks[near_leader]}; consumer in {zone}")
print("read", got, "from broker", reader.read_replicas[("orders", 0)][0],
      "until", (reader.read_replicas[("orders", 0)][1] - START_MS) // 1000, "s (metadata.max.age.ms)")

# %% [markdown]
# ## Widget: the ISR over time
# The widget runs the same cluster with `min.insync.replicas=2` and a producer sending one
# `acks=all` batch a second. Pick a follower, slow its links, kill it, cut it off or heal it,
# then advance time: the upper plot shows each replica's LEO (solid) and HW (dashed) and every
# produce answer along the bottom; the lower one the ISR membership per broker. The stored
# notebook (and any run with `KAFKALAB_STATIC_WIDGETS=1`) shows a fixed story instead: follower 1
# is cut off at 5 s, follower 2 killed at 50 s, and both come back at 100 s.

# %%
from kafkalab.viz.isr import show_isr

widget = show_isr(scratch_dir())

# %% [markdown]
# Read it from left to right. From 5 s the HW stalls while the leader's LEO climbs: `acks=all`
# produces wait for broker 1 and time out. At 45 s the ISR shrinks to [2, 3], the HW jumps, the
# waiting produces are answered. Broker 2 dies at 50 s and is fenced at 57 s, 9 s after its last
# heartbeat; the ISR [3] is below `min.insync.replicas`, every `acks=all` produce is refused with
# NOT_ENOUGH_REPLICAS, and the leader appends nothing. At 100 s broker 2 restarts and rejoins almost at once, and broker 1
# rejoins once its lost fetch has timed out.
#
# Kafka's replication resembles Microsoft's PacificA more than Raft: the log is replicated by a
# leader to a dynamic set of in-sync replicas, and a separate configuration service (the
# controller, itself a Raft quorum under KRaft) decides membership and leadership. Raft commits
# on any majority of a fixed set; Kafka commits on *all* of a shrinking and growing ISR, which
# tolerates n-1 failures with n replicas but needs the controller to change the ISR.

# %% [markdown]
# ## Exercises
# Each prediction starts blank. Write your answer, run the check cell: it tells you if you are
# right, and gives a hint if not.
#
# **Predict, then check 1.** A follower's fetches, with the leader's LEO in brackets:
# t=2000 fetch(o=50) [LEO 50]; t=2300 fetch(o=60) [LEO 80]; t=2600 fetch(o=80) [LEO 90]. What is
# its `last_caught_up_time_ms` after the third fetch?

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- your answer, in ms
my_prediction = 2300
### END SOLUTION

# %% tags=["check"]
from kafkalab.book import check_prediction

state = ReplicaState()
for now_ms, fetch_offset, leader_leo in [(2000, 50, 50), (2300, 60, 80), (2600, 80, 90)]:
    state = state.after_fetch(fetch_offset, 0, now_ms, leader_leo, broker_epoch=1)
check_prediction(my_prediction, state.last_caught_up_time_ms, right=f"{state.last_caught_up_time_ms} ms",
                 hint="80 is less than the leader's LEO now (90), so the follower is not caught up "
                      "now; but compare 80 with the leader's LEO at the previous fetch.")
### BEGIN HIDDEN TESTS
assert my_prediction == 2300
### END HIDDEN TESTS

# %% [markdown]
# **Predict, then check 2.** Nobody produces. A follower is cut off at 5 s and stays cut off
# until 100 s. Is it still in the ISR at 100 s (`True` or `False`)?

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- True or False
my_prediction = True
### END SOLUTION

# %% tags=["check"]
idle, _, idle_cut = isr_story(cut_at_ms=5_000, heal_at_ms=-1, end_ms=100_000, produce=False)
still_in = idle_cut in idle.controller.image.partition("orders", 0).isr
check_prediction(my_prediction, still_in,
                 hint="look at ReplicaState.is_caught_up: what is the follower's LEO, and the "
                      "leader's, when nothing is written?")
### BEGIN HIDDEN TESTS
assert my_prediction is True
### END HIDDEN TESTS

# %% [markdown]
# **Predict, then check 3.** A producer writes every second; a follower is cut off at 20 s. At
# which second does the ISR shrink? (The leader checks every 15 s from the start.)

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- your answer, in whole seconds
my_prediction = 60
### END SOLUTION

# %% tags=["check"]
late, late_events, _ = isr_story(cut_at_ms=20_000, heal_at_ms=-1, end_ms=80_000)
shrunk_at_s = (late_events.of_kind("isr-changed")[0].time_ms - START_MS) // 1000
check_prediction(my_prediction, shrunk_at_s, right=f"the ISR shrinks at {shrunk_at_s} s",
                 hint="the follower was last caught up just before 20 s; find the first multiple "
                      "of 15 s at which that is more than 30 s ago.")
### BEGIN HIDDEN TESTS
assert my_prediction == 60
### END HIDDEN TESTS

# %% [markdown]
# **Change the engine.** Set the broker property `replica.lag.time.max.ms` to 10000 (Kafka's
# default before 2.5) in `lag_properties`; the check builds a cluster with
# `SimCluster(..., properties=lag_properties)`, cuts a follower off at 5 s while producing, and
# passes once the follower leaves the ISR before 30 s. Then explain: how often does the leader
# check now, and why does a shorter window make a busy cluster's ISR flap?

# %% tags=["answer"]
lag_properties: dict[str, str] = {}
### BEGIN SOLUTION
### BLANK # your change here
lag_properties["replica.lag.time.max.ms"] = "10000"
### END SOLUTION

# %% tags=["check"]
quick, quick_events, _ = isr_story(cut_at_ms=5_000, heal_at_ms=-1, end_ms=40_000, properties=lag_properties)
left_at_s = [(row.time_ms - START_MS) // 1000 for row in quick_events.of_kind("isr-changed")]
assert left_at_s and left_at_s[0] < 30, (
    "the follower has not left the ISR within 40 s: with the default replica.lag.time.max.ms "
    "(30000) it leaves at 45 s. Set the property in lag_properties and run both cells again.")
print(f"the follower left the ISR at {left_at_s[0]} s")
### BEGIN HIDDEN TESTS
assert int(lag_properties["replica.lag.time.max.ms"]) == 10_000 and left_at_s[0] == 15
### END HIDDEN TESTS

# %% [markdown]
# The brokers' logs live in scratch directories; this last cell removes them.

# %%
for cluster in (sim, story, fo, dark, near, idle, late, quick):
    cluster.close()
remove_scratch_dirs()
