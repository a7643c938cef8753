"""Configuring the name server and the broker: property files and the startup rules.

The config is spread over a few modules, each with one subject:

* :mod:`rmq.common.configfields`: the option machinery (Java keys, types, allowed values,
  parsing, applying and rendering property sets);
* :mod:`rmq.common.configobjects` and :mod:`rmq.common.configstore`: the five config classes
  with RocketMQ's keys, defaults and allowed values, declared once per key;
  :mod:`rmq.common.configvalues`: the environment defaults and text rules they share;
* :mod:`rmq.common.configupdate`: changing a running server's settings (UPDATE_*_CONFIG);
* this module: reading a ``.properties`` file and building a process's configs the way the
  Java startup classes do.  It also re-exports the names of the others, so
  ``from rmq.common.config import BrokerConfig`` is the one import a caller needs.

API: :func:`load_properties_file` and :func:`build_namesrv_configs` /
:func:`build_broker_configs`, which also apply the rules the Java startup classes add
(default ports 9876 / 10911, ``haListenPort = listenPort + 1``, ``brokerId`` 0 for a master).
:func:`check_broker_configs` holds the broker's rules that tie keys of different configs
together (a ``listenPort`` that leaves room for the fast port ``listenPort - 2`` and
``haListenPort``, which Java only finds out binding them; a SLAVE's ``brokerId`` > 0); they
are checked at start and on every UPDATE_BROKER_CONFIG.
"""

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rmq.common import javaprops
from rmq.common.configfields import (
    Applies,
    ConfigError,
    ConfigObject,
    Long,
    Option,
    apply_properties,
    build_config,
    canonical_options,
    java_key_to_attr,
    options_of,
    to_properties,
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
from rmq.common.configupdate import ConfigBlackListError, LiveSettings

__all__ = [
    "BROKER_LISTEN_PORT",
    "FAST_PORT_OFFSET",
    "NAMESRV_LISTEN_PORT",
    "RMQ_ONLY_KEYS",
    "Applies",
    "BrokerConfig",
    "BrokerConfigs",
    "BrokerRole",
    "ConfigBlackListError",
    "ConfigError",
    "ConfigObject",
    "FlushDiskType",
    "LiveSettings",
    "Long",
    "MessageStoreConfig",
    "NamesrvConfig",
    "NamesrvConfigs",
    "NettyClientConfig",
    "NettyServerConfig",
    "Option",
    "apply_properties",
    "broker_settings",
    "build_broker_configs",
    "build_config",
    "build_namesrv_configs",
    "canonical_options",
    "check_broker_configs",
    "java_key_to_attr",
    "load_properties_file",
    "local_address",
    "local_host_name",
    "namesrv_settings",
    "options_of",
    "to_properties",
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

    ``listenPort`` defaults to 9876 (0: any free port, as Java binds it), and
    ``configStorePath`` becomes ``config_file`` when given.
    """
    configs = NamesrvConfigs(NamesrvConfig(), NettyServerConfig(listen_port=NAMESRV_LISTEN_PORT))
    unknown = apply_properties(props, *configs.all(), source=config_file)
    if config_file is not None:
        configs.namesrv.config_store_path = config_file
    return configs, unknown


def namesrv_settings(
    configs: NamesrvConfigs, file_properties: Mapping[str, str]
) -> LiveSettings[NamesrvConfigs]:
    """A running name server's settings (UPDATE_NAMESRV_CONFIG): no rules beyond each key's."""
    return LiveSettings(configs, file_properties, lambda _: None, "name server")


def check_broker_configs(configs: BrokerConfigs, source: str | None = None) -> None:
    """Raise ConfigError when the broker's configs break a rule that ties keys of different
    configs together: ``listenPort`` must leave room for the fast port (``listenPort - 2``)
    and ``haListenPort`` (``listenPort + 1``), and a SLAVE's ``brokerId`` must be > 0."""
    port = configs.server.listen_port
    if not FAST_PORT_OFFSET < port < 65535:
        raise ConfigError(
            f"listenPort={port}: expected {FAST_PORT_OFFSET + 1}..65534 (the broker also "
            f"listens on listenPort - {FAST_PORT_OFFSET}; haListenPort is listenPort + 1)",
            source=source,
            key="listenPort",
            value=str(port),
        )
    dledger = configs.store.enable_d_leger_commit_log
    if dledger:
        _check_dledger(configs.store, source)
    broker_id = configs.broker.broker_id
    if not dledger and configs.store.broker_role is BrokerRole.SLAVE and broker_id <= 0:
        raise ConfigError(
            f"brokerId={broker_id}: a SLAVE's brokerId must be > 0",
            source=source,
            key="brokerId",
            value=str(broker_id),
        )


def _check_dledger(store: MessageStoreConfig, source: str | None) -> None:
    """``dLegerPeers`` must list ``id-host:port`` entries and name ``dLegerSelfId``."""
    peers = [item.strip() for item in (store.d_leger_peers or "").split(";") if item.strip()]
    ids = [item.partition("-")[0] for item in peers]
    for item in peers:
        peer_id, dash, address = item.partition("-")
        if not dash or not peer_id or ":" not in address:
            raise ConfigError(
                f"dLegerPeers entry {item!r} is not <id>-<host>:<port>",
                source=source,
                key="dLegerPeers",
                value=store.d_leger_peers or "",
            )
    self_id = store.d_leger_self_id or ""
    if self_id not in ids or not self_id[1:].isdigit():
        raise ConfigError(
            f"dLegerSelfId={self_id}: enableDLegerCommitLog needs dLegerPeers to name this "
            "node's id (a letter and a number, such as n0)",
            source=source,
            key="dLegerSelfId",
            value=self_id,
        )


def build_broker_configs(
    props: Mapping[str, str], *, config_file: str | None = None
) -> tuple[BrokerConfigs, list[str]]:
    """The broker's configs from its ``-c`` properties, as BrokerStartup builds them.

    ``listenPort`` defaults to 10911; :func:`check_broker_configs` must hold; a master's
    ``brokerId`` is forced to 0 and ``haListenPort`` is always ``listenPort + 1``.
    """
    configs = BrokerConfigs(
        BrokerConfig(),
        MessageStoreConfig(),
        NettyServerConfig(listen_port=BROKER_LISTEN_PORT),
        NettyClientConfig(),
    )
    unknown = apply_properties(props, *configs.all(), source=config_file)
    check_broker_configs(configs, config_file)
    if configs.store.enable_d_leger_commit_log:
        # As BrokerStartup: the id follows the DLedger role (0 leading, selfId + 1 following).
        configs.broker.broker_id = -1
    elif configs.store.broker_role is not BrokerRole.SLAVE:
        configs.broker.broker_id = 0
    configs.store.ha_listen_port = configs.server.listen_port + 1
    return configs, unknown


def broker_settings(
    configs: BrokerConfigs, file_properties: Mapping[str, str]
) -> LiveSettings[BrokerConfigs]:
    """A running broker's settings (UPDATE_BROKER_CONFIG), held to the broker's rules."""
    return LiveSettings(configs, file_properties, check_broker_configs, "broker")
