# %% [markdown]
# # 00 Start here
#
# This book explains how Apache Kafka works inside by running a real, compact Kafka broker
# written in Python: **kafkalab**. Every number you see in a chapter was computed by the engine
# while the notebook ran -- nothing is pasted in. You can change a parameter and run a cell again,
# open the files the engine writes, and read the engine's code from the cell that uses it.
#
# How to work with it:
#
# * `make lab` (from the repository root) installs everything into `.venv` and opens this book
#   in JupyterLab. `make test` runs every test, including every chapter of this book.
# * Run a chapter top to bottom (*Run > Run All Cells*). Cells build on each other.
# * Each chapter ends with **exercises**: "predict, then check" cells (write your prediction,
#   run the cell, get told if you were right and why) and one "change the engine" exercise.
# * The engine is the package `kafkalab`. The book never defines library code in a cell; it
#   imports it, and shows it with `inspect.getsource` when the code itself is the lesson.
#
# Every chapter begins by checking that the installed kafkalab is the one it was written for:

# %%
from kafkalab.book import check_version
check_version("0.1.0")

# %% [markdown]
# ## A broker and a real client
# kafkalab's broker runs as a network server, `kafkalab server-start`, that any Kafka client can
# talk to. `start_server` launches one in a child process with a fresh data directory, as
# `kafkalab server-start --data-dir DIR --port 0` does from a shell (port 0: any free port), and
# waits for the line where the server says which port it got.

# %%
from kafkalab.book import remove_scratch_dirs, scratch_dir
from kafkalab.client.launcher import start_server

data_dir = scratch_dir("ch00-") / "data"
server = start_server(data_dir)
print("bootstrap.servers =", server.bootstrap)

# %% [markdown]
# Now a client nobody here wrote: **kafka-python**. It produces two records to a topic called
# `sensors`, which the broker creates on first use (`auto.create.topics.enable`, with
# `num.partitions=1`). The settings are those of a Kafka 3.x Java producer: `acks=all` and
# idempotence on, so the broker hands the producer a producer id and checks a sequence number
# per batch (chapter 12). `linger_ms` lets both records wait for each other so that they travel
# in one **record batch**, Kafka's unit of storage and transfer; `timestamp_ms` fixes their
# timestamps so this page reads the same on every run.

# %%
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

TIMESTAMP_MS = 1557554753000  # a fixed clock
producer = KafkaProducer(bootstrap_servers=server.bootstrap, acks="all", enable_idempotence=True,
                         linger_ms=1000)
producer.send("sensors", key=b"sensor-7", value=b"21.5C", timestamp_ms=TIMESTAMP_MS)
producer.send("sensors", key=b"sensor-9", value=b"19.0C", timestamp_ms=TIMESTAMP_MS + 5)
producer.flush()  # send now, without waiting out linger_ms
producer.close()

# %% [markdown]
# And a consumer reads them back from offset 0 of partition 0. Every record has an **offset**,
# its position in the partition, counted from 0.

# %%
consumer = KafkaConsumer(bootstrap_servers=server.bootstrap, enable_auto_commit=False)
consumer.assign([TopicPartition("sensors", 0)])
consumer.seek(TopicPartition("sensors", 0), 0)
for message in [m for batch in consumer.poll(timeout_ms=10_000).values() for m in batch]:
    print(f"offset {message.offset}: key={message.key!r} value={message.value!r} "
          f"timestamp={message.timestamp}")
consumer.close()

# %% [markdown]
# ## The data directory
# The broker keeps each partition in a directory named `<topic>-<partition>`. Here is
# `sensors-0`:

# %%
partition_dir = data_dir / "sensors-0"
for path in sorted(partition_dir.iterdir()):
    print(f"{path.name:<28} {path.stat().st_size:>10} bytes")

# %% [markdown]
# * `00000000000000000000.log` is the **segment** holding the batches. Its name is the first
#   offset it holds, padded to 20 digits (chapter 03).
# * `.index` and `.timeindex` map offsets and timestamps to positions in the `.log` file. They
#   are preallocated at their maximum size, 10 MiB, and trimmed when the segment rolls
#   (chapter 04).
# * `leader-epoch-checkpoint` records which leader epoch began at which offset (chapter 08);
#   `partition.metadata` holds the topic's id.
#
# Beside `sensors-0` sits `__cluster_metadata-0`: the KRaft metadata log, where the controller
# wrote the topic's creation (chapter 09).
#
# ## A batch, straight from the `.log` file
# The `.log` file is nothing but batches, one after the other, exactly as the producer sent
# them (the broker only fills in the offsets). Read the file, find the first batch's length in
# its header, and print the bytes: first each header field by name, then 16 bytes per row with
# their ASCII on the right. The keys and values are readable near the end.

# %%
from kafkalab.hexview import annotated_hexdump
from kafkalab.records.header import iter_headers

log_bytes = (partition_dir / "00000000000000000000.log").read_bytes()
first = next(iter(iter_headers(log_bytes)))
batch_bytes = log_bytes[first.position:first.end_position]
print(f"{len(log_bytes)} bytes in the file; the first batch is {len(batch_bytes)} bytes\n")
print(annotated_hexdump(batch_bytes))

# %% [markdown]
# The first 61 bytes are the batch header (chapter 02 takes it apart field by field). It tells a
# broker what it needs without decoding any record: the offset range, the timestamp range, the
# producer id, epoch and first sequence number (0, 0 and 0: the first batch of the first
# idempotent producer this broker met), and a CRC-32C over everything after it.
#
# Decoding the bytes with kafkalab's record codec gives the records back:

# %%
from kafkalab.records.v2 import build_v2_batch, decode_v2

batch = decode_v2(batch_bytes)
header = batch.header
print(f"offsets {header.base_offset}..{header.last_offset}, {header.records_count} records, "
      f"timestamps {header.base_timestamp}..{header.max_timestamp}, CRC-32C {header.crc:#010x}")
for record in batch:
    print(f"  offset {record.offset}: key={record.key!r} value={record.value!r}")

# %% [markdown]
# ## Two independent checks
# kafka-python's own decoder reads the same bytes to the same records. The book uses such
# cross-checks often: an engine that only agrees with itself proves little.

# %%
from kafka.record.default_records import DefaultRecordBatch

print([(r.offset, r.key, r.value) for r in DefaultRecordBatch(bytes(batch_bytes))])

# %% [markdown]
# The other way round: kafkalab's codec, given the same two records and the same producer
# fields, builds the batch byte for byte as kafka-python built it (with the leader epoch the
# broker stamped into it, which the CRC does not cover).

# %%
from kafkalab.records.model import Record

records = [
    Record(offset=0, timestamp=TIMESTAMP_MS, key=b"sensor-7", value=b"21.5C"),
    Record(offset=1, timestamp=TIMESTAMP_MS + 5, key=b"sensor-9", value=b"19.0C"),
]
rebuilt = build_v2_batch(records, producer_id=header.producer_id, producer_epoch=header.producer_epoch,
                         base_sequence=header.base_sequence,
                         partition_leader_epoch=header.partition_leader_epoch)
print("identical bytes:", rebuilt == batch_bytes)

# %% [markdown]
# The tour is over: stop the server (SIGTERM, the signal an operator's `kill` sends: the broker
# flushes its logs and writes its checkpoints before it exits).

# %%
print("server exit status:", server.stop())

# %% [markdown]
# ## Where the book goes from here
#
# | chapter | what you run and inspect |
# |---|---|
# | 01 topics, partitions, partitioners | murmur2 against Kafka's test vectors; keys that move when partitions are added |
# | 02 the record format | v0, v1, v2 side by side; varints; where the CRC sits; compression per batch |
# | 03 segments and rolling | a log directory on disk; the four reasons a segment rolls (widget) |
# | 04 indexes and lookups | the sparse offset and time indexes; Kafka's warm-section binary search (widget) |
# | 05 retention and deletion | time, size and log-start-offset retention on a real log |
# | 06 log compaction | last value per key, tombstones, offsets that keep their gaps |
# | 07 the producer | batches filling under `linger.ms`; what acks=0/1/all lose |
# | 08 replication | ISR, high watermark and failover on a simulated three-broker cluster |
# | 09 the controller | leader election and the KRaft metadata log |
# | 10 consumer groups | JoinGroup and SyncGroup message by message; the assignors |
# | 11 offsets | commits, at-most-once and at-least-once shown with a crash |
# | 12 idempotence and transactions | producer ids and sequences; commit and abort markers |
# | 13 the timing wheel | delayed operations and the hierarchical timing wheel (widget) |
# | 14 configuration and tools | which setting wins, on a live server; every `kafkalab` tool |
# | 16 operations and troubleshooting | `advertised.listeners`, `LEADER_NOT_AVAILABLE`, fetch settings, live |
#
# ## Exercises
# Each prediction starts blank. Write your answer in the cell tagged as yours, run it, then run
# the check below it: the check refuses a blank or wrong answer with a hint, and passes only on
# the engine's value.
#
# **Predict, then check.** The batch above has two records. If you add a third record with
# key `sensor-7` and value `22.0C` (offset 2), by how many bytes does the batch grow? Each v2
# record is: a length varint, one attributes byte, a timestamp delta varint, an offset delta
# varint, key length + key, value length + value, and a header count -- the small numbers here
# all fit in one varint byte each.

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- your answer, in bytes
my_prediction = 20
### END SOLUTION

# %% tags=["check"]
from kafkalab.book import check_prediction

bigger = build_v2_batch(records + [Record(offset=2, timestamp=TIMESTAMP_MS + 9, key=b"sensor-7",
                                          value=b"22.0C")])
growth = len(bigger) - len(batch_bytes)
check_prediction(my_prediction, growth,
                 right=f"{growth} bytes; the 61-byte header is paid once per batch.",
                 hint="add up the record's fields one by one: 8 key bytes and 5 value bytes, plus "
                      "one byte for each of the seven small fields.")
### BEGIN HIDDEN TESTS
assert my_prediction == 20
### END HIDDEN TESTS

# %% [markdown]
# **Change the engine.** A broker checks every batch's CRC before it stores it. Damage the
# batch: flip one bit of the value `21.5C` in `damaged` (a copy of `batch_bytes`). The check
# decodes it again and passes once kafkalab refuses it with a typed error carrying a Kafka error
# code. Which code is it, and why could the CRC detect the change?

# %% tags=["answer"]
damaged = bytearray(batch_bytes)
### BEGIN SOLUTION
### BLANK # your change here
damaged[batch_bytes.index(b"21.5C")] ^= 0x01
### END SOLUTION

# %% tags=["check"]
from kafkalab.errors import CorruptRecordError

try:
    decode_v2(bytes(damaged))
    refused = None
except CorruptRecordError as error:
    refused = error
assert refused is not None, "the batch still decodes: flip a bit of the value in `damaged`"
print(f"Kafka error code {int(refused.error_code)} ({refused.error_code.name}): {refused.reason}")
### BEGIN HIDDEN TESTS
assert len(damaged) == len(batch_bytes)
assert sum(bin(a ^ b).count("1") for a, b in zip(damaged, batch_bytes)) == 1
### END HIDDEN TESTS

# %% [markdown]
# The server stopped before the exercises; this last cell removes its data directory.

# %%
remove_scratch_dirs()
