# %% [markdown]
# # 12 Idempotence and transactions
#
# A producer that retries can write a batch twice: the first attempt was appended, but its answer
# was lost. **Idempotence** makes the broker recognise the second copy. **Transactions** go
# further: records sent to several partitions (and the consumer offsets that produced them)
# become visible together or not at all. This chapter runs both on a kafkalab broker in this
# process, driven by the same encoded requests a Java producer sends, on a manual clock, so every
# number below is the engine's and the same on every run.
#
# A note on the setup: the chapter uses one broker. On kafkalab's three-broker simulation today
# the transaction coordinator writes its COMMIT and ABORT markers only into partitions that its
# own broker leads, so a transaction that wrote to partitions led by other brokers stays in
# PrepareCommit. On one broker every partition is local and the whole protocol
# runs as in Kafka.

# %%
from kafkalab.book import check_version
check_version("0.1.0")

# %%
import itertools

from kafkalab.book import remove_scratch_dirs, scratch_dir
from kafkalab.client.in_process import InProcessBroker
from kafkalab.client.in_process_txn import (READ_COMMITTED, READ_UNCOMMITTED, TxnProducer, committed_offset,
                                            consumer_view, fetch, list_offset)

START_MS = 1_700_000_000_000
broker = InProcessBroker(scratch_dir(), start_ms=START_MS)
broker.create_topic("orders", 2)
coordinator = broker.broker.txn_coordinator


def values(records) -> list[str]:
    return [r.value.decode() if r.marker is None else f"<{r.marker}>" for r in records]


def new_topic(prefix: str) -> str:
    """A topic of one partition under a fresh name, so a check cell can be run again."""
    name = next(f"{prefix}-{n}" for n in itertools.count(1) if broker.broker.topics.get(f"{prefix}-{n}") is None)
    broker.create_topic(name, 1)
    return name

# %% [markdown]
# ## Idempotence: producer id, epoch and sequence numbers
# An idempotent producer first sends **InitProducerId** (without a transactional id) and gets a
# **producer id** (PID) and an **epoch**. Every batch it sends carries the PID, the epoch and a
# **base sequence**: per partition, the sequences count records from 0, so a batch of two
# records that starts at 4 is followed by one starting at 6. The partition leader remembers, per
# PID, the sequences and offsets of the **last five batches** it appended (the producer state,
# kept in memory and snapshotted to `.snapshot` files at segment rolls).
#
# A correction to the source articles: idempotence is not something you have to switch on. Since
# Kafka 3.0 `enable.idempotence` defaults to true (with `acks=all`); kafkalab's producer has the
# same default:

# %%
from kafkalab.client.producer.config import producer_config

defaults = producer_config({})
print("enable.idempotence =", defaults.enable_idempotence, "| acks =", defaults.acks)

# %%
idem = TxnProducer(broker, None)
idem.init()
print(f"InitProducerId -> producer id {idem.producer_id}, epoch {idem.epoch}")
for n in range(3):
    answer = idem.produce("orders", 0, [f"order-{2 * n}".encode(), f"order-{2 * n + 1}".encode()])
    print(f"batch with base sequence {2 * n}: {answer.error.name}, base offset {answer.base_offset}")

# %% [markdown]
# Now the retry: the producer sends its last batch again (base sequence 4) because the answer was
# lost. The broker does **not** append it again, and it does not answer with an error either --
# it answers with the offset the first copy got, so the producer cannot tell the difference:

# %%
retry = idem.produce("orders", 0, [b"order-4", b"order-5"], sequence=4)
print(f"resent batch, base sequence 4: {retry.error.name}, base offset {retry.base_offset}")
print("log end offset (HW):", list_offset(broker, "orders", 0, READ_UNCOMMITTED))

# %% [markdown]
# A batch that skips ahead is refused: the broker expects base sequence 6 (last + 1), so 8 means
# records in between were lost, and the answer is OUT_OF_ORDER_SEQUENCE_NUMBER. The same rule
# orders batches when up to five requests are in flight: a batch that arrives before its
# predecessor is refused and retried after it.

# %%
gap = idem.produce("orders", 0, [b"order-8"], sequence=8)
print(f"base sequence 8 where 6 is expected: {gap.error.name}")

# %% [markdown]
# The guarantee has two limits. It is **per partition**: sequences are counted per partition, so
# nothing relates a batch in `orders-0` to one in `orders-1`. And it is **per producer
# session**: a producer that restarts without a `transactional.id` gets a new PID, and the
# broker cannot connect its batches to the old ones.

# %%
first_on_p1 = idem.produce("orders", 1, [b"order-x"])
print(f"first batch to orders-1: base sequence {idem.sequences[('orders', 1)] - 1}, offset {first_on_p1.base_offset}")
again = TxnProducer(broker, None)
again.init()
print(f"a restarted producer: producer id {again.producer_id} (was {idem.producer_id})")

# %% [markdown]
# ## Transactions: the coordinator and its state machine
# A transactional producer sets `transactional.id`. Its **transaction coordinator** is the
# broker leading partition `hash(transactional.id) % 50` of the internal topic
# `__transaction_state`, where the coordinator writes every state change of that id. The state
# machine is a table in `kafkalab/txn/state.py`: a key is (state, event), a value is the next
# state or the error the request is answered with.

# %%
from kafkalab.errors import ErrorCode
from kafkalab.txn.state import TRANSITIONS

for (state, event), outcome in TRANSITIONS.items():
    if isinstance(outcome, ErrorCode):
        continue
    print(f"{state.value:>17} --{event.value:-<20}-> {outcome.value}")

# %% [markdown]
# The other entries are refusals: for example an AddPartitionsToTxn while markers are being
# written is answered CONCURRENT_TRANSACTIONS (retriable), an EndTxn(abort) after a completed
# commit INVALID_TXN_STATE, and a commit retried after it completed is answered NONE.

# %%
refusals = [(s.value, e.value, o.name) for (s, e), o in TRANSITIONS.items() if isinstance(o, ErrorCode)]
for state, event, error in refusals[:6]:
    print(f"{state:>15} + {event:<18} -> {error}")
print(f"... {len(refusals)} refusals in all")

# %% [markdown]
# ## One transaction, message by message
# The Java client's `initTransactions()`, `beginTransaction()`, `send()` and
# `commitTransaction()` become these requests. `beginTransaction()` sends nothing: the coordinator
# learns of a transaction at its first **AddPartitionsToTxn**, which the producer sends before
# its first write to each partition.

# %%
app = TxnProducer(broker, "app-1")


def step(request: str, answer: object) -> None:
    _, meta = coordinator.describe("app-1")
    error = answer.name if isinstance(answer, ErrorCode) else answer.error.name
    print(f"{request:<38} -> {error:<5} coordinator: {meta.state.value:<14} partitions {sorted(meta.partitions)}")


step("InitProducerId(transactional.id=app-1)", app.init())
print(f"   producer id {app.producer_id}, epoch {app.epoch}; "
      f"__transaction_state partition {coordinator.partition_of('app-1')}")
before = {p: list_offset(broker, "orders", p, READ_UNCOMMITTED) for p in (0, 1)}
step("AddPartitionsToTxn(orders-0, orders-1)", app.add_partitions("orders", [0, 1]))
step("Produce orders-0: 2 records", app.produce("orders", 0, [b"pay-1", b"pay-2"]))
step("Produce orders-1: 1 record", app.produce("orders", 1, [b"ship-1"]))
for p in (0, 1):
    print(f"   orders-{p}: HW {list_offset(broker, 'orders', p, READ_UNCOMMITTED)}, "
          f"LSO {list_offset(broker, 'orders', p, READ_COMMITTED)}")
step("EndTxn(commit)", app.end(commit=True))

# %% [markdown]
# While the transaction was open, each partition's **last stable offset** (LSO) stayed at the
# transaction's first offset: the HW moved on, the LSO did not. EndTxn(commit) moved the
# coordinator to PrepareCommit (written to `__transaction_state` -- from here on the commit
# will happen even if the coordinator fails), then it sent **WriteTxnMarkers** to the leaders of
# both partitions, and when both had appended their marker it wrote CompleteCommit. The
# coordinator's log shows each step:

# %%
from kafkalab.records.codec import iter_batches
from kafkalab.txn.records import decode_key, decode_value
from kafkalab.txn.state import TransactionState

state_log = broker.broker.topics.partition("__transaction_state", coordinator.partition_of("app-1"))
segment = sorted(state_log.log.directory.glob("*.log"))[0]
for batch in iter_batches(segment.read_bytes()):
    for record in batch.records:
        value = decode_value(record.value)
        print(f"offset {record.offset}: {decode_key(record.key)} {TransactionState.from_id(value.status).value:<14} "
              f"epoch {value.producer_epoch} partitions {sorted(value.partitions)}")

# %% [markdown]
# ## Markers in the partitions
# Each marker is a **control batch**: one record whose key says COMMIT or ABORT, in a batch with
# the control flag set, carrying the producer id. It takes an offset of its own, so a
# transaction of 2 + 1 records used 5 offsets. A consumer never hands a control record to the
# application.

# %%
for p in (0, 1):
    answer = fetch(broker, "orders", p, before[p])
    print(f"orders-{p} from offset {before[p]}:",
          [(r.offset, v) for r, v in zip(answer.records, values(answer.records))],
          f"HW {answer.high_watermark}, LSO {answer.last_stable_offset}")

# %% [markdown]
# ## An aborted transaction, the `.txnindex`, and the two isolation levels
# Now a transaction that aborts. Its records stay in the log -- Kafka never removes records from
# the middle of a log -- followed by an ABORT marker. When the marker is appended, the partition
# also writes an entry to the segment's **aborted transaction index**, `.txnindex`: producer id,
# first and last offset, and the LSO after it, 34 bytes.

# %%
from kafkalab.storage.txn_index import TransactionIndex

start = list_offset(broker, "orders", 0, READ_UNCOMMITTED)
app.add_partitions("orders", [0])
app.produce("orders", 0, [b"pay-3", b"pay-4"])
step("EndTxn(abort)", app.end(commit=False))
app.add_partitions("orders", [0])
app.produce("orders", 0, [b"pay-5"])
step("EndTxn(commit)", app.end(commit=True))

partition_dir = broker.broker.topics.partition("orders", 0).log.directory
txnindex = sorted(partition_dir.glob("*.txnindex"))[0]
raw = txnindex.read_bytes()
print(f"{txnindex.name}: {len(raw)} bytes:", " | ".join(raw[a:b].hex() for a, b in ((0, 2), (2, 10), (10, 18), (18, 26), (26, 34))))
print(TransactionIndex(txnindex, 0).entries)

# %% [markdown]
# The same log, read from offset `start` with each isolation level. With **read_uncommitted**
# (the consumer's default) the broker returns everything up to the HW and the consumer shows
# every data record, aborted or not. With **read_committed** the broker stops at the LSO and
# sends the list of aborted transactions in the range (from the `.txnindex`); the consumer
# drops those producers' records up to their ABORT markers.

# %%
for name, level in (("read_uncommitted", READ_UNCOMMITTED), ("read_committed", READ_COMMITTED)):
    answer = fetch(broker, "orders", 0, start, isolation_level=level)
    print(f"{name:>16}: aborted list {list(answer.aborted)}, application sees {values(consumer_view(answer))}")

# %% [markdown]
# ## Zombie fencing
# A producer that stalls (a long GC pause, a network partition) may be replaced by a new instance
# with the same `transactional.id`. The old one -- a **zombie** -- may wake up and keep writing.
# The new instance's InitProducerId fences it: the coordinator bumps the epoch, aborts any open
# transaction of the old one (its markers carry the new epoch), and from then on answers
# the old epoch with an error. The first InitProducerId may be answered CONCURRENT_TRANSACTIONS
# while that abort completes; the client retries.

# %%
zombie = app
zombie.add_partitions("orders", [1])
zombie.produce("orders", 1, [b"from-the-zombie"])
successor = TxnProducer(broker, "app-1")
answer = successor.init()
print("new instance, InitProducerId:", answer.name)
while answer == ErrorCode.CONCURRENT_TRANSACTIONS:
    broker.advance(100)  # retry.backoff.ms
    answer = successor.init()
print(f"new instance, InitProducerId again: {answer.name}, producer id {successor.producer_id}, "
      f"epoch {successor.epoch} (the zombie has epoch {zombie.epoch})")
print("zombie's AddPartitionsToTxn:", zombie.add_partitions("orders", [0]).name)
print("orders-1 now ends with:", values(fetch(broker, "orders", 1, 0).records)[-2:])

# %% [markdown]
# Two bumps: the fence took epoch 1 (the abort of the zombie's transaction and its marker in
# `orders-1` carry it), and the retried InitProducerId took epoch 2 for the new instance.
#
# The seed articles say "the earlier producer reports an error": that is this PRODUCER_FENCED,
# which the Java client raises as `ProducerFencedException`; the producer must be closed.

# %% [markdown]
# ## `transaction.timeout.ms`: a transaction nobody ends
# A producer that crashes mid-transaction and never comes back would hold the LSO of every
# partition it wrote forever, stalling every read_committed consumer. The producer declares a
# timeout at InitProducerId (`transaction.timeout.ms`, default 60 s; the coordinator refuses one
# above `transaction.max.timeout.ms`, 15 minutes, with INVALID_TRANSACTION_TIMEOUT). When a
# transaction has been open longer, the coordinator fences the producer (bumps the epoch) and
# aborts the transaction itself.

# %%
hanging = TxnProducer(broker, "batch-job", timeout_ms=60_000)
hanging.init()
hanging.add_partitions("orders", [1])
hanging.produce("orders", 1, [b"half-done"])
print("the producer crashes now; nothing else is sent for it")
for seconds in (30, 30, 1):
    broker.advance(seconds * 1000)
    _, meta = coordinator.describe("batch-job")
    print(f"clock at {(broker.now_ms() - START_MS) / 1000:>5.1f} s: {meta.state.value:<13} epoch {meta.producer_epoch}; "
          f"orders-1 HW {list_offset(broker, 'orders', 1, READ_UNCOMMITTED)}, "
          f"LSO {list_offset(broker, 'orders', 1, READ_COMMITTED)}")

# %% [markdown]
# Kafka's coordinator looks for expired transactions every
# `transaction.abort.timed.out.transaction.cleanup.interval.ms` (10 s), so its abort comes up to
# 10 s late; kafkalab schedules one timer per transaction on the broker's timing wheel (chapter
# 13), so the abort comes as soon as the timeout passes.
#
# ## Exactly once: consume, transform, produce
# The pattern transactions were made for: read from `words`, write the upper-cased words to
# `upper`, and commit the consumer's position **in the same transaction** (AddOffsetsToTxn, then
# TxnOffsetCommit). Either the output records and the new position both become visible, or
# neither does. We run it in batches of two and crash the application after it has written its
# second batch but before it commits.

# %%
broker.create_topic("words", 1)
broker.create_topic("upper", 1)
source = TxnProducer(broker, None)
source.init()
source.produce("words", 0, [b"apple", b"banana", b"cherry", b"date", b"elder", b"fig"])
GROUP = "upper-app"


def process_one_batch(worker: TxnProducer, crash_before_commit: bool = False) -> None:
    position = max(committed_offset(broker, GROUP, "words", 0), 0)
    batch = consumer_view(fetch(broker, "words", 0, position, isolation_level=READ_COMMITTED))[:2]
    if not batch:
        return
    worker.add_partitions("upper", [0])
    worker.produce("upper", 0, [r.value.upper() for r in batch])
    worker.add_offsets(GROUP)
    worker.commit_offsets(GROUP, "words", {0: batch[-1].offset + 1})
    print(f"  read {values(batch)} from offset {position}, wrote them upper-cased, offset {batch[-1].offset + 1} pending")
    if crash_before_commit:
        print("  ** crash before EndTxn **")
        return
    print("  EndTxn(commit):", worker.end(commit=True).name)


def start_worker() -> TxnProducer:
    worker = TxnProducer(broker, "upper-app-0")
    while worker.init() == ErrorCode.CONCURRENT_TRANSACTIONS:
        broker.advance(100)
    return worker


worker = start_worker()
process_one_batch(worker)
process_one_batch(worker, crash_before_commit=True)
pending = committed_offset(broker, GROUP, "words", 0)
print("OffsetFetch(require_stable) for the group now:", "UNSTABLE_OFFSET_COMMIT" if pending == -2 else pending)

# %% [markdown]
# While a transactional offset commit is pending, OffsetFetch with `require_stable` (what a
# read_committed consumer sends) is answered UNSTABLE_OFFSET_COMMIT, so no consumer starts from
# an offset that may yet be rolled back. The replacement instance uses the same `transactional.id`. Its InitProducerId aborts the
# crashed transaction: an ABORT marker in `upper`, and the pending offset commit is dropped. It
# resumes from the last committed position and processes the rest.

# %%
worker = start_worker()
print("after restart, committed position:", committed_offset(broker, GROUP, "words", 0))
for _ in range(3):
    process_one_batch(worker)
everything = fetch(broker, "upper", 0, 0)
committed = consumer_view(fetch(broker, "upper", 0, 0, isolation_level=READ_COMMITTED))
print("upper, every record in the log:  ", values(everything.records))
print("upper, a read_uncommitted reader:", values(consumer_view(everything)))
print("upper, a read_committed reader:  ", values(committed))

# %% [markdown]
# The log holds CHERRY and DATE twice, and a read_uncommitted reader sees both copies. A
# read_committed reader sees every word exactly once, in order: nothing duplicated, nothing
# lost. (Exactly once holds for what stays inside Kafka. A side effect outside it -- an e-mail
# sent while processing -- is not undone by an abort.)
#
# ## The timeline widget
# Each step of a transaction against one broker: the coordinator's state along the top; below,
# each partition's HW (solid) and LSO (dashed), and a triangle where a COMMIT (up) or ABORT
# (down) marker landed. The stored figure commits a transaction over two partitions, then
# starts another on `orders-0`, crashes the producer and waits past `transaction.timeout.ms`
# (10 s here). Live, the buttons begin (which sends nothing), send, commit, abort, crash and
# restart the producer (a restart fences the old epoch), restart the broker and with it the
# coordinator (it reloads the open transaction from `__transaction_state`, and the partitions
# rebuild their LSO from the log), and advance time past the timeout.

# %%
from kafkalab.viz.transactions import show_transactions

widget = show_transactions(scratch_dir())

# %% [markdown]
# ## Exercises
# Each prediction starts blank. Write your answer, run the check cell: it tells you if you are
# right, and gives a hint if not.
#
# **Predict, then check 1.** A fresh idempotent producer sends six batches of two records to a
# new partition (base sequences 0, 2, 4, 6, 8, 10, at offsets 0, 2, ..., 10). It then resends
# its *second* batch (base sequence 2). What base offset does the broker answer?

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- a base offset, or an error name as a string
my_prediction = 2
### END SOLUTION

# %% tags=["check"]
from kafkalab.book import check_prediction

retries = new_topic("retries")
retrier = TxnProducer(broker, None)
retrier.init()
for _ in range(6):
    retrier.produce(retries, 0, [b"r", b"r"])
resent = retrier.produce(retries, 0, [b"r", b"r"], sequence=2)
actual = resent.base_offset if resent.error == ErrorCode.NONE else resent.error.name
check_prediction(my_prediction, actual, right=f"offset {actual}: the batch is among the last five the broker keeps",
                 hint="count how many batches the broker remembers per producer, and where this one falls")
### BEGIN HIDDEN TESTS
assert retrier.produce(retries, 0, [b"r", b"r"], sequence=0).error.name == "OUT_OF_ORDER_SEQUENCE_NUMBER"
### END HIDDEN TESTS

# %% [markdown]
# **Predict, then check 2.** On a new partition a plain producer writes 3 records (offsets 0-2);
# a transactional producer then writes 4 records in a transaction it leaves open; then the plain
# producer writes 2 more. What does ListOffsets(latest) answer with `read_committed`?

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- an offset
my_prediction = 3
### END SOLUTION

# %% tags=["check"]
mixed = new_topic("mixed")
plain = TxnProducer(broker, None)
plain.init()
plain.produce(mixed, 0, [b"a", b"b", b"c"])
open_txn = TxnProducer(broker, f"open-{mixed}")
open_txn.init()
open_txn.add_partitions(mixed, [0])
open_txn.produce(mixed, 0, [b"t1", b"t2", b"t3", b"t4"])
plain.produce(mixed, 0, [b"d", b"e"])
lso = list_offset(broker, mixed, 0, READ_COMMITTED)
check_prediction(my_prediction, lso, right=f"{lso}: the first offset of the open transaction, "
                 "so even the plain records after it wait",
                 hint="the LSO is the smallest first offset of any transaction still open, not the HW")
### BEGIN HIDDEN TESTS
assert list_offset(broker, mixed, 0, READ_UNCOMMITTED) == 9
### END HIDDEN TESTS

# %% [markdown]
# **Predict, then check 3.** After the fencing above, the zombie producer (epoch
# `zombie.epoch`) tries to write one more batch to `orders-1`, a partition that got the ABORT
# marker with the new epoch. Which error does the Produce answer carry? (An error name as a
# string.)

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- an error name, e.g. "NONE"
my_prediction = "INVALID_PRODUCER_EPOCH"
### END SOLUTION

# %% tags=["check"]
late_write = zombie.produce("orders", 1, [b"too-late"]).error.name
check_prediction(my_prediction, late_write, right=f"{late_write}: this batch would open a transaction in "
                 "orders-1, so the leader first asks the coordinator (transaction verification, KIP-890), which "
                 "knows a newer epoch and answers PRODUCER_FENCED; a Produce reports that as "
                 "INVALID_PRODUCER_EPOCH. With transaction.partition.verification.enable=false the partition's "
                 "own check gives the same answer: its ABORT marker carried the new epoch",
                 hint="the partition leader answers a Produce; what do it, and the coordinator it may ask, know "
                 "about this producer id since the ABORT marker?")
### BEGIN HIDDEN TESTS
assert "too-late" not in values(fetch(broker, "orders", 1, 0).records)
### END HIDDEN TESTS

# %% [markdown]
# **Change the engine.** The partition remembers the last five batches of each producer because
# a producer keeps at most five requests in flight (`max.in.flight.requests.per.connection` may
# not exceed 5 with idempotence on). Make it remember one: set `NUM_BATCHES_TO_RETAIN` to 1 in
# `kafkalab/storage/producer_state.py` and restart the kernel. The check below fails before the
# edit and passes after it: it retries the second of three batches. Which error does the retry get
# now, and what would a Java producer with five requests in flight do when a lost answer makes
# it resend the oldest one?
# Undo the edit afterwards.

# %% tags=["raises-exception"]
from kafkalab.classroom.engine_changes import check as engine_change_check

engine_change_check("one-batch-retained")  # raises EngineUnchanged until the engine is edited

# %% [markdown]
# The broker's files live in scratch directories; this last cell removes them.

# %%
broker.close()
remove_scratch_dirs()
