"""DescribeQuorum at a broker: answered by the quorum (:mod:`kafkalab.controller.describe_quorum`).

A lone node is its own quorum and answers in process; a cluster's broker forwards the request to
the active controller in an Envelope, as Kafka's ``KafkaApis`` does for DescribeQuorum
(``forwardToControllerOrFail``), and relays the controller's answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkalab.broker.request import PENDING, Request
from kafkalab.controller.describe_quorum import QuorumNode, describe_quorum_response
from kafkalab.controller.raft.api import QuorumDescription
from kafkalab.controller.quorum_controller import sole_voter_description

if TYPE_CHECKING:
    from kafkalab.broker.broker import Broker


def handle_describe_quorum(broker: Broker, request: Request) -> Any:
    if broker.forwarding is not None:
        broker.forwarding.forward(request, broker.client_hosts.get(request.connection_id))
        return PENDING  # answered with the controller's response
    settings = broker.settings
    return describe_quorum_response(request.body, lambda: _describe(broker, request.now_ms),
                                    QuorumNode(settings.node_id, settings.host, settings.port))


def _describe(broker: Broker, now_ms: int) -> QuorumDescription:
    controller = broker.controller
    assert controller is not None, "a lone broker is its own quorum"
    describe = getattr(controller, "describe_quorum", None)
    if describe is not None:  # a controller of a real quorum
        return describe(now_ms)
    return sole_voter_description(broker.settings.node_id, controller.image.offset + 1, now_ms)


__all__ = ["handle_describe_quorum"]
