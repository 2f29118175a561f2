"""What one ``poll()`` of a real consumer returns, and how long it took: chapter 16's probe.

Theory of operation
-------------------
A consumer's first ``poll()`` from a given offset sends one Fetch to the partition's leader and
hands back what that response carried, capped by ``max_poll_records``. Two consumer settings
decide the answer, and :func:`first_poll` lets a notebook vary them one at a time against a live
server, with kafka-python (an independent client) doing the fetching:

* ``fetch_min_bytes`` / ``fetch_max_wait_ms``: the broker answers once it holds
  ``fetch_min_bytes`` for the request, or once ``fetch_max_wait_ms`` has passed -- so with less
  data than the minimum, the poll takes about ``fetch_max_wait_ms``;
* ``max_partition_fetch_bytes``: the broker returns whole batches up to this many bytes per
  partition, but always at least the first batch (KIP-74), so a small limit slows a consumer
  down and never stalls it.

Worked example: a partition holds five one-record batches of about 1070 bytes.
``first_poll(bootstrap, "readings", 0, 0)`` returns 5 records;
``max_partition_fetch_bytes=1`` returns 1 (the first batch, whole); ``=2500`` returns 2;
from offset 4 with ``fetch_min_bytes=100_000, fetch_max_wait_ms=800`` it returns 1 record after
at least 0.8 s.

The elapsed time is read from the wall clock (``time.monotonic``): this module measures a real
client talking to a real server, so it belongs to the presentation layer, never the engine.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

POLL_TIMEOUT_MS = 5_000  # far above any fetch_max_wait_ms the book uses; a live server answers


@dataclass(frozen=True, slots=True)
class FirstPoll:
    """What the first ``poll()`` returned: how many records, after how many seconds."""

    records: int
    seconds: float


def first_poll(bootstrap: str, topic: str, partition: int, offset: int, **settings: int) -> FirstPoll:
    """Assign a fresh kafka-python consumer (``settings`` are its keyword settings, e.g.
    ``fetch_min_bytes=1``) to ``topic``-``partition`` at ``offset``, poll once, close it.

    No group and no commits: the consumer reads exactly where it is told to.
    """
    from kafka import KafkaConsumer, TopicPartition  # a real client, imported only when probing

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, **settings)
    try:
        target = TopicPartition(topic, partition)
        consumer.assign([target])
        consumer.seek(target, offset)
        started_s = time.monotonic()
        got = consumer.poll(timeout_ms=POLL_TIMEOUT_MS)
        elapsed_s = time.monotonic() - started_s
    finally:
        consumer.close()
    return FirstPoll(sum(len(records) for records in got.values()), elapsed_s)
