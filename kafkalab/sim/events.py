"""The simulation's event stream: what every broker's replication did, when, as flat rows.

Theory of operation
-------------------
Each broker's replica manager reports its partitions' replication events
(:mod:`kafkalab.replication.events`: became leader or follower, HW moved, ISR change proposed,
ISR changed). An :class:`EventRecorder` subscribes to every broker of a
:class:`~kafkalab.sim.cluster.SimCluster` -- and again to the new broker a ``restart`` builds,
since a restarted node's memory, listeners included, is gone -- and watches the cluster for
crashes, restarts and produce acknowledgements. Every event becomes one :class:`EventRow`
stamped with the simulated time and the node that reported it. Rows are flat (one kind of
record, a column per field, ``None`` where a field does not apply), so the ISR widget, the book
and the Spark labs read them as a table; :meth:`EventRecorder.to_parquet` writes them with the
fixed :data:`PARQUET_COLUMNS` schema.

Worked example (seed 7, three brokers, ``orders`` placed on [3, 1, 2]): creating the topic
records ``became-leader`` on node 3 (``leader_epoch`` 0, ``isr`` [1, 2, 3]) and
``became-follower`` on nodes 1 and 2; an acks=all produce of two records adds ``hw-moved`` on
node 3 (``old_hw`` 0, ``new_hw`` 2) and ``produce-answer`` (``offset`` 0, ``error_code`` 0), then
``follower-hw-moved`` on nodes 1 and 2 as their next fetch answers bring them the new HW. Cut
node 1 off at 0 s while a producer keeps writing and, at the 45 s ISR check, node 3 reports
``isr-proposed`` (``isr`` [1, 2, 3], ``new_isr`` [2, 3]) and ``isr-changed`` (``partition_epoch``
1). A leader reports ``became-leader`` again each time it applies an image that names it, ISR
changes included; only the first in a leader epoch is an election.

Consumer group members (:meth:`SimCluster.add_member`) add a ``group-request`` row for every
FindCoordinator, JoinGroup, Metadata, SyncGroup, Heartbeat and LeaveGroup they send and a
``group-response`` row for every answer: ``member`` names the consumer, ``api`` the request,
``generation_id`` the generation it carries (the new one in a JoinGroup answer) and
``error_code`` the answer's error. The rebalance timeline (:mod:`kafkalab.viz.rebalance`) is drawn
from these rows.

Not thread-safe; owned by one simulation.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafkalab.protocol.api_keys import ApiKey
from kafkalab.replication import events as ev

if TYPE_CHECKING:
    from kafkalab.broker.broker import Broker
    from kafkalab.sim.cluster import SimCluster

ROWS_MAX = 5_000_000  # a bug guard: a simulation in the book or a lab records far fewer


@dataclass(frozen=True, slots=True)
class EventRow:
    """One event. ``time_ms`` is simulated time; ``node_id`` the broker that reported it."""

    time_ms: int
    node_id: int
    kind: str
    topic: str | None = None
    partition: int | None = None
    leader_epoch: int | None = None
    leader: int | None = None
    old_hw: int | None = None
    new_hw: int | None = None
    isr: tuple[int, ...] | None = None  # the ISR before the change (or at an election)
    new_isr: tuple[int, ...] | None = None  # the proposed or accepted ISR
    partition_epoch: int | None = None
    offset: int | None = None  # a produce answer's base offset
    error_code: int | None = None  # a produce answer's or a group answer's error code
    member: str | None = None  # the group member that sent or received a group message
    api: str | None = None  # the group message's API: JoinGroup, SyncGroup, Heartbeat, ...
    generation_id: int | None = None  # the group generation the message carries


KINDS = ("became-leader", "became-follower", "hw-moved", "isr-proposed", "isr-changed",
         "produce-answer", "crash", "restart", "group-request", "group-response", "follower-hw-moved")
GROUP_APIS: dict[int, str] = {  # API key -> the name Kafka's protocol guide uses
    ApiKey.FIND_COORDINATOR: "FindCoordinator", ApiKey.JOIN_GROUP: "JoinGroup", ApiKey.METADATA: "Metadata",
    ApiKey.SYNC_GROUP: "SyncGroup", ApiKey.HEARTBEAT: "Heartbeat", ApiKey.LEAVE_GROUP: "LeaveGroup",
}


def _group_row(time_ms: int, node_id: int, kind: str, member: str, api_key: int, body: Any) -> EventRow:
    """A group message as a row; a FindCoordinator v4+ answer keeps its error per key."""
    error = None
    if kind == "group-response":
        error = 0 if api_key == ApiKey.METADATA else getattr(body, "error_code", 0)
        if api_key == ApiKey.FIND_COORDINATOR and getattr(body, "coordinators", None):
            error = body.coordinators[0].error_code
    return EventRow(time_ms, node_id, kind, member=member, api=GROUP_APIS.get(api_key, str(api_key)),
                    generation_id=getattr(body, "generation_id", None), error_code=error)


def _replication_row(time_ms: int, node_id: int, event: ev.ReplicationEvent) -> EventRow:
    t, n, topic, p = time_ms, node_id, event.topic, event.partition
    match event:
        case ev.BecameLeader():
            return EventRow(t, n, "became-leader", topic, p, leader_epoch=event.leader_epoch, leader=n, isr=event.isr)
        case ev.BecameFollower():
            return EventRow(t, n, "became-follower", topic, p, leader_epoch=event.leader_epoch, leader=event.leader)
        case ev.HighWatermarkMoved():
            kind = "follower-hw-moved" if event.follower else "hw-moved"
            return EventRow(t, n, kind, topic, p, old_hw=event.old, new_hw=event.new)
        case ev.IsrChangeProposed():
            return EventRow(t, n, "isr-proposed", topic, p, isr=event.isr, new_isr=event.proposed)
        case ev.IsrChanged():
            return EventRow(t, n, "isr-changed", topic, p, isr=event.old, new_isr=event.new,
                            partition_epoch=event.partition_epoch)
    raise TypeError(f"not a replication event: {event!r}")


class EventRecorder:
    """Records a :class:`SimCluster`'s events from now on. Not thread-safe; owned by one simulation."""

    def __init__(self, cluster: SimCluster) -> None:
        self.cluster = cluster
        self.rows: list[EventRow] = []
        # (node, topic, partition) -> (leader epoch, ISR) of the partitions a node leads
        self._leader_isr: dict[tuple[int, str, int], tuple[int, tuple[int, ...]]] = {}
        for node in cluster.nodes.values():
            if node.alive:
                self._subscribe(node.node_id, node.broker)
        cluster.watch(self._on_cluster)

    def _now_ms(self) -> int:
        return self.cluster.clock.milliseconds()

    def _add(self, row: EventRow) -> None:
        if len(self.rows) >= ROWS_MAX:
            raise OverflowError(f"event recorder holds {len(self.rows)} rows, the limit is {ROWS_MAX}")
        self.rows.append(row)

    def _subscribe(self, node_id: int, broker: Broker) -> None:
        broker.replica_manager.subscribe(lambda event: self._on_replication(node_id, event))

    def _on_replication(self, node_id: int, event: ev.ReplicationEvent) -> None:
        row = _replication_row(self._now_ms(), node_id, event)
        self._add(row)
        if row.kind == "became-leader" or row.kind == "isr-changed":
            self._track_isr(row)

    def _track_isr(self, row: EventRow) -> None:
        """Add an ``isr-changed`` row when a leader's ISR changed within its leader epoch.

        The controller publishes its new image as it accepts an AlterPartition, so a leader may
        learn its new ISR from the image (a second ``became-leader`` in the same epoch) before
        the answer to its proposal, which it then ignores. Either way the ISR changed once; this
        keeps one row per change whichever path the leader took."""
        assert row.topic is not None and row.partition is not None
        key = (row.node_id, row.topic, row.partition)
        previous = self._leader_isr.get(key)
        if row.kind == "isr-changed":  # the engine reported it: remember, add nothing
            if previous is not None and row.new_isr is not None:
                self._leader_isr[key] = (previous[0], row.new_isr)
            return
        assert row.leader_epoch is not None and row.isr is not None
        self._leader_isr[key] = (row.leader_epoch, row.isr)
        if previous is None or previous[0] != row.leader_epoch or previous[1] == row.isr:
            return
        registration = self.cluster.controller.image.partition(row.topic, row.partition)
        self._add(EventRow(row.time_ms, row.node_id, "isr-changed", row.topic, row.partition,
                           isr=previous[1], new_isr=row.isr,
                           partition_epoch=None if registration is None else registration.partition_epoch))

    def _on_cluster(self, kind: str, node_id: int, detail: Any) -> None:
        now_ms = self._now_ms()
        if kind == "restart":
            self._add(EventRow(now_ms, node_id, "restart"))
            self._subscribe(node_id, detail)
        elif kind == "crash":
            self._add(EventRow(now_ms, node_id, "crash"))
        elif kind == "produce-answer":
            topic, partition, answer = detail
            self._add(EventRow(now_ms, node_id, "produce-answer", topic=topic, partition=partition,
                               offset=answer.base_offset, error_code=answer.error_code))
        elif kind in ("group-request", "group-response"):
            member, api_key, body = detail
            self._add(_group_row(now_ms, node_id, kind, member, api_key, body))

    def of_kind(self, kind: str) -> list[EventRow]:
        assert kind in KINDS, f"unknown event kind {kind!r}"
        return [row for row in self.rows if row.kind == kind]

    def to_parquet(self, path: Path | str) -> None:
        """Write every row to one Parquet file with the :data:`PARQUET_COLUMNS` schema."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        schema = parquet_schema()
        columns: dict[str, list[Any]] = {name: [] for name in schema.names}
        for row in self.rows:
            for name, value in asdict(row).items():
                columns[name].append(list(value) if isinstance(value, tuple) else value)
        pq.write_table(pa.table(columns, schema=schema), Path(path))


# Column name -> Arrow type name; the order and the types are the file format the labs read.
PARQUET_COLUMNS: tuple[tuple[str, str], ...] = (
    ("time_ms", "int64"), ("node_id", "int32"), ("kind", "string"), ("topic", "string"),
    ("partition", "int32"), ("leader_epoch", "int32"), ("leader", "int32"), ("old_hw", "int64"),
    ("new_hw", "int64"), ("isr", "list<int32>"), ("new_isr", "list<int32>"),
    ("partition_epoch", "int32"), ("offset", "int64"), ("error_code", "int16"), ("member", "string"),
    ("api", "string"), ("generation_id", "int32"),
)
assert tuple(name for name, _ in PARQUET_COLUMNS) == tuple(f.name for f in fields(EventRow))


def parquet_schema() -> Any:
    """The Arrow schema of :data:`PARQUET_COLUMNS` (imports pyarrow)."""
    import pyarrow as pa

    types = {"int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(), "string": pa.string(),
             "list<int32>": pa.list_(pa.int32())}
    return pa.schema([pa.field(name, types[kind], nullable=name not in ("time_ms", "node_id", "kind"))
                      for name, kind in PARQUET_COLUMNS])


__all__ = ["GROUP_APIS", "KINDS", "PARQUET_COLUMNS", "EventRecorder", "EventRow", "parquet_schema"]
