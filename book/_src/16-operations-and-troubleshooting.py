# %% [markdown]
# # 16 — Operations and troubleshooting
#
# Four problems fill Kafka's mailing lists and every operator's first week:
#
# 1. the broker runs, the client bootstraps, and then nothing is delivered: **`listeners`
#    against `advertised.listeners`** (and why 0.0.0.0 cannot be advertised);
# 2. the warning **"Connection to node 0 could not be established. Node may not be
#    available."** (older Java clients said *Broker* may not be available);
# 3. **`LEADER_NOT_AVAILABLE`** in a Metadata response, and a partition number the topic does not
#    have;
# 4. a consumer that is slow or chatty because of its **fetch settings**.
#
# Each one is reproduced here against a real kafkalab server process (`kafkalab server-start`,
# started by `start_server`) with a real client -- librdkafka through `confluent_kafka`, and
# `kafka-python` -- and then fixed. What the clients print is what they would print against
# Apache Kafka.

# %%
from kafkalab.book import check_version
check_version("0.1.0")

# %% [markdown]
# ## 1. `listeners` and `advertised.listeners`
#
# A broker has two addresses, and they answer different questions:
#
# * **`listeners`** -- where the broker *binds* its server socket. `PLAINTEXT://0.0.0.0:9092`
#   means "port 9092 on every network interface of this machine"; Kafka's default is
#   `PLAINTEXT://:9092`, an empty host meaning the same.
# * **`advertised.listeners`** -- the address the broker *writes into every Metadata response*,
#   for clients to connect to. When it is not set, `listeners` stands in for it.
#
# `bootstrap.servers` is only a first contact. A client asks any broker on that list for
# Metadata, learns each partition's leader as *node id → advertised host:port*, and from then on
# sends every Produce and Fetch to that advertised address. So a client can bootstrap perfectly
# well and still never deliver a record: the classic case is a broker in a container that
# advertises its container-internal name or port.
#
# Here is that mistake on purpose: a broker listening on one port but advertising another port,
# where nothing listens (as a wrong port mapping would).

# %%
from kafkalab.book import remove_scratch_dirs, scratch_dir
from kafkalab.client.launcher import start_server, unused_port

nowhere = unused_port()
broken = start_server(scratch_dir("ch16-") / "data",
                      overrides=[f"advertised.listeners=PLAINTEXT://127.0.0.1:{nowhere}"])
print(f"the broker listens on {broken.bootstrap} and advertises 127.0.0.1:{nowhere}")

# %% [markdown]
# librdkafka bootstraps from the address the broker really listens on, and the Metadata it gets
# back names broker 0 at the advertised address. (librdkafka's own log lines go to a silent
# Python logger; its errors are collected by `error_cb`.)

# %%
import logging

from confluent_kafka import Producer

librdkafka_log = logging.getLogger("librdkafka")
librdkafka_log.addHandler(logging.NullHandler())
librdkafka_log.propagate = False

client_errors = []
producer = Producer({"bootstrap.servers": broken.bootstrap, "message.timeout.ms": 1000,
                     "error_cb": client_errors.append, "logger": librdkafka_log})
brokers = producer.list_topics(timeout=10).brokers
print({node_id: f"{b.host}:{b.port}" for node_id, b in brokers.items()})

# %% [markdown]
# Now produce one record. The client connects to the leader, node 0, at the advertised address,
# is refused, retries, and gives up when `message.timeout.ms` (here 1 s; `delivery.timeout.ms`,
# 2 minutes by default, in Java) runs out.

# %%
reports = []
producer.produce("payments", b"order-1", on_delivery=lambda error, message: reports.append(error))
producer.flush(10)
print("delivery report:", reports[0].name(), "-", reports[0].str())
refused = next(e for e in client_errors if e.name() == "_TRANSPORT")
print("client error:   ", refused.str().split(" (after")[0])

# %% [markdown]
# librdkafka's `Connection refused` is the same event the Java client logs as *"Connection to
# node 0 (/127.0.0.1:PORT) could not be established. Node may not be available."* The message
# names the node's **advertised** address: compare it with where the broker really listens,
# and try `nc -vz host port` (or `telnet`) to that address from the client's machine.
#
# **The fix** is to advertise an address every client can reach: here, drop the wrong setting
# (the advertised address then defaults to the listener's) and restart on the same data
# directory.

# %%
broken.stop()
server = start_server(broken.data_dir)
producer = Producer({"bootstrap.servers": server.bootstrap, "message.timeout.ms": 2000,
                     "logger": librdkafka_log})
reports = []
producer.produce("payments", b"order-1",
                 on_delivery=lambda error, message: reports.append((error, message.offset())))
producer.flush(10)
print({node_id: f"{b.host}:{b.port}" for node_id, b in producer.list_topics(timeout=10).brokers.items()})
print("delivery report: error", reports[0][0], "offset", reports[0][1])

# %% [markdown]
# ### Why 0.0.0.0 cannot be advertised
# 0.0.0.0 is fine for `listeners`: binding to it means "every interface". As a *destination* it
# means nothing a remote client could use -- it is the "any address" meta-address, not a host.
# So Kafka refuses it at start-up: its `KafkaConfig` validation stops the broker with
# *"advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP
# address."* The check also applies when `advertised.listeners` is unset and `listeners` says
# 0.0.0.0, because `listeners` then stands in for it. kafkalab does the same, with a typed
# `ConfigError` (Kafka's `INVALID_CONFIG`) that ends the server process before it serves anyone:

# %%
from kafkalab.client.launcher import ServerStartError

try:
    start_server(scratch_dir("ch16-") / "data",
                 overrides=["advertised.listeners=PLAINTEXT://0.0.0.0:9092"]).stop()
    refusal = "it started!"
except ServerStartError as error:
    refusal = str(error).strip().splitlines()[-1]
print(refusal)

# %% [markdown]
# The fix is the one above: advertise a name or address the clients resolve and reach (the
# host's DNS name, its LAN address, or 127.0.0.1 for clients on the same machine), and keep
# 0.0.0.0 for `listeners` only. (kafkalab itself listens on loopback unless started with
# `--allow-remote`: it has no authentication, so exposing it must be deliberate.)
#
# ## 2. `LEADER_NOT_AVAILABLE` and a partition that does not exist
#
# Every partition in a Metadata response carries an error code. Code 5, `LEADER_NOT_AVAILABLE`,
# means "this partition exists but has no leader right now". Clients treat it as retriable:
# they refresh metadata and try again, logging something like *"Error while fetching metadata
# with correlation id 4 : {payments=LEADER_NOT_AVAILABLE}"*. It shows up in two situations:
#
# * **While a topic is being created.** A ZooKeeper-era broker answered `LEADER_NOT_AVAILABLE`
#   to the Metadata request that auto-created a topic (the topic existed, its leader was not
#   elected yet); a KRaft broker answers `UNKNOWN_TOPIC_OR_PARTITION` while the controller
#   creates it. Either way the next retry finds the leader, and the warning is harmless.
# * **When every replica of a partition is down.** Then no retry helps until a replica returns.
#
# kafkalab's broker creates an auto-created topic inside the Metadata request, so even its
# first answer names a leader. Here librdkafka asks for a topic nobody created:

# %%
fresh = producer.list_topics("fresh", timeout=10).topics["fresh"]
print("topic error:", fresh.error, "| partition 0 leader:", fresh.partitions[0].leader)

# %% [markdown]
# The second situation needs more than one broker, so it runs in kafkalab's deterministic
# simulation (chapter 08): three real brokers in one process on a simulated network. Topic
# `single` has 3 partitions with **one** replica each (spread one per broker); topic `triple`
# has 3 partitions with three replicas each. Crash the broker that holds `single-0`, wait until
# the controller fences it (`broker.session.timeout.ms`, 9 s of simulated time), and ask a
# surviving broker for Metadata, as a client would.

# %%
from kafkalab.errors import ErrorCode
from kafkalab.sim.cluster import SimCluster

cluster = SimCluster(scratch_dir("ch16-sim-"), nodes=3, seed=7)
cluster.create_topic("single", 3, 1)
cluster.create_topic("triple", 3, 3)
before = {(name, p): cluster.leader(name, p) for name in ("single", "triple") for p in range(3)}
victim = cluster.leader("single", 0)
cluster.crash(victim)
cluster.run_until(lambda: cluster.leader("single", 0) == -1, 20_000)
survivor = min(node for node in cluster.nodes if node != victim)
print(f"broker {victim} crashed; broker {survivor} answers:")
for topic in cluster.metadata(survivor, ["single", "triple"]).topics:
    for p in topic.partitions:
        print(f"  {topic.name}-{p.partition_index}: leader {before[topic.name, p.partition_index]} -> "
              f"{p.leader_id:>2}  {ErrorCode(p.error_code).name}")

# %% [markdown]
# `single-0` has no replica left, so it has no leader (-1) and answers `LEADER_NOT_AVAILABLE`;
# producers to it block and time out. Every `triple` partition the crashed broker led has
# already moved to a follower in its ISR. The fixes: bring the broker back (below), and give
# topics that matter a replication factor of 3 (with `min.insync.replicas=2`, chapter 08).

# %%
cluster.restart(victim)
cluster.run_until(lambda: cluster.leader("single", 0) == victim, 20_000)
single = cluster.metadata(survivor, ["single"]).topics[0]
print([(p.partition_index, p.leader_id, ErrorCode(p.error_code).name) for p in single.partitions])

# %% [markdown]
# ### A partition the topic does not have
# `payments` was auto-created with `num.partitions` partitions -- 1, Kafka's default. A record
# sent to partition 1 has nowhere to go. librdkafka refuses it in `produce()` itself with
# `_UNKNOWN_PARTITION` once it knows the topic's partition count;
# the Java producer waits `max.block.ms` for metadata that could name the partition, then throws
# *"Partition 1 of topic payments with partition count 1 is not present in metadata after 60000
# ms."* (clients of the seed articles' era threw *"Invalid partition given with record: 1 is not
# in the range [0...1)."*).

# %%
from confluent_kafka import KafkaException

try:
    producer.produce("payments", b"order-2", partition=1)
    refusal = "accepted!"
except KafkaException as error:
    refusal = error.args[0].name()
print("partition 1:", refusal)

# %% [markdown]
# The fix is to add partitions (`kafka-topics --alter --partitions 2`, chapter 01: keyed records
# may then move to another partition) or to send to a partition that exists. A new client
# sees the new partition count in its first Metadata.

# %%
from kafkalab.book import kafkalab_command

kafkalab_command("topics", "--bootstrap-server", server.bootstrap, "--alter", "--topic", "payments",
                 "--partitions", "2")
producer = Producer({"bootstrap.servers": server.bootstrap, "logger": librdkafka_log})
reports = []
producer.produce("payments", b"order-2", partition=1,
                 on_delivery=lambda error, message: reports.append((error, message.partition(), message.offset())))
producer.flush(10)
print("delivery report (error, partition, offset):", reports[0])

# %% [markdown]
# ## 3. Consumer fetch settings
#
# A consumer's Fetch request says how much it wants and how long the broker may wait for it:
#
# | setting (Java / kafka-python) | default | what it bounds |
# |---|---|---|
# | `fetch.min.bytes` / `fetch_min_bytes` | 1 byte | the broker answers once it has this much |
# | `fetch.max.wait.ms` / `fetch_max_wait_ms` | 500 ms | ... or once this long has passed |
# | `fetch.max.bytes` / `fetch_max_bytes` | 52428800 (50 MiB) | bytes in one whole Fetch response |
# | `max.partition.fetch.bytes` / `max_partition_fetch_bytes` | 1048576 (1 MiB) | bytes per partition in one response |
# | `max.poll.records` / `max_poll_records` | 500 | records one `poll()` hands to the application |
#
# One of the articles this book started from swaps the two byte limits (it gives
# `fetch.max.bytes` 1 MB and `max.partition.fetch.bytes` 50 MB). The whole response has the
# larger limit, each partition the smaller one; kafka-python ships the same defaults as
# Kafka's Java client:

# %%
from kafka import KafkaConsumer, KafkaProducer

print({key: KafkaConsumer.DEFAULT_CONFIG[key] for key in
       ("fetch_min_bytes", "fetch_max_wait_ms", "fetch_max_bytes", "max_partition_fetch_bytes",
        "max_poll_records")})

# %% [markdown]
# The same article advises keeping `fetch.max.wait.ms` below `replica.lag.time.max.ms`. That
# rule belongs to the *broker's* follower fetches, `replica.fetch.wait.max.ms` (Kafka refuses to
# start if it is larger than `replica.lag.time.max.ms`, which would make followers look lagging
# while they merely wait); a consumer's wait has nothing to do with the ISR.
#
# To measure, put five records of 1000 bytes into `readings`, one batch each (a flush after
# every send), with kafka-python.

# %%
kafkalab_command("topics", "--bootstrap-server", server.bootstrap, "--create", "--topic", "readings",
                 "--partitions", "1")
writer = KafkaProducer(bootstrap_servers=server.bootstrap, enable_idempotence=True, acks="all")
for i in range(5):
    writer.send("readings", value=b"x" * 1000, timestamp_ms=1557554753000 + i)
    writer.flush()
writer.close()
segment = server.data_dir / "readings-0" / "00000000000000000000.log"
print(f"{segment.name}: {segment.stat().st_size} bytes, {segment.stat().st_size // 5} per batch")

# %% [markdown]
# ### `fetch.min.bytes` and `fetch.max.wait.ms`: latency against request count
# A consumer positioned at offset 4 has one 1000-byte record to read. With `fetch.min.bytes=1`
# the broker answers at once. With `fetch.min.bytes=100000` it parks the Fetch in its purgatory
# (chapter 13) until 100000 bytes arrive -- they never do -- or `fetch.max.wait.ms` passes.
# A large minimum saves requests and CPU on a busy topic and costs latency on a quiet one.
# (Timings vary from run to run; the cell after this one states what does not.)

# %% tags=["nbval-ignore-output"]
from kafkalab.viz.fetch_probe import first_poll

waits = {min_bytes: first_poll(server.bootstrap, "readings", 0, 4, fetch_min_bytes=min_bytes,
                               fetch_max_wait_ms=800)
         for min_bytes in (1, 100_000)}
for min_bytes, poll in waits.items():
    print(f"fetch_min_bytes={min_bytes:>6}: {poll.records} record after {poll.seconds:.2f} s")

# %%
print("fetch_min_bytes=100000 waited out fetch_max_wait_ms (800 ms):", waits[100_000].seconds >= 0.8)
print("fetch_min_bytes=1 answered sooner:", waits[1].seconds < waits[100_000].seconds)

# %% [markdown]
# ### `max.partition.fetch.bytes`: a limit that never blocks progress
# How many of the five records does the first `poll()` return from offset 0? With the defaults,
# all five: they fit in 1 MiB. With `max.partition.fetch.bytes=1` -- smaller than a single
# batch -- the consumer still gets a record: since Kafka 0.10.1 (KIP-74) the broker always
# returns the partition's first batch whole, even when it exceeds the limit, so a large record
# can never stall a consumer. (Before that, the consumer was stuck with a
# `RecordTooLargeException`.) The whole-response limit, `fetch.max.bytes`, follows the same rule
# (KIP-74 introduced it): the first batch comes back even when it alone exceeds the limit.
# `max.poll.records` caps what `poll()` hands over without changing what was fetched.

# %%
for settings in ({}, {"max_partition_fetch_bytes": 1}, {"fetch_max_bytes": 1}, {"max_poll_records": 2}):
    print(f"{settings or 'defaults'}: records returned {first_poll(server.bootstrap, 'readings', 0, 0, **settings).records}")

# %% [markdown]
# ## Exercises
# Each prediction starts blank. Write your answer in the cell tagged as yours, run it, then run
# the check below it: the check refuses a blank or wrong answer with a hint.
#
# **Predict, then check 1.** With `max_partition_fetch_bytes=2500`, how many records does the
# first poll from offset 0 return? (Look at the batch size printed above.)

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- a number of records
my_prediction = 2
### END SOLUTION

# %% tags=["check"]
from kafkalab.book import check_prediction

returned = first_poll(server.bootstrap, "readings", 0, 0, max_partition_fetch_bytes=2500).records
check_prediction(my_prediction, returned,
                 right=f"{returned} records: two whole batches fit in 2500 bytes, a third would not.",
                 hint="the limit counts bytes of whole batches; how many batches of the size printed "
                      "above fit in 2500 bytes?")
### BEGIN HIDDEN TESTS
assert my_prediction == 2
### END HIDDEN TESTS

# %% [markdown]
# **Predict, then check 2.** In a new simulated cluster of three brokers, topic `spread` has
# 6 partitions with one replica each, placed round-robin over the brokers as Kafka places
# them. Broker 2 crashes. How many of the 6 partitions answer `LEADER_NOT_AVAILABLE`?

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- a number of partitions
my_prediction = 2
### END SOLUTION

# %% tags=["check"]
cluster.close()
cluster = SimCluster(scratch_dir("ch16-sim-"), nodes=3, seed=7)
cluster.create_topic("spread", 6, 1)
cluster.crash(2)
cluster.run_until(lambda: -1 in [cluster.leader("spread", p) for p in range(6)], 20_000)
spread = cluster.metadata(1, ["spread"]).topics[0]
leaderless = sum(p.error_code == ErrorCode.LEADER_NOT_AVAILABLE for p in spread.partitions)
check_prediction(my_prediction, leaderless,
                 right=f"{leaderless} of 6: each broker holds the only replica of every third partition.",
                 hint="with one replica per partition spread evenly, what share of the partitions "
                      "lived on the crashed broker?")
### BEGIN HIDDEN TESTS
assert my_prediction == 2
### END HIDDEN TESTS

# %% [markdown]
# **Fix it.** A colleague starts a broker for the developers on this machine with the settings
# in `overrides` below, and nobody can produce. Change `overrides` so that a client on this
# machine can produce. The check starts a server with your settings and produces one record
# with librdkafka.

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK overrides = ["advertised.listeners=PLAINTEXT://0.0.0.0:0", "num.partitions=3"]  # your change here
overrides = ["advertised.listeners=PLAINTEXT://127.0.0.1:0", "num.partitions=3"]
### END SOLUTION

# %% tags=["check"]
try:
    attempt = start_server(scratch_dir("ch16-") / "data", overrides=overrides)
except ServerStartError as error:
    raise AssertionError(f"the server refuses to start: {str(error).strip().splitlines()[-1]}") from None
try:
    trial = Producer({"bootstrap.servers": attempt.bootstrap, "message.timeout.ms": 3000,
                      "logger": librdkafka_log})
    reports = []
    trial.produce("dev-topic", b"hello", on_delivery=lambda error, message: reports.append(error))
    trial.flush(10)
finally:
    attempt.stop()
assert reports and reports[0] is None, f"the record was not delivered: {reports[0] if reports else 'no report'}"
print("delivered: the broker advertises an address this machine can reach")
### BEGIN HIDDEN TESTS
assert not any("0.0.0.0" in setting for setting in overrides)
assert "num.partitions=3" in overrides
### END HIDDEN TESTS

# %% [markdown]
# ## What to check first
#
# | symptom | first question | where to look |
# |---|---|---|
# | bootstrap works, produce/consume time out | what address does Metadata advertise? | `advertised.listeners`; `kafkalab topics --describe`; `nc -vz` from the client |
# | broker will not start, "nonroutable meta-address" | is 0.0.0.0 advertised (or in `listeners` with nothing advertised)? | `advertised.listeners` |
# | `LEADER_NOT_AVAILABLE` once, then fine | was the topic just created? | nothing to fix |
# | `LEADER_NOT_AVAILABLE` that persists | are all replicas of the partition down? | broker health, replication factor |
# | unknown partition / not present in metadata | does the topic have that partition? | `--describe`, `--alter --partitions` |
# | consumer latency ≈ `fetch.max.wait.ms` | is `fetch.min.bytes` larger than the traffic? | consumer settings |

# %%
cluster.close()
server.stop()
remove_scratch_dirs()
