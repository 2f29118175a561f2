"""A broker in this Python process, driven by encoded Kafka requests: no sockets, no threads.

Theory of operation
-------------------
A :class:`~kafkalab.broker.broker.Broker` is sans-I/O: it takes request frames and hands back
response frames. :class:`InProcessBroker` opens one over a data directory with a
:class:`~kafkalab.clock.ManualClock`, encodes each request exactly as a client puts it on the wire
(:func:`~kafkalab.protocol.header.encode_request`), hands the frame to the broker, and decodes the
response frame the broker produced. Everything between is the broker's real path: the handler,
the purgatory, the log, the group coordinator's writes to ``__consumer_offsets``.

Time moves only when the caller says so. :meth:`InProcessBroker.advance` moves the clock and runs
the timer tasks that became due (delayed fetches, session timeouts, retention checks), as the
server's event loop does between reads. So a data generator can write a day of traffic in
seconds, and replaying it with the same seed gives the same bytes.

Worked example: ``with InProcessBroker(tmp) as broker:`` then
``broker.create_topic("orders", 3)``, ``broker.call(ApiKey.PRODUCE, 9, body)`` and
``broker.advance(1_000)`` produce to ``orders`` and move one second on. Requests that park
(a Fetch waiting for bytes) are answered when :meth:`advance` completes them: use :meth:`send`
and :meth:`responses` for those.
"""

from __future__ import annotations

import random
from pathlib import Path
from types import TracebackType
from typing import Any

from kafkalab.broker.request import Outgoing
from kafkalab.broker.settings import BrokerSettings
from kafkalab.broker.startup import open_broker
from kafkalab.clock import ManualClock
from kafkalab.errors import KafkaError
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.header import decode_response, encode_request

CLIENT_ID = "kafkalab-in-process"
CREATE_TOPICS_VERSION = 7


class InProcessBrokerError(KafkaError):
    """The broker closed the connection, or answered something other than the one response
    expected (a request that parked, or a request with acks=0)."""


class InProcessBroker:
    """One broker over ``data_dir``, on its own :class:`ManualClock` starting at ``start_ms``.
    Not thread-safe. Close it (or use ``with``) to flush and write checkpoints."""

    def __init__(self, data_dir: Path, *, start_ms: int = 0, seed: int = 0,
                 properties: dict[str, str] | None = None, settings: BrokerSettings | None = None,
                 client_id: str = CLIENT_ID) -> None:
        self.clock = ManualClock(now_ms=start_ms)
        self.broker = open_broker(data_dir, properties or {}, settings or BrokerSettings(), self.clock,
                                  random.Random(seed))
        self._correlation_id = 0
        self.client_id = client_id
        self.closed = False

    def now_ms(self) -> int:
        return self.clock.milliseconds()

    def advance(self, delta_ms: int) -> None:
        """Move the clock ``delta_ms`` on and run every timer task that became due."""
        self.clock.advance_ms(delta_ms)
        self.broker.advance_clock(self.broker.timer.now_ms())

    def send(self, api_key: ApiKey, version: int, body: Any, connection_id: int = 1) -> int:
        """Hand one request frame to the broker; returns its correlation id."""
        self._correlation_id += 1
        frame = encode_request(api_key, version, self._correlation_id, self.client_id, body)[4:]
        self.broker.handle(connection_id, frame, self.clock.milliseconds())
        return self._correlation_id

    def responses(self) -> list[Outgoing]:
        """Everything the broker has to send since the last call."""
        return self.broker.take_responses()

    def call(self, api_key: ApiKey, version: int, body: Any, connection_id: int = 1) -> Any:
        """Send one request and decode its one response."""
        correlation_id = self.send(api_key, version, body, connection_id)
        answered = self.responses()
        if len(answered) != 1 or answered[0].parts is None or answered[0].close:
            raise InProcessBrokerError(f"expected one response to {api_key.name} v{version}, got {answered!r}")
        got_id, decoded = decode_response(api_key, version, _frame_bytes(answered[0])[4:])
        if got_id != correlation_id:
            raise InProcessBrokerError(f"response for correlation id {got_id}, expected {correlation_id}")
        return decoded

    def create_topic(self, name: str, partitions: int, configs: dict[str, str] | None = None) -> None:
        """CreateTopics with replication factor 1; raises the broker's error if it refuses."""
        topic = {"name": name, "num_partitions": partitions, "replication_factor": 1,
                 "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}
        [answer] = self.call(ApiKey.CREATE_TOPICS, CREATE_TOPICS_VERSION,
                             {"topics": [topic], "timeout_ms": 1_000}).topics
        if answer.error_code:
            raise InProcessBrokerError(f"CreateTopics {name}: error {answer.error_code} {answer.error_message}")

    def close(self) -> None:
        """Shut the broker down cleanly (flush, checkpoints); idempotent."""
        if not self.closed:
            self.closed = True
            self.broker.shutdown()

    def __enter__(self) -> InProcessBroker:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()


def _frame_bytes(out: Outgoing) -> bytes:
    assert out.parts is not None
    return b"".join(p if isinstance(p, bytes) else p.read_bytes() for p in out.parts)


__all__ = ["InProcessBroker", "InProcessBrokerError"]
