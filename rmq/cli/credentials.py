"""ACL credentials on the command line: `--access-key` / `--secret-key` on every cluster command.

Every command that takes the shared `-n/--namesrv` option (`rmq.cli.settings.NamesrvOption`)
also takes `--access-key KEY` and `--secret-key SECRET`: `add_credential_options`, called by
`rmq.cli.main.load_command` on each command it loads, finds those commands and adds the two
options, so no command module declares them.  Before such a command runs, its credentials are
resolved like any other setting (`rmq.cli.settings.resolve`):

    1. the flags `--access-key` / `--secret-key`
    2. the environment: `RMQ_ACCESS_KEY` / `RMQ_SECRET_KEY` (and `RMQ_SECURITY_TOKEN`)
    3. the active profile's `access_key` / `secret_key` (and `security_token`)

and, when both keys are found, made the default of every client the command creates
(`rmq.client.credentials.use_default_credentials`): producers, consumers and admin clients
then sign each request as Apache's `AclClientRPCHook` does.  A broker's ACL refusal is the
command's one error line (`rmq.cli.aclerrors`, `rmq.cli.refusals`), not a warning per retry.
A key without the other is a usage error (exit 2).

The secret is never printed: `rmq profile show` shows `MASK` in its place, errors name only
the access key.  A profile file that holds a secret must be private, as ssh wants a private
key to be: when the secret would be read from a file that its group or others can read, the
command refuses (exit 2) and says how to fix the mode (`rmq profile set` always writes the
file 0600).
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Callable
from typing import Any

import click

from rmq.cli.clusteroptions import add_to_cluster_commands
from rmq.cli.errors import EXIT_USAGE, RmqError
from rmq.cli.refusals import quiet_refused_retries
from rmq.cli.settings import Resolved, config_path, resolve

ACCESS_KEY_ENV = "RMQ_ACCESS_KEY"
SECRET_KEY_ENV = "RMQ_SECRET_KEY"
SECURITY_TOKEN_ENV = "RMQ_SECURITY_TOKEN"
MASK = "********"
"""What is shown in place of a secret."""

_PARAMS = ("access_key", "secret_key")
_ARTICLE = {"access": "an", "secret": "a"}


def _options() -> list[click.Option]:
    return [
        click.Option(
            ["--access-key"],
            metavar="KEY",
            help=f"ACL access key to sign requests with. Default: ${ACCESS_KEY_ENV}, then "
            "the active profile's access_key.",
        ),
        click.Option(
            ["--secret-key"],
            metavar="SECRET",
            help=f"ACL secret key of --access-key. Default: ${SECRET_KEY_ENV}, then the "
            "active profile's secret_key (prefer those: a flag shows in 'ps').",
        ),
    ]


def add_credential_options(command: click.Command) -> None:
    """Give `command`, and every sub-command of a group, that takes the shared -n/--namesrv
    option the credential options, resolved and applied before the command runs."""
    add_to_cluster_commands(command, _PARAMS, _options, _applying_credentials)


def _applying_credentials(callback: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(callback)
    def run(
        *args: Any, access_key: str | None = None, secret_key: str | None = None, **kw: Any
    ) -> Any:
        apply_credentials(access_key, secret_key)
        quiet_refused_retries()
        return callback(*args, **kw)

    return run


def credential_settings(
    access_flag: str | None = None,
    secret_flag: str | None = None,
    *,
    profile_flag: str | None = None,
) -> tuple[Resolved | None, Resolved | None, Resolved | None]:
    """The access key, secret key and security token to use, each with its source (None
    when no source has one); a usage error when only one of the keys is found, or when the
    secret comes from a profile file others can read."""
    access = _setting(access_flag, "--access-key", ACCESS_KEY_ENV, "access_key", profile_flag)
    secret = _setting(secret_flag, "--secret-key", SECRET_KEY_ENV, "secret_key", profile_flag)
    if (access is None) != (secret is None):
        found, given, missing = (
            (access, "access", "secret") if secret is None else (secret, "secret", "access")
        )
        assert found is not None
        env = SECRET_KEY_ENV if missing == "secret" else ACCESS_KEY_ENV
        raise RmqError(
            f"{found.source} gives {_ARTICLE[given]} {given} key without "
            f"{_ARTICLE[missing]} {missing} key",
            f"give --{missing}-key, ${env} or {missing}_key in the profile too",
            EXIT_USAGE,
        )
    if secret is not None and secret.source.startswith("profile "):
        check_private(config_path())
    token = None
    if access is not None:
        token = _setting(None, "", SECURITY_TOKEN_ENV, "security_token", profile_flag)
    return access, secret, token


def apply_credentials(access_flag: str | None, secret_flag: str | None) -> None:
    """Resolve the credentials and make them the default of the clients created from now on
    (none when no source has any)."""
    access, secret, token = credential_settings(access_flag, secret_flag)
    from rmq.client.credentials import SessionCredentials, use_default_credentials

    credentials = None
    if access is not None and secret is not None:
        credentials = SessionCredentials(
            access.value, secret.value, token.value if token is not None else None
        )
    use_default_credentials(credentials)


def check_private(path: os.PathLike[str] | str) -> None:
    """A usage error when the file at `path` can be read or written by its group or others."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return
    if mode & 0o077:
        raise RmqError(
            f"profile file {path} holds a secret key but is accessible by others "
            f"(mode {mode:04o}); the secret key is not used",
            f"run 'chmod 600 {path}'",
            EXIT_USAGE,
        )


def _setting(
    flag_value: str | None, flag: str, env: str, key: str, profile_flag: str | None
) -> Resolved | None:
    setting = resolve(
        flag_value, flag=flag, envs=(env,), key=key, default="", profile_flag=profile_flag
    )
    return setting if setting.value else None
