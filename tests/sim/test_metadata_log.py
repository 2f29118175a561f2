"""In the simulated cluster, every image the controller published is the replay of its log."""

from __future__ import annotations

from kafkalab.metadata.delta import replay
from kafkalab.metadata.image import MetadataImage
from kafkalab.metadata.record_log import MemoryRecordLog
from kafkalab.sim.cluster import SimCluster
from tests.broker._harness import batch


def test_the_image_after_crashes_and_isr_changes_is_the_replay_of_the_log(cluster: SimCluster) -> None:
    cluster.create_topic("orders", 3, 3)
    leader = cluster.leader("orders", 0)
    cluster.produce("orders", 0, batch([b"a"]))
    cluster.crash(leader)
    cluster.run_for(15_000)  # past broker.session.timeout.ms: fenced, leadership moves
    cluster.restart(leader)
    cluster.run_for(40_000)  # it catches up and rejoins the ISR through AlterPartition
    log = cluster.controller.log
    assert isinstance(log, MemoryRecordLog)
    records = log.records()
    assert replay(MetadataImage(), records, len(records) - 1) == cluster.controller.image
    kinds = {type(r).__name__ for r in records}
    assert {"RegisterBrokerRecord", "BrokerRegistrationChangeRecord", "TopicRecord", "PartitionRecord",
            "PartitionChangeRecord"} <= kinds
    assert leader in cluster.controller.image.partition("orders", 0).isr  # type: ignore[union-attr]
