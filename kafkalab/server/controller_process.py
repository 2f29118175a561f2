"""A controller-only KRaft node as a process: ``process.roles=controller``.

Theory of operation
-------------------
A dedicated controller serves no clients. It listens on its controller listener
(``controller.listener.names``) for the cluster's brokers, which register, heartbeat, propose
ISR changes and fetch ``__cluster_metadata`` there, and it keeps that log on its own disk in
``metadata.log.dir``. :class:`ControllerProcess` is the process's whole server: the
:class:`~kafkalab.controller.disk_controller.DiskController` (the log and the node that answers
brokers) behind a :class:`~kafkalab.server.controller_server.ControllerServer` (the socket side).

It offers the lifecycle ``kafkalab server-start`` drives for a broker: :meth:`start` returns the
bound address, :attr:`stopping` is set when a shutdown begins, :meth:`stop` closes the listener
and then the log. Every decision was flushed before it was published, so a ``kill -9`` loses
nothing the brokers were told; a restart replays the log and takes the brokers back
(:meth:`~kafkalab.controller.controller_node.ControllerNode.activate`).

Worked example: ``kafkalab server-start controller.properties`` with ``node.id=4``,
``process.roles=controller``, ``listeners=CONTROLLER://127.0.0.1:9095`` and
``controller.quorum.voters=4@127.0.0.1:9095`` prints ``kafkalab server started on
127.0.0.1:9095``; brokers 1-3 configured with the same voters register within a second.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Mapping
from pathlib import Path

from kafkalab.clock import Clock, SystemClock
from kafkalab.controller.describe_quorum import QuorumNode
from kafkalab.controller.disk_controller import DiskController, open_controller_node
from kafkalab.server.controller_server import ControllerServer
from kafkalab.server.server import is_loopback
from kafkalab.errors import ConfigError

log = logging.getLogger("kafkalab.server.controller_process")


class ControllerProcess:
    """A controller node with its log on disk behind its listener. Owned by one event loop."""

    def __init__(self, metadata_log_dir: Path, cluster_id: str, properties: Mapping[str, str], *,
                 host: str = "127.0.0.1", port: int = 9093, allow_remote: bool = False,
                 clock: Clock | None = None, seed: int | None = None, node: QuorumNode | None = None) -> None:
        if not is_loopback(host) and not allow_remote:
            raise ConfigError(f"refusing to listen on {host!r}: kafkalab serves 127.0.0.1 unless remote access "
                              "is allowed explicitly (--allow-remote)")
        self.metadata_log_dir = Path(metadata_log_dir)
        self.cluster_id = cluster_id
        self.properties = dict(properties)
        self.node = node  # its id and advertised controller endpoint, for DescribeQuorum
        self.host, self.port = host, port
        self.clock = clock or SystemClock()
        self._rng = random.Random(seed)
        self.controller: DiskController | None = None
        self._server: ControllerServer | None = None
        self.stopping = asyncio.Event()
        self._stopped = asyncio.Event()
        self.failure: str | None = None

    async def start(self) -> tuple[str, int]:
        """Replay the metadata log, then listen; returns the bound (host, port)."""
        self.controller = open_controller_node(self.metadata_log_dir, self.cluster_id, self.properties,
                                               self.clock, self._rng, self.node)
        self._server = ControllerServer(self.controller.node, self.clock, self.host, self.port)
        try:
            return await self._server.start()
        except BaseException:
            self.controller.close()
            raise

    async def serve_until_stopped(self) -> None:
        await self._stopped.wait()

    async def stop(self) -> None:
        """Close the listener and every broker's connection, then the log."""
        if self.stopping.is_set():
            await self._stopped.wait()
            return
        self.stopping.set()
        try:
            if self._server is not None:
                await self._server.stop()
            if self.controller is not None:
                self.controller.close()
        except OSError as error:  # the process must end even if the disk fails
            log.exception("closing the metadata log failed")
            self.failure = f"shutdown failed: {error}"
        finally:
            self.controller = None
            self._stopped.set()


__all__ = ["ControllerProcess"]
