"""WriteTxnMarkers on a lone broker: the request is encoded and the response decoded by
kafka-python, the marker batches it stores are read back by kafka-python's record reader."""

from __future__ import annotations

from kafkalab.broker.handlers.txn_markers import TxnMarker, TxnMarkerResult, write_txn_markers
from kafkalab.errors import ErrorCode
from tests.broker._harness import Harness
from tests.broker._txn import stored_batches, txn_batch, write_markers

PID = 4000


def test_commit_marker_is_a_control_batch_kafka_python_reads(tmp_path):
    h = Harness(tmp_path)
    h.create_topic("orders", 2)
    assert h.produce("orders", 0, txn_batch(PID, 2, 0, [b"a", b"b"])).error_code == 0
    answer = write_markers(h, [(PID, 2, True, 7, {"orders": [0]})])
    assert answer == {(PID, "orders", 0): 0}
    data, marker = stored_batches(h, "orders", 0)
    assert not data.is_control_batch and data.is_transactional
    assert marker.is_control_batch and marker.is_transactional
    assert (marker.base_offset, marker.producer_id, marker.producer_epoch, marker.base_sequence) == (2, PID, 2, -1)
    [control] = list(marker)
    assert not control.abort and control.type == 1
    assert control.value[2:] == (7).to_bytes(4, "big")  # version int16 0, coordinator epoch int32
    assert h.log_store.get_log("orders", 0).log_end_offset == 3
    h.close()


def test_abort_marker_and_one_marker_for_several_partitions(tmp_path):
    h = Harness(tmp_path)
    h.create_topic("orders", 2)
    h.produce("orders", 0, txn_batch(PID, 0, 0, [b"a"]))
    h.produce("orders", 1, txn_batch(PID, 0, 0, [b"b"]))
    answer = write_markers(h, [(PID, 0, False, 1, {"orders": [0, 1]})])
    assert answer == {(PID, "orders", 0): 0, (PID, "orders", 1): 0}
    for partition in (0, 1):
        [control] = list(stored_batches(h, "orders", partition)[-1])
        assert control.abort
    h.close()


def test_marker_errors_unknown_partition_old_epoch_old_coordinator_epoch(tmp_path):
    h = Harness(tmp_path)
    h.create_topic("orders", 1)
    h.produce("orders", 0, txn_batch(PID, 3, 0, [b"a"]))
    assert write_markers(h, [(PID, 3, True, 5, {"orders": [0, 9], "nope": [0]})]) == {
        (PID, "orders", 0): 0,
        (PID, "orders", 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        (PID, "nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    end = h.log_store.get_log("orders", 0).log_end_offset
    # An older producer epoch: a zombie coordinator's marker for a fenced producer.
    assert write_markers(h, [(PID, 2, False, 5, {"orders": [0]})]) == {
        (PID, "orders", 0): ErrorCode.INVALID_PRODUCER_EPOCH}
    # An older coordinator epoch: a coordinator that lost __transaction_state leadership.
    assert write_markers(h, [(PID, 3, False, 4, {"orders": [0]})]) == {
        (PID, "orders", 0): ErrorCode.TRANSACTION_COORDINATOR_FENCED}
    assert h.log_store.get_log("orders", 0).log_end_offset == end  # nothing was appended
    # The same coordinator epoch again is fine (a retry), and so is a newer one.
    assert write_markers(h, [(PID, 3, False, 5, {"orders": [0]}), (PID, 3, True, 6, {"orders": [0]})]) == {
        (PID, "orders", 0): 0}
    h.close()


def test_marker_without_open_transaction_is_appended(tmp_path):
    """The coordinator writes to every partition it was told of; one where the producer never
    wrote still gets the marker (Kafka appends it and completes no transaction)."""
    h = Harness(tmp_path)
    h.create_topic("orders", 1)
    assert write_markers(h, [(PID, 0, True, 0, {"orders": [0]})]) == {(PID, "orders", 0): 0}
    [marker] = stored_batches(h, "orders", 0)
    assert marker.is_control_batch
    h.close()


def test_in_process_call_answers_at_once_on_a_lone_broker(tmp_path):
    h = Harness(tmp_path)
    h.create_topic("orders", 1)
    h.produce("orders", 0, txn_batch(PID, 0, 0, [b"a"]))
    got: list[list[TxnMarkerResult]] = []
    marker = TxnMarker(PID, 0, 3, commit=True, partitions=(("orders", 0), ("orders", 5)))
    write_txn_markers(h.broker, [marker], h.clock.milliseconds(), got.append)
    assert got == [[TxnMarkerResult(PID, "orders", 0, ErrorCode.NONE),
                     TxnMarkerResult(PID, "orders", 5, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]]
    h.close()


def test_clients_still_may_not_write_control_batches(tmp_path):
    """Produce keeps refusing control batches: only the coordinator's path writes them."""
    from kafkalab.records.control import build_end_txn_marker

    h = Harness(tmp_path)
    h.create_topic("orders", 1)
    marker = build_end_txn_marker(commit=True, offset=0, timestamp_ms=1_000_000, producer_id=PID,
                                  producer_epoch=0, coordinator_epoch=0)
    assert h.produce("orders", 0, marker).error_code == ErrorCode.INVALID_RECORD
    h.close()
