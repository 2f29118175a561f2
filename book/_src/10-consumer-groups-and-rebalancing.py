# %% [markdown]
# # 10 Consumer groups and rebalancing
#
# Consumers that share a `group.id` form a **consumer group**. Kafka gives each partition of the
# topics they subscribe to exactly one member of the group, so the members split the work; and
# every group gets every record, so two groups reading one topic each see all of it (queueing
# inside a group, publish-subscribe between groups). Members come and go, and each time the
# partitions must be dealt out again: a **rebalance**. This chapter runs the classic group
# protocol -- FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup -- between kafkalab's
# own consumers and its broker, on the simulated network and clock of chapter 08, so every
# message below is a real, encoded Kafka request and every run prints the same numbers.

# %%
from kafkalab.book import check_version
check_version("0.1.0")

# %% [markdown]
# ## One owner per partition, every record for every group
# The partition assignment is a pure function: the members' subscriptions and the partition
# counts go in, one list of partitions per member comes out. Kafka's **Range** assignor, the first
# we meet, gives four consumers in a group the 8 partitions of `orders` two each. A second group of
# two consumers reading the same topic gets its own split: each group consumes every record.

# %%
from kafkalab.client.assignors import Member, assign_range, assign_round_robin
from kafkalab.client.consumer_protocol import Subscription


def members(*names: str, topics: tuple[str, ...] = ("orders",)) -> list[Member]:
    return [Member(name, Subscription(topics)) for name in names]


def show(assignment: dict) -> None:
    for member_id, partitions in sorted(assignment.items()):
        shown = ", ".join(f"{t}-{p}" for t, p in partitions) or "(nothing: idle)"
        print(f"  {member_id}: {shown}")


print("group billing:")
show(assign_range({"orders": 8}, members("b1", "b2", "b3", "b4")))
print("group search:")
show(assign_range({"orders": 8}, members("s1", "s2")))

# %% [markdown]
# More members than partitions leaves some idle: a partition never has two owners in one group,
# so the fifth consumer of a four-partition topic gets nothing. (Older articles suggest a custom
# assignor that hands one partition to several members; that breaks the one-owner rule that
# committed offsets rely on, and Kafka's answer today is share groups, KIP-932.)

# %%
show(assign_range({"orders": 4}, members("c1", "c2", "c3", "c4", "c5")))

# %% [markdown]
# ## Who coordinates a group
# Each group has a **group coordinator**, a broker that keeps its membership and its committed
# offsets. The group's offsets live in one partition of the internal, compacted topic
# `__consumer_offsets` (50 partitions by default): partition `abs(groupId.hashCode()) % 50`,
# with Java's string hash. The coordinator is the *leader of that partition* -- not "the least
# loaded broker", as one older article says: the leader is where the group's offsets are
# written, so it is where the group must be coordinated. A consumer asks any broker with
# **FindCoordinator** and is told that leader.

# %%
import inspect

from kafkalab.group import partitioner

print(inspect.getsource(partitioner.partition_for))
for group_id in ("KafkaConsumerDemo1", "orders-app", "billing"):
    print(f"{group_id!r:22} -> __consumer_offsets-{partitioner.partition_for(group_id)}")

# %% [markdown]
# (The source article's group `KafkaConsumerDemo1` lands on partition 4, as it reports.)
#
# ## The protocol, message by message
# We start a simulated cluster -- one broker here, links of 1 ms -- create `orders` with 6
# partitions, and start three consumers in group `orders-app`. Each is kafkalab's group member
# (`kafkalab.client.membership`): a sans-I/O state machine that says which request to send next
# and is told each answer. The event recorder keeps every group request and answer.

# %%
from kafkalab.book import remove_scratch_dirs, scratch_dir
from kafkalab.client.membership import MemberConfig
from kafkalab.sim.cluster import START_MS, SimCluster
from kafkalab.sim.events import EventRecorder


def config(*assignors: str, group: str = "orders-app") -> MemberConfig:
    return MemberConfig(group, ("orders",), assignors=assignors, session_timeout_ms=10_000,
                        heartbeat_interval_ms=1_000, rebalance_timeout_ms=30_000)


def seconds(sim: SimCluster) -> float:
    return (sim.clock.milliseconds() - START_MS) / 1000


def messages(recorder: EventRecorder, member: str, from_s: float = 0.0, until_s: float = 1e9) -> None:
    for row in recorder.rows:
        at_s = (row.time_ms - START_MS) / 1000
        if row.member != member or not from_s <= at_s <= until_s:
            continue
        arrow = "->" if row.kind == "group-request" else "<-"
        error = "" if row.error_code is None else f"  {ErrorCode(row.error_code).name}"
        generation = "" if row.generation_id in (None, -1) else f"  generation {row.generation_id}"
        print(f"t = {at_s:6.3f} s  {member} {arrow} {row.api:15}{error}{generation}")


from kafkalab.errors import ErrorCode

sim = SimCluster(scratch_dir(), nodes=1, seed=7)
recorder = EventRecorder(sim)
sim.create_topic("orders", 6, 1)
for name in ("c1", "c2", "c3"):
    sim.add_member(name, config("range"))
sim.run_for(8_000)
messages(recorder, "c1", until_s=7.5)

# %% [markdown]
# Read it in four steps.
#
# 1. **FindCoordinator**: the answer names the coordinator, and everything else goes there. The
#    very first one is answered COORDINATOR_NOT_AVAILABLE: `__consumer_offsets` does not exist
#    yet, and the broker creates it (with `offsets.topic.num.partitions`) on that request. The
#    member retries after `retry.backoff.ms` (100 ms), by which time the partition has a leader.
# 2. **JoinGroup**, twice. A new member sends an empty member id; the coordinator answers
#    MEMBER_ID_REQUIRED with an id it chose (KIP-394), and the member joins again with it. So
#    a consumer that restarts in a loop does not leave a trail of half-members behind.
#    The coordinator now *waits*: a group that was empty waits `group.initial.rebalance.delay.ms`
#    (3 s) for more members, and waits again while new ones keep arriving, so a fleet starting up
#    rebalances once rather than once per consumer. Then it answers every JoinGroup at once with
#    the new **generation** and the name of the **leader**; the leader's answer alone lists every
#    member with its subscription.
# 3. The leader asks for **Metadata** (how many partitions each subscribed topic has), runs the
#    assignor -- the assignment is computed by a *client*, so new assignors need no broker
#    upgrade -- and sends the plan in its **SyncGroup**. The others send an empty SyncGroup and
#    wait; every SyncGroup answer carries that member's share.
# 4. **Heartbeat** every `heartbeat.interval.ms` keeps the member in the group.
#
# The leader is simply the first member the coordinator admitted; nothing is elected.

# %%
for name, member in sorted(sim.members.items()):
    role = "leader" if member.member_id == member.leader_id else "follower"
    print(f"{name}: {role:8} generation {member.generation_id}  owns {[p for _, p in member.owned]}")

# %% [markdown]
# The member's side is a table of `(state, event) -> state`, the same shape as the coordinator's
# group state machine. Every response becomes one event:

# %%
from kafkalab.client.membership.state import TRANSITIONS

for (before, event), after in TRANSITIONS.items():
    if before.value in ("joining", "syncing", "stable"):
        print(f"{before.value:10} + {event.value:22} -> {after.value}")

# %% [markdown]
# ## What starts a rebalance
# A rebalance starts when a member joins, when one leaves (LeaveGroup, sent when a consumer
# closes), when one is declared dead (no heartbeat within `session.timeout.ms`, or no `poll()`
# within `max.poll.interval.ms`), and when the leader sees the subscribed topics change --
# partitions added, or a regex subscription matching a new topic. (kafkalab's member reads
# Metadata only when it leads a rebalance, so it does not notice added partitions by itself.)
# The coordinator cannot call the members; it answers their next Heartbeat with
# **REBALANCE_IN_PROGRESS**, and each rejoins. Here a fourth consumer joins:

# %%
sim.add_member("c4", config("range"))
sim.run_for(3_000)
messages(recorder, "c2", from_s=7.5)

# %% [markdown]
# c2's heartbeat at 8 s is refused with REBALANCE_IN_PROGRESS; it rejoins, and the join
# completes as soon as every member has rejoined: generation 2. Range gives the four members
# 2/2/1/1:

# %%
for name, member in sorted(sim.members.items()):
    print(f"{name}: generation {member.generation_id}  owns {[p for _, p in member.owned]}")

# %% [markdown]
# ## Generations fence zombies
# Every completed join starts a new generation, and every Heartbeat, SyncGroup and OffsetCommit
# carries the generation the member believes in. A member that was away while the group moved
# on is a *zombie*: it still thinks it owns partitions that now belong to someone else. We cut
# c4 off from the broker at 11 s for 15 s, longer than its 10 s session, and follow c4 and c1.

# %%
cut_s = seconds(sim)
sim.network.isolate("c4", [1])
sim.run_for(15_000)
sim.network.heal()
sim.run_for(30_000)
messages(recorder, "c4", from_s=cut_s - 1)
print()
messages(recorder, "c1", from_s=cut_s + 8, until_s=cut_s + 11)

# %% [markdown]
# The coordinator heard nothing from c4 for 10 s and removed it; c1's heartbeat was refused
# with REBALANCE_IN_PROGRESS and the others formed generation 3 without c4. c4, for its part,
# got no heartbeat answer for a whole session either, so it decided the *coordinator* was gone
# and looked for it again; that FindCoordinator was lost in the cut too, and c4 waited for its
# `request.timeout.ms` (30 s) before asking again. Its next heartbeat was refused with
# UNKNOWN_MEMBER_ID: its member id no longer exists. Its partitions were **lost**, not revoked
# -- it must not commit for them, because another member owns them now -- and it joined again
# as a new member:

# %%
for n in sim.members["c4"].notifications:
    print(f"t = {(n.at_ms - START_MS) / 1000:6.3f} s  c4 {n.kind:8} {[p for _, p in n.partitions]}")

# %% [markdown]
# A member that is still in the group but one generation behind gets ILLEGAL_GENERATION
# instead; the coordinator also refuses its OffsetCommit with that error. That check is what
# stops a zombie from overwriting the new owner's committed offsets.
#
# ## Widget: the rebalance timeline
# The timeline is drawn from the recorded messages. Each consumer has a lane: JoinGroup `o`,
# SyncGroup `s`, Heartbeat `|` (red when refused), LeaveGroup `X`, the shaded span from a
# JoinGroup to the SyncGroup answer that ended the rebalance; dotted lines mark new generations.
# Below, one row per partition in the colour of its owner, blank while nobody owns it. In a
# notebook with a live kernel you get buttons to add, close or kill consumers and to advance
# time; the stored notebook shows a fixed story: c1-c3 start at 0 s, c4 joins at 8 s, c2 closes
# at 16 s, c3 is killed at 24 s.

# %%
from kafkalab.viz.rebalance import show_rebalance

widget = show_rebalance(scratch_dir())

# %% [markdown]
# The first rebalance takes 6 s (the initial delay, extended once because members kept
# arriving); the later ones take milliseconds, because every member is heartbeating every
# second. The closed c2 is replaced at once -- LeaveGroup tells the coordinator -- but the killed
# c3's partitions 2 and 3 stay blank for 9 s: nobody reads them until its session times out.
# That is the cost of a long `session.timeout.ms` (45 s by default since Kafka 3.0, KIP-735),
# and the reason to close consumers cleanly.

# %% [markdown]
# ## The assignors
# ### Range: per topic, consecutive ranges
# For each topic separately, Range sorts the partitions by number and the subscribed members by
# member id, gives every member `partitions // members`, and one more to the first
# `partitions % members`:

# %%
print("10 partitions, 3 consumers:")
show(assign_range({"T1": 10}, members("C1-0", "C2-0", "C3-0", topics=("T1",))))
print("11 partitions:")
show(assign_range({"T1": 11}, members("C1-0", "C2-0", "C3-0", topics=("T1",))))
print("two topics of 10:")
show(assign_range({"T1": 10, "T2": 10}, members("C1-0", "C2-0", "C3-0", topics=("T1", "T2"))))

# %% [markdown]
# 4/3/3, then 4/4/3, and with two topics C1-0 gets 8 to the others' 6: the extra partition of
# each topic lands on the same first member. That skew grows with every topic.
#
# ### RoundRobin: all partitions, dealt in order
# RoundRobin lists every subscribed partition of every topic, **sorted by topic name and then
# partition number**, and deals them one by one over the members sorted by id, skipping members
# not subscribed to a partition's topic. Older articles say it sorts partitions and consumers by
# *hash code* and show a shuffled order (T1-5, T1-3, T1-0, ...); that is not what Kafka's
# `RoundRobinAssignor` does:

# %%
from kafkalab.client.assignors import round_robin

print(inspect.getsource(round_robin.assign_round_robin))
show(assign_round_robin({"T1": 10}, members("C1-0", "C1-1", "C2-0", "C2-1", topics=("T1",))))

# %% [markdown]
# With equal subscriptions RoundRobin is balanced across topics, unlike Range. With *different*
# subscriptions it can be lopsided: below, C0 reads `t0`, C1 reads `t0, t1`, C2 reads all three
# topics (1, 2 and 3 partitions). C2 ends with four partitions and C0 with one, though a better
# split (C1 taking both of `t1`) exists:

# %%
uneven = [Member("C0", Subscription(("t0",))), Member("C1", Subscription(("t0", "t1"))),
          Member("C2", Subscription(("t0", "t1", "t2")))]
show(assign_round_robin({"t0": 1, "t1": 2, "t2": 3}, uneven))

# %% [markdown]
# ### Sticky and CooperativeSticky
# The **sticky** assignors first balance (member counts differ by at most one) and then keep
# every partition where it was. **CooperativeSticky** computes the same plan but does not give
# a partition to its new owner while the old owner still holds it: in the first rebalance the
# old owner only *revokes* it; the member that revoked something rejoins at once, and a second
# rebalance hands the partition over (KIP-429). The assignor widget shows a grid per rebalance:
# choose the assignor, consumers, partitions per topic and subscriptions, and whether a member
# joins or leaves. (The stored notebook shows CooperativeSticky, 10 partitions, a fourth
# consumer joining.)

# %%
from kafkalab.viz.assignors import GroupParams, revocation_table, show_assignors

figure = show_assignors(GroupParams(assignor="cooperative-sticky", consumers=3, partitions=(10,)))

# %% [markdown]
# Partitions revoked per rebalance, for each assignor, when the fourth consumer joins:

# %%
for assignor, revoked in revocation_table(GroupParams(consumers=3, partitions=(10,))).items():
    print(f"{assignor:19} revoked per rebalance: {revoked}")

# %% [markdown]
# The same comparison on the running protocol: three members on 12 partitions, a fourth joins,
# and we count the partitions each member reports revoked (what a
# `ConsumerRebalanceListener.onPartitionsRevoked` would hear) and the generations it took.

# %%
def join_a_fourth(assignor: str) -> None:
    group = SimCluster(scratch_dir(), nodes=1, seed=3, properties={"group.initial.rebalance.delay.ms": "0"})
    group.create_topic("orders", 12, 1)
    for name in ("a", "b", "c"):
        group.add_member(name, config(assignor))
    group.run_for(3_000)
    before_ms, generation = group.clock.milliseconds(), group.members["a"].generation_id
    group.add_member("d", config(assignor))
    group.run_for(4_000)
    revoked = sum(len(n.partitions) for m in group.members.values() for n in m.notifications
                  if n.kind == "revoked" and n.at_ms >= before_ms)
    generations = group.members["a"].generation_id - generation
    owned = sorted(len(m.owned) for m in group.members.values())
    print(f"{assignor:19} revoked {revoked:2}  rebalances {generations}  owned now {owned}")
    group.close()


for assignor in ("range", "sticky", "cooperative-sticky"):
    join_a_fourth(assignor)

# %% [markdown]
# Eager assignors revoke all 12 partitions, so all consumption stops for the whole rebalance;
# cooperative revokes the 3 that move and keeps the other 9 flowing, at the price of a second
# rebalance.
#
# ## The default assignor list
# Older articles say "two strategies, Range by default". Kafka 3.x's Java consumer has four
# built-in assignors and its default `partition.assignment.strategy` is the *list*
# **[RangeAssignor, CooperativeStickyAssignor]**. The coordinator picks a protocol every member
# supports, by the members' first choices, so a group of default consumers runs **Range**; and
# because the list contains an eager assignor, the consumer follows the **eager** protocol.
# CooperativeSticky is in the list so that a group can move to it: drop Range from the list in
# one rolling restart, and the group switches to cooperative rebalancing with no moment in which
# two members disagree. kafkalab's member makes the same choice:

# %%
from kafkalab.client.membership import DEFAULT_ASSIGNORS

default = MemberConfig("g", ("orders",))
print("partition.assignment.strategy:", list(DEFAULT_ASSIGNORS))
print("rebalance protocol:", "cooperative" if default.cooperative else "eager")
defaults = SimCluster(scratch_dir(), nodes=1, seed=5, properties={"group.initial.rebalance.delay.ms": "0"})
defaults.create_topic("orders", 6, 1)
for name in ("d1", "d2"):
    defaults.add_member(name, MemberConfig("g", ("orders",), session_timeout_ms=10_000, heartbeat_interval_ms=1_000))
defaults.run_for(2_000)
print("the group's protocol:", defaults.members["d1"].protocol_name)

# %% [markdown]
# ## Exercises
# Each prediction starts blank. Write your answer, run the check cell: it tells you if you are
# right, and gives a hint if not.
#
# **Predict, then check 1.** Range, one topic of 7 partitions, consumers `A`, `B`, `C`. How many
# partitions does each get? Answer as a tuple `(A, B, C)`.

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- e.g. (1, 2, 3)
my_prediction = (3, 2, 2)
### END SOLUTION

# %% tags=["check"]
from kafkalab.book import check_prediction

answer = assign_range({"t": 7}, members("A", "B", "C", topics=("t",)))
counts = tuple(len(answer[m]) for m in ("A", "B", "C"))
check_prediction(my_prediction, counts,
                 hint="Everyone gets 7 // 3; the first 7 % 3 consumers, in member id order, get one more.")
### BEGIN HIDDEN TESTS
assert my_prediction == (3, 2, 2)
### END HIDDEN TESTS

# %% [markdown]
# **Predict, then check 2.** RoundRobin, one topic `T1` of 10 partitions, consumers `C1-0`,
# `C1-1`, `C2-0`, `C2-1`, all subscribed. Which partitions does `C2-1` get? Answer as a list of
# partition numbers.

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- e.g. [0, 1]
my_prediction = [3, 7]
### END SOLUTION

# %% tags=["check"]
dealt = assign_round_robin({"T1": 10}, members("C1-0", "C1-1", "C2-0", "C2-1", topics=("T1",)))
theirs = [p for _, p in dealt["C2-1"]]
check_prediction(my_prediction, theirs,
                 hint="Partitions go out in order 0, 1, 2, ... to the members sorted by id, one each, "
                 "round and round; there is no hash code involved.")
### BEGIN HIDDEN TESTS
assert my_prediction == [3, 7]
### END HIDDEN TESTS

# %% [markdown]
# **Predict, then check 3.** A group of 3 consumers with CooperativeSticky owns 9 partitions, 3
# each. A fourth consumer joins. How many partitions are revoked in all, and how many
# rebalances (generations) does it take until the fourth consumer owns its share? Answer as a
# tuple `(revoked, rebalances)`.

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- e.g. (9, 1)
my_prediction = (2, 2)
### END SOLUTION

# %% tags=["check"]
coop = SimCluster(scratch_dir(), nodes=1, seed=3, properties={"group.initial.rebalance.delay.ms": "0"})
coop.create_topic("orders", 9, 1)
for name in ("a", "b", "c"):
    coop.add_member(name, config("cooperative-sticky"))
coop.run_for(3_000)
start_ms, start_generation = coop.clock.milliseconds(), coop.members["a"].generation_id
coop.add_member("d", config("cooperative-sticky"))
coop.run_for(4_000)
result = (sum(len(n.partitions) for m in coop.members.values() for n in m.notifications
              if n.kind == "revoked" and n.at_ms >= start_ms),
          coop.members["a"].generation_id - start_generation)
check_prediction(my_prediction, result,
                 hint="Four members share 9 partitions 3/2/2/2: how many must leave their old owners? "
                 "Each must be revoked in one rebalance and assigned in the next.")
### BEGIN HIDDEN TESTS
assert my_prediction == (2, 2)
### END HIDDEN TESTS

# %% [markdown]
# **Change the engine.** In `join_a_fourth`, give the members `config("range",
# "cooperative-sticky")` -- the Java default -- and run it: which protocol does the group use,
# and how many partitions are revoked? Then try `config("cooperative-sticky", "range")`. Which
# line of `MemberConfig` decides eager against cooperative, and why must it look at *every*
# assignor in the list, not only the first? Find out by breaking it: make
# `MemberConfig.cooperative` (in `kafkalab/client/membership/member.py`) look only at the first
# assignor (`return self.assignors[0] in COOPERATIVE`) and restart the kernel. The check below
# fails before the edit and passes after it. What goes wrong when such a member keeps its
# partitions through a rebalance but the group picked `range`, an eager assignor that assumes
# everyone gave everything back? Undo the edit afterwards.

# %% tags=["raises-exception"]
from kafkalab.classroom.engine_changes import check as engine_change_check

engine_change_check("first-assignor-decides")  # raises EngineUnchanged until the engine is edited

# %% [markdown]
# The brokers' logs live in scratch directories; this last cell removes them.

# %%
for cluster in (sim, defaults, coop):
    cluster.close()
remove_scratch_dirs()
