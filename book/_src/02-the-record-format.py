# %% [markdown]
# # 02 The record format
#
# Everything Kafka stores or sends -- a produce request, a `.log` segment, a fetch response -- is
# the same thing: a concatenation of *log entries*. This chapter builds entries with kafkalab's
# codec in all three message formats ("magic" 0, 1 and 2), puts them side by side, and reads
# their bytes. Knowing this layout is what lets the broker append without *re-encoding* (Kafka's
# `LogValidator` still walks every record to validate it and assign offsets, but writes the
# producer's bytes when it can), index by byte position, and send files to consumers with
# `sendfile`.

# %%
from kafkalab.book import check_version
check_version("0.1.0")

# %% [markdown]
# ## Three records, three formats
# We use fixed timestamps (milliseconds since the epoch, from May 2019) so the bytes below are
# the same on every run.

# %%
from kafkalab.records.header import Compression, read_header, verify_crc
from kafkalab.records.legacy import build_legacy, decode_legacy
from kafkalab.records.model import Header, Record
from kafkalab.records.v2 import build_v2_batch, decode_v2

BASE_TIMESTAMP_MS = 1557554753000
records = [
    Record(offset=i, timestamp=BASE_TIMESTAMP_MS + 10 * i, key=f"key-{i}".encode(),
           value=f"value-{i}".encode())
    for i in range(3)
]
v0 = build_legacy(records, magic=0)
v1 = build_legacy(records, magic=1)
v2 = build_v2_batch(records)
payload_bytes = sum(len(r.key) + len(r.value) for r in records)
print(f"keys + values: {payload_bytes} bytes")
for name, data in [("v0 message set", v0), ("v1 message set", v1), ("v2 record batch", v2)]:
    print(f"{name:<16} {len(data):>4} bytes  ({len(data) - payload_bytes} bytes of framing)")

# %% [markdown]
# **v0** (Kafka 0.8-0.9): every record is its own *message*: the 12-byte log overhead that all
# formats share (`offset` int64 + `size` int32), then `crc` (4), `magic` (1), `attributes` (1),
# key length (4) and value length (4) -- 14 bytes -- then key and value. So a v0 record costs at
# least 12 + 14 = 26 bytes before its data; three records cost 3 × 26 = 78.
#
# **v1** (0.10, KIP-31/32) adds an 8-byte `timestamp` to each message (22-byte header). It
# exists because time-based retention and rolling used to rely on file modification times,
# which lie (chapter 05), and stream processing needs event time. A timestamp is either
# `CreateTime` (set by the producer) or `LogAppendTime` (stamped by the broker).
#
# **v2** (0.11, KIP-98) groups records into a *batch* with one 61-byte header, and makes each
# record tiny: lengths and deltas are variable-length integers, the timestamp and offset are
# *deltas* from the batch's base values. One record costs a few bytes plus its data, so v2 pays
# off from a handful of records per batch. It also carries what idempotence and transactions
# need: producer id, producer epoch, base sequence.

# %%
for name, decode, data in [("v0", decode_legacy, v0), ("v1", decode_legacy, v1)]:
    position, count = 0, 0
    while position < len(data):
        entry = decode(data, position)
        position += entry.header.size_bytes
        count += 1
    print(f"{name}: {count} entries of {entry.header.size_bytes} bytes each")
batch = decode_v2(v2)
print(f"v2: 1 entry of {batch.header.size_bytes} bytes holding {len(batch)} records")

# %% [markdown]
# ## Reading a v2 batch byte by byte
# The batch header (the first 61 bytes) laid out by kafkalab's shallow reader:
#
# ```
#  0 baseOffset int64     8 batchLength int32   12 partitionLeaderEpoch int32   16 magic int8
# 17 crc uint32          21 attributes int16    23 lastOffsetDelta int32        27 baseTimestamp int64
# 35 maxTimestamp int64  43 producerId int64    51 producerEpoch int16          53 baseSequence int32
# 57 recordsCount int32  61 records...
# ```

# %%
import hexdump

header = read_header(v2, 0)
for field in ("base_offset", "size_bytes", "partition_leader_epoch", "magic", "crc", "attributes",
              "last_offset", "base_timestamp", "max_timestamp", "producer_id", "producer_epoch",
              "base_sequence", "records_count"):
    print(f"{field:>24} = {getattr(header, field)}")
print()
hexdump.hexdump(v2)

# %% [markdown]
# Read it against the table: bytes 0-7 are the base offset 0; `00 00 00 6a` at 8 is the batch
# length 106 (the 118-byte entry minus the 12-byte log overhead); `ff ff ff ff` at 12 is the
# partition leader epoch -1 (no leader stamped it yet); `02` at 16 is the magic. The first
# record starts at byte 61 with its length as a varint.

# %% [markdown]
# ## LogAppendTime: the broker's clock in the header
# A topic with `message.timestamp.type=LogAppendTime` makes the broker, not the producer, say
# when each record happened. In v2 it does not touch the records: it sets bit 3 of
# `attributes` (the timestamp type) and writes its own clock into `maxTimestamp`, and every
# reader then reports that time for every record of the batch, whatever the records' own deltas
# say. Both fields sit inside the CRC's range, so the broker recomputes the CRC -- but it still
# copies the records' bytes as they came. Here is the same batch stamped at a later time,
# decoded by kafkalab and by kafka-python:

# %%
from kafka.record.default_records import DefaultRecordBatch
from kafkalab.records.header import TimestampType

APPEND_TIME_MS = BASE_TIMESTAMP_MS + 60_000  # the broker's clock when the batch arrived
stamped = build_v2_batch(records, timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time_ms=APPEND_TIME_MS)
for name, data in [("CreateTime", v2), ("LogAppendTime", stamped)]:
    h = read_header(data, 0)
    theirs = DefaultRecordBatch(bytes(data))
    print(f"{name:>13}: attributes {h.attributes:#06x}, maxTimestamp {h.max_timestamp}, "
          f"record timestamps (kafkalab) {[r.timestamp for r in decode_v2(data)]}, "
          f"(kafka-python) {[r.timestamp for r in theirs]}")
assert len(stamped) == len(v2) and stamped[61:] == v2[61:]  # the records' bytes are the same

# %% [markdown]
# ## Varints and zigzag
# A v2 record's fields are *zigzag varints*. Zigzag maps small negative numbers to small
# positive ones (0 → 0, -1 → 1, 1 → 2, -2 → 3 ...), and the varint stores 7 bits per byte, with
# the high bit saying "more bytes follow". A null key is length -1, which costs one byte.

# %%
from kafkalab.records import varint

for value in [0, -1, 1, -2, 63, -64, 64, 300, -300, 2**31 - 1]:
    encoded = varint.encode_varint(value)
    print(f"{value:>11} -> zigzag {varint.zigzag_encode(value):>10} -> {encoded.hex(' '):<15}"
          f" ({len(encoded)} byte{'s' if len(encoded) > 1 else ''})")

# %% [markdown]
# ## Where the CRC sits, and why
# The v2 CRC (CRC-32C) covers the batch from `attributes` (byte 21) to the end. It deliberately
# leaves out `baseOffset` and `partitionLeaderEpoch`: the producer cannot know the offsets, and
# the leader must stamp both into the batch when it appends. Because they are outside the CRC,
# the broker patches those bytes in place without recomputing the checksum. Flip a bit in the
# covered region instead and the batch is rejected as corrupt:

# %%
from kafkalab.errors import CorruptRecordError
from kafkalab.records.header import patch_base_offset, patch_partition_leader_epoch

stamped = bytearray(v2)
patch_base_offset(stamped, 0, 1000)
patch_partition_leader_epoch(stamped, 0, 7)
print("after the broker assigns offset 1000 and epoch 7:", read_header(stamped, 0).base_offset,
      read_header(stamped, 0).partition_leader_epoch, "- CRC still valid:", verify_crc(stamped, read_header(stamped, 0)))

damaged = bytearray(v2)
damaged[70] ^= 0x01  # one bit inside the first record
try:
    decode_v2(bytes(damaged))
except CorruptRecordError as error:
    print(f"{type(error).__name__} (Kafka error code {int(error.error_code)}): {error}")

# %% [markdown]
# ## Cross-check with an independent implementation
# kafka-python has its own v2 encoder. Built from the same records, its batch matches ours byte
# for byte -- except bytes 12-15, because kafka-python's builder writes partition leader epoch 0
# where kafkalab writes -1 ("not stamped yet"). The CRC is identical, which is the point made
# above: the epoch is outside it.

# %%
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=0,
                                    producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                    batch_size=1 << 20)
for r in records:
    builder.append(r.offset, timestamp=r.timestamp, key=r.key, value=r.value, headers=[])
theirs = bytes(builder.build())
differing = [i for i in range(len(v2)) if v2[i] != theirs[i]]
print("same length:", len(theirs) == len(v2), "| differing byte positions:", differing)
assert len(theirs) == len(v2) and differing == [12, 13, 14, 15]
print("kafka-python decodes our batch as:",
      [(r.offset, r.key, r.value) for r in DefaultRecordBatch(bytes(v2))])

# %% [markdown]
# ## Headers
# v2 records can carry headers (KIP-82): string keys with byte values, stored inside the record.

# %%
with_headers = build_v2_batch([Record(offset=0, timestamp=BASE_TIMESTAMP_MS, key=b"k", value=b"v",
                                      headers=(Header("trace-id", b"abc123"),))])
without = build_v2_batch([Record(offset=0, timestamp=BASE_TIMESTAMP_MS, key=b"k", value=b"v")])
print(f"one header costs {len(with_headers) - len(without)} bytes:",
      decode_v2(with_headers).records[0].headers)

# %% [markdown]
# ## Compression is per batch
# The producer compresses the *records region* of a whole batch (the 61-byte header stays
# readable), and the broker stores the batch as it arrived -- it validates it but does not
# recompress it (unless the topic's `compression.type` differs). A consumer decompresses. The
# bigger and more repetitive the batch, the better the ratio, which is another reason batching
# matters. 200 small JSON records:

# %%
events = [
    Record(offset=i, timestamp=BASE_TIMESTAMP_MS + i, key=None,
           value=f'{{"user": {i % 17}, "page": "/home", "action": "view"}}'.encode())
    for i in range(200)
]
uncompressed = len(build_v2_batch(events))
for codec in Compression:
    data = build_v2_batch(events, compression=codec)
    assert [r.value for r in decode_v2(data)] == [r.value for r in events]
    print(f"{codec.name.lower():>6}: {len(data):>5} bytes ({len(data) / uncompressed:.0%})")

# %% [markdown]
# zstd arrived with v2 only (KIP-110); v0/v1 can carry gzip, snappy and lz4, by wrapping the
# compressed message set in one outer message.
#
# ## Exercises
# Each prediction starts blank. Write your answer in the cell tagged as yours, run it, then run
# the check below it: the check refuses a blank or wrong answer with a hint, and passes only on
# the engine's value.
#
# **Predict, then check 1.** A v2 batch holds one record at offset 0 with a null key, the value
# `hello`, and no headers. How many bytes is the batch? (61-byte header; the record is a length
# varint, attributes, timestamp delta, offset delta, key length, value length, value, header
# count.)

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- your answer, in bytes
my_prediction = 73
### END SOLUTION

# %% tags=["check"]
from kafkalab.book import check_prediction

actual = len(build_v2_batch([Record(offset=0, timestamp=BASE_TIMESTAMP_MS, key=None, value=b"hello")]))
check_prediction(my_prediction, actual,
                 right=f"{actual} bytes = 61 (header) + {actual - 61} (record).",
                 hint="a null key has no key bytes, and its length -1 is a one-byte zigzag "
                      "varint; every small field here is one byte.")
### BEGIN HIDDEN TESTS
assert my_prediction == 73
### END HIDDEN TESTS

# %% [markdown]
# **Predict, then check 2.** The same record as a v0 message: how many bytes?

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- your answer, in bytes
my_prediction = 31
### END SOLUTION

# %% tags=["check"]
actual = len(build_legacy([Record(offset=0, timestamp=BASE_TIMESTAMP_MS, key=None, value=b"hello")], magic=0))
check_prediction(my_prediction, actual, right=f"{actual} bytes = 12 log overhead + 14 header + 5 value.",
                 hint="a v0 message pays the 12-byte log overhead (offset, size), then a "
                      "fixed-width header (CRC, magic, attributes, key length, value length), "
                      "then the value.")
### BEGIN HIDDEN TESTS
assert my_prediction == 31
### END HIDDEN TESTS

# %% [markdown]
# **Change the engine.** What if Kafka had not used zigzag? A plain varint of a negative 64-bit
# number has its top bit set and needs all 10 bytes. `key_length_codec` starts as the codec's
# zigzag encoder; make it encode the two's-complement value with the codec's unsigned encoder
# (`varint._encode_unsigned`). The check counts what 1000 null-key records pay for their key
# lengths alone, and passes once that is the price without zigzag.

# %% tags=["answer"]
key_length_codec = varint.encode_varint
### BEGIN SOLUTION
### BLANK # your change here
key_length_codec = lambda value: varint._encode_unsigned(value & (2**64 - 1))  # noqa: E731
### END SOLUTION

# %% tags=["check"]
null_key_bytes = 1000 * len(key_length_codec(-1))
zigzag_bytes = 1000 * len(varint.encode_varint(-1))
print(f"1000 null keys: {null_key_bytes} bytes of key lengths, {zigzag_bytes} with zigzag")
assert null_key_bytes > zigzag_bytes, "key_length_codec still encodes -1 in one byte: it is zigzag"
### BEGIN HIDDEN TESTS
assert null_key_bytes == 10_000
### END HIDDEN TESTS
