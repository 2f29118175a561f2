# %% [markdown]
# # 09 The controller
#
# Brokers store partitions; one component decides everything else. Which broker leads each
# partition, who is in its ISR, which brokers are alive, which topics exist: all of it is
# decided by the **controller**, and every broker acts on what the controller decided. This
# chapter first tells how Kafka's controller worked while it lived on ZooKeeper, then runs what
# Kafka runs today (KRaft, the only mode since Kafka 4.0) on kafkalab's simulated cluster:
# every decision is a record in the metadata log `__cluster_metadata`, and we read them.

# %%
from kafkalab.book import check_version
check_version("0.1.0")

# %% [markdown]
# ## History: the ZooKeeper-era controller
# Until Kafka 2.8 every cluster needed a ZooKeeper ensemble, and one broker at a time was the
# controller:
#
# * **Election by an ephemeral node.** At start-up each broker read the znode `/controller`. If
#   it held a broker id, someone else was controller. If it was absent, the broker tried to
#   create it -- an *ephemeral* node, holding `{"version":1,"brokerid":N,"timestamp":...}`, that
#   ZooKeeper deletes when the creator's session dies. Only one create can succeed, so only one
#   broker won; the others watched the node and raced again when it disappeared.
# * **`controller_epoch`.** A second, *persistent* znode `/controller_epoch` counted controllers:
#   1 for the first, plus one at each new election. Every request the controller sent
#   (LeaderAndIsr, UpdateMetadata, StopReplica) carried it, and a broker ignored a request with
#   an epoch lower than the highest it had seen -- so a controller that was paused (a long GC)
#   and woke up after being replaced could not undo its successor's decisions.
# * **Two state machines.** The controller tracked every partition through
#   `NonExistentPartition -> NewPartition -> OnlinePartition <-> OfflinePartition` and every
#   replica through `NewReplica -> OnlineReplica <-> OfflineReplica -> ReplicaDeletionStarted ->
#   ReplicaDeletionSuccessful/Ineligible -> NonExistentReplica`. A partition's leader, leader
#   epoch and ISR lived in the znode `/brokers/topics/<t>/partitions/<p>/state`, and ZooKeeper's
#   version of that znode guarded concurrent updates.
#
# The weak spot was failover: a new controller had to read every partition's state from
# ZooKeeper before it could act -- a few milliseconds each, so tens of seconds for tens of
# thousands of partitions -- and the brokers' copies of the metadata were updated by RPCs
# that could be lost or reordered. KRaft (KIP-500) replaces all of it with a log.
#
# | ZooKeeper era | KRaft, and kafkalab |
# |---|---|
# | the broker that created `/controller` | the leader of the Raft quorum of controllers (`kafkalab.controller.raft`) |
# | `controller_epoch` | the quorum's epoch: the leader epoch of `__cluster_metadata`, stamped on every batch the controller writes |
# | partition state znode (leader, leader_epoch, isr) | `PartitionRecord`, then a `PartitionChangeRecord` per change |
# | the znode's ZooKeeper version | the *partition epoch*, +1 at every change, checked by AlterPartition |
# | partition state machine (Online/Offline) | the `leader` field: a broker id, or -1 when no replica may lead |
# | replica state machine, broker liveness | `RegisterBrokerRecord` and `BrokerRegistrationChangeRecord` (fenced/unfenced) |
# | LeaderAndIsr / UpdateMetadata RPCs | every broker replays the same log into the same metadata image |
#
# A new active controller has nothing to load: it already holds the log, because it was a
# voter replicating it.

# %% [markdown]
# ## The metadata log grows
# kafkalab's simulation runs three brokers over one controller
# (`kafkalab.controller.local.LocalController`). The controller writes each decision as
# records in Kafka's exact formats, appends them as one batch, and replays them into the
# image the brokers act on. We print each record as `kafkalab dump-log
# --cluster-metadata-decoder` prints it: the function below is the decoder that option selects.

# %%
import inspect

from kafkalab.book import remove_scratch_dirs, scratch_dir
from kafkalab.metadata.records import decode_record
from kafkalab.sim.cluster import START_MS, SimCluster
from kafkalab.tools.decoders import metadata as metadata_decoder

print(inspect.getsource(metadata_decoder.parse_cluster_metadata))


def dump(sim: SimCluster, start: int = 0, width: int = 160) -> int:
    """Print the metadata records from offset ``start``; return the next offset."""
    values = sim.controller.log.values
    for offset in range(start, len(values)):
        text = metadata_decoder.decode_metadata_record(values[offset])
        print(f"{offset:>3} {text[:width]}{'...' if len(text) > width else ''}")
    return len(values)


def seconds(sim: SimCluster) -> float:
    return (sim.clock.milliseconds() - START_MS) / 1000


sim = SimCluster(scratch_dir(), nodes=3, seed=7)
seen = dump(sim)

# %% [markdown]
# Before any topic exists the log holds the `metadata.version` feature level (what Kafka's
# `bootstrap.checkpoint` writes) and, per broker, a `RegisterBrokerRecord`. A broker registers
# *fenced*, and its broker epoch is the offset of that record. Once its heartbeats show that it
# has replayed the log up to its own registration, the controller writes a
# `BrokerRegistrationChangeRecord` with `fenced: -1`: the broker is unfenced and may lead.
# Now a topic of three partitions, replication factor 3:

# %%
sim.create_topic("orders", 3, 3)
seen = dump(sim, seen)

# %% [markdown]
# One `TopicRecord` (name and a random topic id) and one `PartitionRecord` per partition:
# replicas in assignment order, the ISR, the leader -- the first replica, the *preferred*
# leader -- and leader epoch and partition epoch 0. The controller stripes the replicas so that
# each broker leads one partition.

# %% [markdown]
# ## A broker crashes: fencing and leader election
# We kill the leader of `orders-0`. Nothing happens at once: the controller hears from brokers
# by heartbeat, and only after `broker.session.timeout.ms` (9 s) without one does it *fence*
# the broker.

# %%
victim = sim.leader("orders", 0)
sim.crash(victim)
sim.run_for(8_000)
print(f"t={seconds(sim):.0f} s: orders-0 leader {sim.leader('orders', 0)}, records so far {len(sim.controller.log.values)}")
sim.run_for(2_000)
print(f"t={seconds(sim):.0f} s: orders-0 leader {sim.leader('orders', 0)}")
seen = dump(sim, seen)

# %% [markdown]
# Fencing broker 3 is one batch: a `PartitionChangeRecord` for every partition whose ISR held
# it, then the `BrokerRegistrationChangeRecord` with `fenced: 1`. A `PartitionChangeRecord`
# names only the fields that change: partition 0 gets a new ISR and a new leader, partitions 1
# and 2 only a smaller ISR.
#
# The new leader of `orders-0` follows Kafka's rule: **the first replica in assignment order
# that is in the ISR and alive** -- not the first of the ISR list, not the most caught-up. Here
# is the rule as the controller runs it:

# %%
from kafkalab.controller import partition_change

print(inspect.getsource(partition_change.elect_leader))

# %% [markdown]
# No record carries the leader epoch. Every node that replays a `PartitionChangeRecord` adds 1
# to the leader epoch when the leader changes, and 1 to the partition epoch for any change;
# because all nodes replay the same log, all agree on both. The leader epoch fences stale
# leaders in Fetch and Produce (chapter 08); the partition epoch fences a stale AlterPartition,
# as the ZooKeeper znode version did.

# %%
for index in range(3):
    p = sim.controller.image.partition("orders", index)
    print(f"orders-{index}: replicas {list(p.replicas)} leader {p.leader} ISR {list(p.isr)} "
          f"leader epoch {p.leader_epoch} partition epoch {p.partition_epoch}")

# %% [markdown]
# ## The broker returns: rejoining and preferred leader election
# Broker 3 restarts on its data directory and registers again. It catches up by fetching, and
# the leaders add it back to their ISRs with AlterPartition -- more `PartitionChangeRecord`s.
# It does not lead `orders-0` again on its own: a leader is changed only when it must be.

# %%
sim.restart(victim)
sim.run_for(10_000)
seen = dump(sim, seen)
print("orders-0 leader:", sim.leader("orders", 0))

# %% [markdown]
# Broker 1 now leads two partitions and broker 3 none. A **preferred leader election** moves
# each partition back to its first replica if that replica is in the ISR. It is the ElectLeaders
# request (`kafkalab leader-election --election-type PREFERRED --all-topic-partitions`), and
# with `auto.leader.rebalance.enable` (default true) the controller also runs it by itself. The
# ZooKeeper-era controller checked every `leader.imbalance.check.interval.seconds` (300) whether a
# broker's share of partitions led by someone else exceeded `leader.imbalance.per.broker.percentage`
# (10). KRaft's controller ignores the percentage: one interval after it sees any partition away
# from its preferred leader, it runs a preferred election for up to 1,000 such partitions
# (`kafkalab/controller/leader_balance.py`). The simulation's controller has already scheduled
# that check; we run the election by hand rather than wait five simulated minutes.

# %%
due_ms = sim.leader_balancer.next_deadline_ms()
print(f"automatic balancing due {(due_ms - sim.clock.milliseconds()) / 1000:.0f} s from now")
from kafkalab.controller.partition_change import Election

for topic, index, error, message in sim.controller.elect_leaders(Election.PREFERRED, None):
    print(f"{topic}-{index}: {error.name}")
seen = dump(sim, seen)
print("orders-0 leader:", sim.leader("orders", 0), "leader epoch", sim.controller.image.partition("orders", 0).leader_epoch)

# %% [markdown]
# Only `orders-0` needed the election, so only it is in the answer; one record, `leader: 3`.

# %% [markdown]
# ## Deleting a topic
# In the ZooKeeper era a deletion was a request written to `/admin/delete_topics/<topic>`; the
# controller moved each replica through `OfflineReplica`, `ReplicaDeletionStarted` and
# `ReplicaDeletionSuccessful` with StopReplica requests, retrying brokers that were down, and
# removed the znodes at the end. In KRaft it is one record. Every broker that replays it renames
# its replicas' directories to `<topic>-<partition>.<uuid>-delete` and removes them a minute
# later (`file.delete.delay.ms`); a broker that was down replays the same record when it returns.

# %%
sim.create_topic("audit", 1, 2)
sim.run_for(100)
seen = dump(sim, seen)
sim.controller.delete_topic("audit")
sim.run_for(100)
seen = dump(sim, seen)
for node_id, node in sorted(sim.nodes.items()):
    names = sorted(d.name for d in (sim.data_dir / f"node-{node_id}").iterdir() if d.name.startswith("audit"))
    print(f"broker {node_id}:", ["audit-0.<uuid>-delete" if n.endswith("-delete") else n for n in names])

# %% [markdown]
# ## Unclean leader election: availability, paid in records
# When every ISR member is gone, Kafka must choose: wait for an ISR member to come back (the
# partition is offline meanwhile), or let an out-of-sync replica lead at once and lose what it
# lacks. `unclean.leader.election.enable` picks, and it has defaulted to **false** since Kafka
# 0.11 (some older articles say true).
#
# The story, run twice: `payments` has replicas [3, 1]. Three records are written while both are
# in sync. Then follower 1 is cut off and three more are sent with `acks=all`: the first waits
# for the follower until the ISR shrinks to [3] (after `replica.lag.time.max.ms`), and from then
# on the leader alone is enough, because `min.insync.replicas` is 1. Then broker 3 dies, the
# network heals, and broker 3 is fenced.

# %%
from kafkalab.records.codec import iter_batches
from kafkalab.records.model import Record
from kafkalab.records.v2 import build_v2_batch


def payments_story(unclean: str) -> tuple[SimCluster, list[str]]:
    story = SimCluster(scratch_dir(), nodes=3, seed=7, properties={"unclean.leader.election.enable": unclean})
    story.create_topic("payments", 1, 2)
    leader, follower = story.controller.image.partition("payments", 0).replicas
    answers = []
    for i in range(6):
        if i == 3:
            story.network.isolate(follower, list(story.nodes))
        record = Record(0, story.clock.milliseconds(), None, f"payment-{i}".encode())
        answer = story.produce("payments", 0, build_v2_batch([record]), acks=-1)
        answers.append(f"payment-{i}: error {answer.error_code} at {seconds(story):.0f} s")
    story.crash(leader)
    story.network.heal()
    story.run_for(10_000)
    return story, answers


clean, answers = payments_story("false")
print("\n".join(answers))
p = clean.controller.image.partition("payments", 0)
print(f"unclean.leader.election.enable=false: leader {p.leader}, ISR {list(p.isr)}")

# %% [markdown]
# `payment-3` was waiting for the cut-off follower when its request timed out (error 7,
# REQUEST_TIMED_OUT), yet it is in the leader's log and became committed when the ISR shrank;
# 4 and 5 were acknowledged. With unclean election off, the partition has **no leader** (-1):
# the ISR keeps its last member, 3, the one replica known to hold everything committed, and
# the partition waits for it. Nothing is lost; nothing can be written.

# %%
dirty, _ = payments_story("true")
p = dirty.controller.image.partition("payments", 0)
print(f"unclean.leader.election.enable=true: leader {p.leader}, ISR {list(p.isr)}, "
      f"leader recovery state {p.leader_recovery_state}")
dump(dirty, len(dirty.controller.log.values) - 2)
fetched = dirty.consume("payments", 0, 0)
print(f"a consumer reading payments-0 from broker {p.leader}: high watermark {fetched.high_watermark}")
for record_batch in iter_batches(fetched.records):
    for record in record_batch.records:
        print(f"  offset {record.offset}: {record.value.decode()}")

# %% [markdown]
# With unclean election on, broker 1 leads at once, out of sync: the `PartitionChangeRecord`
# makes it the whole ISR and sets `leaderRecoveryState: 1` (RECOVERING). Its log ends at
# offset 3. `payment-3`, `payment-4` and `payment-5` -- two of them acknowledged to a producer
# using `acks=all` -- are gone. When broker 3 returns it becomes a follower of the new leader
# epoch and truncates its own copies of them away (KIP-101, chapter 08):

# %%
dirty.restart(p.replicas[0])
dirty.run_for(10_000)
returned = dirty.nodes[p.replicas[0]].broker.topics.log("payments", 0)
p = dirty.controller.image.partition("payments", 0)
print(f"broker {p.replicas[0]} is back: log end offset {returned.log_end_offset}; ISR {list(p.isr)}, leader {p.leader}")

# %% [markdown]
# ## The quorum: who is the controller?
# Above, one `LocalController` decided everything. In a real KRaft cluster three (or five)
# controllers form a Raft quorum (KIP-595): they elect a leader -- the *active controller* --
# that appends to `__cluster_metadata`, and the others replicate it by Fetch. A record is
# committed once a majority holds it (the quorum's high watermark). `kafkalab.sim.quorum` runs
# three of kafkalab's Raft voters on one simulated clock and network:

# %%
from kafkalab.sim.quorum import SimQuorum

quorum = SimQuorum(scratch_dir(), voters=3, seed=1)
quorum.run_for(3_000)
for event in quorum.events:
    print(f"t={event.time_ms:>5} ms  voter {event.node_id}  {event.state:<10} epoch {event.epoch}  leader {event.leader_id}")

# %% [markdown]
# Each voter starts UNATTACHED and waits a random time between
# `controller.quorum.election.timeout.ms` (1 s) and twice that. The first to time out becomes a
# CANDIDATE of epoch 1, votes for itself and asks the others; a voter grants at most one vote
# per epoch, and writes it to its `quorum-state` file before answering, so even a restart cannot
# make it vote twice. One vote more than its own is a majority of three: it is LEADER, and
# BeginQuorumEpoch makes the others its FOLLOWERs. The epoch plays the part `controller_epoch`
# played: at most one leader per epoch, and a message from a lower epoch is refused.

# %%
leader = quorum.leader()
print((quorum.data_dir / f"node-{leader.local_id}" / "__cluster_metadata-0" / "quorum-state").read_text())

# %% [markdown]
# The active controller appends the records we saw above; the followers fetch them. Here the
# leader appends the creation of `orders` (the TopicRecord and its three PartitionRecords,
# offsets 7-10 of the simulated cluster's log) as one batch, and we dump a *follower's* copy of
# the metadata log with the real `dump-log` tool. The first batch is the control record every
# new leader writes when it takes office.

# %%
from kafkalab.tools.cli import main as kafkalab_cli

last = quorum.append(list(sim.controller.log.values[7:11]))
quorum.run_for(1_500)
follower = next(n for n in quorum.nodes.values() if n is not None and n is not leader)
print(f"appended up to offset {last}; follower {follower.local_id} high watermark {follower.high_watermark}")
segment = quorum.data_dir / f"node-{follower.local_id}" / "__cluster_metadata-0" / "00000000000000000000.log"
exit_code = kafkalab_cli(["dump-log", "--cluster-metadata-decoder", "--files", str(segment)])

# %% [markdown]
# Every batch header says `partitionLeaderEpoch: 1`: the quorum epoch under which the active
# controller wrote it. Now the active controller crashes.

# %%
crashed = leader.local_id
quorum.crash(crashed)
quorum.run_for(4_000)
quorum.start(crashed)
quorum.run_for(2_000)
for event in quorum.events:
    if event.time_ms > 3_000:
        print(f"t={event.time_ms:>5} ms  voter {event.node_id}  {event.state:<10} epoch {event.epoch}  leader {event.leader_id}")
new_leader = quorum.leader()
print(f"active controller: {new_leader.local_id}, epoch {new_leader.epoch}, high watermark {new_leader.high_watermark}")

# %% [markdown]
# The followers wait `controller.quorum.fetch.timeout.ms` (2 s) without an answer from their
# leader, then one stands for epoch 2 and wins: it holds every committed record, because a
# voter refuses its vote to a candidate whose log is behind its own. The old leader restarts in
# epoch 1 as RESIGNED (its quorum-state file says it led epoch 1), learns of epoch 2 from the
# new leader and follows; nothing committed is lost -- the high watermark only grew. Compare this with
# ZooKeeper-era failover: no state to load -- the new active controller already had the log.

# %% [markdown]
# ## Widget: the controller at work
# Kill and restart brokers, cut one off, trigger a preferred election, and watch the metadata
# log (above: each record at the time it was committed, one row per record type) and each
# partition's leader and ISR (below). Stored as a static figure, it shows the story of this
# chapter: broker 3 killed at 5 s and fenced at 13 s (9 s after its last heartbeat, sent just
# before 4 s), back at 20 s, a preferred election at 40 s
# (dotted lines mark what was done).

# %%
from kafkalab.viz.controller import show_controller

widget = show_controller(scratch_dir())

# %% [markdown]
# ## Exercises
# Each prediction starts blank. Write your answer, run the check cell: it tells you if you are
# right, and gives a hint if not.
#
# **Predict, then check 1.** A partition has replicas [2, 4, 1, 3] (assignment order), leader 2
# and ISR [3, 1, 2]. Broker 2 is fenced. Which broker leads next?

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- a broker id
my_prediction = 1
### END SOLUTION

# %% tags=["check"]
from kafkalab.book import check_prediction
from kafkalab.metadata.image import PartitionRegistration

before = PartitionRegistration(replicas=(2, 4, 1, 3), isr=(3, 1, 2), leader=2)
after = partition_change.change_partition(before, [3, 1], lambda broker: broker != 2)
check_prediction(my_prediction, after.leader, right=f"broker {after.leader}, ISR {list(after.isr)}",
                 hint="walk the replicas in assignment order, skipping the fenced broker and any "
                      "broker not in the ISR; the ISR's own order does not matter.")
### BEGIN HIDDEN TESTS
assert my_prediction == 1
### END HIDDEN TESTS

# %% [markdown]
# **Predict, then check 2.** On a fresh cluster, `orders-0` starts at leader epoch 0. Its
# leader is killed and fenced; it restarts and rejoins the ISR; a preferred leader election
# runs; then one follower is cut off until the ISR shrinks. What is the leader epoch of
# `orders-0` at the end?

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- a number
my_prediction = 2
### END SOLUTION

# %% tags=["check"]
epochs = SimCluster(scratch_dir(), nodes=3, seed=7)
epochs.create_topic("orders", 1, 3)
first_leader = epochs.leader("orders", 0)
epochs.crash(first_leader)
epochs.run_for(10_000)
epochs.restart(first_leader)
epochs.run_for(10_000)
epochs.controller.elect_leaders(Election.PREFERRED, None)
cut = next(b for b in epochs.controller.image.partition("orders", 0).replicas if b != first_leader)
epochs.network.isolate(cut, list(epochs.nodes))
epochs.produce("orders", 0, build_v2_batch([Record(0, START_MS, None, b"x")]), acks=1)
epochs.run_for(60_000)
final = epochs.controller.image.partition("orders", 0)
assert cut not in final.isr
check_prediction(my_prediction, final.leader_epoch,
                 right=f"leader epoch {final.leader_epoch} (partition epoch {final.partition_epoch})",
                 hint="count only the changes of leader; an ISR that grows or shrinks moves the "
                      "partition epoch, not the leader epoch.")
### BEGIN HIDDEN TESTS
assert my_prediction == 2 and final.partition_epoch > final.leader_epoch
### END HIDDEN TESTS

# %% [markdown]
# **Predict, then check 3.** On `sim`, the controller creates topic `clicks` with 4 partitions
# and replication factor 2. How many records does that append to `__cluster_metadata`?

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- a number of records
my_prediction = 5
### END SOLUTION

# %% tags=["check"]
before_offset = len(sim.controller.log.values)
sim.create_topic("clicks", 4, 2)
written = [type(decode_record(v)).__name__ for v in sim.controller.log.values[before_offset:]]
check_prediction(my_prediction, len(written), right=f"{len(written)} records: {written}",
                 hint="one record names the topic; what describes each partition's replicas?")
### BEGIN HIDDEN TESTS
assert my_prediction == 5 and written == ["TopicRecord"] + ["PartitionRecord"] * 4
### END HIDDEN TESTS

# %% [markdown]
# **Predict, then check 4.** A KRaft quorum has five voters. At most how many of them can crash
# (the active controller among them) while the others still elect an active controller?

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- a number of voters
my_prediction = 2
### END SOLUTION

# %% tags=["check"]
def elects_after_crashing(count: int) -> bool:
    five = SimQuorum(scratch_dir(), voters=5, seed=3)
    try:
        first = five.run_until_leader()
        down = [first.local_id] + [v for v in five.ids if v != first.local_id][:count - 1] if count else []
        for voter in down:
            five.crash(voter)
        five.run_for(10_000)
        return five.leader() is not None
    finally:
        five.close()


survivable = max(count for count in range(5) if elects_after_crashing(count))
check_prediction(my_prediction, survivable,
                 right=f"{survivable} of 5 may crash; {5 - survivable} voters are still a majority",
                 hint="a candidate needs votes from a majority of all five voters, its own included.")
### BEGIN HIDDEN TESTS
assert my_prediction == 2 and not elects_after_crashing(3)
### END HIDDEN TESTS

# %% [markdown]
# **Change the engine.** Kafka elects the first live ISR member in *assignment* order, so the
# preferred replica (the first assigned) leads whenever it can, and leadership stays spread the
# way replica placement spread it. Make the election follow the ISR's own order instead: in
# `elect_leader` (`kafkalab/controller/partition_change.py`), change the loop
# `for replica in replicas:` that follows the preferred-leader test to `for replica in target_isr:`,
# and restart the kernel. The check below fails before the edit and passes after it. The ISR is
# kept in the order replicas joined it: after a few broker restarts, which brokers would lead most
# partitions, and what would `kafkalab leader-election --election-type PREFERRED` still fix?
# Undo the edit afterwards.

# %% tags=["raises-exception"]
from kafkalab.classroom.engine_changes import check as engine_change_check

engine_change_check("election-isr-order")  # raises EngineUnchanged until the engine is edited

# %% [markdown]
# The brokers' logs live in scratch directories; this last cell removes them.

# %%
for cluster in (sim, clean, dirty, epochs):
    cluster.close()
quorum.close()
remove_scratch_dirs()
