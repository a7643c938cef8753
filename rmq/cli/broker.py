"""`rmq broker`: run a broker in the foreground, as Apache's `mqbroker` does.

Options mirror mqbroker: `-c/--configFile FILE` reads a `.properties` file with BrokerConfig,
MessageStoreConfig and Netty keys (`brokerClusterName`, `brokerName`, `listenPort`,
`storePathRootDir`, `flushDiskType`, ...); `-n/--namesrvAddr` sets the name servers
(`host:port;host:port`, overriding the file); `-p/--printConfigItem` prints every setting as
`key=value` on stdout and exits; `-m/--printImportantConfig` prints only the settings Apache
marks important.  `--port` and `--store` override `listenPort` and `storePathRootDir` without
a file.  Unknown keys in the file are reported as a warning (and kept: GET_BROKER_CONFIG
shows them, as Apache does); a value that does not parse stops the start (exit 2).

Logs go to stderr (INFO, or DEBUG with `rmq --debug`).  SIGTERM stops the broker cleanly
(unregister, flush, remove `abort`) with exit code 0, Ctrl-C with 130.  A port in use
(`listenPort`, or the fast port `listenPort - 2`), a store locked by another broker or
unreadable metadata stop the start with one line on stderr.  The server itself is imported
only when the command runs.

`load_broker_configs` and `serve` are shared with `rmq standalone`.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from rmq.cli.errors import EXIT_USAGE, RmqError
from rmq.cli.main import command_app
from rmq.cli.serve import ConfigFileOption
from rmq.cli.tlsoptions import DefineOption

if TYPE_CHECKING:
    from rmq.common.config import BrokerConfigs
    from rmq.remoting.errors import ListenError

app = command_app()


IMPORTANT_KEYS = frozenset(
    {
        "namesrvAddr",
        "brokerIP1",
        "brokerIP2",
        "brokerName",
        "brokerClusterName",
        "brokerId",
        "brokerPermission",
        "defaultTopicQueueNums",
        "autoCreateTopicEnable",
        "clusterTopicEnable",
        "autoCreateSubscriptionGroup",
        "messageStorePlugIn",
        "msgTraceTopicName",
        "traceTopicEnable",
        "rejectTransactionMessage",
        "fetchNamesrvAddrByAddressServer",
        "sendThreadPoolQueueCapacity",
        "putThreadPoolQueueCapacity",
        "transactionTimeOut",
        "transactionCheckMax",
        "transactionCheckInterval",
        "aclEnable",
        "storeReplyMessageEnable",
        "storePathRootDir",
        "storePathCommitLog",
        "storePathDLedgerCommitLog",
        "readOnlyCommitLogStorePaths",
        "flushIntervalCommitLog",
        "commitIntervalCommitLog",
        "flushCommitLogTimed",
        "flushIntervalConsumeQueue",
        "deleteWhen",
        "diskMaxUsedSpaceRatio",
        "fileReservedTime",
        "putMsgIndexHightWater",
        "maxTransferBytesOnMessageInMemory",
        "maxTransferCountOnMessageInMemory",
        "maxTransferBytesOnMessageInDisk",
        "maxTransferCountOnMessageInDisk",
        "accessMessageInMemoryMaxRatio",
        "messageIndexEnable",
        "maxHashSlotNum",
        "maxIndexNum",
        "messageIndexSafe",
        "haListenPort",
        "haSendHeartbeatInterval",
        "haMasterAddress",
        "haSlaveFallbehindMax",
        "brokerRole",
        "flushDiskType",
        "syncFlushTimeout",
        "slaveTimeout",
        "cleanFileForciblyEnable",
        "warmMapedFileEnable",
        "offsetCheckInSlave",
        "transientStorePoolEnable",
        "transientStorePoolSize",
        "fastFailIfNoBufferInStorePool",
    }
)
"""The keys Apache marks `@ImportantField` (what `mqbroker -m` prints)."""


def load_broker_configs(
    config_file: Path | None, overrides: Mapping[str, str]
) -> tuple[BrokerConfigs, dict[str, str], list[str]]:
    """The broker's configs from the `-c` file with `overrides` (command-line values) on top;
    also the file's properties and the unknown keys.  Raises RmqError for a bad file."""
    from rmq.common.config import ConfigError, build_broker_configs, load_properties_file

    source = str(config_file) if config_file is not None else None
    try:
        file_props = load_properties_file(config_file) if config_file is not None else {}
        configs, unknown = build_broker_configs({**file_props, **overrides}, config_file=source)
    except ConfigError as exc:
        raise RmqError(str(exc), "fix the config file or the option", EXIT_USAGE) from None
    return configs, file_props, unknown


def serve(
    ctx: typer.Context,
    main: Coroutine[Any, Any, int],
    configs: BrokerConfigs,
    unknown: list[str],
    source: str | None,
    port_option: Callable[[ListenError], str] = lambda _: "listenPort (--port)",
) -> int:
    """Run the server `main` (see `rmq.cli.serve.run_foreground`, `port_option` the option
    a port-in-use error names); store failures -> RmqError too."""
    from rmq.cli.serve import run_foreground
    from rmq.store.errors import StoreError, StoreLockedError

    store_dir = configs.store.store_path_root_dir
    try:
        return run_foreground(
            ctx,
            main,
            logger="rmq.broker",
            unknown=unknown,
            source=source,
            config_file_hint=(
                f"repair or remove the file under {store_dir}/config, "
                "or set startWithEmptyMetadataOnDamage=true to start without it"
            ),
            port_option=port_option,
        )
    except StoreLockedError as exc:
        raise RmqError(
            str(exc), "is another broker using this store? choose another with --store"
        ) from None
    except StoreError as exc:
        raise RmqError(str(exc), f"check the store directory {store_dir}") from None


def print_configs(configs: BrokerConfigs, keys: frozenset[str] | None = None) -> None:
    """Print the settings as `key=value` lines (only `keys` when given)."""
    from rmq.common.config import to_properties

    for key, value in to_properties(*configs.all()).items():
        if keys is None or key in keys:
            typer.echo(f"{key}={value}")


@app.command()
def broker(
    ctx: typer.Context,
    config_file: ConfigFileOption = None,
    namesrv_addr: Annotated[
        str | None,
        typer.Option(
            "-n",
            "--namesrvAddr",
            "--namesrv-addr",
            metavar="ADDRS",
            help="Name server address list, e.g. '192.168.0.1:9876;192.168.0.2:9876'.",
        ),
    ] = None,
    print_config: Annotated[
        bool,
        typer.Option(
            "-p", "--printConfigItem", "--print-config", help="Print all config items and exit."
        ),
    ] = False,
    print_important: Annotated[
        bool,
        typer.Option(
            "-m",
            "--printImportantConfig",
            "--print-important-config",
            help="Print important config items and exit.",
        ),
    ] = False,
    port: Annotated[
        int | None,
        typer.Option(
            "--port",
            min=3,
            max=65534,
            help="Listen port (overrides listenPort); the fast port is PORT - 2.",
        ),
    ] = None,
    store: Annotated[
        Path | None,
        typer.Option(
            "--store",
            metavar="DIR",
            help="Store directory (overrides storePathRootDir).",
            file_okay=False,
        ),
    ] = None,
    define: DefineOption = None,
) -> int:
    """Start a broker (default port 10911); stop it with Ctrl-C or SIGTERM."""
    overrides = {}
    if namesrv_addr is not None:
        overrides["namesrvAddr"] = namesrv_addr
    if port is not None:
        overrides["listenPort"] = str(port)
    if store is not None:
        overrides["storePathRootDir"] = str(store)
    configs, file_props, unknown = load_broker_configs(config_file, overrides)
    if print_config or print_important:
        print_configs(configs, None if print_config else IMPORTANT_KEYS)
        return 0

    from rmq.cli.tlsoptions import setup_server_tls
    from rmq.server.broker.controller import run_broker

    source = str(config_file) if config_file is not None else None
    unknown = setup_server_tls(define, file_props, unknown, source)
    main = run_broker(configs, config_file=source, file_properties=file_props)
    return serve(ctx, main, configs, unknown, source)
