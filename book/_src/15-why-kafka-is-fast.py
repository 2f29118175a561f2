# %% [markdown]
# # 15 Why Kafka is fast (measured)
#
# Ask why Kafka is fast and you get a list: batching, a compact record format, compression,
# sparse indexes, partitions, sequential writes, the page cache, zero-copy `sendfile`, and a
# broker that moves requests through queues and thread pools. One of the source articles lists
# eleven such "secrets". This chapter does not take any of them on trust: it measures each one
# on kafkalab, on your machine, and draws the result.
#
# Two warnings before the stopwatch starts.
#
# * **Your numbers will differ** from the ones stored in this notebook, and from one run to the
#   next: another program, a warm or cold cache, a laptop on battery. What should *not* change
#   is the shape -- which side wins, and roughly by how much. The exercises at the end only ask
#   about effects large enough to survive a busy two-core machine.
# * **kafkalab is Python.** Its absolute figures are far below a JVM broker's. That makes some
#   effects *larger* (a fixed per-request cost in Python is big, so batching pays more) and hides
#   others (the interpreter can cost more than the copy `sendfile` saves). Each section says which.
#
# The sizes below keep the whole chapter to seconds. Raise them for steadier figures.

# %%
from kafkalab.book import check_version
check_version("0.1.0")

# %%
from kafkalab.bench import measure
from kafkalab.book import remove_scratch_dirs, scratch_dir
from kafkalab.viz import fast

RECORDS = 10_000          # records per batching run (100-byte values)
FILE_MIB = 64             # the file read and sent in the page-cache and sendfile sections
PATTERN_FILE_MIB = 16     # the file read page by page, in order and shuffled
LOOKUP_RECORDS = 100_000  # records in the segment the index section searches
PARTITIONS = 4            # partitions decoded in the parallelism section
REQUEST_RECORDS = 1_000   # records sent to the server per batch size

work_dir = scratch_dir("ch15-")

# %% [markdown]
# Every measurement is one function in `kafkalab.bench.measure` and every figure one function
# in `kafkalab.viz.fast`; the cells only call them. Each timing is the best of three runs,
# because another job on the machine can only ever make a run slower.
#
# ## 1. Batching
# A producer does not send records; it sends **batches** of records (chapter 07: the
# accumulator fills them while the sender thread ships the previous ones). The leader, in turn,
# appends a batch with one validation, one offset assignment, one `write` and at most one index
# entry, however many records it holds. So most of the work is *per batch*, and the more
# records share a batch, the less each record pays.
#
# `measure.batching` encodes 10,000 records into v2 batches of 1, 10, 100 and 1,000 records
# (the producer's share) and appends them to a fresh log (the leader's share):

# %% tags=["nbval-ignore-output"]
batching = measure.batching(work_dir, RECORDS)
_ = fast.show_measurement(*fast.batching_figure(batching))

# %% [markdown]
# The leader's share falls steeply with the batch size: its per-batch work is paid once per
# batch. The producer's share falls much less, because encoding each record (its varints,
# its key and value) is work per record that no batching removes. Batching also saves bytes,
# which do not depend on the clock:

# %%
for point in batching:
    print(f"{point.records_per_batch:>5} records per batch: {point.bytes_on_disk:>9,} bytes on disk, "
          f"{point.bytes_per_record:6.1f} bytes per record")

# %% [markdown]
# A record alone in its batch carries the whole 61-byte v2 batch header; in a batch of 1,000 it
# carries 0.06 bytes of it. The rest of a v2 record is compact because its offset and timestamp
# are small varint *deltas* from the batch's base (chapter 02); in v0 and v1 every record
# carried an 8-byte offset, a 4-byte size and a 4-byte CRC of its own. (Why is a record in a
# batch of 1,000 a little *larger* than in a batch of 10? Its offset delta and timestamp delta
# grow past 63, and a varint needs a second byte for them.)
#
# ## 2. Compression
# Compression works on whole batches, and the broker stores and serves the batch as the
# producer compressed it (with the topic's `compression.type=producer`, the default), so a
# batch is compressed once, by the producer, and decompressed by each consumer. Here are the
# same 3,000 JSON-like records in batches of 500 with each of Kafka's codecs, as kafkalab's
# codecs frame them:

# %% tags=["nbval-ignore-output"]
codecs = measure.compression()
_ = fast.show_measurement(*fast.compression_figure(codecs))

# %% [markdown]
# gzip and zstd shrink these records several-fold, lz4 and snappy less but for less CPU.
# (The sizes do not depend on the clock, only on the records and the codec libraries.)
# Decoding costs about the same with every codec: in kafkalab, turning bytes back into
# `Record` objects in Python costs far more than the decompression, which runs in C.
#
# One source article concludes that compression should be avoided when latency matters. The
# figure says it depends on what you are short of. Compressing costs producer CPU and adds a
# little time per batch; it also sends several times fewer bytes over the network, to disk and
# to every replica and consumer, which *shortens* the time a batch spends on a busy link. On a
# fast local network with idle links, `none` or `lz4` is the low-latency choice; across a
# data centre or a saturated link, compression can lower latency as well as raise throughput.
# Measure with your own records: text and JSON compress well, already-compressed or encrypted
# payloads do not compress at all.
#
# ## 3. Sequential writes and the page cache
# A Kafka log only ever appends at its end: a produce is a `write` at the end of the active
# segment. And Kafka does not `fsync` after each write (`flush.messages` and `flush.ms` default
# to "never"); it counts on replication for durability and leaves the flushing to the operating
# system. So the write goes into the **page cache** -- the kernel's memory copy of file pages --
# and the disk sees it later, in large sequential chunks.
#
# The consequence for readers: a consumer that keeps up reads what was just written, and that
# is still in memory. We can ask the kernel directly, with `mincore(2)`, which of a file's pages
# it holds. Right after writing a file -- before anyone reads it:

# %%
fresh = measure.write_file(work_dir / "fresh.bin", 8 * measure.MIB)
print(f"share of pages in the page cache right after writing: {measure.resident_share(fresh):.0%}")

# %% [markdown]
# All of it. That is why "the first read" of freshly written data is not a disk read at all. To
# see a read that does go to the disk, we must first get the pages *out* of the cache.
# `posix_fadvise(POSIX_FADV_DONTNEED)` asks the kernel to drop a file's cached pages; it only
# drops *clean* pages (already written to the disk), so `measure.drop_from_page_cache` calls
# `fsync` first. It is advice: on Linux with a disk-backed file system the pages go; on tmpfs
# they cannot (the cache *is* the file), and macOS has no `posix_fadvise` at all.

# %% tags=["nbval-ignore-output"]
measure.drop_from_page_cache(fresh)
print(f"after DONTNEED: {measure.resident_share(fresh):.0%} of the pages cached")
measure.read_pages(fresh, range(0, 8 * measure.MIB // measure.PAGE_BYTES, 2))
print(f"after reading every other page, in order: {measure.resident_share(fresh):.0%} cached")

# %% [markdown]
# Reading every *other* page in order brought back *all* of them: the kernel saw a sequential
# reader and read ahead. Now the timing -- one 64 MiB file read right after writing it, again
# after dropping it, and once more:

# %% tags=["nbval-ignore-output"]
cache_run = measure.page_cache(work_dir, FILE_MIB * measure.MIB)
_ = fast.show_measurement(*fast.page_cache_figure(cache_run))

# %% [markdown]
# The read after the drop is the only one that touched the disk. (On a virtual machine the
# host's own cache may still hold the file, so "the disk" can be faster than a real one.)
#
# **Sequential against random.** The same pages, read with the same 4 KiB `pread` calls, once
# in order and once shuffled -- both from the cache, and both after dropping the file:

# %% tags=["nbval-ignore-output"]
pattern = measure.sequential_vs_random(work_dir, PATTERN_FILE_MIB * measure.MIB)
_ = fast.show_measurement(*fast.access_pattern_figure(pattern))

# %% [markdown]
# From the page cache the order hardly matters: a cached page is memory, and memory is random
# access. From the disk, the shuffled reads are many times slower: the in-order reader gets
# read-ahead (one large request serves many `pread`s), the shuffled reader waits for the device
# once per page. Kafka's design gets the fast column twice over: consumers that keep up read
# from the cache, and consumers that fall behind read their partitions *in order*.
#
# This is also the honest answer to "Kafka can use 28-30 GB of a 32 GB machine": not as heap --
# a Kafka broker runs with a heap of a few GB -- but as page cache, which the kernel manages,
# which survives a broker restart, and which costs no garbage collection.
#
# ## 4. Zero copy: `sendfile`
# To serve a fetch, a broker must move bytes from a segment file to a socket. The plain way is
# a loop of `read` (kernel copies the page into the process's buffer) and `write` (kernel
# copies it back into the socket buffer). `sendfile` asks the kernel to move the bytes from the
# page cache to the socket itself: the process never holds them. Kafka's plaintext transport
# calls `FileChannel.transferTo`, which is `sendfile` on Linux; kafkalab's server does the same:

# %%
import inspect
from kafkalab.server import connection

print(inspect.getsource(connection._sendfile_while_ready))

# %% [markdown]
# This only works because the broker sends batches *exactly as they are stored*: same bytes,
# same compression, offsets already in place. A broker that had to re-encode a batch for a
# consumer (an old consumer asking for the v0/v1 format, the "down-conversion" Kafka 4.0
# removed) loses `sendfile` for that fetch.
#
# Now the measurement: a cached 64 MiB file sent into a local socket both ways, with a thread
# draining the other end:

# %% tags=["nbval-ignore-output"]
copies = measure.sendfile_vs_read_write(work_dir, FILE_MIB * measure.MIB)
_ = fast.show_measurement(*fast.copy_figure(copies))

# %% [markdown]
# `sendfile` usually wins here, but not by the factor the word "zero" suggests. Two things to correct in the
# source article's description:
#
# * "zero-copy moves data from the disk to the network card *without the CPU*" -- no: it removes
#   the copies **into and out of the process** (and the system calls and context switches that
#   go with them). The kernel still runs `sendfile` on a CPU, and unless the network card can
#   gather straight from the page cache, the kernel still copies the bytes into socket buffers.
#   On a local socket, as here, the receiving side's copy is the same for both methods, which is
#   why the gap is moderate; the saving is largest when many consumers read the same cached
#   data over real network cards.
# * zero-copy and the page cache are two separate savings: the page cache saves the *disk*
#   read, `sendfile` saves the *user-space* copies. And `sendfile` does not apply everywhere:
#   with TLS the broker must encrypt each byte in its own memory, so Kafka's SSL transport reads
#   the file into a buffer instead (`SslTransportLayer.transferFrom`).
#
# ## 5. Indexes
# Chapter 04 took a lookup apart. Here is its cost: 20 random offsets in a 10 MiB segment,
# found through the sparse offset index (`Log.lookup`), and by walking batch headers from the
# segment's first byte, as a broker without an index would have to:

# %% tags=["nbval-ignore-output"]
lookups = measure.index_vs_scan(work_dir, LOOKUP_RECORDS)
_ = fast.show_measurement(*fast.lookup_figure(lookups))

# %% [markdown]
# The bytes each search read do not depend on the clock. With `index.interval.bytes` = 4,096
# and batches of 1,151 bytes, an index entry lands on every fifth batch (once more than 4,096
# bytes were written since the last entry). A lookup starts at the floor entry -- the last
# entry whose offset, the *last* offset of its batch, is at or below the target -- and reads
# forward, at most six batches; a scan reads on average half the segment:

# %%
print(f"offset index: {lookups.index_bytes_scanned / lookups.lookups:,.0f} bytes read per lookup")
print(f"scan:         {lookups.scan_bytes_scanned / lookups.lookups:,.0f} bytes read per lookup")

# %% [markdown]
# ## 6. Partitions as parallelism
# A partition is the unit Kafka spreads: partitions of one topic live on different brokers and
# disks, and within a consumer group each partition is read by exactly one consumer, so N
# partitions let up to N consumers -- on up to N machines -- work at once.
#
# On one machine, in one Python process, the picture is less rosy. Below, four partitions'
# logs are decoded record by record: one after another, by four threads, and by worker
# processes (one per core):

# %% tags=["nbval-ignore-output"]
parallel = measure.partitions_in_parallel(work_dir, PARTITIONS)
_ = fast.show_measurement(*fast.parallel_figure(parallel))

# %% [markdown]
# The threads do not help much, and the summary under the figure says why: they kept at most
# about one core busy. CPython's **global interpreter lock** lets one thread run Python code at
# a time, and decoding records is Python code. (On a busy machine four threads can still finish
# a little sooner than one: the operating system hands out CPU time per thread, so four threads
# get more turns -- but never two at once.) Processes each have their own interpreter, so they
# can use every core -- if the cores are free; on a shared two-core machine they may gain
# little too. Kafka's JVM threads have no such lock, and a real cluster adds machines: that is
# where partitions turn into throughput. They are not free, though (chapter 01): every
# partition costs file handles, memory in producers and consumers, and leader elections when a
# broker fails.
#
# ## 7. The broker request path
# How does a Kafka broker handle a request? The source article on broker internals traces it:
#
# 1. a **network thread** (`num.network.threads`) reads the request off the socket and puts it
#    in the shared **request queue**, which holds at most `queued.max.requests`; when it is full
#    the network threads stop reading, which pushes back on clients;
# 2. an **I/O thread** (`num.io.threads`, the request handlers) takes it, appends to or reads
#    from the log;
# 3. a request that must wait -- a produce with `acks=all` until the followers have the batch, a
#    fetch until `fetch.min.bytes` have arrived -- is parked in a **purgatory** (chapter 13), so
#    no I/O thread is blocked by it;
# 4. the answer goes to the **response queue** of the network thread that owns the connection,
#    which writes it to the socket.
#
# Meanwhile each connection is *muted* until its response is sent, so a client's requests are
# answered in order. kafkalab knows the same settings with Kafka's defaults:

# %%
from kafkalab.config.definitions import broker_default

for key in ("num.network.threads", "queued.max.requests", "num.io.threads", "message.max.bytes"):
    print(f"{key} = {broker_default(key)}")

# %% [markdown]
# (The same article, written for Kafka 0.11, gives `message.max.bytes` -- the largest batch the
# broker accepts -- as 976 KB, which was 1,000,012 bytes. Since Kafka 2.5 (KAFKA-4203) it is
# 1 MiB plus the 12-byte log overhead, 1,048,588, in line with the producer's
# `max.request.size`.)
#
# kafkalab's server keeps the shape but not the threads: one asyncio event loop reads a frame,
# hands it to the broker, and writes the answer (with `sendfile` for record data) -- network
# thread, I/O thread and response queue in one. A connection with a request in the broker reads
# no further frames, Kafka's muting; a parked request sits in the same purgatory, on the same
# timing wheel, and its answer is written when it completes.
#
# A correction to that source article: it says a produce with `acks=all` completes once the data
# has reached "the minimum ISR count". It completes once **every** replica in the ISR has the
# batch -- once the high watermark passes it. `min.insync.replicas` is a floor, not the target:
# while the ISR is smaller, an `acks=all` produce is refused, and if the ISR shrank below it
# while the produce waited, the answer is NOT_ENOUGH_REPLICAS_AFTER_APPEND. This is the check
# the purgatory runs for a waiting produce:

# %%
from kafkalab.replication.partition import Partition

print(inspect.getsource(Partition.check_enough_replicas_reach_offset))

# %% [markdown]
# Every request pays a fixed cost on this path: a round trip over the socket, framing, parsing
# the header and body, a log append, encoding the answer. Batching spreads it. We start a real
# kafkalab server (a separate process, as from a shell) and send 1,000 records with kafkalab's
# wire client, one `ProduceRequest` in flight at a time, `acks=1`, with 1, 10, 100 and 1,000
# records per request:

# %%
from kafkalab.client import admin
from kafkalab.client.connection import bootstrap
from kafkalab.client.launcher import start_server

server = start_server(work_dir / "data")
with bootstrap(server.bootstrap) as conn:
    admin.create_topic(conn, "fast", partitions=1, replication_factor=1, configs={})
print("server started; topic fast created")

# %% tags=["nbval-ignore-output"]
requests = measure.produce_requests(server.bootstrap, "fast", REQUEST_RECORDS)
_ = fast.show_measurement(*fast.request_path_figure(requests))

# %% [markdown]
# A request's cost grows far more slowly than the records it carries, so the records a second
# grow almost as fast as the batch. This is batching's largest win, larger than in section 1, because a
# request's fixed cost (two trips through the kernel's network stack, and Python on both ends)
# dwarfs a single append. It is also why a Kafka producer waits `linger.ms` for more records
# and keeps up to five requests in flight (`max.in.flight.requests.per.connection`): to fill the
# batches it sends and to hide the round trip.
#
# ## Exercises
# Each prediction starts blank. Write your answer in the cell tagged as yours, run it, then run
# the check below it: the check refuses a blank or wrong answer with a hint, and passes only on
# what the engine and your machine say. Where the answer is measured, the question asks for a
# range wide enough to hold on a slow or busy machine.
#
# **Predict, then check 1.** A record with no key and a 100-byte value is sent alone, in a
# batch of its own. How many bytes does that batch take in the segment file?

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- a number of bytes
my_prediction = 170
### END SOLUTION

# %% tags=["check"]
from kafkalab.book import check_prediction
from kafkalab.records import build_batch

lone = measure.sample_records(1)[0]
check_prediction(my_prediction, len(build_batch([lone])), right="61 bytes of batch header + 109 for the record",
                 hint="a v2 batch header is 61 bytes; the record adds its fields (attributes, timestamp "
                      "delta, offset delta, key length, value length, value, header count) as varints, "
                      "and its own length as a varint before them -- count the bytes of each.")
### BEGIN HIDDEN TESTS
assert my_prediction == 170 and batching[0].bytes_on_disk == 170 * RECORDS
### END HIDDEN TESTS

# %% [markdown]
# **Predict, then check 2.** Through the server (section 7), how many times the records per
# second does a producer get with 1,000 records per request instead of 1? Answer
# `"under 2x"`, `"2x to 5x"` or `"at least 5x"`.

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- "under 2x", "2x to 5x" or "at least 5x"
my_prediction = "at least 5x"
### END SOLUTION

# %% tags=["check"]
one, thousand = requests[0], requests[-1]  # measured in section 7
check_prediction(my_prediction, measure.bracket(thousand.records_per_second / one.records_per_second),
                 right="each request has a fixed cost; 1,000 records share it",
                 hint="look at the right-hand plot in section 7: how does the time per request change "
                      "from 1 to 1,000 records?")
### BEGIN HIDDEN TESTS
assert my_prediction == "at least 5x"
### END HIDDEN TESTS

# %% [markdown]
# **Predict, then check 3.** A producer has just written a segment; nobody has read it yet.
# What share of the file's pages is in the page cache? Answer a fraction from 0 to 1.

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- a fraction, e.g. 0.5
my_prediction = 1.0
### END SOLUTION

# %% tags=["check"]
segment = measure.write_file(work_dir / "new-segment.log", 4 * measure.MIB)
check_prediction(my_prediction, measure.resident_share(segment), tolerance=0.05,
                 right="a write goes into the page cache; the disk gets it later",
                 hint="where does write() put the bytes before the kernel sends them to the disk?")
### BEGIN HIDDEN TESTS
assert abs(my_prediction - 1.0) <= 0.05
### END HIDDEN TESTS

# %% [markdown]
# **Predict, then check 4.** While four threads decode four partitions (section 6), how many
# cores does the process keep busy -- CPU seconds per second of wall-clock time? Answer
# `"under 1.5 cores"` or `"at least 1.5 cores"`.

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- "under 1.5 cores" or "at least 1.5 cores"
my_prediction = "under 1.5 cores"
### END SOLUTION

# %% tags=["check"]
check_prediction(my_prediction, measure.bracket(parallel.threads_cores, (1.5,), unit=" cores"),
                 right="one thread at a time runs Python code (the GIL)",
                 hint="what does CPython's global interpreter lock let two threads decoding records do "
                      "at the same moment?")
### BEGIN HIDDEN TESTS
assert my_prediction == "under 1.5 cores"
### END HIDDEN TESTS

# %% [markdown]
# **Change the engine.** Section 5's index makes a lookup read up to six batches (some 3,800
# bytes on average). Change `index_interval_bytes` so that a lookup reads at most two batches
# on average (2,302 bytes). Why two and not one? What does the denser index cost you?

# %% tags=["answer"]
index_interval_bytes = 4096
### BEGIN SOLUTION
### BLANK # your change here
index_interval_bytes = 1024
### END SOLUTION

# %% tags=["check"]
dense = measure.index_vs_scan(work_dir, 20_000, index_interval_bytes=index_interval_bytes)
batch_bytes = len(build_batch(measure.sample_records(10)))
print(f"index.interval.bytes = {index_interval_bytes}: {dense.index_bytes_scanned / dense.lookups:,.0f} "
      f"bytes read per lookup")
assert dense.index_bytes_scanned <= 2 * dense.lookups * batch_bytes, \
    "lookups still read more than two batches on average: the index skips batches"
### BEGIN HIDDEN TESTS
assert index_interval_bytes < batch_bytes
assert dense.index_bytes_scanned > dense.lookups * batch_bytes  # not one: entries name a batch's last offset
### END HIDDEN TESTS

# %% [markdown]
# Any interval below one batch's size gives every batch an index entry (Kafka adds an entry once
# *more than* `index.interval.bytes` were written since the last). Still a lookup usually reads
# two batches, not one: an entry names the **last** offset of its batch, so the floor entry for
# an offset inside a batch is the *previous* batch's entry, and the scan starts there. The
# price of the denser index: 8 bytes per batch instead of per five, and an index that fills five
# times sooner -- a full index rolls the segment (chapter 03).
#
# The server and the files this chapter wrote live in scratch directories; this last cell stops
# the server and removes them.

# %%
server.stop()
remove_scratch_dirs()
