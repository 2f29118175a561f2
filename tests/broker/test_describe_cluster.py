"""DescribeCluster on a single node, with Kafka's endpoint-type rules (AuthHelper)."""

from __future__ import annotations

from kafkalab.errors import ErrorCode
from tests.broker._harness import Harness


def test_describe_cluster_lists_the_node_as_broker_and_controller(tmp_path):
    h = Harness(tmp_path, node_id=3, host="127.0.0.1", port=9092)
    for version in (0, 1, 2):
        body = h.call(60, version, {"include_cluster_authorized_operations": False})
        assert (body.error_code, body.cluster_id, body.controller_id) == (0, "kafkalab-cluster", 3)
        assert [(b.broker_id, b.host, b.port, b.rack, b.is_fenced) for b in body.brokers] == [
            (3, "127.0.0.1", 9092, None, False)]
    h.close()


def test_a_controller_endpoint_request_is_refused(tmp_path):
    h = Harness(tmp_path)
    body = h.call(60, 1, {"endpoint_type": 2})
    assert body.error_code == ErrorCode.MISMATCHED_ENDPOINT_TYPE
    assert body.error_message == ("The request was sent to an endpoint of type BROKER, but we wanted an "
                                  "endpoint of type CONTROLLER")
    assert h.call(60, 1, {"endpoint_type": 9}).error_code == ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
    h.close()
