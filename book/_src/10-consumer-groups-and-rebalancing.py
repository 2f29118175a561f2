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
# ## The consumer group protocol (KIP-848)
# Everything so far is the **classic** protocol, and it has three costs that grow with the
# group.
#
# * **Stop the world.** With an eager assignor (Range, the Java default's first choice) every
#   member revokes *every* partition it owns when a rebalance starts, and nobody gets anything
#   back until the last member has rejoined and the leader's SyncGroup is answered. One member
#   joining stops all consumption in the group. The rebalance also waits for the slowest member:
#   a consumer busy in a long batch rejoins only at its next `poll()`, up to
#   `max.poll.interval.ms` (5 minutes) later, and the whole group waits with it.
#   CooperativeSticky (KIP-429) keeps the partitions that do not move, but pays with a second
#   rebalance, and the barrier is still there.
# * **The assignment is computed by a client.** The leader member runs the assignor, so the
#   broker cannot see or fix it, every member must ship the same assignor code, and a leader
#   with a stale view of the metadata decides for everyone.
# * **A chatty protocol with a barrier in it.** JoinGroup, SyncGroup, Heartbeat and LeaveGroup,
#   each with its own waits and errors, all meeting at the group-wide JoinGroup barrier.
#
# KIP-848 (early access in Kafka 3.7, production-ready in 4.0) moves the assignment into the
# **group coordinator**, replaces the barrier with each member **reconciling on its own**, and
# reduces the protocol to a single RPC, **ConsumerGroupHeartbeat**. kafkalab's coordinator speaks
# it (`kafkalab/group/consumer/`), and so does a small sans-I/O member,
# `kafkalab.client.membership.heartbeat_member`, which we now run in the simulation.
#
# ### One RPC
# Apart from FindCoordinator, to find its coordinator, and the OffsetCommit and OffsetFetch of
# chapter 11, a member sends only heartbeats. The request carries what changed since the last
# one (null means "unchanged"); the answer carries the member's epoch and, when it changed, the
# partitions the member may own now -- as topic ids, not names:

# %%
from kafkalab.protocol.messages.consumer_group import (
    CONSUMER_GROUP_HEARTBEAT_REQUEST,
    CONSUMER_GROUP_HEARTBEAT_RESPONSE,
)

for schema in (CONSUMER_GROUP_HEARTBEAT_REQUEST, CONSUMER_GROUP_HEARTBEAT_RESPONSE):
    print(f"{schema.name}: {', '.join(field.name for field in schema.struct.fields)}")

# %% [markdown]
# The first heartbeat, at member epoch 0, joins: it brings the subscription and the rebalance
# timeout (a Java consumer sends its `max.poll.interval.ms`). Epoch -1 leaves. There is no
# leader, no assignor in the client, and no `session.timeout.ms` or `heartbeat.interval.ms` in
# the client either: the coordinator sets both (`group.consumer.session.timeout.ms`, 45 s, and
# `group.consumer.heartbeat.interval.ms`, 5 s) and tells every member its heartbeat interval in
# each answer. Here we use 10 s and 1 s, as for the classic members above. m1 starts; m2 joins
# 2 s later. Each line is one real request or answer on the simulated network, with the member
# epoch it carried and the partitions of `orders` it reported owning (requests) or was given
# (answers; `-` for a null assignment, "unchanged"); after each answer, how the coordinator sees
# the members.

# %%
from kafkalab.client.membership.heartbeat_member import HeartbeatMemberConfig
from kafkalab.sim.heartbeat_members import HeartbeatMembers

KIP848_PROPERTIES = {"group.consumer.session.timeout.ms": "10000", "group.consumer.heartbeat.interval.ms": "1000",
                     "offsets.topic.num.partitions": "1"}  # one group needs one partition, and it starts faster
kip848 = SimCluster(scratch_dir(), nodes=1, seed=7, properties=KIP848_PROPERTIES)
kip848.create_topic("orders", 6, 1)
heartbeats = HeartbeatMembers(kip848)
member_config = HeartbeatMemberConfig("orders-app", ("orders",))


def consumer_group(sim: SimCluster, group_id: str = "orders-app"):
    return sim.nodes[1].broker.group_coordinator.consumer.groups.get(group_id)


def coordinator_view() -> str:
    group = consumer_group(kip848)
    names = {m.member_id: name for name, m in heartbeats.members.items()}
    members = ", ".join(f"{names[i]} {m.state.name} at {m.member_epoch}" for i, m in sorted(group.members.items(),
                                                                                           key=lambda kv: names[kv[0]]))
    return f"group epoch {group.group_epoch}: {members}"


def step_through(until_s: float) -> None:
    """Run to ``until_s``, printing each heartbeat message as it happens."""
    shown = len(heartbeats.messages)
    while seconds(kip848) < until_s:
        kip848.run_until(lambda: len(heartbeats.messages) > shown, int((until_s - seconds(kip848)) * 1000) + 1)
        for m in heartbeats.messages[shown:]:
            if m.api != "ConsumerGroupHeartbeat":
                continue
            arrow = "->" if m.kind == "request" else "<-"
            parts = "-" if m.partitions is None else list(m.partitions)
            after = f"   | {coordinator_view()}" if m.kind == "response" else ""
            print(f"t = {m.time_ms / 1000:6.3f} s  {m.member} {arrow} epoch {m.member_epoch:2} {str(parts):20}{after}")
        shown = len(heartbeats.messages)


heartbeats.add("m1", member_config)
step_through(0.5)
kip848.run_for(1_500)
heartbeats.add("m2", member_config)
step_through(3.2)

# %% [markdown]
# m1 joined alone at epoch 0 and its first answer gave it epoch 1 and all six partitions; it
# heartbeat again at once to say it owns them. Then the heartbeats between 0.5 s and 2 s (one
# a second, hidden here) changed nothing.
#
# ### Three epochs
# The coordinator orders everything with three numbers (`kafkalab/group/consumer/group.py`):
#
# * the **group epoch** goes up whenever the membership or the subscriptions change -- m2's
#   join moved it from 1 to 2;
# * the **target assignment epoch** is the group epoch the server assignor last ran at: m2's
#   join heartbeat ran the assignor at once for epoch 2, so the *target* gives m1 0-2 and m2 3-5;
# * each **member epoch** says which target that member has reconciled to. m2 got epoch 2 at
#   once but *nothing*: partitions 3-5 were still m1's (UNRELEASED_PARTITIONS). m1, at its next
#   heartbeat (2.118 s), was told epoch 1 and 0-2 only -- it stays at its old epoch until it has
#   let go (UNREVOKED_PARTITIONS). It revoked 3-5 and heartbeat straight away reporting 0-2;
#   that answer moved it to epoch 2. m2's next heartbeat (3.007 s) received 3-5.
#
# The group's state is not stored anywhere; it is read off those numbers:

# %%
from kafkalab.group.consumer.group import ConsumerGroup

print(inspect.getsource(ConsumerGroup.state.fget))
group = consumer_group(kip848)
print(f"group epoch {group.group_epoch}, target assignment epoch {group.assignment_epoch}, state {group.state.value}")

# %% [markdown]
# ### Revoke first, then assign
# Reconciliation is one pure function of the member, its target and who holds what
# (`next_assignment`, after Kafka's `CurrentAssignmentBuilder`): **keep** what is both owned and
# targeted, **revoke** the rest of what is owned, and **assign** only those target partitions
# that nobody holds -- a partition still held elsewhere is *unreleased* and waits. A member that
# must revoke stays at its epoch and gets only what it keeps, until a heartbeat shows it no
# longer owns the rest.

# %%
from kafkalab.group.consumer import member as consumer_member

print(inspect.getsource(consumer_member.next_assignment))

# %% [markdown]
# So no partition ever has two owners, and the members' rebalance listeners show it: for each
# partition that moved, the old owner's revocation comes before the new owner's assignment.

# %%
def moves(members: dict) -> list[tuple[int, str, int, str, int]]:
    """(partition, old owner, revoked at ms, new owner, assigned at ms) for each hand-over."""
    heard = sorted((n.at_ms, n.kind, name, p) for name, m in members.items() for n in m.notifications
                   for _, p in n.partitions)
    found, released = [], {}
    for at_ms, kind, name, p in heard:
        if kind in ("revoked", "lost"):
            released[p] = (name, at_ms)
        elif p in released:
            old, revoked_ms = released.pop(p)
            found.append((p, old, revoked_ms - START_MS, name, at_ms - START_MS))
    return found


for p, old, revoked_ms, new, assigned_ms in moves(heartbeats.members):
    print(f"orders-{p}: revoked by {old} at {revoked_ms / 1000:.3f} s, assigned to {new} at {assigned_ms / 1000:.3f} s")

# %% [markdown]
# Partitions 0-2 never stopped: m1 consumed them throughout. Only the three that moved paused,
# from m1's revocation to m2's next heartbeat -- at most one heartbeat interval.
#
# ### The server-side assignors
# The coordinator runs the assignor (`group.consumer.assignors`: `uniform`, the default, and
# `range`; a member may ask for one with the Java consumer's `group.remote.assignor`). `uniform`
# is balanced and **sticky**: each member keeps what it had, up to its fair share. `range`
# recomputes contiguous ranges, as the classic Range assignor does. Say m1 owned all six
# partitions and m2 and m3 join:

# %%
import uuid

from kafkalab.group.consumer.assignors import SERVER_ASSIGNORS, MemberSpec

orders_id = uuid.UUID(int=1)
everyone = [MemberSpec("m1", None, frozenset({orders_id}), {orders_id: frozenset(range(6))}),
            MemberSpec("m2", None, frozenset({orders_id})), MemberSpec("m3", None, frozenset({orders_id}))]
for name, assignor in SERVER_ASSIGNORS.items():
    plan = assignor(everyone, {orders_id: 6})
    print(f"{name:8}", "  ".join(f"{m}: {sorted(plan[m][orders_id])}" for m in ("m1", "m2", "m3")))

# %% [markdown]
# Both move four partitions here (m1 must give up four either way), but only `uniform` looked at
# what m1 owned: `range` would hand out the same ranges whatever the history, and with other
# histories that means more partitions on the move.
#
# ## Widget: the same story under both protocols
# Two one-broker simulations run the same events: c1-c3 start at 0 s, c4 joins at 8 s, c2
# closes at 16 s, c3 is killed at 24 s. Above, classic members with Range (eager); in the
# middle, KIP-848 members with `uniform`; below, the KIP-848 epochs. Each partition row is
# coloured by the member consuming it, blank while nobody does; ownership comes from what each
# member's rebalance listener heard, to the millisecond. In a notebook with a live kernel you
# get buttons to add, close or kill consumers in both groups at once and to advance time.

# %%
from kafkalab.viz.kip848 import pauses, scenario, show_kip848

race = scenario(scratch_dir())
race_figure = show_kip848(scratch_dir(), story=race)

# %% [markdown]
# For each event, until the next one: how many partitions stopped being consumed, and for how
# many partition-seconds in all.

# %%
print(f"{'':40} {'classic':^22}   {'KIP-848':^22}")
print(f"{'event':40} {'stopped  partition-s':>22}   {'stopped  partition-s':>22}")
for row in pauses(race.race()):
    print(f"{row.time_ms / 1000:5.1f} s  {row.event:32} {row.classic_partitions:7} {row.classic_ms / 1000:12.2f}"
          f"   {row.consumer_partitions:7} {row.consumer_ms / 1000:12.2f}")

# %% [markdown]
# Read it row by row.
#
# * **Start.** The classic group consumes nothing for its first 6 s: the coordinator holds the
#   first JoinGroup for `group.initial.rebalance.delay.ms` (3 s), and again while members keep
#   arriving. The KIP-848 group has no such barrier: c1 owns all six partitions a few
#   milliseconds after its first heartbeat, and hands four of them over within a heartbeat
#   interval as c2 and c3 arrive.
# * **c4 joins.** Classic eager stops **all six** partitions -- every member revokes everything
#   at its next heartbeat. Here that lasts only milliseconds, because simulated members rejoin
#   the instant they are told; a real consumer rejoins only from its next `poll()`, and the
#   group waits for the slowest. KIP-848 stops **one** partition, the one that moves, for up to
#   one heartbeat interval (the new owner hears of it on its next heartbeat), and nobody else
#   notices. The trade is real: each hand-over is a little slower, and nothing else stops.
# * **c2 closes.** The same: six partitions stop briefly under classic, the two that move under
#   KIP-848.
# * **c3 is killed.** Both protocols need the session timeout (10 s here, 45 s by default) to
#   notice a silent member, so its two partitions stop for about that long either way; classic
#   then stops everyone else's partitions too for the rebalance that follows. (KIP-848's total
#   is even a little larger: after the fencing, the new owners pick the two partitions up only
#   at their next heartbeats.)
#
# ## `group.protocol=consumer` in a Java consumer
# A Java consumer (3.7 and later) opts in with **`group.protocol=consumer`** (the default is
# still `classic`, in 4.0 too), and its heartbeats then go to a coordinator that speaks KIP-848
# (Kafka 4.0 brokers do by default). What changes for the application:
#
# * `partition.assignment.strategy` does not apply: the coordinator assigns. A member may ask
#   for one of the broker's assignors with **`group.remote.assignor`** (`uniform` or `range`);
#   setting it with `group.protocol=classic` is a configuration error.
# * `session.timeout.ms` and `heartbeat.interval.ms` do not apply either: the broker's
#   `group.consumer.session.timeout.ms` and `group.consumer.heartbeat.interval.ms` decide.
#   `max.poll.interval.ms` still does: it is sent as the member's rebalance timeout, the time it
#   has to revoke what it is told to.
# * The `ConsumerRebalanceListener` is still called, but only with the partitions that move:
#   every rebalance is incremental, whatever assignor runs. `enforceRebalance()` has nothing to
#   force; the client logs a warning.
# * Offsets are committed with the **member epoch** (OffsetCommit v9) instead of the
#   generation, and a commit from a member whose epoch is stale is refused with
#   STALE_MEMBER_EPOCH -- zombie fencing, as generations do for classic groups.
#
# kafkalab's broker is tested against Kafka's own Java consumer 3.9.1 with
# `group.protocol=consumer` (`tests/interop/test_consumer_protocol.py`: six partitions split
# two each, `group.remote.assignor=range`, a static member coming back, a killed member's
# partitions moving once its session is over). The broker-side settings, with Kafka's names
# and defaults:

# %%
from kafkalab.group.consumer.coordinator import ConsumerGroupSettings

settings = ConsumerGroupSettings()
print(f"group.consumer.session.timeout.ms    {settings.session_timeout_ms}")
print(f"group.consumer.heartbeat.interval.ms {settings.heartbeat_interval_ms}")
print(f"group.consumer.assignors             {list(settings.assignors)}")
print(f"group.consumer.migration.policy      {settings.migration_policy}")

# %% [markdown]
# ## A mixed group: upgrading online, and back
# A real fleet moves to the new protocol one restart at a time, so for a while a group has
# members of both kinds. With `group.consumer.migration.policy=bidirectional` (Kafka 4.0's
# default) the coordinator handles it (`kafkalab/group/consumer/classic_members.py`). Two
# classic consumers, c1 and c2 (Range, eager), form a classic group; then j1 joins with the
# consumer protocol, as a restarted Java consumer with `group.protocol=consumer` would:

# %%
mixed = SimCluster(scratch_dir(), nodes=1, seed=7, properties=KIP848_PROPERTIES)
mixed.create_topic("orders", 6, 1)
mixed_heartbeats = HeartbeatMembers(mixed)


def describe_mixed() -> None:
    coordinator = mixed.nodes[1].broker.group_coordinator
    group = coordinator.consumer.groups.get("orders-app")
    if group is not None:
        print(f"  a consumer group: group epoch {group.group_epoch}, state {group.state.value}")
    else:
        classic = coordinator.describe_group("orders-app")
        print(f"  a classic group: generation {classic.generation_id}, state {classic.state.name}")
    for name, m in mixed.members.items():
        print(f"  {name} (classic)  generation {m.generation_id}  owns {[p for _, p in m.owned]}")
    for name, m in mixed_heartbeats.members.items():
        print(f"  {name} (consumer) epoch {m.member_epoch:2}       owns {[p for _, p in m.owned_partitions]}")


for name in ("c1", "c2"):
    mixed.add_member(name, config("range"))
mixed.run_for(8_000)
print("two classic members:")
describe_mixed()
mixed_heartbeats.add("j1", member_config)
mixed.run_for(5_000)
print("j1 joins with the consumer protocol:")
describe_mixed()

# %% [markdown]
# j1's first heartbeat **upgraded** the group: every classic member became a member of a
# consumer group, at member epoch = its generation, owning what it owned; then j1's join moved
# the group epoch to 2 and the `uniform` assignor gave j1 one partition from each of the others.
# The classic members still speak JoinGroup, SyncGroup and Heartbeat: the coordinator answers
# their heartbeats REBALANCE_IN_PROGRESS when they have something to give up, and their
# JoinGroup at once, without a leader -- the server assignor has already decided. Being eager,
# c1 still revoked everything when it rejoined; the listener shows it:

# %%
for n in mixed.members["c1"].notifications:
    print(f"t = {(n.at_ms - START_MS) / 1000:6.3f} s  c1 {n.kind:8} {[p for _, p in n.partitions]}")

# %% [markdown]
# When the last consumer-protocol member leaves, only classic members remain, and the
# coordinator **downgrades** the group back to a classic one (generation = the group epoch) and
# starts a classic rebalance, so the leader's Range assignor decides again:

# %%
mixed_heartbeats.leave("j1")
mixed.run_for(5_000)
print("j1 leaves:")
describe_mixed()

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
# **Predict, then check 4.** A new KIP-848 group: p1 alone owns the 6 partitions of `orders`
# at member epoch 1 (group epoch 1). p2 joins. Right after the answer to p2's *first*
# heartbeat, what is the group epoch, what is p2's member epoch, and how many partitions does p2
# own? Answer as a tuple `(group epoch, p2's epoch, p2's partitions)`.

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- e.g. (1, 1, 3)
my_prediction = (2, 2, 0)
### END SOLUTION

# %% tags=["check"]
fresh = HeartbeatMemberConfig("predictions", ("orders",))  # a new group, on the cluster of this section
heartbeats.add("p1", fresh)
kip848.run_for(2_000)
p2 = heartbeats.add("p2", fresh)
kip848.run_until(lambda: any(m.member == "p2" and m.api == "ConsumerGroupHeartbeat" and m.kind == "response"
                             for m in heartbeats.messages), 5_000)
result = (consumer_group(kip848, "predictions").group_epoch, p2.member_epoch, len(p2.owned_partitions))
check_prediction(my_prediction, result,
                 hint="The join moves the group epoch and the member takes the new epoch at once; but every "
                 "partition it is meant to get is still p1's until p1 confirms it let go.")
### BEGIN HIDDEN TESTS
assert my_prediction == (2, 2, 0)
### END HIDDEN TESTS

# %% [markdown]
# **Predict, then check 5.** In the widget's story, c4 joins at 8 s a group of three that
# share 6 partitions. How many partitions stop being consumed because of it under the classic
# protocol (Range, eager), and how many under KIP-848 (`uniform`)? Answer as a tuple
# `(classic, KIP-848)`.

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- e.g. (3, 3)
my_prediction = (6, 1)
### END SOLUTION

# %% tags=["check"]
joined = next(row for row in pauses(race.race()) if row.event == "c4 joins")
check_prediction(my_prediction, (joined.classic_partitions, joined.consumer_partitions),
                 hint="Eager members give up everything they own when a rebalance starts. Under KIP-848 only "
                 "the partitions that change owner stop: four members share 6 partitions 2/2/1/1.")
### BEGIN HIDDEN TESTS
assert my_prediction == (6, 1)
### END HIDDEN TESTS

# %% [markdown]
# **Predict, then check 6.** Still in that story: what is the KIP-848 **group epoch** at the
# end, after c2 has closed and c3's session has run out?

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- e.g. 1
my_prediction = 6
### END SOLUTION

# %% tags=["check"]
check_prediction(my_prediction, race.group_epoch(),
                 hint="Every change of membership moves the group epoch by one: count the joins (c1 joined "
                 "alone first, c2 and c3 a heartbeat later), c4, c2's leave and c3's fencing.")
### BEGIN HIDDEN TESTS
assert my_prediction == 6
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
# **Change the engine.** KIP-848's safety rests on one line of `next_assignment` in
# `kafkalab/group/consumer/member.py`: `if revoke and _owns_any(owned, revoke):` -- a member
# told to revoke keeps its old epoch until a heartbeat shows it no longer owns those partitions,
# and until then they stay held. Replace that line with `if False:`, a coordinator that trusts
# every member to drop what it is told at once and frees the partitions on the spot. Restart the
# kernel and run the check below: it fails before the edit and passes after it. In the check, m1
# still reports owning all four partitions when m2 is handed two of them. What would a member
# that is halfway through a batch of those partitions, and has not yet committed, do to the
# records the new owner reads? Undo the edit afterwards.

# %% tags=["raises-exception"]
engine_change_check("revoke-without-confirmation")  # raises EngineUnchanged until the engine is edited

# %% [markdown]
# The brokers' logs live in scratch directories; this last cell removes them.

# %%
race.close()
for cluster in (sim, defaults, coop, kip848, mixed):
    cluster.close()
remove_scratch_dirs()
