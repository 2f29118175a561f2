"""A single node's metadata at start-up: replay ``__cluster_metadata-0``, then register.

Theory of operation
-------------------
A lone kafkalab broker is also its cluster's controller (``process.roles=broker,controller``
with one voter). Its metadata log lives where Kafka keeps it by default, in the first data
directory: ``<data-dir>/__cluster_metadata-0``. Start-up mirrors a KRaft node's:

1. load the newest snapshot (``<offset>-<epoch>.checkpoint``), if any, into an empty image;
2. replay every record of the log after the snapshot (:mod:`kafkalab.metadata.delta`) -- one
   delta for the whole log, so a log of 100 000 partition records costs one pass;
3. register this broker: a new incarnation, so the one the log remembers is fenced first
   (its leaderships end; the returning broker is elected again, leader epoch + 2);
4. adopt partition directories the log does not know (a data directory written before
   kafkalab kept metadata records, or a Kafka 2.x one) as topics led by this broker.

Worked example: a directory holding ``orders`` (3 partitions) created by an earlier run has
a log of FeatureLevelRecord, RegisterBrokerRecord, BrokerRegistrationChangeRecord,
TopicRecord and three PartitionRecords; replay gives back ``orders`` with its topic id, and
the broker then appends its new registration at offset 7.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from kafkalab.broker.log_store import LogStore
from kafkalab.controller.local import LocalController
from kafkalab.metadata.image import BrokerRegistration
from kafkalab.metadata.record_log import StorageRecordLog, replay_metadata_log
from kafkalab.metadata.snapshot import SnapshotPolicy
from kafkalab.storage.log import Log

def open_local_controller(
    log_store: LogStore, registration: BrokerRegistration, rng: random.Random, clock_ms: Callable[[], int],
    snapshot_bytes: int | None = None,
) -> LocalController:
    """The node's controller over its metadata log, with ``registration`` appended."""
    log = log_store.open_metadata_log()
    assert isinstance(log, Log), "the metadata log is a storage Log of the first data directory"
    image = replay_metadata_log(log)
    policy = SnapshotPolicy(log.directory, snapshot_bytes) if snapshot_bytes else None
    controller = LocalController([], rng, StorageRecordLog(log), image, clock_ms, policy)
    controller.register_broker(registration)
    return controller


__all__ = ["open_local_controller"]
