"""DescribeCluster: the live brokers of the metadata image, and which one acts as controller.

Mirrors Kafka's ``handleDescribeCluster`` and ``AuthHelper.computeDescribeClusterResponse``: a
request for another endpoint type is refused (INVALID_REQUEST at v0, MISMATCHED_ENDPOINT_TYPE
or UNSUPPORTED_ENDPOINT_TYPE after), fenced brokers are listed only when v2 asks, and the
controller id is a node the answer lists (else -1). A KRaft broker names a live broker there,
since it forwards controller requests itself; a lone kafkalab node names itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkalab.broker.request import Request
from kafkalab.errors import ErrorCode
from kafkalab.protocol.messages.describe_cluster import (
    DESCRIBE_CLUSTER_RESPONSE, ENDPOINT_BROKER, ENDPOINT_CONTROLLER,
)

if TYPE_CHECKING:
    from kafkalab.broker.broker import Broker

_ENDPOINT_NAMES = {ENDPOINT_BROKER: "BROKER", ENDPOINT_CONTROLLER: "CONTROLLER"}


def handle_describe_cluster(broker: Broker, request: Request) -> Any:
    body, version = request.body, request.header.api_version
    R = DESCRIBE_CLUSTER_RESPONSE.cls
    if body.endpoint_type != ENDPOINT_BROKER:
        known = body.endpoint_type in _ENDPOINT_NAMES
        error = ErrorCode.MISMATCHED_ENDPOINT_TYPE if known else ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
        message = (f"The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type "
                   f"{_ENDPOINT_NAMES[body.endpoint_type]}" if known
                   else f"Unsupported endpoint type {body.endpoint_type}")
        return R(error_code=ErrorCode.INVALID_REQUEST if version == 0 else error, error_message=message)
    image = broker.image
    listed = [b for _, b in sorted(image.brokers.items()) if not b.fenced or body.include_fenced_brokers]
    node_id = broker.settings.node_id
    controller_id = node_id if any(b.broker_id == node_id and not b.fenced for b in listed) else -1
    return R(
        error_code=0, cluster_id=broker.settings.cluster_id, controller_id=controller_id,
        brokers=tuple(R.DescribeClusterBroker(b.broker_id, b.host, b.port, b.rack, b.fenced) for b in listed))
