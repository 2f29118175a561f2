"""kafkalab's producer in the simulation: :class:`SimProducer`, the sans-I/O core inside a SimCluster.

Theory of operation
-------------------
The cluster ticks the producer every step (:meth:`SimProducer.on_tick`): the core's requests go
out as real, encoded Kafka requests on the simulated network, to the broker the core names, and
each answer -- or its absence after ``request.timeout.ms`` -- comes back through the core's
``on_response`` / ``on_failure``. The producer tells the cluster when it next needs a tick (a
batch's ``linger.ms`` running out), so simulated time jumps straight there. Nothing reads the
wall clock; the partitioner draws from a ``random.Random`` seeded from the cluster's seed, so a
run replays exactly.

Worked example::

    sim = SimCluster(tmp, nodes=3, seed=7); sim.create_topic("orders", 1, 3)
    producer = SimProducer(sim, {"acks": "1", "linger.ms": 5})
    future = producer.send(ProducerRecord("orders", b"v"))
    sim.run_for(10)          # metadata, InitProducerId, then linger 5 ms, then one Produce
    future.get()             # RecordMetadata(topic='orders', partition=0, offset=0, ...)

``future.get()`` and :meth:`SimProducer.flush` run the simulation until the answer is known.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kafkalab.client.producer.config import producer_config
from kafkalab.client.producer.futures import Callback, FutureRecordMetadata
from kafkalab.client.producer.producer import (
    PendingSend,
    Producer,
    ProducerInterceptor,
    ProducerRecord,
    Serializer,
    bytes_serializer,
)
from kafkalab.client.producer.sender import ANY_NODE, OutboundRequest
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.sim.cluster import SimCluster

# The versions a Kafka 3.x client would pick against kafkalab's broker.
VERSIONS = {ApiKey.PRODUCE: 9, ApiKey.METADATA: 12, ApiKey.INIT_PRODUCER_ID: 4}
WAIT_MS_MAX = 600_000  # future.get() without a timeout runs at most ten simulated minutes


class SimProducer:
    """A producer in a :class:`SimCluster`. Not thread-safe; owned by one simulation."""

    def __init__(self, cluster: SimCluster, properties: Mapping[str, Any] | None = None, *, seed: int = 0,
                 interceptors: Sequence[ProducerInterceptor] = (), key_serializer: Serializer = bytes_serializer,
                 value_serializer: Serializer = bytes_serializer) -> None:
        self.cluster = cluster
        self.config = producer_config(properties)
        self.core = Producer(self.config, rng=random.Random(seed), key_serializer=key_serializer,
                             value_serializer=value_serializer, interceptors=interceptors, driver=self._run_until)
        self.sent: list[OutboundRequest] = []  # every request, in order, for the book to show
        self.sent_ms: list[int] = []  # when each was sent
        cluster.add_client(self)

    def now_ms(self) -> int:
        return self.cluster.clock.milliseconds()

    def send(self, record: ProducerRecord, callback: Callback | None = None) -> FutureRecordMetadata:
        """Append ``record``; if it must wait for metadata or memory, run the simulation until it
        is appended or ``max.block.ms`` of simulated time has passed (then raise, as Kafka does)."""
        result = self.core.send(record, self.now_ms(), callback)
        while isinstance(result, PendingSend):
            pending = result
            self.cluster.run_until(lambda: self._admitted(pending),
                                   max(1, pending.deadline_ms - self.now_ms()))
            result = self.core.resume(pending, self.now_ms())
        return result

    def _admitted(self, pending: PendingSend) -> bool:
        if pending.waiting_for == "metadata":
            return self.core.metadata.partition_count(pending.record.topic) is not None
        return self.core.accumulator.available_bytes >= self.config.batch_size

    def flush(self, max_ms: int = WAIT_MS_MAX) -> bool:
        self.core.begin_flush()
        return self.cluster.run_until(self.core.flushed, max_ms)

    def _run_until(self, done: Callable[[], bool], timeout_ms: int | None) -> bool:
        return self.cluster.run_until(done, WAIT_MS_MAX if timeout_ms is None else timeout_ms)

    # --- what the cluster calls -----------------------------------------------------------------

    def next_deadline_ms(self) -> int | None:
        return self.core.next_wakeup_ms(self.now_ms())

    def on_tick(self, now_ms: int) -> None:
        for request in self.core.poll(now_ms):
            self.sent.append(request)
            self.sent_ms.append(now_ms)
            self._send(request)

    def _send(self, request: OutboundRequest) -> None:
        node = request.node_id
        if node == ANY_NODE:
            node = min(n.node_id for n in self.cluster.nodes.values() if n.alive)
        request_id = request.request_id
        self.cluster.send_request(
            node, request.api_key, VERSIONS[ApiKey(request.api_key)], request.body,
            lambda body: self.core.on_response(request_id, body, self.now_ms()),
            timeout_ms=request.timeout_ms, on_timeout=lambda: self.core.on_failure(request_id, self.now_ms()),
            expect_response=request.expect_response)
