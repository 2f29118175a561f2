"""Assignor benchmark: kafkalab's CooperativeSticky against Kafka's Java one on the same group.

The workload is a large group scaling out: 20 topics of 1,000 partitions (20,000 partitions),
2,000 members subscribed to all of them. 1,900 members owned a balanced assignment in generation
7 (10 or 11 partitions each); 100 members join with nothing. The assignor must keep every owned
partition it can, move the surplus to the newcomers and (cooperatively) leave the moved
partitions out until the next rebalance. With identical subscriptions this is Kafka's
constrained path, the one nearly every real group takes.

Kafka's figure is measured inside the JVM by ``tests/java/AssignorOracle.java`` on Kafka's own
``CooperativeStickyAssignor`` (kafka-clients 3.9.1): 20 warm-up runs so the JIT has compiled the
assignor, then the best of 10 timed runs, each on freshly built subscriptions. kafkalab's figure
is the best of 5 runs in this process. Both outputs are compared before anything is printed: a
fast wrong answer is no answer.

Lines: ``assignors.cooperative_sticky`` is kafkalab's seconds with Java's seconds as the
baseline, so the ratio reads "times slower than Java" and the target is ``<=3``. Range and
RoundRobin on the same group follow as context lines (``target=none``), and so does
``assignors.cooperative_sticky_unequal``: 200 members, each subscribed to a random subset of 20
topics of 50 partitions, 20 of them new -- the general algorithm, whose search costs far more
per partition in both languages (at 500 members x 5,000 partitions about a second).

The Java side comes from the repository's test support (``tests/java_client.py``, which fetches
Kafka's client jar once per machine); without Java, ``javac`` or that support the lines are
skipped with the reason.
"""

from __future__ import annotations

import random
import time

from kafkalab.bench.report import CONTEXT, Reporter
from kafkalab.client.assignors import ASSIGNORS, Assignments, Member
from kafkalab.client.consumer_protocol import NO_GENERATION, Subscription

TOPICS = 20
PARTITIONS_PER_TOPIC = 1000
MEMBERS = 2000
JOINING = 100  # members new to the group, owning nothing
GENERATION = 7
JAVA_WARMUPS, JAVA_RUNS, PYTHON_RUNS = 20, 10, 5
SEED = 2000


def group() -> tuple[dict[str, int], list[Member]]:
    """The scaling-out group described in the module docstring."""
    rng = random.Random(SEED)
    counts = {f"topic-{i:02d}": PARTITIONS_PER_TOPIC for i in range(TOPICS)}
    topics = tuple(counts)
    owners = MEMBERS - JOINING
    owned: list[list[tuple[str, int]]] = [[] for _ in range(owners)]
    everything = [(t, p) for t in topics for p in range(PARTITIONS_PER_TOPIC)]
    for k, tp in enumerate(everything):
        owned[k % owners].append(tp)
    members = []
    for i in range(MEMBERS):
        mine = tuple(owned[i]) if i < owners else ()
        subscription = Subscription(topics, mine, GENERATION if mine else NO_GENERATION)
        members.append(Member(f"consumer-{i}-{rng.getrandbits(64):016x}", subscription))
    return counts, members


def unequal_group(members_count: int = 200, topics_count: int = 20,
                  partitions: int = 50) -> tuple[dict[str, int], list[Member]]:
    """Random topic subsets; 90% of the members own what the sticky assignor gave them before."""
    rng = random.Random(SEED)
    counts = {f"topic-{i:02d}": partitions for i in range(topics_count)}
    names = list(counts)
    ids = [f"consumer-{i}-{rng.getrandbits(64):016x}" for i in range(members_count)]
    topics = [tuple(rng.sample(names, rng.randint(1, topics_count))) for _ in ids]
    owners = members_count * 9 // 10
    before = ASSIGNORS["sticky"](counts, [Member(ids[i], Subscription(topics[i])) for i in range(owners)])
    members = []
    for member_id, subscribed in zip(ids, topics):
        mine = tuple(before.get(member_id, ()))
        members.append(Member(member_id, Subscription(subscribed, mine, GENERATION if mine else NO_GENERATION)))
    return counts, members


def _best_seconds(assignor: str, counts: dict[str, int], members: list[Member]) -> tuple[float, Assignments]:
    best, result = float("inf"), {}
    for _ in range(PYTHON_RUNS):
        start = time.perf_counter()
        result = ASSIGNORS[assignor](counts, members)
        best = min(best, time.perf_counter() - start)
    return best, result


def run(reporter: Reporter, *, full: bool = False) -> None:
    """Print the CooperativeSticky line and the Range/RoundRobin context lines."""
    try:
        from tests.client.assignors.oracle import Problem, decode, encode
        from tests.java_client import find_java_client
    except ImportError as error:
        print(f"# assignors: skipped, the Java oracle needs the repository's tests/ ({error})")
        return
    client = find_java_client()
    if isinstance(client, str):
        print(f"# assignors: skipped, {client}")
        return
    scaling_out, unequal = group(), unequal_group()
    cases = (("cooperative-sticky", "cooperative_sticky", "<=3", scaling_out),
             ("range", "range", CONTEXT, scaling_out),
             ("roundrobin", "roundrobin", CONTEXT, scaling_out),
             ("cooperative-sticky", "cooperative_sticky_unequal", CONTEXT, unequal))
    for assignor, name, target, (counts, members) in cases:
        problem = encode([Problem(assignor, counts, tuple(members))])
        results, seconds = decode(client.run("AssignorOracle", f"BENCH {JAVA_WARMUPS} {JAVA_RUNS}\n{problem}"))
        ours_s, ours = _best_seconds(assignor, counts, members)
        java = results[0]
        if isinstance(java, str) or {m: sorted(v) for m, v in java.items()} != \
                {m: sorted(v) for m, v in ours.items()}:
            raise AssertionError(f"{assignor}: kafkalab's assignment differs from Kafka's Java one")
        reporter.report(f"assignors.{name}", ours_s, "s", seconds[0], target)
