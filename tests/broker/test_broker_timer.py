"""The broker's one timer on a ManualClock: delayed fetches in the purgatory, retention, delayed
file deletes, the flusher and the periodic checkpoints, and configs applied to live logs."""

from __future__ import annotations

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkalab.broker.delayed_fetch import DelayedFetch
from kafkalab.clock import ManualClock
from kafkalab.errors import ConfigError
from kafkalab.purgatory import DelayedOperationPurgatory
from kafkalab.storage import checkpoints
from tests.broker._harness import Harness, batch, decode_records, records_of

FAST = {
    "log.retention.check.interval.ms": "1000",
    "log.segment.delete.delay.ms": "5000",
    "log.flush.start.offset.checkpoint.interval.ms": "2000",
    "log.flush.offset.checkpoint.interval.ms": "3000",
    "replica.high.watermark.checkpoint.interval.ms": "3000",
}


def _alter_topic(h: Harness, topic: str, **configs: str) -> None:
    body = {"resources": [{"resource_type": 2, "resource_name": topic, "configs": [
        {"name": k.replace("_", "."), "config_operation": 0, "value": v} for k, v in configs.items()]}],
        "validate_only": False}
    result = h.call(44, 1, body).responses[0]
    assert result.error_code == 0, result.error_message


def _segment_files(h: Harness, topic: str, suffix: str) -> list[str]:
    return sorted(p.name for p in (h.data_dir / f"{topic}-0").iterdir() if p.name.endswith(suffix))


# --- DelayedFetch on its own ---------------------------------------------------------------------


class _FakeLog:
    def __init__(self) -> None:
        self.size_bytes = 0
        self.reads = 0

    def read(self) -> tuple[str, int, bool]:
        self.reads += 1
        return f"{self.size_bytes} bytes", self.size_bytes, False


def _delayed(clock: ManualClock, log: _FakeLog, answers: list[str], *, wait_ms: int = 500) -> tuple:
    purgatory: DelayedOperationPurgatory[DelayedFetch] = DelayedOperationPurgatory("Fetch", clock)
    fetch = DelayedFetch(7, wait_ms, 100, log.read, answers.append)
    purgatory.try_complete_else_watch(fetch, [("t", 0)])
    return purgatory, fetch


def test_delayed_fetch_completed_by_produce_answers_once_and_leaves_the_timer():
    clock, log, answers = ManualClock(1_000), _FakeLog(), []
    purgatory, fetch = _delayed(clock, log, answers)
    log.size_bytes = 60
    assert purgatory.check_and_complete(("t", 0)) == 0 and answers == []
    log.size_bytes = 120
    assert purgatory.check_and_complete(("t", 0)) == 1 and answers == ["120 bytes"]
    assert purgatory.num_delayed() == 0 and purgatory.watched() == 0
    clock.advance_ms(10_000)
    purgatory.advance_clock()
    assert answers == ["120 bytes"] and not fetch.expired


def test_delayed_fetch_expires_with_whatever_is_there():
    clock, log, answers = ManualClock(1_000), _FakeLog(), []
    purgatory, fetch = _delayed(clock, log, answers, wait_ms=500)
    log.size_bytes = 30
    clock.advance_ms(499)
    purgatory.advance_clock()
    assert answers == []
    clock.advance_ms(1)
    purgatory.advance_clock()
    assert answers == ["30 bytes"] and fetch.expired
    assert purgatory.check_and_complete(("t", 0)) == 0 and answers == ["30 bytes"]


def test_delayed_fetch_error_completes_at_once_and_abandoned_never_answers():
    clock, log, answers = ManualClock(0), _FakeLog(), []
    purgatory, fetch = _delayed(clock, log, answers)
    fetch.abandon()
    log.size_bytes = 1_000
    assert purgatory.check_and_complete(("t", 0)) == 0
    clock.advance_ms(1_000)
    purgatory.advance_clock()
    assert answers == [] and fetch.is_completed and not fetch.expired
    failing = DelayedFetch(8, 500, 100, lambda: ("error", 0, True), answers.append)
    assert purgatory.try_complete_else_watch(failing, [("t", 0)]) and answers == ["error"]


# --- DelayedFetch inside the broker --------------------------------------------------------------


def test_parked_fetch_completed_by_produce_is_not_answered_again_at_its_deadline(tmp_path):
    h = Harness(tmp_path)
    h.create_topic("t")
    h.send(1, 11, h.fetch_body("t", 0, 0, max_wait_ms=1_000), connection_id=5)
    h.advance(400)
    h.send(0, 7, {"acks": 1, "timeout_ms": 1, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": batch([b"x"])}]}]})
    outs = h.outgoing()
    assert [o.connection_id for o in outs] == [5, 1]
    assert [v for _, _, v, _ in decode_records(records_of(h.decode(outs[0], 1, 11).responses[0].partitions[0]))] == [b"x"]
    h.advance(2_000)
    assert h.outgoing() == [] and h.broker.parked_fetches == {}
    assert h.broker.fetch_purgatory.watched() == 0


def test_many_expired_fetches_are_purged_from_the_watch_list(tmp_path):
    h = Harness(tmp_path)
    h.create_topic("t")
    for connection_id in range(10, 1_200):
        h.send(1, 11, h.fetch_body("t", 0, 0, max_wait_ms=100), connection_id=connection_id)
    assert len(h.broker.parked_fetches) == 1_190 and h.broker.fetch_purgatory.watched() == 1_190
    h.advance(100)
    assert len(h.outgoing()) == 1_190
    assert h.broker.fetch_purgatory.watched() == 0  # 1,190 completed > purge interval of 1,000


# --- retention, delayed deletes, flusher, checkpoints -------------------------------------------


def test_lowered_retention_ms_deletes_the_old_segment_at_the_next_check(tmp_path):
    h = Harness(tmp_path, properties=FAST)
    h.create_topic("t", 1, {"segment.bytes": "100"})
    now_ms = h.clock.milliseconds()
    h.produce("t", 0, batch([b"old"], timestamp_ms=now_ms - 120_000))
    h.produce("t", 0, batch([b"new"], timestamp_ms=now_ms))  # rolls: 100 bytes hold one batch
    assert _segment_files(h, "t", ".log") == ["00000000000000000000.log", "00000000000000000001.log"]
    _alter_topic(h, "t", retention_ms="60000")
    h.advance(999)
    assert len(h.log_store.get_log("t", 0).segments) == 2  # the first check is 1,000 ms after start
    h.advance(1)
    log = h.log_store.get_log("t", 0)
    assert [s.base_offset for s in log.segments] == [1] and log.log_start_offset == 1
    assert _segment_files(h, "t", ".deleted") == [
        "00000000000000000000.index.deleted", "00000000000000000000.log.deleted",
        "00000000000000000000.timeindex.deleted"]
    h.advance(4_999)
    assert _segment_files(h, "t", ".deleted") != []  # log.segment.delete.delay.ms is 5,000
    h.advance(1)
    assert _segment_files(h, "t", ".deleted") == []
    data = h.call(1, 11, h.fetch_body("t", 0, 1)).responses[0].partitions[0]
    assert data.log_start_offset == 1 and [v for *_, v, _ in decode_records(records_of(data))] == [b"new"]
    assert h.broker.housekeeping.retention_deleted_segments == 1


def test_broker_default_alter_reaches_live_logs_and_topic_file_delete_delay(tmp_path):
    h = Harness(tmp_path, properties={"log.retention.check.interval.ms": "500"})
    h.create_topic("t", 1, {"segment.bytes": "100", "file.delete.delay.ms": "0"})
    h.produce("t", 0, batch([b"a"], timestamp_ms=1))
    h.produce("t", 0, batch([b"b"], timestamp_ms=h.clock.milliseconds()))
    body = {"resources": [{"resource_type": 4, "resource_name": "", "configs": [
        {"name": "log.retention.ms", "config_operation": 0, "value": "10000"}]}], "validate_only": False}
    assert h.call(44, 1, body).responses[0].error_code == 0
    assert h.log_store.get_log("t", 0).config.retention_ms == 10_000
    h.advance(500)
    assert _segment_files(h, "t", ".log") == ["00000000000000000001.log"]
    assert _segment_files(h, "t", ".deleted") == []  # file.delete.delay.ms=0: removed in the same pass


def test_periodic_checkpoints_and_the_flusher(tmp_path):
    h = Harness(tmp_path, properties={**FAST, "log.flush.scheduler.interval.ms": "1000"})
    h.create_topic("t", 1, {"flush.ms": "1500"})
    for value in (b"a", b"b", b"c"):
        h.produce("t", 0, batch([value]))
    body = {"topics": [{"name": "t", "partitions": [{"partition_index": 0, "offset": 2}]}], "timeout_ms": 1}
    assert h.call(21, 1, body).topics[0].partitions[0].low_watermark == 2
    log = h.log_store.get_log("t", 0)
    assert log.recovery_point == 0
    h.advance(1_000)
    assert log.recovery_point == 0  # the flusher ran, but flush.ms=1500 has not passed
    h.advance(1_000)
    assert log.recovery_point == 3  # second flusher run: 2,000 ms since the log opened
    start_file = tmp_path / checkpoints.LOG_START_OFFSET_CHECKPOINT
    assert checkpoints.read_offsets(start_file) == {("t", 0): 2}  # written at 2,000 ms
    recovery_file = tmp_path / checkpoints.RECOVERY_POINT_CHECKPOINT
    assert not recovery_file.exists()
    h.advance(1_000)
    assert checkpoints.read_offsets(recovery_file) == {("t", 0): 3}
    assert checkpoints.read_offsets(tmp_path / checkpoints.REPLICATION_OFFSET_CHECKPOINT) == {("t", 0): 3}
    assert h.broker.housekeeping.errors == []


def test_shutdown_stops_the_periodic_tasks(tmp_path):
    h = Harness(tmp_path, properties=FAST)
    tasks = h.broker.housekeeping.tasks
    assert set(tasks) == {"kafka-log-retention", "kafka-recovery-point-checkpoint",
                          "kafka-log-start-offset-checkpoint", "highwatermark-checkpoint",
                          "delete-expired-group-metadata", "PeriodicProducerExpirationCheck",
                          "isr-expiration", "transactionalId-expiration"}  # flusher: never
    h.close()
    h.clock.advance_ms(10_000)
    h.broker.advance_clock(h.broker.timer.now_ms())
    assert all(task.runs == 0 for task in tasks.values())


def _idempotent(producer_id: int, sequence: int, timestamp_ms: int) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                        producer_id=producer_id, producer_epoch=0,
                                        base_sequence=sequence, batch_size=1 << 20)
    builder.append(0, timestamp=timestamp_ms, key=None, value=b"v", headers=[])
    return bytes(builder.build())


def test_idle_producer_ids_expire_on_the_timer(tmp_path):
    h = Harness(tmp_path, properties={"producer.id.expiration.ms": "5000",
                                      "producer.id.expiration.check.interval.ms": "1000"})
    h.create_topic("t")

    def produce(sequence: int) -> int:
        return h.produce("t", 0, _idempotent(77, sequence, h.clock.milliseconds())).error_code

    assert h.broker.housekeeping.tasks["PeriodicProducerExpirationCheck"].interval_ms == 1_000
    assert produce(0) == 0
    assert produce(5) == 45  # OUT_OF_ORDER_SEQUENCE_NUMBER while the producer is remembered
    h.advance(4_000)
    assert produce(1) == 0  # still known at 4 s; this batch resets its idle time
    h.advance(4_000)
    assert h.broker.housekeeping.expired_producers == 0  # idle 4 s at the last check
    h.advance(1_000)  # idle 5 s (producer.id.expiration.ms) at this check: forgotten
    assert h.broker.housekeeping.expired_producers == 1
    assert produce(5) == 0  # forgotten: any sequence starts it afresh (KIP-360)
    # producer.id.expiration.ms is dynamic: a cluster-wide alteration applies at the next check.
    body = {"resources": [{"resource_type": 4, "resource_name": "", "configs": [
        {"name": "producer.id.expiration.ms", "config_operation": 0, "value": "1"}]}], "validate_only": False}
    assert h.call(44, 1, body).responses[0].error_code == 0
    h.advance(1_000)
    assert h.broker.housekeeping.expired_producers == 2
    h.close()


# --- static and dynamic configs ------------------------------------------------------------------


def test_static_configs_merge_data_dir_properties_and_reject_bad_values(tmp_path):
    (tmp_path / "server.properties").write_text("log.retention.hours=1\nnum.partitions=2\n")
    h = Harness(tmp_path, properties={"num.partitions": "3", "process.roles": "broker", "sasl.enabled.mechanisms": "PLAIN"})
    # process.roles is a broker key (KRaft); a key kafkalab does not know is left out with a warning.
    assert h.config_store.static == {"log.retention.hours": "1", "num.partitions": "3", "process.roles": "broker"}
    h.create_topic("t")
    assert h.log_store.get_log("t", 0).config.retention_ms == 3_600_000
    h.close()
    with pytest.raises(ConfigError, match="log.retention.check.interval.ms"):
        Harness(tmp_path / "bad", properties={"log.retention.check.interval.ms": "soon"})


def test_configs_written_offline_apply_at_the_next_start(tmp_path):
    from kafkalab.config import DynamicConfigStore

    first = Harness(tmp_path)
    first.create_topic("t")
    first.close()
    DynamicConfigStore(tmp_path).alter("topics", "t", {"retention.ms": "4321"})  # kafkalab configs --data-dir
    second = Harness(tmp_path)
    assert second.log_store.get_log("t", 0).config.retention_ms == 4321
    describe = {"resources": [{"resource_type": 2, "resource_name": "t", "configuration_keys": ["retention.ms"]}],
                "include_synonyms": False}
    [entry] = second.call(32, 4, describe).results[0].configs
    assert (entry.value, entry.config_source) == ("4321", 1)
