"""A name server and a broker in one process and one event loop: ``rmq standalone``.

For development and small set-ups rmq runs both roles together.  :func:`standalone_configs`
derives the name server's settings from the broker's (and turns ``enablePropertyFilter`` on
unless the ``-c`` file says otherwise: a deliberate difference from Apache's default, so that
SQL92 subscriptions work in the embedded default): it listens on the broker's
``bindAddress`` at its own port, and the broker's ``namesrvAddr`` becomes that name server
(over loopback when the bind address is the wildcard), so the broker registers with it through
the same REGISTER_BROKER requests a separate name server would get.  Clients see an ordinary
name server and an ordinary broker on two ports.

Unlike ``rmq broker`` (Apache's defaults: bind every address, advertise the outward one), a
standalone is local unless told otherwise: ``standalone_configs`` binds ``host`` (the
``--host`` option; else the file's ``bindAddress``; else ``127.0.0.1``) and advertises it as
``brokerIP1``/``brokerIP2`` unless the file sets those or ``host`` is the wildcard (then the
outward address, as ``rmq broker`` does).

:func:`run_standalone` starts the name server, then the broker; logs one line with both
addresses once both are ready; and on SIGTERM or Ctrl-C stops the broker first (so it
unregisters and flushes its store) and then the name server.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from rmq.common.config import BrokerConfigs, NamesrvConfigs, build_namesrv_configs
from rmq.runtime import exit_code_for, shutdown_signals
from rmq.server.broker.controller import BrokerController
from rmq.server.namesrv.server import NamesrvController

log = logging.getLogger("rmq.standalone")

WILDCARD_ADDRESSES = frozenset({"0.0.0.0", "::", ""})
DEFAULT_HOST = "127.0.0.1"


def standalone_configs(
    broker: BrokerConfigs,
    namesrv_port: int,
    file_properties: Mapping[str, str] | None = None,
    host: str | None = None,
) -> NamesrvConfigs:
    """The name server's settings for ``broker``; binds both to ``host`` (see the module
    docstring), points the broker's ``namesrvAddr`` at the name server and turns
    ``enablePropertyFilter`` on unless the ``-c`` file (``file_properties``) sets it."""
    file_properties = file_properties or {}
    if "enablePropertyFilter" not in file_properties:
        broker.broker.enable_property_filter = True
    if host is None:
        host = broker.server.bind_address if "bindAddress" in file_properties else DEFAULT_HOST
    broker.server.bind_address = host
    if host not in WILDCARD_ADDRESSES:
        if "brokerIP1" not in file_properties:
            broker.broker.broker_ip1 = host
        if "brokerIP2" not in file_properties:
            broker.broker.broker_ip2 = host
    namesrv, _ = build_namesrv_configs({})
    bind_address = broker.server.bind_address
    namesrv.server.listen_port = namesrv_port
    namesrv.server.bind_address = bind_address
    host = "127.0.0.1" if bind_address in WILDCARD_ADDRESSES else bind_address
    broker.broker.namesrv_addr = f"{host}:{namesrv_port}"
    return namesrv


async def run_standalone(
    namesrv_configs: NamesrvConfigs,
    broker_configs: BrokerConfigs,
    *,
    config_file: str | None = None,
    file_properties: Mapping[str, str] | None = None,
) -> int:
    """Run a name server and a broker until SIGTERM or Ctrl-C; returns the exit code."""
    namesrv = NamesrvController(namesrv_configs)
    broker = BrokerController(
        broker_configs, config_file=config_file, file_properties=file_properties
    )
    with shutdown_signals() as received:
        await namesrv.start()
        try:
            await broker.start()
        except BaseException:
            await namesrv.stop()
            raise
        log.info(
            "rmq standalone is ready: name server %s, broker %s, store %s",
            broker_configs.broker.namesrv_addr,
            broker.broker_addr,
            broker_configs.store.store_path_root_dir,
        )
        signum = await received
        log.info("received %s, shutting down", signum.name)
        await broker.stop()
        await namesrv.stop()
    return exit_code_for(signum)
