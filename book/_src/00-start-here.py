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
# ## A first record batch
# Kafka's unit of storage and transfer is the **record batch**: a header plus one or more
# records, each with an offset, a timestamp, an optional key and a value. Let us build one with
# kafkalab's record codec, in the format a Kafka 0.11+ producer sends. One difference: this
# batch carries no producer id (-1). A Kafka 3.x producer is idempotent by default, so it sends
# the producer id the broker gave it and a sequence number per batch (chapter 02 shows where).

# %%
from kafkalab.records.model import Record
from kafkalab.records.v2 import build_v2_batch, decode_v2

TIMESTAMP_MS = 1557554753000  # a fixed clock, so this page reads the same on every run
records = [
    Record(offset=0, timestamp=TIMESTAMP_MS, key=b"sensor-7", value=b"21.5C"),
    Record(offset=1, timestamp=TIMESTAMP_MS + 5, key=b"sensor-9", value=b"19.0C"),
]
batch_bytes = build_v2_batch(records)
print(f"{len(records)} records -> one batch of {len(batch_bytes)} bytes")

# %% [markdown]
# ## The seed of the book: its bytes
# Those bytes are what sits in a partition's `.log` file and what a consumer receives. Here they
# are, 16 per row, with their ASCII on the right. The keys and values are readable near the
# end; everything before them is the 61-byte batch header (chapter 02 takes it apart field by
# field).

# %%
import hexdump

hexdump.hexdump(batch_bytes)

# %% [markdown]
# Decoding the bytes gives the records back, and the header says what a broker needs without
# decoding any record: the offset range, the timestamp range and the checksum.

# %%
batch = decode_v2(batch_bytes)
header = batch.header
print(f"offsets {header.base_offset}..{header.last_offset}, {header.records_count} records, "
      f"timestamps {header.base_timestamp}..{header.max_timestamp}, CRC-32C {header.crc:#010x}")
for record in batch:
    print(f"  offset {record.offset}: key={record.key!r} value={record.value!r}")

# %% [markdown]
# ## A real client agrees
# kafka-python, an independent Kafka client, decodes the same bytes to the same records. The
# book uses such cross-checks often: an engine that only agrees with itself proves little.

# %%
from kafka.record.default_records import DefaultRecordBatch

print([(r.offset, r.key, r.value) for r in DefaultRecordBatch(bytes(batch_bytes))])

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
#
# Later chapters add replication, the controller, consumer groups, transactions and the
# timing wheel. The same engine also runs as a network server that real Kafka clients
# (kafka-python, confluent-kafka, kcat) can produce to and consume from, so you can point a
# client at it and open the data directory it writes.
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
