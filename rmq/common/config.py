"""Configuring the name server and the broker: property files and the startup rules.

The config is spread over three modules, each with one subject:

* :mod:`rmq.common.configfields`: the option machinery (Java keys, types, parsing, applying
  and rendering property sets, the UPDATE_*_CONFIG black list);
* :mod:`rmq.common.configobjects`: the five config classes with RocketMQ's keys and defaults;
* this module: reading a ``.properties`` file and building a process's configs the way the
  Java startup classes do.  It also re-exports the names of the other two, so
  ``from rmq.common.config import BrokerConfig`` is the one import a caller needs.

API: :func:`load_properties_file` and :func:`build_namesrv_configs` /
:func:`build_broker_configs`, which also apply the rules the Java startup classes add
(default ports 9876 / 10911, ``haListenPort = listenPort + 1``, ``brokerId`` 0 for a master);
a broker ``listenPort`` that leaves no room for the fast port (``listenPort - 2``) or
``haListenPort`` is refused there (Java fails later, binding it).
"""

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rmq.common import javaprops
from rmq.common.configfields import (
    ConfigBlackListError,
    ConfigError,
    ConfigObject,
    Long,
    apply_properties,
    build_config,
    java_key_to_attr,
    to_properties,
    update_config,
)
from rmq.common.configobjects import (
    RMQ_ONLY_KEYS,
    BrokerConfig,
    BrokerRole,
    FlushDiskType,
    MessageStoreConfig,
    NamesrvConfig,
    NettyClientConfig,
    NettyServerConfig,
    local_address,
    local_host_name,
)

__all__ = [
    "BROKER_LISTEN_PORT",
    "FAST_PORT_OFFSET",
    "NAMESRV_LISTEN_PORT",
    "RMQ_ONLY_KEYS",
    "BrokerConfig",
    "BrokerConfigs",
    "BrokerRole",
    "ConfigBlackListError",
    "ConfigError",
    "ConfigObject",
    "FlushDiskType",
    "Long",
    "MessageStoreConfig",
    "NamesrvConfig",
    "NamesrvConfigs",
    "NettyClientConfig",
    "NettyServerConfig",
    "apply_properties",
    "build_broker_configs",
    "build_config",
    "build_namesrv_configs",
    "java_key_to_attr",
    "load_properties_file",
    "local_address",
    "local_host_name",
    "to_properties",
    "update_config",
]

NAMESRV_LISTEN_PORT = 9876
"""The name server's port when ``listenPort`` is not configured (NamesrvStartup)."""
BROKER_LISTEN_PORT = 10911
"""The broker's port when ``listenPort`` is not configured (BrokerStartup)."""
FAST_PORT_OFFSET = 2
"""A broker also serves on ``listenPort - 2``, the fast (VIP) port of Java clients."""


def load_properties_file(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read a ``.properties`` file (UTF-8; ISO-8859-1, Java's reading, if not valid UTF-8)."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise ConfigError(f"cannot read config file: {error.strerror}", source=str(path)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("iso-8859-1")
    try:
        return javaprops.loads(text)
    except javaprops.PropertiesSyntaxError as error:
        raise ConfigError(str(error), source=str(path)) from None


@dataclass
class NamesrvConfigs:
    """Everything a name server is configured with."""

    namesrv: NamesrvConfig
    server: NettyServerConfig

    def all(self) -> tuple[ConfigObject, ...]:
        return (self.namesrv, self.server)


@dataclass
class BrokerConfigs:
    """Everything a broker is configured with (its ``-c`` file feeds all four)."""

    broker: BrokerConfig
    store: MessageStoreConfig
    server: NettyServerConfig
    client: NettyClientConfig

    def all(self) -> tuple[ConfigObject, ...]:
        return (self.broker, self.server, self.client, self.store)


def build_namesrv_configs(
    props: Mapping[str, str], *, config_file: str | None = None
) -> tuple[NamesrvConfigs, list[str]]:
    """The name server's configs from its ``-c`` properties, as NamesrvStartup builds them.

    ``listenPort`` defaults to 9876 and must be 0..65535, and ``configStorePath`` becomes
    ``config_file`` when given.
    """
    configs = NamesrvConfigs(NamesrvConfig(), NettyServerConfig(listen_port=NAMESRV_LISTEN_PORT))
    unknown = apply_properties(props, *configs.all(), source=config_file)
    port = configs.server.listen_port
    if not 0 <= port <= 65535:
        raise ConfigError(
            f"listenPort={port}: expected 0..65535 (0: any free port, as Java binds it)",
            source=config_file,
            key="listenPort",
            value=str(port),
        )
    if config_file is not None:
        configs.namesrv.config_store_path = config_file
    return configs, unknown


def _check_namesrv_addr(addresses: str, source: str | None) -> None:
    for address in addresses.split(";"):
        host, _, port = address.rpartition(":")
        # isdigit() alone also takes digits int() refuses, such as superscripts.
        if not host or not (port.isascii() and port.isdigit()) or not 0 < int(port) < 65536:
            raise ConfigError(
                f"namesrvAddr={addresses!r}: expected host:port;host:port",
                source=source,
                key="namesrvAddr",
                value=addresses,
            )


def build_broker_configs(
    props: Mapping[str, str], *, config_file: str | None = None
) -> tuple[BrokerConfigs, list[str]]:
    """The broker's configs from its ``-c`` properties, as BrokerStartup builds them.

    ``listenPort`` defaults to 10911 and must leave room for the fast port
    (``listenPort - 2``) and ``haListenPort``, which is always ``listenPort + 1``; a master's
    ``brokerId`` is forced to 0 and a slave's must be > 0; ``namesrvAddr`` must be
    ``host:port`` items separated by ``;``.
    """
    configs = BrokerConfigs(
        BrokerConfig(),
        MessageStoreConfig(),
        NettyServerConfig(listen_port=BROKER_LISTEN_PORT),
        NettyClientConfig(),
    )
    unknown = apply_properties(props, *configs.all(), source=config_file)
    broker, store = configs.broker, configs.store
    port = configs.server.listen_port
    if not FAST_PORT_OFFSET < port < 65535:
        raise ConfigError(
            f"listenPort={port}: expected {FAST_PORT_OFFSET + 1}..65534 (the broker also "
            f"listens on listenPort - {FAST_PORT_OFFSET}; haListenPort is listenPort + 1)",
            source=config_file,
            key="listenPort",
            value=str(port),
        )
    if broker.namesrv_addr is not None:
        _check_namesrv_addr(broker.namesrv_addr, config_file)
    if store.broker_role is BrokerRole.SLAVE:
        if broker.broker_id <= 0:
            raise ConfigError(
                f"brokerId={broker.broker_id}: a SLAVE's brokerId must be > 0",
                source=config_file,
                key="brokerId",
                value=str(broker.broker_id),
            )
    else:
        broker.broker_id = 0
    store.ha_listen_port = configs.server.listen_port + 1
    return configs, unknown
