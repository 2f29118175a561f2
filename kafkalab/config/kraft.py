"""A KRaft node's identity and addresses, read from ``server.properties`` as Kafka reads them.

Theory of operation
-------------------
A KRaft ``server.properties`` says who a node is and where it listens; the keys interlock, and
Kafka's ``KafkaConfig`` refuses a file whose keys contradict each other before anything starts.
:func:`kraft_config` does the same checks, in Kafka's order and with Kafka's messages, and
returns a :class:`KRaftConfig`:

* ``process.roles`` -- ``broker``, ``controller`` or both (combined mode); empty means the file
  is not a KRaft file at all (kafkalab's single-node ``--data-dir`` form needs none of this);
* ``node.id`` -- required in KRaft mode; ``broker.id``, if set, must equal it;
* ``listeners`` -- ``NAME://host:port`` entries, each name mapped to a security protocol by
  ``listener.security.protocol.map``. Names listed in ``controller.listener.names`` are the
  controller's; the rest serve clients and other brokers. When the map is not set explicitly,
  controller listener names are mapped to PLAINTEXT, as Kafka does;
* ``advertised.listeners`` -- what other nodes and clients are told (default: ``listeners``);
* ``inter.broker.listener.name`` -- which advertised listener brokers use to reach each other
  (default ``PLAINTEXT``);
* ``controller.quorum.voters`` (``id@host:port``, a static quorum) or
  ``controller.quorum.bootstrap.servers`` (``host:port``, a dynamic quorum, KIP-853) -- one of
  them must be set;
* ``log.dirs`` (else ``log.dir``) and ``metadata.log.dir`` (default: the first log dir), where
  ``__cluster_metadata-0`` lives.

Worked example: a combined node::

    process.roles=broker,controller
    node.id=1
    listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093
    controller.listener.names=CONTROLLER
    controller.quorum.voters=1@localhost:9093
    log.dirs=/tmp/kl-1

gives roles {broker, controller}, broker listener PLAINTEXT localhost:9092 (also the
inter-broker listener), controller listener CONTROLLER localhost:9093 (mapped to PLAINTEXT
because the map was not set), voters {1: ("localhost", 9093)} and metadata log dir /tmp/kl-1.
Writing ``controller.quorum.voters=2@localhost:9093`` instead fails with Kafka's "If
process.roles contains the 'controller' role, the node id 1 must be included in the set of
voters controller.quorum.voters=Set(2)".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from kafkalab.config.definitions import BROKER_KEYS
from kafkalab.errors import ConfigError

BROKER_ROLE, CONTROLLER_ROLE = "broker", "controller"
DEFAULT_INTER_BROKER_LISTENER = "PLAINTEXT"  # inter.broker.security.protocol's default, as a name
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
NON_ROUTABLE_HOST = "0.0.0.0"
# Kafka's SocketServerConfigs.URI_PARSE_REGEXP: NAME://host:port, host optional, IPv6 in brackets.
_ENDPOINT = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$")
_HOST_PORT = re.compile(r"^\[?([0-9a-zA-Z\-%._:]*)\]?:([0-9]+)$")
VOTERS, BOOTSTRAP = "controller.quorum.voters", "controller.quorum.bootstrap.servers"
NAMES = "controller.listener.names"


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One listener: name, host ('' = every address) and port. Immutable."""

    listener_name: str
    host: str
    port: int
    security_protocol: str

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener_name}://{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class KRaftConfig:
    """A node's KRaft settings, checked as a whole. Immutable; built once at start-up."""

    node_id: int
    process_roles: frozenset[str]
    listeners: tuple[Endpoint, ...]
    advertised_listeners: tuple[Endpoint, ...]
    controller_listener_names: tuple[str, ...]
    inter_broker_listener_name: str
    voters: Mapping[int, tuple[str, int]]
    bootstrap_servers: tuple[tuple[str, int], ...]
    log_dirs: tuple[str, ...]
    metadata_log_dir: str

    @property
    def is_broker(self) -> bool:
        return BROKER_ROLE in self.process_roles

    @property
    def is_controller(self) -> bool:
        return CONTROLLER_ROLE in self.process_roles

    @property
    def broker_listeners(self) -> tuple[Endpoint, ...]:
        """The listeners that serve clients and brokers (Kafka's ``dataPlaneListeners``)."""
        return tuple(e for e in self.listeners if e.listener_name not in self.controller_listener_names)

    @property
    def controller_listeners(self) -> tuple[Endpoint, ...]:
        return tuple(e for e in self.listeners if e.listener_name in self.controller_listener_names)

    @property
    def advertised_broker_listeners(self) -> tuple[Endpoint, ...]:
        return tuple(e for e in self.advertised_listeners if e.listener_name not in self.controller_listener_names)

    @property
    def advertised_controller_listeners(self) -> tuple[Endpoint, ...]:
        """Per controller listener name, its advertised endpoint, else its bound one."""
        found = []
        for name in self.controller_listener_names:
            for pool in (self.advertised_listeners, self.listeners):
                match = next((e for e in pool if e.listener_name == name), None)
                if match is not None:
                    found.append(match)
                    break
        return tuple(found)

    @property
    def inter_broker_endpoint(self) -> Endpoint | None:
        """Where other brokers reach this one (``inter.broker.listener.name``)."""
        return next((e for e in self.advertised_broker_listeners
                     if e.listener_name == self.inter_broker_listener_name), None)

    @property
    def directories(self) -> tuple[str, ...]:
        """Every directory ``storage format`` writes: the log dirs and the metadata log dir,
        sorted (Kafka's ``StorageTool.configToLogDirectories``)."""
        return tuple(sorted({*self.log_dirs, self.metadata_log_dir}))


def kraft_config(properties: Mapping[str, str]) -> KRaftConfig:
    """The KRaft settings of ``properties``; raises ``ConfigError`` with Kafka's message when
    keys are missing, malformed or contradict each other."""
    roles = _process_roles(properties.get("process.roles", ""))
    node_id = _node_id(properties, roles)
    names = tuple(n.strip() for n in (properties.get(NAMES) or "").split(",") if n.strip())
    protocols = _protocol_map(properties, bool(roles), names)
    listeners = parse_endpoints(properties.get("listeners") or str(BROKER_KEYS["listeners"].default),
                                protocols, distinct_ports=True)
    advertised_text = properties.get("advertised.listeners")
    advertised = parse_endpoints(advertised_text, protocols, distinct_ports=False) if advertised_text else listeners
    inter_broker = _inter_broker_listener_name(properties, protocols)
    log_dirs = tuple(d.strip() for d in (properties.get("log.dirs") or properties.get("log.dir")
                                         or str(BROKER_KEYS["log.dir"].default)).split(",") if d.strip())
    if not log_dirs:
        raise ConfigError("At least one log directory must be defined via log.dirs or log.dir.")
    config = KRaftConfig(
        node_id=node_id, process_roles=roles, listeners=listeners, advertised_listeners=advertised,
        controller_listener_names=names, inter_broker_listener_name=inter_broker,
        voters=parse_voters(_csv(properties.get(VOTERS))),
        bootstrap_servers=tuple(_bootstrap_server(s) for s in _csv(properties.get(BOOTSTRAP))),
        log_dirs=log_dirs, metadata_log_dir=(properties.get("metadata.log.dir") or log_dirs[0]).strip(),
    )
    _ROLE_CHECKS[roles](config, protocols)
    if not roles or config.is_broker:
        _check_broker_listeners(config)
    for endpoint in (*config.advertised_broker_listeners, *config.advertised_controller_listeners):
        if endpoint.host == NON_ROUTABLE_HOST:
            raise ConfigError("advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. "
                              "Use a routable IP address.")
    return config


def parse_endpoints(text: str, protocols: Mapping[str, str], *, distinct_ports: bool) -> tuple[Endpoint, ...]:
    """``listeners`` text to endpoints (Kafka's ``listenerListToEndPoints``)."""
    endpoints = []
    for entry in _csv(text):
        match = _ENDPOINT.match(entry)
        if match is None:
            raise ConfigError(f"Unable to parse {entry} to a broker endpoint")
        name = match.group(1).upper()  # ListenerName.normalised
        if name not in protocols:
            raise ConfigError(f"No security protocol defined for listener {name}")
        endpoints.append(Endpoint(name, match.group(2), int(match.group(3)), protocols[name]))
    if len({e.listener_name for e in endpoints}) != len(endpoints):
        raise ConfigError(f"Each listener must have a different name, listeners: {text}")
    if distinct_ports and len({e.port for e in endpoints if e.port}) != len([e for e in endpoints if e.port]):
        raise ConfigError(f"Each listener must have a different port, listeners: {text}")
    return tuple(endpoints)


def parse_voters(entries: list[str]) -> dict[int, tuple[str, int]]:
    """``controller.quorum.voters`` entries (``id@host:port``) to {id: (host, port)}."""
    voters: dict[int, tuple[str, int]] = {}
    form = "Each entry should be in the form `{id}@{host}:{port}`."
    for entry in entries:
        parts = entry.split("@")
        if len(parts) != 2:
            raise ConfigError(f"Invalid configuration value for {VOTERS}. {form}")
        try:
            voter_id = int(parts[0])
        except ValueError:
            raise ConfigError(f"Failed to parse voter ID as an integer from {parts[0]}") from None
        match = _HOST_PORT.match(parts[1])
        if match is None or not match.group(1):
            raise ConfigError(f"Failed to parse host name from entry {entry} for the configuration {VOTERS}. {form}")
        if match.group(1) == NON_ROUTABLE_HOST:
            raise ConfigError(f"Host string ({NON_ROUTABLE_HOST}) is not routeable")
        voters[voter_id] = (match.group(1), int(match.group(2)))
    return voters


def _bootstrap_server(entry: str) -> tuple[str, int]:
    match = _HOST_PORT.match(entry)
    if match is None or not match.group(1):
        raise ConfigError(f"Failed to parse host name from {entry} for the configuration {BOOTSTRAP}. "
                          'Each entry should be in the form "{host}:{port}"')
    return match.group(1), int(match.group(2))


def _csv(text: str | None) -> list[str]:
    return [item.strip() for item in (text or "").split(",") if item.strip()]


def _process_roles(text: str) -> frozenset[str]:
    roles = _csv(text)
    for role in roles:
        if role not in (BROKER_ROLE, CONTROLLER_ROLE):
            raise ConfigError(f"Unknown process role '{role}' (only 'broker' and 'controller' are allowed roles)")
    if len(set(roles)) != len(roles):
        raise ConfigError(f"Duplicate role names found in `process.roles`: {roles}")
    return frozenset(roles)


def _node_id(properties: Mapping[str, str], roles: frozenset[str]) -> int:
    node_id = BROKER_KEYS["node.id"].parse(properties.get("node.id", "-1"))
    assert isinstance(node_id, int)
    if "broker.id" in properties and BROKER_KEYS["broker.id"].parse(properties["broker.id"]) != node_id:
        raise ConfigError("You must set `node.id` to the same value as `broker.id`.")
    if roles and node_id < 0:
        raise ConfigError("Missing configuration `node.id` which is required when `process.roles` "
                          "is defined (i.e. when running in KRaft mode).")
    return node_id


def _protocol_map(properties: Mapping[str, str], kraft: bool, controller_names: tuple[str, ...]) -> dict[str, str]:
    """listener.security.protocol.map, plus PLAINTEXT for controller listeners when the map
    was left at its default (Kafka's ``effectiveListenerSecurityProtocolMap``)."""
    key = "listener.security.protocol.map"
    text = properties.get(key) or str(BROKER_KEYS[key].default)
    protocols: dict[str, str] = {}
    for entry in _csv(text):
        name, sep, protocol = entry.partition(":")
        if not sep:
            raise ConfigError(f"Invalid value {text} for configuration {key}: map entry {entry!r} is not NAME:PROTOCOL")
        if protocol.strip().upper() not in SECURITY_PROTOCOLS:
            raise ConfigError(f"Invalid security protocol `{protocol.strip()}` defined in {key}")
        protocols[name.strip().upper()] = protocol.strip().upper()
    if kraft and key not in properties:
        for name in controller_names:
            protocols.setdefault(name.upper(), "PLAINTEXT")
    return protocols


def _inter_broker_listener_name(properties: Mapping[str, str], protocols: Mapping[str, str]) -> str:
    name = properties.get("inter.broker.listener.name")
    if name is None:
        return DEFAULT_INTER_BROKER_LISTENER
    if name.upper() not in protocols:
        raise ConfigError(f"Listener with name {name.upper()} defined in inter.broker.listener.name not found "
                          "in listener.security.protocol.map.")
    return name.upper()


def _voter_set(config: KRaftConfig) -> str:
    return "Set(" + ", ".join(str(v) for v in config.voters) + ")"  # Scala's Set.toString


def _check_quorum_reachable(config: KRaftConfig) -> None:
    if not config.voters and not config.bootstrap_servers:
        raise ConfigError(f"If using process.roles, either {BOOTSTRAP} must contain the set of bootstrap "
                          f"controllers or {VOTERS} must contain a parseable set of controllers.")


def _check_controller(config: KRaftConfig) -> None:
    """The checks shared by controller-only and combined nodes."""
    if config.voters and config.node_id not in config.voters:
        raise ConfigError(f"If process.roles contains the 'controller' role, the node id {config.node_id} must "
                          f"be included in the set of voters {VOTERS}={_voter_set(config)}")
    if not config.advertised_controller_listeners:
        raise ConfigError(f"{NAMES} must contain at least one value appearing in the 'listeners' configuration "
                          "when running the KRaft controller role")
    bound = {e.listener_name for e in config.listeners}
    if not all(name in bound for name in config.controller_listener_names):
        raise ConfigError(f"{NAMES} must only contain values appearing in the 'listeners' configuration when "
                          "running the KRaft controller role")


def _check_broker_only(config: KRaftConfig, protocols: Mapping[str, str]) -> None:
    _check_quorum_reachable(config)
    if config.node_id in config.voters:
        raise ConfigError(f"If process.roles contains just the 'broker' role, the node id {config.node_id} must "
                          f"not be included in the set of voters {VOTERS}={_voter_set(config)}")
    if not config.controller_listener_names:
        raise ConfigError(f"{NAMES} must contain at least one value when running KRaft with just the broker role")
    if config.controller_listeners:
        raise ConfigError(f"{NAMES} must not contain a value appearing in the 'listeners' configuration when "
                          "running KRaft with just the broker role")
    for name in config.controller_listener_names:
        if name.upper() not in protocols:
            raise ConfigError(f"Controller listener with name {name.upper()} defined in {NAMES} not found in "
                              "listener.security.protocol.map  (an explicit security mapping for each controller "
                              "listener is required if listener.security.protocol.map is non-empty, or if there "
                              "are security protocols other than PLAINTEXT in use)")


def _check_controller_only(config: KRaftConfig, protocols: Mapping[str, str]) -> None:
    _check_quorum_reachable(config)
    if len(config.advertised_controller_listeners) != len(config.listeners):
        raise ConfigError(f"The listeners config must only contain KRaft controller listeners from {NAMES} when "
                          "process.roles=controller")
    _check_controller(config)


def _check_combined(config: KRaftConfig, protocols: Mapping[str, str]) -> None:
    _check_quorum_reachable(config)
    _check_controller(config)


def _check_not_kraft(config: KRaftConfig, protocols: Mapping[str, str]) -> None:
    if config.controller_listener_names:
        raise ConfigError(f"{NAMES} must be empty when not running in KRaft mode: {list(config.controller_listener_names)}")


def _check_broker_listeners(config: KRaftConfig) -> None:
    """Every node that serves clients (Kafka: ZooKeeper brokers, KRaft brokers, combined nodes)."""
    advertised = [e.listener_name for e in config.advertised_broker_listeners]
    if not advertised:
        hint = f" Perhaps all listeners appear in {NAMES}?" if config.is_broker else ""
        raise ConfigError("There must be at least one broker advertised listener." + hint)
    if config.inter_broker_listener_name not in advertised:
        raise ConfigError("inter.broker.listener.name must be a listener name defined in advertised.listeners. "
                          f"The valid options based on currently configured listeners are {','.join(advertised)}")
    bound = [e.listener_name for e in config.listeners]
    if not set(advertised) <= set(bound):
        raise ConfigError("advertised.listeners listener names must be equal to or a subset of the ones defined in "
                          f"listeners. Found {','.join(advertised)}. The valid options based on the current "
                          f"configuration are {','.join(bound)}")


# Which checks apply, by the set of roles (Kafka's KafkaConfig.validateValues branches).
_ROLE_CHECKS = {
    frozenset({BROKER_ROLE}): _check_broker_only,
    frozenset({CONTROLLER_ROLE}): _check_controller_only,
    frozenset({BROKER_ROLE, CONTROLLER_ROLE}): _check_combined,
    frozenset(): _check_not_kraft,
}

__all__ = ["Endpoint", "KRaftConfig", "kraft_config", "parse_endpoints", "parse_voters"]
