"""Reading a KRaft server.properties: each invalid combination fails with Kafka's message.

The expected messages are the ones Kafka's ``KafkaConfig.validateValues``, ``QuorumConfig`` and
``SocketServerConfigs.listenerListToEndPoints`` raise (read in apache/kafka), so a learner who
searches the text finds Kafka's own discussions of it.
"""

from __future__ import annotations

import pytest

from kafkalab.config.kraft import kraft_config
from kafkalab.errors import ConfigError

COMBINED = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "listeners": "PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093",
    "controller.listener.names": "CONTROLLER",
    "controller.quorum.voters": "1@localhost:9093",
    "log.dirs": "/tmp/kl-1,/tmp/kl-1b",
}
BROKER = {
    "process.roles": "broker",
    "node.id": "2",
    "listeners": "PLAINTEXT://localhost:9094",
    "controller.listener.names": "CONTROLLER",
    "controller.quorum.voters": "1@localhost:9093",
    "log.dirs": "/tmp/kl-2",
}


def test_combined_node_of_kafkas_quickstart() -> None:
    config = kraft_config(COMBINED)
    assert config.process_roles == {"broker", "controller"}
    assert config.node_id == 1
    assert [str(e) for e in config.broker_listeners] == ["PLAINTEXT://localhost:9092"]
    assert [str(e) for e in config.controller_listeners] == ["CONTROLLER://localhost:9093"]
    # The map was left at its default, so the controller listener is PLAINTEXT (Kafka does this).
    assert config.controller_listeners[0].security_protocol == "PLAINTEXT"
    assert config.inter_broker_endpoint is not None and config.inter_broker_endpoint.port == 9092
    assert dict(config.voters) == {1: ("localhost", 9093)}
    assert config.metadata_log_dir == "/tmp/kl-1"
    assert config.directories == ("/tmp/kl-1", "/tmp/kl-1b")


def test_broker_only_node() -> None:
    config = kraft_config(BROKER)
    assert config.is_broker and not config.is_controller
    assert config.controller_listeners == ()


def test_advertised_listeners_replace_listeners_for_others() -> None:
    config = kraft_config({**COMBINED, "advertised.listeners": "PLAINTEXT://broker1.example:19092"})
    assert str(config.inter_broker_endpoint) == "PLAINTEXT://broker1.example:19092"
    assert str(config.advertised_controller_listeners[0]) == "CONTROLLER://localhost:9093"


def test_bootstrap_servers_stand_in_for_voters() -> None:
    props = {**COMBINED, "controller.quorum.bootstrap.servers": "localhost:9093"}
    del props["controller.quorum.voters"]
    assert kraft_config(props).bootstrap_servers == (("localhost", 9093),)


@pytest.mark.parametrize("change, message", [
    ({"process.roles": "broker,broker"}, "Duplicate role names found in `process.roles`"),
    ({"process.roles": "observer"}, "Unknown process role 'observer' (only 'broker' and 'controller' are allowed roles)"),
    ({"node.id": None}, "Missing configuration `node.id` which is required when `process.roles` is defined"),
    ({"broker.id": "7"}, "You must set `node.id` to the same value as `broker.id`."),
    ({"controller.quorum.voters": None}, "If using process.roles, either controller.quorum.bootstrap.servers must "
                                         "contain the set of bootstrap controllers or controller.quorum.voters must"),
    ({"controller.quorum.voters": "2@localhost:9093"}, "If process.roles contains the 'controller' role, the node "
                                                       "id 1 must be included in the set of voters "
                                                       "controller.quorum.voters=Set(2)"),
    ({"controller.quorum.voters": "1:localhost:9093"}, "Invalid configuration value for controller.quorum.voters. "
                                                       "Each entry should be in the form `{id}@{host}:{port}`."),
    ({"controller.quorum.voters": "one@localhost:9093"}, "Failed to parse voter ID as an integer from one"),
    ({"controller.quorum.voters": "1@0.0.0.0:9093"}, "Host string (0.0.0.0) is not routeable"),
    ({"listeners": "PLAINTEXT://localhost:9092"}, "controller.listener.names must contain at least one value appearing in "
                                            "the 'listeners' configuration when running the KRaft controller role"),
    ({"controller.listener.names": "CONTROLLER,OTHER"}, "controller.listener.names must only contain values "
                                                        "appearing in the 'listeners' configuration"),
    ({"listeners": "PLAINTEXT://localhost:9092,CONTROLLER://localhost:9092"}, "Each listener must have a different port"),
    ({"listeners": "PLAINTEXT//localhost:9092"}, "Unable to parse PLAINTEXT//localhost:9092 to a broker endpoint"),
    ({"listeners": "INTERNAL://localhost:9092,CONTROLLER://localhost:9093"}, "No security protocol defined for listener INTERNAL"),
    ({"inter.broker.listener.name": "SSL"}, "inter.broker.listener.name must be a listener name defined in "
                                            "advertised.listeners. The valid options based on currently configured "
                                            "listeners are PLAINTEXT"),
    ({"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"}, "advertised.listeners cannot use the nonroutable "
                                                           "meta-address 0.0.0.0. Use a routable IP address."),
    ({"listeners": "CONTROLLER://localhost:9093"}, "There must be at least one broker advertised listener. "
                                                   "Perhaps all listeners appear in controller.listener.names?"),
])
def test_invalid_combined_configs(change: dict[str, str | None], message: str) -> None:
    props = {**COMBINED, **{k: v for k, v in change.items() if v is not None}}
    for key in (k for k, v in change.items() if v is None):
        del props[key]
    with pytest.raises(ConfigError) as raised:
        kraft_config(props)
    assert message in str(raised.value)


@pytest.mark.parametrize("change, message", [
    ({"controller.quorum.voters": "1@localhost:9093,2@localhost:9095"}, "If process.roles contains just the 'broker' "
                                                                        "role, the node id 2 must not be included in "
                                                                        "the set of voters"),
    ({"controller.listener.names": None}, "controller.listener.names must contain at least one value when running "
                                          "KRaft with just the broker role"),
    ({"listeners": "PLAINTEXT://localhost:9094,CONTROLLER://localhost:9095"},
     "controller.listener.names must not contain a value appearing in the 'listeners' configuration when running "
     "KRaft with just the broker role"),
    ({"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT"}, "Controller listener with name CONTROLLER defined in "
                                                                "controller.listener.names not found in "
                                                                "listener.security.protocol.map"),
])
def test_invalid_broker_only_configs(change: dict[str, str | None], message: str) -> None:
    props = {**BROKER, **{k: v for k, v in change.items() if v is not None}}
    for key in (k for k, v in change.items() if v is None):
        del props[key]
    with pytest.raises(ConfigError) as raised:
        kraft_config(props)
    assert message in str(raised.value)


def test_controller_only_listeners_must_all_be_controller_listeners() -> None:
    props = {**COMBINED, "process.roles": "controller"}
    with pytest.raises(ConfigError, match="The listeners config must only contain KRaft controller listeners"):
        kraft_config(props)
    only = {**props, "listeners": "CONTROLLER://localhost:9093"}
    assert kraft_config(only).controller_listeners[0].port == 9093


def test_not_kraft_refuses_controller_listener_names() -> None:
    props = {"listeners": "PLAINTEXT://localhost:9092", "controller.listener.names": "CONTROLLER"}
    with pytest.raises(ConfigError, match="controller.listener.names must be empty when not running in KRaft mode"):
        kraft_config(props)


def test_kraft_keys_are_broker_keys_with_kafkas_defaults() -> None:
    from kafkalab.config.definitions import BROKER_KEYS

    assert BROKER_KEYS["process.roles"].parse("broker,controller") == ["broker", "controller"]
    with pytest.raises(ConfigError):
        BROKER_KEYS["process.roles"].parse("broker,zookeeper")
    assert BROKER_KEYS["controller.quorum.voters"].default == []
    assert BROKER_KEYS["controller.listener.names"].default is None


# The KRaft keys of the example files Apache Kafka ships in config/kraft/ (comments dropped).
KAFKA_EXAMPLES = {
    "server.properties": """process.roles=broker,controller
node.id=1
controller.quorum.voters=1@localhost:9093
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
log.dirs=/tmp/kraft-combined-logs""",
    "reconfig-server.properties": """process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=localhost:9093
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
log.dirs=/tmp/kraft-combined-logs""",
    "broker.properties": """process.roles=broker
node.id=2
controller.quorum.bootstrap.servers=localhost:9093
listeners=PLAINTEXT://localhost:9092
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://localhost:9092
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
log.dirs=/tmp/kraft-broker-logs""",
    "controller.properties": """process.roles=controller
node.id=1
controller.quorum.bootstrap.servers=localhost:9093
listeners=CONTROLLER://:9093
advertised.listeners=CONTROLLER://localhost:9093
controller.listener.names=CONTROLLER
log.dirs=/tmp/kraft-controller-logs""",
}


@pytest.mark.parametrize("name", sorted(KAFKA_EXAMPLES))
def test_kafkas_own_example_configs_are_valid(name: str) -> None:
    props = dict(line.split("=", 1) for line in KAFKA_EXAMPLES[name].splitlines())
    config = kraft_config(props)
    assert config.node_id == int(props["node.id"])
    assert config.process_roles == set(props["process.roles"].split(","))
    if config.is_controller:
        assert str(config.advertised_controller_listeners[0]) == "CONTROLLER://localhost:9093"
    if config.is_broker:
        assert str(config.inter_broker_endpoint) == "PLAINTEXT://localhost:9092"
