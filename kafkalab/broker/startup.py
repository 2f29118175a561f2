"""Assembling a broker over a data directory: configs, timer, logs, periodic tasks.

Theory of operation
-------------------
Start-up wires the pieces in the order each needs the last::

    server.properties (+ --override)   <data-dir>/server.properties   <data-dir>/dynamic-configs.json
                  \\                            |                              |
                   +----------> static layer ---+---- DynamicConfigStore <-----+
                                                          |
    Clock --> Timer --> Scheduler --+--> StorageLogStore (LogManager, file.delete.delay.ms)
                                    |        each log attached to the config store
                                    +--> Housekeeping (retention, flusher, checkpoints)
                                    +--> Broker (fetch purgatory on the same timer)

Static configs are ``<data-dir>/server.properties`` overlaid by the properties the server was
started with (its config file, then ``--override``); dynamic configs live in
``<data-dir>/dynamic-configs.json``, the same file ``kafkalab configs --data-dir`` edits on a
stopped broker. A running broker keeps the file's contents in memory and rewrites it on every
alter, so while it runs, change configs through it (``kafkalab configs --bootstrap-server``).

Keys that are not broker configs kafkalab knows (``sasl.enabled.mechanisms`` ... from a
production ``server.properties``) are returned to the caller to warn about, as Kafka logs "supplied
but isn't a known config"; known keys with bad values stop start-up with a ``ConfigError``.

Worked example: ``server-start --override log.retention.check.interval.ms=1000`` with an empty
data directory gives static ``{"log.retention.check.interval.ms": "1000"}``, a retention task
due 1 000 ms after start and every 1 000 ms after that, and topics resolving ``retention.ms``
to Kafka's default of 604 800 000 ms until a topic override lowers it.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path

from kafkalab.broker.broker import Broker
from kafkalab.broker.housekeeping import Housekeeping, HousekeepingIntervals, PeriodicTask, dynamic_broker_int
from kafkalab.broker.settings import BrokerSettings
from kafkalab.broker.storage_adapter import StorageLogStore
from kafkalab.clock import Clock
from kafkalab.config import BROKER_KEYS, DynamicConfigStore
from kafkalab.config.resolve import broker_value, validate_broker_configs
from kafkalab.timer import Scheduler, Timer


def static_properties(
    data_dir_static: Mapping[str, str], properties: Mapping[str, str]
) -> tuple[dict[str, str], list[str]]:
    """(the static layer, the unknown keys ignored): ``properties`` over the data directory's
    ``server.properties``, keeping Kafka's broker keys only, validated."""
    unknown = sorted(k for k in properties if k not in BROKER_KEYS)
    static = {**data_dir_static, **{k: v for k, v in properties.items() if k in BROKER_KEYS}}
    validate_broker_configs(static, dynamic=False, per_broker=True)
    return static, unknown


def open_broker(
    data_dir: Path, properties: Mapping[str, str], settings: BrokerSettings, clock: Clock,
    rng: random.Random, *, in_cluster: bool = False,
) -> Broker:
    """A broker over ``data_dir`` with its periodic tasks scheduled on its timer: a member of
    a cluster whose active controller it reaches over the network if ``in_cluster``, else a
    cluster of its own."""
    config_store = DynamicConfigStore(data_dir, broker_id=str(settings.node_id))
    config_store.static, _ = static_properties(config_store.static, properties)
    timer = Timer(clock)
    scheduler = Scheduler(timer)
    log_store = StorageLogStore(data_dir, clock, config_store, rng, scheduler=scheduler)
    broker = Broker(settings, log_store, config_store, rng, timer, clock.milliseconds, in_cluster=in_cluster)
    intervals = HousekeepingIntervals.from_layers(config_store.layers(), str(settings.node_id))
    expiration_ms = dynamic_broker_int(config_store.layers, str(settings.node_id), "producer.id.expiration.ms")
    broker.housekeeping = Housekeeping(scheduler, log_store, intervals, clock.milliseconds, expiration_ms,
                                       on_error=broker.on_storage_error)
    coordinator = broker.group_coordinator  # loaded as it was elected for each partition it leads
    expiry_ms = broker_value(config_store.layers(), str(settings.node_id), "offsets.retention.check.interval.ms")
    assert isinstance(expiry_ms, int)
    broker.housekeeping.tasks["delete-expired-group-metadata"] = PeriodicTask(
        scheduler, "delete-expired-group-metadata", expiry_ms,
        lambda: coordinator.expire_offsets(clock.milliseconds()), broker.housekeeping.errors)
    txn_expiry_ms = broker_value(config_store.layers(), str(settings.node_id),
                                 "transactions.remove.expired.transaction.cleanup.interval.ms")
    assert isinstance(txn_expiry_ms, int)
    broker.housekeeping.tasks["transactionalId-expiration"] = PeriodicTask(
        scheduler, "transactionalId-expiration", txn_expiry_ms,
        lambda: broker.txn_coordinator.expire_transactional_ids(clock.milliseconds()), broker.housekeeping.errors)
    # Kafka's ReplicaManager checks every replica.lag.time.max.ms / 2 for followers to drop.
    isr_check_ms = broker.replica_manager.settings.replica_lag_time_max_ms // 2
    broker.housekeeping.tasks["isr-expiration"] = PeriodicTask(
        scheduler, "isr-expiration", isr_check_ms,
        lambda: broker.replica_manager.maybe_shrink_isrs(clock.milliseconds()), broker.housekeeping.errors)
    return broker
