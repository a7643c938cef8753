"""`rmq profile`: named connection settings kept in the profile file.

    rmq profile list                      the profiles, and which one is active
    rmq profile show [NAME]               the settings rmq resolves with NAME (default: the
                                          active profile) and the source of each value
    rmq profile use NAME                  make NAME the active profile (`current` in the file)
    rmq profile set NAME [--namesrv ADDR] [--access-key KEY --secret-key SECRET]
                                          create or update a profile (written mode 0600)
    rmq profile delete NAME [--yes]       delete a profile (asks on a terminal)

The file format, its path and the precedence rules live in `rmq.cli.settings`; this module
only edits the file through `load_config` / `save_config` and renders with `rmq.cli.output`.
`list` stays usable when the active profile points at a missing one (it warns instead), so
a hand-edited file can always be inspected and repaired with `use` and `set`.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Annotated

import typer

from rmq.cli.credentials import MASK, credential_settings
from rmq.cli.errors import EXIT_USAGE, RmqError, YesOption, require_confirmation
from rmq.cli.main import command_app
from rmq.cli.output import OutputOption, output_setting, render
from rmq.cli.settings import (
    PROFILE_ENV,
    ConfigFile,
    Resolved,
    load_config,
    namesrv_setting,
    save_config,
    select_profile,
    validate_namesrv,
    validate_profile_name,
)

log = logging.getLogger(__name__)

app = command_app(help="Manage profiles: named connection settings in the profile file.")


def _complete_profile_names(incomplete: str) -> list[str]:
    try:
        names = load_config().profiles
    except RmqError:
        return []
    return sorted(name for name in names if name.startswith(incomplete))


ProfileName = Annotated[str, typer.Argument(metavar="NAME", autocompletion=_complete_profile_names)]


def _require(config: ConfigFile, name: str) -> None:
    if name not in config.profiles:
        raise RmqError(
            f"profile {name!r} is not defined in {config.path}",
            "run 'rmq profile list' to see the profiles",
            EXIT_USAGE,
        )


def _setting_row(setting: str, resolved: Resolved) -> dict[str, str | None]:
    return {"setting": setting, "value": resolved.value, "source": resolved.source}


@app.command("list")
def list_profiles(output: OutputOption = None) -> None:
    """List the profiles; ACTIVE marks the one rmq uses."""
    config = load_config()
    try:
        selected = select_profile(config)
    except RmqError as error:
        log.warning("%s", error.message)
        selected = None
    active = selected.value if selected is not None else None
    rows = [
        {"name": name, "namesrv": config.profiles[name].get("namesrv"), "active": name == active}
        for name in sorted(config.profiles)
    ]
    render(rows, columns=("name", "namesrv", "active"), output=output)


@app.command("show")
def show_profile(
    name: Annotated[
        str | None,
        typer.Argument(autocompletion=_complete_profile_names, show_default=False),
    ] = None,
    output: OutputOption = None,
) -> None:
    """Show the settings rmq uses with profile NAME (default: the active one) and their sources.

    The sources, highest first: command-line flags, environment variables (RMQ_NAMESRV,
    NAMESRV_ADDR, RMQ_OUTPUT, RMQ_ACCESS_KEY, RMQ_SECRET_KEY), the profile, built-in
    defaults.  The secret key is never shown, only whether it is set and where from.
    """
    config = load_config()
    if name is None:
        selected = select_profile(config)
    else:
        _require(config, name)
        selected = Resolved(name, "NAME argument")
    rows: list[dict[str, str | None]] = [
        {
            "setting": "profile",
            "value": selected.value if selected is not None else None,
            "source": selected.source if selected is not None else "no profile is active",
        },
        _setting_row("namesrv", namesrv_setting(profile_flag=name)),
        _setting_row("output", output_setting()),
        *_credential_rows(name),
    ]
    render(rows, columns=("setting", "value", "source"), output=output)


def _credential_rows(profile: str | None) -> list[dict[str, str | None]]:
    """The access key, and the secret key masked, with their sources (None when unset)."""
    access, secret, _ = credential_settings(profile_flag=profile)
    return [
        {
            "setting": setting,
            "value": shown if found is not None else None,
            "source": found.source if found is not None else "not set",
        }
        for setting, found, shown in (
            ("access_key", access, access.value if access else None),
            ("secret_key", secret, MASK),
        )
    ]


@app.command("use")
def use_profile(name: ProfileName) -> None:
    """Make NAME the active profile."""
    config = load_config()
    _require(config, name)
    config.current = name
    save_config(config)
    typer.echo(f"Active profile: {name}")
    overriding = os.environ.get(PROFILE_ENV)
    if overriding and overriding != name:
        log.warning(
            "%s=%s is set and takes precedence in this environment", PROFILE_ENV, overriding
        )


@app.command("set")
def set_profile(
    name: ProfileName,
    namesrv: Annotated[
        str | None,
        typer.Option(
            "--namesrv",
            "-n",
            metavar="HOST:PORT[;HOST:PORT]",
            help="Name server address(es) to store.",
        ),
    ] = None,
    access_key: Annotated[
        str | None,
        typer.Option("--access-key", metavar="KEY", help="ACL access key to store."),
    ] = None,
    secret_key: Annotated[
        str | None,
        typer.Option(
            "--secret-key",
            metavar="SECRET",
            help="ACL secret key to store ('-' reads it from the first line of stdin); the "
            "file is written mode 0600.",
        ),
    ] = None,
) -> None:
    """Create profile NAME or change its settings; the first profile becomes the active one."""
    validate_profile_name(name)
    if namesrv is None and access_key is None and secret_key is None:
        raise RmqError(
            "nothing to set", "give --namesrv, --access-key and/or --secret-key", EXIT_USAGE
        )
    if secret_key == "-":
        secret_key = sys.stdin.readline().rstrip("\r\n")
    config = load_config()
    created = name not in config.profiles
    values = {
        "namesrv": validate_namesrv(namesrv, "--namesrv") if namesrv is not None else None,
        "access_key": access_key,
        "secret_key": secret_key,
    }
    for key, value in values.items():
        if value is not None:
            config.put(name, key, value)
    activated = config.current is None
    if activated:
        config.current = name
    save_config(config)
    message = f"{'Created' if created else 'Updated'} profile {name} in {config.path}"
    typer.echo(message + ("; it is now the active profile" if activated else ""))


@app.command("delete")
def delete_profile(name: ProfileName, yes: YesOption = False) -> None:
    """Delete profile NAME; asks for confirmation on a terminal, elsewhere needs --yes."""
    config = load_config()
    _require(config, name)
    require_confirmation(f"delete profile {name!r} from {config.path}", yes=yes)
    config.remove(name)
    save_config(config)
    typer.echo(f"Deleted profile {name}")
