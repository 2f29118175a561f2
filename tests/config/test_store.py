"""The persisted dynamic configs and the live re-resolution hook."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafkalab.config.store import DEFAULT_ENTITY, STORE_FILE_NAME, DynamicConfigStore
from kafkalab.errors import ConfigError
from kafkalab.storage.log_config import LogConfig


def test_alter_persists_and_reloads(tmp_path: Path) -> None:
    store = DynamicConfigStore(tmp_path)
    store.alter("topics", "t", {"retention.ms": "1000"})
    store.alter("brokers", DEFAULT_ENTITY, {"log.retention.ms": "5"})
    reopened = DynamicConfigStore(tmp_path)
    assert reopened.get("topics", "t") == {"retention.ms": "1000"}
    assert reopened.topic_properties("u")["retention.ms"] == "5"
    document = json.loads((tmp_path / STORE_FILE_NAME).read_text())
    assert document["version"] == 1
    assert not (tmp_path / (STORE_FILE_NAME + ".tmp")).exists()


def test_delete_config(tmp_path: Path) -> None:
    store = DynamicConfigStore(tmp_path)
    store.alter("topics", "t", {"retention.ms": "1000", "segment.bytes": "2048"})
    store.alter("topics", "t", {}, delete=["retention.ms"])
    assert store.get("topics", "t") == {"segment.bytes": "2048"}
    with pytest.raises(ConfigError, match="Invalid config"):
        store.alter("topics", "t", {}, delete=["retention.ms"])


def test_invalid_alter_changes_nothing(tmp_path: Path) -> None:
    store = DynamicConfigStore(tmp_path)
    store.alter("topics", "t", {"retention.ms": "1000"})
    with pytest.raises(ConfigError, match="segment.bytes"):
        store.alter("topics", "t", {"retention.ms": "5", "segment.bytes": "1"})
    assert DynamicConfigStore(tmp_path).get("topics", "t") == {"retention.ms": "1000"}


def test_static_server_properties(tmp_path: Path) -> None:
    (tmp_path / "server.properties").write_text("# comment\nlog.retention.hours = 24\nbroker.id=0\n")
    store = DynamicConfigStore(tmp_path)
    assert store.topic_properties("t")["retention.ms"] == str(24 * 3_600_000)
    (tmp_path / "server.properties").write_text("log.retention.hourz=24\n")
    with pytest.raises(ConfigError, match="Did you mean"):
        DynamicConfigStore(tmp_path)


@pytest.mark.parametrize("content", ["{not json", "[]", '{"version": 9}', '{"version": 1, "topics": {"t": {"a": 1}}}'])
def test_corrupt_store_is_a_config_error(tmp_path: Path, content: str) -> None:
    (tmp_path / STORE_FILE_NAME).write_text(content)
    with pytest.raises(ConfigError):
        DynamicConfigStore(tmp_path)


def test_watch_topic_called_only_on_change(tmp_path: Path) -> None:
    store = DynamicConfigStore(tmp_path)
    seen: list[tuple[str, str]] = []
    store.watch_topic("t", lambda topic, props: seen.append((topic, props["retention.ms"])))
    store.alter("topics", "t", {"retention.ms": "1000"})
    store.alter("topics", "u", {"retention.ms": "7"})  # another topic: no call
    store.alter("brokers", DEFAULT_ENTITY, {"log.retention.ms": "9"})  # overridden: no change
    store.alter("topics", "t", {}, delete=["retention.ms"])  # falls back to the cluster default
    assert seen == [("t", "1000"), ("t", "9")]


def test_unknown_entity_type(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="entity-type"):
        DynamicConfigStore(tmp_path).alter("groups", "g", {})


def test_every_topic_default_builds_a_log_config(tmp_path: Path) -> None:
    from kafkalab.storage.log_config import LogConfig

    config = DynamicConfigStore(tmp_path).log_config("t")
    assert config == LogConfig()  # kafkalab's topic defaults agree with the storage defaults


def test_lowering_retention_takes_effect_at_next_retention_check(tmp_path: Path) -> None:
    from kafkalab.clock import ManualClock
    from kafkalab.records.codec import build_batch
    from kafkalab.records.model import Record
    from kafkalab.storage.log import Log
    from kafkalab.storage.retention import delete_old_segments

    clock = ManualClock(now_ms=10_000_000)
    store = DynamicConfigStore(tmp_path)
    store.alter("topics", "t", {"segment.bytes": "100"})
    log = Log.open(tmp_path / "t-0", store.log_config("t"), clock)
    store.attach_log(log)
    for i in range(4):
        log.append_as_leader(build_batch([Record(0, clock.milliseconds(), b"k", b"v%d" % i)]), 0)
    clock.advance_ms(60_000)
    assert delete_old_segments(log, clock.milliseconds()).total == 0  # 7 days by default
    store.alter("topics", "t", {"retention.ms": "1000"})
    assert log.config.retention_ms == 1000
    assert delete_old_segments(log, clock.milliseconds()).time_breached == 4
    assert log.log_start_offset == 4


class _FakeLog:
    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.config = LogConfig()


def test_per_broker_override_reaches_logs_of_that_broker(tmp_path: Path) -> None:
    store = DynamicConfigStore(tmp_path, broker_id="0")
    log = _FakeLog("t")
    store.attach_log(log)
    store.alter("brokers", "0", {"log.retention.ms": "1234"})
    assert log.config.retention_ms == 1234
    # Another broker's override does not apply to broker 0's logs.
    store.alter("brokers", "1", {"log.retention.ms": "999"})
    assert log.config.retention_ms == 1234
    # A topic override still wins over the per-broker value.
    store.alter("topics", "t", {"retention.ms": "50"})
    assert log.config.retention_ms == 50


def test_detached_log_is_no_longer_reconfigured(tmp_path: Path) -> None:
    store = DynamicConfigStore(tmp_path, broker_id="0")
    log = _FakeLog("t")
    store.attach_log(log)
    store.detach_log(log)
    store.alter("topics", "t", {"retention.ms": "50"})
    assert log.config.retention_ms != 50
    store.detach_log(log)  # a second detach is harmless
