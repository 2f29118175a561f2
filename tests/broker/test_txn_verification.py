"""Transaction verification (KIP-890 part 1) through the sans-I/O broker: a transactional batch
reaches a partition only if the coordinator has that partition in the producer's transaction.
The batches are kafka-python's (``DefaultRecordBatchBuilder``), not kafkalab's."""

from __future__ import annotations

from typing import Any

from kafkalab.broker.txn_verification import VERIFICATION_ENABLE, TxnVerificationChannel, produce_error
from kafkalab.errors import ErrorCode
from kafkalab.protocol.api_keys import ApiKey
from tests.broker._harness import Harness
from tests.broker._txn import stored_batches, txn_batch

TXN = "app"
SMALL = {"transaction.state.log.num.partitions": "1"}  # quicker to create than 50


def _begin(h: Harness, partitions: list[int]) -> tuple[int, int]:
    """InitProducerId, then AddPartitionsToTxn for ``orders`` ``partitions``."""
    init = h.call(ApiKey.INIT_PRODUCER_ID, 1, {"transactional_id": TXN, "transaction_timeout_ms": 60_000})
    assert init.error_code == 0
    pid, epoch = init.producer_id, init.producer_epoch
    added = h.call(ApiKey.ADD_PARTITIONS_TO_TXN, 3, {
        "v3_and_below_transactional_id": TXN, "v3_and_below_producer_id": pid, "v3_and_below_producer_epoch": epoch,
        "v3_and_below_topics": [{"name": "orders", "partitions": partitions}]})
    assert all(p.partition_error_code == 0 for t in added.results_by_topic_v3_and_below for p in t.results_by_partition)
    return pid, epoch


def _produce(h: Harness, partition: int, batch: bytes, version: int = 9) -> Any:
    body = {"transactional_id": TXN, "acks": -1, "timeout_ms": 1000, "topic_data": [
        {"name": "orders", "partition_data": [{"index": partition, "records": batch}]}]}
    return h.call(ApiKey.PRODUCE, version, body).responses[0].partition_responses[0]


def _offsets(h: Harness, partition: int) -> tuple[int, int]:
    log = h.broker.topics.log("orders", partition)
    return log.high_watermark, log.last_stable_offset


def test_a_batch_for_a_partition_not_in_the_transaction_is_refused(tmp_path):
    h = Harness(tmp_path, properties=SMALL)
    h.create_topic("orders", partitions=2)
    pid, epoch = _begin(h, [0])
    stray = _produce(h, 1, txn_batch(pid, epoch, 0, [b"stray"]))
    assert (stray.error_code, stray.base_offset) == (ErrorCode.INVALID_TXN_STATE, -1)
    assert stray.error_message == "Partition was not added to the transaction"
    assert stored_batches(h, "orders", 1) == [] and _offsets(h, 1) == (0, 0)
    assert _produce(h, 0, txn_batch(pid, epoch, 0, [b"a"])).error_code == 0
    assert _offsets(h, 0) == (1, 0)  # the transaction is open in orders-0: LSO held at its start


def test_a_late_batch_of_an_aborted_transaction_cannot_leave_it_hanging(tmp_path):
    """The batch that Kafka's KIP-890 is about: retried after its transaction was aborted."""
    h = Harness(tmp_path, properties=SMALL)
    h.create_topic("orders")
    pid, epoch = _begin(h, [0])
    assert _produce(h, 0, txn_batch(pid, epoch, 0, [b"a"])).error_code == 0
    assert h.call(ApiKey.END_TXN, 0, {"transactional_id": TXN, "producer_id": pid, "producer_epoch": epoch,
                                      "committed": False}).error_code == 0
    assert _offsets(h, 0) == (2, 2)  # record, ABORT marker: nothing open
    late = _produce(h, 0, txn_batch(pid, epoch, 1, [b"late"]))
    assert late.error_code == ErrorCode.INVALID_TXN_STATE
    assert _offsets(h, 0) == (2, 2) and len(stored_batches(h, "orders", 0)) == 2


def test_without_verification_the_late_batch_hangs_the_partition(tmp_path):
    """``transaction.partition.verification.enable=false``: Kafka before 3.6. The late batch opens a
    transaction no coordinator knows, and the last stable offset stops in front of it."""
    h = Harness(tmp_path, properties={**SMALL, VERIFICATION_ENABLE: "false"})
    h.create_topic("orders")
    pid, epoch = _begin(h, [0])
    assert _produce(h, 0, txn_batch(pid, epoch, 0, [b"a"])).error_code == 0
    assert h.call(ApiKey.END_TXN, 0, {"transactional_id": TXN, "producer_id": pid, "producer_epoch": epoch,
                                      "committed": False}).error_code == 0
    assert _produce(h, 0, txn_batch(pid, epoch, 1, [b"late"])).error_code == 0
    assert _offsets(h, 0) == (3, 2)  # hanging: read_committed readers stop at offset 2


def test_only_a_transactions_first_batch_in_a_partition_asks_the_coordinator(tmp_path):
    h = Harness(tmp_path, properties=SMALL)
    h.create_topic("orders")
    asked: list[Any] = []

    class Counting(TxnVerificationChannel):
        def verify(self, request: Any, on_complete: Any) -> None:
            asked.append(request.partitions)
            super().verify(request, on_complete)

    h.broker.txn_verification = Counting(h.broker)
    pid, epoch = _begin(h, [0])
    for sequence in range(3):
        assert _produce(h, 0, txn_batch(pid, epoch, sequence, [b"v"])).error_code == 0
    assert asked == [(("orders", 0),)]
    assert h.call(ApiKey.END_TXN, 0, {"transactional_id": TXN, "producer_id": pid, "producer_epoch": epoch,
                                      "committed": True}).error_code == 0
    h.call(ApiKey.ADD_PARTITIONS_TO_TXN, 3, {
        "v3_and_below_transactional_id": TXN, "v3_and_below_producer_id": pid, "v3_and_below_producer_epoch": epoch,
        "v3_and_below_topics": [{"name": "orders", "partitions": [0]}]})
    assert _produce(h, 0, txn_batch(pid, epoch, 3, [b"next"])).error_code == 0
    assert len(asked) == 2  # the next transaction's first batch is verified again


def test_verification_can_be_turned_off_while_the_broker_runs(tmp_path):
    h = Harness(tmp_path, properties=SMALL)
    h.create_topic("orders", partitions=2)
    pid, epoch = _begin(h, [0])
    altered = h.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, {"resources": [{
        "resource_type": 4, "resource_name": "", "configs": [
            {"name": VERIFICATION_ENABLE, "config_operation": 0, "value": "false"}]}], "validate_only": False})
    assert altered.responses[0].error_code == 0
    assert _produce(h, 1, txn_batch(pid, epoch, 0, [b"unchecked"])).error_code == 0


def test_coordinator_answers_become_produce_errors_as_in_kafka():
    old, new = 9, 11
    assert produce_error(ErrorCode.NONE, old) == ErrorCode.NONE
    assert produce_error(ErrorCode.TRANSACTION_ABORTABLE, old) == ErrorCode.INVALID_TXN_STATE
    assert produce_error(ErrorCode.TRANSACTION_ABORTABLE, new) == ErrorCode.TRANSACTION_ABORTABLE
    assert produce_error(ErrorCode.PRODUCER_FENCED, old) == ErrorCode.INVALID_PRODUCER_EPOCH
    for retriable in (ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.NOT_COORDINATOR, ErrorCode.NETWORK_EXCEPTION,
                      ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS):
        assert produce_error(retriable, old) == ErrorCode.NOT_ENOUGH_REPLICAS
    assert produce_error(ErrorCode.INVALID_PRODUCER_ID_MAPPING, old) == ErrorCode.INVALID_PRODUCER_ID_MAPPING


class _Held(TxnVerificationChannel):
    """A coordinator far away: each question waits until the test releases its answer."""

    def __init__(self, broker: Any) -> None:
        super().__init__(broker)
        self.held: list[tuple[Any, Any]] = []

    def verify(self, request: Any, on_complete: Any) -> None:
        self.held.append((request, on_complete))


def _park(h: Harness, pid: int, epoch: int) -> tuple[_Held, int]:
    channel = _Held(h.broker)
    h.broker.txn_verification = channel
    body = {"transactional_id": TXN, "acks": -1, "timeout_ms": 1000, "topic_data": [
        {"name": "orders", "partition_data": [{"index": 0, "records": txn_batch(pid, epoch, 0, [b"a"])}]}]}
    correlation_id = h.send(ApiKey.PRODUCE, 9, body)
    assert h.outgoing() == [] and len(channel.held) == 1  # parked until the coordinator answers
    return channel, correlation_id


def _answer(h: Harness, correlation_id: int) -> Any:
    [out] = h.outgoing()
    return h.decode(out, ApiKey.PRODUCE, 9, correlation_id).responses[0].partition_responses[0]


def test_a_late_yes_is_applied_while_the_transaction_is_still_open(tmp_path):
    h = Harness(tmp_path, properties=SMALL)
    h.create_topic("orders")
    pid, epoch = _begin(h, [0])
    channel, correlation_id = _park(h, pid, epoch)
    _request, on_complete = channel.held.pop()
    on_complete({("orders", 0): ErrorCode.NONE})
    assert _answer(h, correlation_id).error_code == 0
    assert _offsets(h, 0) == (1, 0) and channel.guards == {}


def test_a_yes_that_arrives_after_the_abort_marker_is_void(tmp_path):
    """Kafka's VerificationGuard: the coordinator said yes, then the transaction was aborted and
    its marker written before the yes reached the leader. Appending now would open a
    transaction after its own marker, one nothing would ever close."""
    h = Harness(tmp_path, properties=SMALL)
    h.create_topic("orders")
    pid, epoch = _begin(h, [0])
    channel, correlation_id = _park(h, pid, epoch)
    ended = h.call(ApiKey.END_TXN, 0, {"transactional_id": TXN, "producer_id": pid, "producer_epoch": epoch,
                                       "committed": False}, connection_id=2)
    assert ended.error_code == 0 and _offsets(h, 0) == (1, 1)  # the ABORT marker, closing nothing here
    _request, on_complete = channel.held.pop()
    on_complete({("orders", 0): ErrorCode.NONE})  # the stale yes
    assert _answer(h, correlation_id).error_code == ErrorCode.INVALID_TXN_STATE
    assert _offsets(h, 0) == (1, 1) and len(stored_batches(h, "orders", 0)) == 1
