"""A controller process's active controller, over its metadata log on disk.

Theory of operation
-------------------
A node with ``process.roles=controller`` keeps ``__cluster_metadata-0`` in its
``metadata.log.dir``: a log directory of ordinary segments whose batches are the controller's
decisions (:mod:`kafkalab.metadata.record_log`). :func:`open_controller_node` builds what serves
brokers from it, as a KRaft controller does when it starts:

1. open the log and replay it -- the newest ``.checkpoint`` snapshot, then every record after
   it -- into the image the last run left;
2. make a :class:`~kafkalab.controller.local.LocalController` that appends each new decision
   to the same log, flushed before the decision is published (a one-voter quorum commits what
   is on its own disk);
3. put a :class:`~kafkalab.controller.controller_node.ControllerNode` in front of it and
   *activate* it: every broker the log registers gets a heartbeat session as of now, so brokers
   that outlived a controller restart keep their broker epochs and heartbeat on; one that does
   not heartbeat within ``broker.session.timeout.ms`` is fenced, as after any silence.

A fresh log starts with the bootstrap FeatureLevelRecord (``metadata.version``), written by the
controller itself when the log has none.

Worked example: a controller killed with ``kill -9`` after brokers 1-3 registered (epochs 2, 5,
8) and topic ``orders`` was created restarts: replay rebuilds the image at offset 14, the three
sessions are opened at the restart time, and broker 2's next heartbeat (epoch 5) is answered as
before. Broker 3, killed meanwhile, sends none and is fenced 9 s later; ``orders`` partitions it
led move to the next in-sync replica.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kafkalab.clock import Clock
from kafkalab.config.definitions import broker_default
from kafkalab.controller.controller_node import ControllerNode
from kafkalab.controller.describe_quorum import QuorumNode
from kafkalab.controller.heartbeats import BrokerHeartbeatManager
from kafkalab.controller.local import LocalController
from kafkalab.metadata.image import MetadataImage
from kafkalab.metadata.records import CONFIG_RESOURCE_TOPIC
from kafkalab.metadata.record_log import KRAFT_METADATA_TOPIC, StorageRecordLog, replay_metadata_log
from kafkalab.metadata.snapshot import SnapshotPolicy
from kafkalab.storage.log import Log
from kafkalab.storage.log_config import LogConfig

UNCLEAN_KEY = "unclean.leader.election.enable"


@dataclass(slots=True)
class ControllerSettings:
    """What a controller process reads from its server.properties."""

    session_timeout_ms: int
    snapshot_bytes: int
    unclean_leader_election: bool

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> ControllerSettings:
        def number(key: str) -> int:
            value = properties.get(key)
            return int(value) if value is not None else int(str(broker_default(key)))
        unclean = properties.get(UNCLEAN_KEY, str(broker_default(UNCLEAN_KEY))).strip().lower() == "true"
        return cls(number("broker.session.timeout.ms"),
                   number("metadata.log.max.record.bytes.between.snapshots"), unclean)


class DiskController:
    """A controller node and the log it writes. Owned by the controller process's event loop."""

    def __init__(self, node: ControllerNode, log: Log) -> None:
        self.node = node
        self.log = log

    def close(self) -> None:
        """Flush and release the log (every decision was already flushed when made)."""
        self.log.close()


def open_controller_node(metadata_log_dir: Path, cluster_id: str, properties: Mapping[str, str],
                         clock: Clock, rng: random.Random, identity: QuorumNode | None = None) -> DiskController:
    """The active controller of a one-voter quorum over ``metadata_log_dir``, configured by its
    server.properties, activated as of ``clock``'s now."""
    settings = ControllerSettings.from_properties(properties)
    directory = Path(metadata_log_dir) / f"{KRAFT_METADATA_TOPIC}-0"
    directory.mkdir(parents=True, exist_ok=True)
    log = Log.open(directory, LogConfig(), clock, rng=random.Random(0))
    image = replay_metadata_log(log)
    policy = SnapshotPolicy(directory, settings.snapshot_bytes)
    controller = LocalController([], rng, StorageRecordLog(log), image, clock.milliseconds, policy)
    node = ControllerNode(controller, cluster_id, BrokerHeartbeatManager(settings.session_timeout_ms),
                          lambda topic: unclean_enabled(controller.image, topic, settings.unclean_leader_election),
                          properties, node=identity)
    node.activate(clock.milliseconds())
    return DiskController(node, log)


def unclean_enabled(image: MetadataImage, topic: str, cluster_default: bool) -> bool:
    """``unclean.leader.election.enable`` for ``topic``: its own config, else the controller's."""
    value = image.configs.get((CONFIG_RESOURCE_TOPIC, topic), {}).get(UNCLEAN_KEY)
    return cluster_default if value is None else value.strip().lower() == "true"


__all__ = ["ControllerSettings", "DiskController", "open_controller_node", "unclean_enabled"]
